// The "Try it" page: the English-to-German number translator of docs/assets/translator/, run in
// the reader's browser with onnxruntime-web (vendored in assets/vendor/onnxruntime-web/).
//
// Loaded on every page, it does nothing unless the page holds #translator-source: only then does
// it load ort and the model, once per visit (Material's instant navigation keeps them across
// pages). Runs on the first load and after every instant navigation (Material's document$).
//
// - BpeTokenizer reads the tokenizer.json that `tokenizers` writes and encodes and decodes as it
//   does: special tokens split out first, Metaspace (spaces become "▁", one "▁" in front, a word
//   before each "▁"), BPE merges by rank, unknown characters as <unk>, and the Metaspace decoder.
// - translate() is greedy decoding as vanilla_transformer.inference.evaluate.translate_sentences
//   does it with beam_size=1: the source ids end with </s>, decoding starts with <s>, stops at
//   </s>, and an output has at most len(source) + max_extra tokens; encoder.onnx runs once,
//   decoder.onnx once per step on the whole prefix.
// - The heatmap is an SVG: one row per German token, one column per English token, the last
//   decoder layer's cross-attention averaged over the heads.
// - window.translatorDemo holds the tokenizer class, loadModel() and translate(), for the browser
//   tests (tests/docs/test_translator_page.py) and for the curious reader's console.
(function () {
  "use strict";

  var script = document.currentScript;
  // this file is javascripts/translator.js: the site's root is one folder up
  var ROOT = new URL("..", script ? script.src : location.href);
  var ORT_DIR = new URL("assets/vendor/onnxruntime-web/", ROOT).href;
  var MODEL_DIR = new URL("assets/translator/", ROOT).href;
  var DEBOUNCE_MS = 250;
  var SVG = "http://www.w3.org/2000/svg";

  // ------------------------------------------------------------------------------------------ //
  // The tokenizer                                                                              //
  // ------------------------------------------------------------------------------------------ //

  function BpeTokenizer(json) {
    var model = json.model;
    var pre = json.pre_tokenizer;
    if (json.normalizer || model.type !== "BPE" || !pre || pre.type !== "Metaspace" ||
        model.continuing_subword_prefix || model.end_of_word_suffix || model.byte_fallback ||
        model.dropout || model.ignore_merges) {
      throw new Error("tokenizer.json is not the byte-pair tokenizer this page reads");
    }
    this.vocab = new Map(Object.entries(model.vocab));
    this.idToToken = [];
    for (var entry of this.vocab) this.idToToken[entry[1]] = entry[0];
    this.added = json.added_tokens.map(function (t) { return {content: t.content, id: t.id}; });
    for (var t of this.added) this.idToToken[t.id] = t.content;
    this.unkId = this.vocab.get(model.unk_token);
    this.fuseUnk = Boolean(model.fuse_unk);
    this.replacement = pre.replacement;
    this.prepend = pre.prepend_scheme || (pre.add_prefix_space === false ? "never" : "always");
    this.split = pre.split !== false;
    // (left id, right id) -> [rank, merged id]; merges are "a b" strings or [a, b] pairs
    this.merges = new Map();
    var vocab = this.vocab;
    var merges = this.merges;
    model.merges.forEach(function (merge, rank) {
      var pair = typeof merge === "string" ? merge.split(" ") : merge;
      var merged = vocab.get(pair[0] + pair[1]);
      merges.set(vocab.get(pair[0]) + ":" + vocab.get(pair[1]), [rank, merged]);
    });
  }

  // The text split around the special tokens, leftmost first and the longest one at a place.
  BpeTokenizer.prototype.splitAdded = function (text) {
    var pieces = [];
    var start = 0;
    var i = 0;
    while (i < text.length) {
      var found = null;
      for (var t of this.added) {
        if (text.startsWith(t.content, i) && (!found || t.content.length > found.content.length)) {
          found = t;
        }
      }
      if (found) {
        if (i > start) pieces.push({text: text.slice(start, i), offset: start});
        pieces.push({id: found.id});
        i += found.content.length;
        start = i;
      } else {
        i += 1;
      }
    }
    if (text.length > start) pieces.push({text: text.slice(start), offset: start});
    return pieces;
  };

  // Metaspace: spaces become "▁", a "▁" goes in front, and each "▁" starts a new word.
  BpeTokenizer.prototype.words = function (text, offset) {
    var r = this.replacement;
    var s = text.split(" ").join(r);
    if ((this.prepend === "always" || (this.prepend === "first" && offset === 0)) &&
        !s.startsWith(r)) {
      s = r + s;
    }
    if (!this.split) return [s];
    var words = [];
    var word = "";
    for (var c of s) {
      if (c === r && word) {
        words.push(word);
        word = "";
      }
      word += c;
    }
    if (word) words.push(word);
    return words;
  };

  // One word: its characters, then the merge of lowest rank (leftmost on a tie) until none is left.
  BpeTokenizer.prototype.bpe = function (word) {
    var symbols = [];
    for (var c of word) {
      var id = this.vocab.get(c);
      if (id === undefined) {
        var last = symbols[symbols.length - 1];
        if (this.fuseUnk && last && last.unk) continue;
        symbols.push({id: this.unkId, unk: true});
      } else {
        symbols.push({id: id, unk: false});
      }
    }
    for (;;) {
      var best = null;
      var at = -1;
      for (var i = 0; i + 1 < symbols.length; i++) {
        var merge = this.merges.get(symbols[i].id + ":" + symbols[i + 1].id);
        if (merge && (!best || merge[0] < best[0])) {
          best = merge;
          at = i;
        }
      }
      if (!best) break;
      symbols.splice(at, 2, {id: best[1], unk: false});
    }
    return symbols.map(function (s) { return s.id; });
  };

  // The ids of `text`, without <s> or </s> added: what SharedTokenizer.encode returns.
  BpeTokenizer.prototype.encode = function (text) {
    var ids = [];
    for (var piece of this.splitAdded(text)) {
      if (piece.id !== undefined) {
        ids.push(piece.id);
        continue;
      }
      for (var word of this.words(piece.text, piece.offset)) {
        ids.push.apply(ids, this.bpe(word));
      }
    }
    return ids;
  };

  BpeTokenizer.prototype.tokens = function (ids) {
    var names = this.idToToken;
    return ids.map(function (id) { return names[id]; });
  };

  // What SharedTokenizer.decode returns: up to the first </s>, without <s> and <pad>; the
  // Metaspace decoder turns "▁" into spaces (the first token drops its "▁"); <unk> shows as U+FFFD.
  BpeTokenizer.prototype.decode = function (ids, special) {
    var r = this.replacement;
    var kept = [];
    for (var id of ids) {
      if (id === special.end_symbol) break;
      if (id !== special.pad_symbol && id !== special.start_symbol) kept.push(id);
    }
    var prepend = this.prepend;
    return this.tokens(kept).map(function (token, i) {
      var out = "";
      for (var c of token) {
        if (c !== r) out += c;
        else if (i !== 0 || prepend === "never") out += " ";
      }
      return out;
    }).join("").split("<unk>").join("\ufffd");
  };

  // ------------------------------------------------------------------------------------------ //
  // The model: ort, the two graphs and the tokenizer, loaded once                              //
  // ------------------------------------------------------------------------------------------ //

  var modelPromise = null;
  var queue = Promise.resolve();  // one translation at a time: the sessions are shared

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      if (window.ort) return resolve();
      var tag = document.createElement("script");
      tag.src = src;
      tag.onload = function () { resolve(); };
      tag.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(tag);
    });
  }

  async function fetchFile(url, json) {
    var response = await fetch(url);
    if (!response.ok) throw new Error("HTTP " + response.status + " for " + url);
    return json ? response.json() : new Uint8Array(await response.arrayBuffer());
  }

  function loadModel() {
    if (!modelPromise) {
      modelPromise = (async function () {
        // everything at once: ort, then its WebAssembly binary, while the model downloads
        var files = await Promise.all([
          loadScript(ORT_DIR + "ort.wasm.min.js").then(function () {
            var ort = window.ort;
            ort.env.wasm.wasmPaths = ORT_DIR;
            ort.env.wasm.numThreads = 1;  // the site is not cross-origin isolated
            ort.env.wasm.proxy = false;
            ort.env.logLevel = "error";
          }),
          fetchFile(MODEL_DIR + "manifest.json", true),
          fetchFile(MODEL_DIR + "tokenizer.json", true),
          fetchFile(MODEL_DIR + "encoder.onnx", false),
          fetchFile(MODEL_DIR + "decoder.onnx", false),
        ]);
        var options = {executionProviders: ["wasm"], graphOptimizationLevel: "all",
                       logSeverityLevel: 3};
        var encoder = await window.ort.InferenceSession.create(files[3], options);
        var decoder = await window.ort.InferenceSession.create(files[4], options);
        return {manifest: files[1], tokenizer: new BpeTokenizer(files[2]),
                encoder: encoder, decoder: decoder};
      })();
      modelPromise.catch(function () { modelPromise = null; });  // the next visit tries again
    }
    return modelPromise;
  }

  function argmax(values) {
    var best = 0;
    for (var i = 1; i < values.length; i++) {
      if (values[i] > values[best]) best = i;  // the first of equal maxima, as torch.argmax
    }
    return best;
  }

  function int64(ids) {
    return new window.ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]);
  }

  // Greedy decoding of one cleaned text; null if `stale()` turns true on the way.
  async function translate(model, text, stale) {
    var d = model.manifest.decoding;
    var srcIds = model.tokenizer.encode(text).concat([d.end_symbol]);
    var n = srcIds.length;
    var srcMask = new window.ort.Tensor("bool", new Uint8Array(n).fill(1), [1, 1, n]);
    var memory = (await model.encoder.run({src: int64(srcIds), src_mask: srcMask})).memory;
    var ys = [d.start_symbol];
    var attention = [];
    var maxLen = n + d.max_extra + 1;  // the start symbol included
    for (var step = 0; step < maxLen - 1; step++) {
      if (stale()) return null;
      var out = await model.decoder.run({memory: memory, src_mask: srcMask, ys: int64(ys)});
      var next = argmax(out.log_probs.data);
      attention.push(Array.from(out.cross_attention.data));
      ys.push(next);
      if (next === d.end_symbol) break;
    }
    var tgtIds = ys.slice(1, 1 + n + d.max_extra);
    return {srcIds: srcIds, tgtIds: tgtIds, attention: attention,
            text: model.tokenizer.decode(tgtIds, d)};
  }

  // ------------------------------------------------------------------------------------------ //
  // The page                                                                                   //
  // ------------------------------------------------------------------------------------------ //

  // What the page translates: the input without outer spaces, runs of spaces as one, lower case.
  function clean(text) {
    return text.trim().replace(/\s+/g, " ").toLowerCase();
  }

  // The problem with a cleaned input, or null: empty, characters outside the vocabulary, too long.
  function problem(model, text) {
    if (!text) return "Type a number in English words, such as \u201ctwenty-one\u201d.";
    var tok = model.tokenizer;
    var unknown = [];
    for (var c of text) {
      if (c !== " " && !tok.vocab.has(c) && unknown.indexOf(c) < 0) unknown.push(c);
    }
    if (unknown.length) {
      return "The vocabulary has no " + unknown.map(function (c) {
        return "\u201c" + c + "\u201d";
      }).join(", ") + ": it knows the letters, hyphens and commas of number words.";
    }
    var n = tok.encode(text).length + 1;
    var limit = model.manifest.decoding.max_src_tokens;
    if (n > limit) {
      return "Too long: " + n + " tokens with </s>; the model takes at most " + limit + ".";
    }
    return null;
  }

  function svg(name, attrs, parent) {
    var el = document.createElementNS(SVG, name);
    for (var key in attrs) el.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(el);
    return el;
  }

  // Tokens as the tokenizer has them; "▁" marks the start of a word.
  function drawTokens(list, tokens) {
    list.replaceChildren.apply(list, tokens.map(function (token) {
      var item = document.createElement("li");
      var code = document.createElement("code");
      code.textContent = token;
      item.appendChild(code);
      return item;
    }));
  }

  var CELL = 28;
  var CHAR = 7.6;  // width of a character of 12.5 px monospace text, with some room
  var GAP = 6;

  function drawHeatmap(box, srcTokens, tgtTokens, attention) {
    var longest = function (tokens) {
      return tokens.reduce(function (m, t) { return Math.max(m, Array.from(t).length); }, 0);
    };
    var left = Math.ceil(longest(tgtTokens) * CHAR) + 2 * GAP;
    var top = Math.ceil(longest(srcTokens) * CHAR) + 2 * GAP;
    var width = left + srcTokens.length * CELL + GAP;
    var height = top + tgtTokens.length * CELL + GAP;
    var root = svg("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height,
                           role: "img", "class": "translator-heatmap__svg",
                           "data-rows": tgtTokens.length, "data-cols": srcTokens.length});
    svg("title", {}, root).textContent = "Cross-attention of the last decoder layer: " +
      "rows are the German tokens, columns the English tokens";
    srcTokens.forEach(function (token, j) {
      var x = left + j * CELL + CELL / 2;
      var label = svg("text", {"class": "translator-tick translator-tick--x",
                               transform: "translate(" + (x + 4) + "," + (top - GAP) + ") rotate(-90)"},
                      root);
      label.textContent = token;
    });
    tgtTokens.forEach(function (token, i) {
      var y = top + i * CELL + CELL / 2;
      var label = svg("text", {"class": "translator-tick translator-tick--y", x: left - GAP,
                               y: y + 4}, root);
      label.textContent = token;
      attention[i].forEach(function (weight, j) {
        var cell = svg("rect", {"class": "translator-cell", x: left + j * CELL, y: top + i * CELL,
                                width: CELL, height: CELL, "fill-opacity": weight.toFixed(4)},
                       root);
        svg("title", {}, cell).textContent =
          token + " \u2192 " + srcTokens[j] + ": " + weight.toFixed(3);
      });
    });
    svg("rect", {"class": "translator-frame", x: left, y: top, width: srcTokens.length * CELL,
                 height: tgtTokens.length * CELL}, root);
    box.replaceChildren(root);
  }

  function setUp(input) {
    var root = input.closest(".translator");
    var view = {
      root: root,
      target: root.querySelector("#translator-target"),
      status: root.querySelector("#translator-status"),
      srcList: root.querySelector("#translator-source-tokens"),
      tgtList: root.querySelector("#translator-target-tokens"),
      heatmap: root.querySelector("#translator-heatmap"),
    };
    var latest = 0;
    var timer = null;
    var stale = function (request) {
      return function () { return request !== latest || !input.isConnected; };
    };
    var say = function (state, text) {
      root.dataset.state = state;
      view.status.textContent = text;
      view.status.classList.toggle("translator-status--problem", state === "invalid" ||
                                   state === "failed");
    };
    var clear = function () {
      view.target.textContent = "";
      view.srcList.replaceChildren();
      view.tgtList.replaceChildren();
      view.heatmap.replaceChildren();
    };

    var run = function () {
      clearTimeout(timer);
      var request = ++latest;
      var text = clean(input.value);
      loadModel().then(function (model) {
        if (stale(request)()) return;
        var why = problem(model, text);
        if (why) {
          clear();
          root.dataset.source = text;
          say("invalid", why);
          return;
        }
        queue = queue.then(async function () {
          if (stale(request)()) return;
          say("busy", "Translating\u2026");
          var start = performance.now();
          var result = await translate(model, text, stale(request));
          var ms = performance.now() - start;
          if (!result || stale(request)()) return;
          var tok = model.tokenizer;
          var srcTokens = tok.tokens(result.srcIds);
          var tgtTokens = tok.tokens(result.tgtIds);  // one per decoder step
          view.target.textContent = result.text;
          drawTokens(view.srcList, srcTokens);
          drawTokens(view.tgtList, tgtTokens);
          drawHeatmap(view.heatmap, srcTokens, tgtTokens, result.attention);
          root.dataset.source = text;
          root.dataset.ms = ms.toFixed(1);
          say("done", "Translated in " + Math.round(ms) + " ms: " + result.attention.length +
              " decoder steps.");
        }).catch(function (error) {
          if (stale(request)()) return;
          clear();
          say("failed", "The translation failed: " + error.message);
        });
      }, function () { /* said once, below */ });
    };

    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(run, DEBOUNCE_MS);
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter") run();
    });
    root.querySelectorAll("[data-example]").forEach(function (button) {
      button.addEventListener("click", function () {
        input.value = button.dataset.example;
        run();
      });
    });

    var begin = performance.now();
    say("loading", "Loading the model\u2026");
    loadModel().then(function (model) {
      if (!input.isConnected) return;
      // since this page was shown, and since the navigation started (a full page load)
      root.dataset.loadMs = (performance.now() - begin).toFixed(1);
      root.dataset.readyAt = performance.now().toFixed(1);
      run();
    }, function (error) {
      if (input.isConnected) say("failed", "The model could not be loaded: " + error.message);
    });
  }

  window.translatorDemo = {BpeTokenizer: BpeTokenizer, loadModel: loadModel, clean: clean,
                           translate: translate};

  function onPage() {
    var input = document.getElementById("translator-source");
    if (input && !input.dataset.translator) {
      input.dataset.translator = "on";
      setUp(input);
    }
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(onPage);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onPage);
  } else {
    onPage();
  }
})();
