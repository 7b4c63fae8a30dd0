// MathJax 3 configuration for every page of the site. Loaded before assets/vendor/mathjax/tex-svg.js.
//
// Two kinds of page carry math:
// - Markdown pages: pymdownx.arithmatex (generic mode) wraps each formula in an element with the
//   class "arithmatex", as \( ... \) inline or \[ ... \] display.
// - Notebook pages (mkdocs-jupyter): the Markdown cells keep $ ... $ and $$ ... $$ as written,
//   inside <div class="jupyter-wrapper">.
// Only those containers are typeset (<pre> and <code> inside them are skipped by MathJax), on the
// first load and after every instant navigation (Material's document$ observable).
(function () {
  "use strict";

  var MATH_ROOTS = ".arithmatex, .jupyter-wrapper";
  var queue = Promise.resolve();

  function ready() {
    return window.MathJax && typeof window.MathJax.typesetPromise === "function";
  }

  function typesetPage() {
    if (!ready()) {
      return queue; // MathJax is still loading: its pageReady() below will call this again.
    }
    queue = queue
      .then(function () {
        var roots = Array.prototype.slice.call(document.querySelectorAll(MATH_ROOTS));
        if (roots.length === 0) {
          return null;
        }
        var mj = window.MathJax;
        var output = mj.startup.output;
        if (typeof output.clearFontCache === "function") {
          output.clearFontCache(); // SVG output: glyphs cached by the previous page
        }
        mj.typesetClear();
        mj.texReset();
        return mj.typesetPromise(roots);
      })
      .catch(function (error) {
        console.error("MathJax typesetting failed:", error);
      })
      .then(function () {
        // Read by tests/test_site.py: this page's math has been processed.
        document.documentElement.setAttribute("data-math-typeset", location.pathname);
      });
    return queue;
  }

  window.MathJax = {
    tex: {
      inlineMath: [["\\(", "\\)"], ["$", "$"]],
      displayMath: [["\\[", "\\]"], ["$$", "$$"]],
      processEscapes: true,
      processEnvironments: true,
      // An unknown macro is an error (red, and caught by the site tests), not silently shown as text.
      packages: { "[-]": ["noundefined"] },
    },
    options: {
      ignoreHtmlClass: "tex2jax_ignore",
      processHtmlClass: "tex2jax_process",
    },
    startup: {
      typeset: false,
      pageReady: function () {
        return window.MathJax.startup.defaultPageReady().then(typesetPage);
      },
    },
  };

  if (typeof window.document$ !== "undefined") {
    window.document$.subscribe(function () {
      typesetPage();
    });
  }
})();
