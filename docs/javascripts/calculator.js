// The Parameter calculator page's live calculator: the parameter count, the training FLOPs per
// target token and the training memory of a configuration, updated as the reader types.
//
// Loaded on every page, it does nothing unless the page holds #calculator. The formulas are
// those of vanilla_transformer.analysis (parameters.py, flops.py, memory.py) with make_model's
// defaults for everything the form does not ask; tests/docs/test_calculator_page.py compares
// the results with those functions on random configurations. Integers are BigInt, so that no
// count is rounded.
(function () {
  "use strict";

  var MAX_LEN = 5000n; // rows of each positional-encoding table (ModelConfig.max_len)
  var DROPOUT = 0.1; // make_model's dropout; it decides which dropout masks are kept

  function readInt(id, min) {
    var el = document.getElementById(id);
    var text = el.value.trim();
    if (text === "") {
      // a number input holds "" when what was typed is no number it can read (or too large)
      throw new Error(el.labels[0].textContent + " must be a whole number; the field is empty " +
                      "or holds a number too large to read");
    }
    if (!/^\d+$/.test(text)) {
      throw new Error(el.labels[0].textContent + " must be a whole number, got \u201c" +
                      text + "\u201d");
    }
    var value = BigInt(text);
    if (value < BigInt(min)) {
      throw new Error(el.labels[0].textContent + " must be at least " + min + ", got " + text);
    }
    return value;
  }

  function readConfig() {
    var c = {
      N: readInt("calc-N", 1), d: readInt("calc-d-model", 1), dff: readInt("calc-d-ff", 1),
      h: readInt("calc-h", 1), vs: readInt("calc-src-vocab", 0),
      vt: readInt("calc-tgt-vocab", 0), batch: readInt("calc-batch", 1),
      len: readInt("calc-len", 1),
      tie: document.getElementById("calc-tie").checked,
      bias: document.getElementById("calc-bias").checked,
      paper: document.getElementById("calc-arrangement").value === "paper",
      bytes: BigInt(document.getElementById("calc-dtype").value),
    };
    if (c.d % c.h !== 0n) {
      throw new Error("d_model must be divisible by h: got d_model = " + c.d + ", h = " + c.h +
                      " (remainder " + (c.d % c.h) + ")");
    }
    if (c.tie && c.vs !== c.vt) {
      throw new Error("one shared matrix needs one vocabulary: got " + c.vs + " source and " +
                      c.vt + " target tokens");
    }
    if (!c.paper && c.d < 2n) {
      throw new Error("the Annotated Transformer's LayerNorm needs d_model of at least 2");
    }
    if (c.len > MAX_LEN) {
      throw new Error("tokens per sentence must not exceed the positional table's " + MAX_LEN +
                      " rows, got " + c.len);
    }
    return c;
  }

  // parameters.py: P = N (12d^2 + 4 d d_ff + 2 d_ff + 24d) + 4fd + V_src d + 2(1-t) V_tgt d + b V_tgt
  function parameters(c) {
    var f = c.paper ? 0n : 1n;
    var t = c.tie ? 1n : 0n;
    var b = c.bias ? 1n : 0n;
    return c.N * (12n * c.d * c.d + 4n * c.d * c.dff + 2n * c.dff + 24n * c.d) +
      4n * f * c.d + c.vs * c.d + 2n * (1n - t) * c.vt * c.d + b * c.vt;
  }

  // The same total by component, as parameter_count_for (parameters.py) splits it: attention
  // (3N modules), feed-forward (2N), the layer norms (5N, and one after each stack when f = 1),
  // the embeddings (a tied matrix is counted here once) and the output projection.
  function breakdown(c) {
    var f = c.paper ? 0n : 1n;
    var t = c.tie ? 1n : 0n;
    var b = c.bias ? 1n : 0n;
    return [
      ["embeddings", c.vs * c.d + (1n - t) * c.vt * c.d],
      ["attention", 3n * c.N * (4n * c.d * c.d + 4n * c.d)],
      ["feed-forward", 2n * c.N * (2n * c.d * c.dff + c.dff + c.d)],
      ["norms", (5n * c.N + 2n * f) * 2n * c.d],
      ["output", (1n - t) * c.vt * c.d + b * c.vt],
    ];
  }

  // flops.py, with S = T = len: F = 4NBd[(3d + d_ff)(S + T) + S^2 + ST + T^2] + 2BTd V_tgt;
  // a training step is about 3F, shared by B * T target tokens.
  function flopsPerToken(c) {
    var S = c.len, T = c.len, B = c.batch;
    var forward = 4n * c.N * B * c.d * ((3n * c.d + c.dff) * (S + T) + S * S + S * T + T * T) +
      2n * B * T * c.d * c.vt;
    return (3n * forward) / (B * T);
  }

  // memory.py: weights, buffers, gradients and two Adam states, plus the activations kept for
  // the backward pass (mask_bytes = 1, the fused dropout kernel's bool masks).
  function trainingMemory(c, params) {
    var p = c.bytes, B = c.batch, S = c.len, T = c.len, d = c.d, dff = c.dff, a = c.h;
    var m = 1n; // dropout 0.1 > 0: residual and embedding dropout keep a mask
    var attnDrop = !c.paper, ffDrop = !c.paper; // the paper's arrangement sets both to 0
    var norm = (d + 2n) * p;  // a LayerNorm keeps d + 2 numbers a row, either flavour
    var attnM = attnDrop ? 1n : 0n, attnKept = attnDrop ? p : 0n;
    var ffM = ffDrop ? 1n : 0n, ffKept = ffDrop ? p : 0n;
    function probs(q, k) { return B * a * q * k * (p + attnM + attnKept); }
    function selfAttention(L) { return B * L * (norm + d * (5n * p + m)) + probs(L, L); }
    function feedForward(L) {
      return B * L * (norm + d * (p + m)) + B * L * dff * (p + ffM + ffKept);
    }
    var N = c.N;
    var activations = B * (S + T) * d * m +
      N * (selfAttention(S) + feedForward(S)) + B * S * d * p +
      N * (selfAttention(T) + (B * T * (norm + d * (3n * p + m)) + 2n * B * S * d * p +
                               probs(T, S)) + feedForward(T)) +
      (c.paper ? 0n : B * (S + T) * norm) + B * T * (d + c.vt) * p;
    var buffers = 2n * MAX_LEN * d;
    return 4n * params * p + buffers * p + activations;
  }

  function grouped(n) { return n.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ","); }

  function human(n, units, base) {
    var value = Number(n), i = 0;
    while (value >= base && i < units.length - 1) { value /= base; i += 1; }
    return (i === 0 ? String(value) : value.toPrecision(3)) + " " + units[i];
  }

  function show(id, value, text) {
    var out = document.getElementById(id);
    out.dataset.value = value === null ? "" : value.toString();
    out.textContent = text;
  }

  function showBreakdown(rows, total) {
    var table = document.getElementById("calc-breakdown");
    table.dataset.value = total === null ? "" : total.toString();
    table.querySelectorAll("tr[data-component]").forEach(function (tr) {
      var row = rows && rows.find(function (r) { return r[0] === tr.dataset.component; });
      tr.dataset.value = row ? row[1].toString() : "";
      tr.querySelector(".calc-count").textContent = row ? grouped(row[1]) : "\u2013";
      // a share in tenths of a percent, from integers: no rounding of the counts themselves
      tr.querySelector(".calc-share").textContent = !row ? "\u2013" : total === 0n ? "0 %" :
        (Number((row[1] * 1000n) / total) / 10).toFixed(1) + " %";
    });
  }

  // A size so large that a result has no float value (over about 1.8e308) cannot be shown.
  function checkShowable(values) {
    values.forEach(function (pair) {
      if (!isFinite(Number(pair[1]))) {
        throw new Error("these sizes give more " + pair[0] + " than the calculator can show " +
                        "(over 1.8e308): use smaller sizes");
      }
    });
  }

  // The preset that the form's values match, or "custom".
  function matchPreset() {
    var select = document.getElementById("calc-preset");
    var match = "custom";
    Array.prototype.forEach.call(select.options, function (option) {
      if (!option.dataset.config || match !== "custom") return;
      var config = JSON.parse(option.dataset.config);
      var same = Object.keys(config).every(function (key) {
        var el = document.getElementById("calc-" + key);
        return el.type === "checkbox" ? el.checked === config[key] :
          el.value.trim() === String(config[key]);
      });
      if (same) match = option.value;
    });
    select.value = match;
  }

  function applyPreset() {
    var option = document.getElementById("calc-preset").selectedOptions[0];
    if (!option || !option.dataset.config) return;
    var config = JSON.parse(option.dataset.config);
    Object.keys(config).forEach(function (key) {
      var el = document.getElementById("calc-" + key);
      if (el.type === "checkbox") el.checked = config[key];
      else el.value = String(config[key]);
    });
  }

  function update(event) {
    var error = document.getElementById("calc-error");
    if (event && event.target && event.target.id === "calc-preset") applyPreset();
    else matchPreset();
    var c, params, flops, memory;
    try {
      c = readConfig();
      params = parameters(c);
      flops = flopsPerToken(c);
      memory = trainingMemory(c, params);
      checkShowable([["parameters", params], ["FLOPs", flops], ["bytes", memory]]);
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
      ["calc-params", "calc-flops", "calc-memory"].forEach(function (id) {
        show(id, null, "\u2013");
      });
      showBreakdown(null, null);
      return;
    }
    error.hidden = true;
    showBreakdown(breakdown(c), params);
    show("calc-params", params, grouped(params) + " (" +
         human(params, ["", "thousand", "million", "billion"], 1000) + ")");
    show("calc-flops", flops, grouped(flops) + " (" +
         human(flops, ["", "kFLOP", "MFLOP", "GFLOP", "TFLOP"], 1000) + ")");
    show("calc-memory", memory, human(memory, ["bytes", "KiB", "MiB", "GiB", "TiB"], 1024));
  }

  function onPage() {
    var root = document.getElementById("calculator");
    if (!root || root.dataset.ready) return;
    root.dataset.ready = "1";
    root.querySelectorAll("input, select").forEach(function (el) {
      el.addEventListener("input", update);
      el.addEventListener("change", update);
    });
    document.getElementById("calc-status").hidden = true;
    matchPreset();
    update();
  }

  window.vanillaCalculator = {update: update};
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(onPage);
  } else {
    document.addEventListener("DOMContentLoaded", onPage);
  }
})();
