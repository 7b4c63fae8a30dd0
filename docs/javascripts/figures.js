// Two things for every page, on the first load and after every instant navigation (Material's
// document$ observable):
//
// - Figures of notebook pages (PNG outputs of mkdocs-jupyter) are never shrunk below 85% of their
//   natural size: matplotlib draws them at 100 dpi, so 10 pt text stays at 11.8 px or more. Where
//   that is wider than the text, the output area scrolls sideways (docs/stylesheets/extra.css).
// - A box that scrolls sideways (code, printed output, a wide table or formula, a figure wider
//   than the screen) gets data-scroll="right", "left" or "both": the side(s) where more content
//   is, which docs/stylesheets/extra.css fades out as a cue.
(function () {
  "use strict";

  var MIN_SCALE = 0.85;
  var SCROLLERS = [
    ".md-typeset pre > code",
    ".md-typeset .md-typeset__scrollwrap",
    ".md-typeset div.arithmatex",
    ".md-typeset p",
    ".jupyter-wrapper .jp-OutputArea-output",
    ".jupyter-wrapper .jp-OutputArea-output pre",
    ".jupyter-wrapper .highlight-ipynb pre",
    ".jupyter-wrapper mjx-container[display='true']"
  ].join(", ");

  function markScroll(el) {
    var wide = el.scrollWidth > el.clientWidth + 1;
    if (!wide) {
      el.removeAttribute("data-scroll");
      return;
    }
    var left = el.scrollLeft > 1;
    var right = el.scrollLeft + el.clientWidth < el.scrollWidth - 1;
    el.setAttribute("data-scroll", left && right ? "both" : left ? "left" : "right");
  }

  function markAll() {
    Array.prototype.forEach.call(document.querySelectorAll(SCROLLERS), markScroll);
  }

  function keepLegible(img) {
    if (img.naturalWidth > 0) {
      img.style.minWidth = Math.round(img.naturalWidth * MIN_SCALE) + "px";
    }
    markAll();
  }

  function apply() {
    var images = document.querySelectorAll(".jupyter-wrapper .jp-RenderedImage img");
    Array.prototype.forEach.call(images, function (img) {
      if (img.complete) {
        keepLegible(img);
      } else {
        img.addEventListener("load", function () { keepLegible(img); }, { once: true });
      }
    });
    markAll();
  }

  document.addEventListener("scroll", function (event) {
    var el = event.target;
    if (el && el.nodeType === 1 && el.hasAttribute("data-scroll")) {
      markScroll(el);
    }
  }, { capture: true, passive: true });
  window.addEventListener("resize", markAll, { passive: true });
  window.addEventListener("load", markAll);

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(apply);
  } else {
    document.addEventListener("DOMContentLoaded", apply);
  }
})();
