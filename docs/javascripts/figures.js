// Figures of notebook pages (PNG outputs of mkdocs-jupyter) are never shrunk below 85% of their
// natural size: matplotlib draws them at 100 dpi, so 10 pt text stays at 11.8 px or more. Where that
// is wider than the text, the output area scrolls sideways (docs/stylesheets/extra.css).
// Runs on the first load and after every instant navigation (Material's document$ observable).
(function () {
  "use strict";

  var MIN_SCALE = 0.85;

  function keepLegible(img) {
    if (img.naturalWidth > 0) {
      img.style.minWidth = Math.round(img.naturalWidth * MIN_SCALE) + "px";
    }
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
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(apply);
  } else {
    document.addEventListener("DOMContentLoaded", apply);
  }
})();
