// The "Try it" page: the English-to-German (and English-to-French) number translators of
// docs/assets/translator/, run in the reader's browser with onnxruntime-web (vendored in
// assets/vendor/onnxruntime-web/), and everything they compute on the way.
//
// Loaded on every page, it does nothing unless the page holds #translator-source: only then does
// it load ort and a model, once per visit (Material's instant navigation keeps them across
// pages). Runs on the first load and after every instant navigation (Material's document$).
//
// - BpeTokenizer reads the tokenizer.json that `tokenizers` writes and encodes and decodes as it
//   does: special tokens split out first, Metaspace (spaces become "▁", one "▁" in front, a word
//   before each "▁"), BPE merges by rank, unknown characters as <unk>, and the Metaspace decoder.
// - parseNumber() and numberWords() read a number the way people type it ("twenty one", commas
//   or not) and write it as the training pairs do (num2words), for the "seen in training" badge.
// - Decoding is greedy, as vanilla_transformer.inference.evaluate.translate_sentences does it
//   with beam_size=1: the source ids end with </s>, decoding starts with <s>, stops at </s>, and
//   an output has at most len(source) + max_extra tokens; encoder.onnx runs once, decoder.onnx
//   once per step on the whole prefix. The reader can step through it, see the five most
//   probable next tokens, and write another one instead.
// - The graphs return every attention map (export_onnx(..., attention_weights="all")): the page
//   draws any layer and head of the encoder's self-attention, the decoder's self-attention and
//   the cross-attention as an SVG heatmap.
// - The training slider swaps in the graphs of the same run at earlier steps (steps/NNNN/).
// - window.translatorDemo holds the tokenizer class, the number words, loadModel() and the
//   decoding functions, for the browser tests (tests/docs/test_translator_page.py,
//   tests/docs/test_explorer.py) and for the curious reader's console.
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
  // Number words: read what people type, and say it as the training pairs say it               //
  // ------------------------------------------------------------------------------------------ //

  var UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
               "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
               "seventeen", "eighteen", "nineteen"];
  var TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
              "ninety"];

  function below100(n) {
    if (n < 20) return UNITS[n];
    return TENS[Math.floor(n / 10)] + (n % 10 ? "-" + UNITS[n % 10] : "");
  }

  function below1000(n) {
    var hundreds = Math.floor(n / 100), rest = n % 100;
    var words = hundreds ? UNITS[hundreds] + " hundred" : "";
    if (hundreds && rest) words += " and ";
    return words + (rest || !hundreds ? below100(rest) : "");
  }

  // English words of 0 <= n < 1,000,000 as num2words writes them (the corpus's English side).
  function numberWords(n) {
    var thousands = Math.floor(n / 1000), rest = n % 1000;
    if (!thousands) return below1000(rest);
    var words = below1000(thousands) + " thousand";
    if (!rest) return words;
    return words + (rest < 100 ? " and " : ", ") + below1000(rest);
  }

  function wordsOnly(text) {
    return text.replace(/[,-]/g, " ").split(" ").filter(function (w) {
      return w && w !== "and";
    });
  }

  // The number a cleaned text spells, or null: the words must be those of numberWords(n), up
  // to hyphens, commas, "and" and spaces ("twenty one" is twenty-one).
  function parseNumber(text) {
    var words = wordsOnly(text);
    if (!words.length || words.length > 12) return null;
    var total = 0, current = 0;
    for (var w of words) {
      var unit = UNITS.indexOf(w), ten = TENS.indexOf(w);
      if (unit >= 0) current += unit;
      else if (ten >= 2) current += 10 * ten;
      else if (w === "hundred") current = (current || 1) * 100;
      else if (w === "thousand") { total += (current || 1) * 1000; current = 0; }
      else return null;
    }
    var n = total + current;
    if (n >= 1000000) return null;
    return wordsOnly(numberWords(n)).join(" ") === words.join(" ") ? n : null;
  }

  // ------------------------------------------------------------------------------------------ //
  // The models: ort, the graphs of each language and training step, loaded when first needed   //
  // ------------------------------------------------------------------------------------------ //

  var ortPromise = null;
  var manifestPromise = null;
  var seenPromise = null;
  var models = {};  // "de/final", "de/0400", "fr/final" -> Promise of {tokenizer, encoder, decoder}
  var tokenizers = {};
  var queue = Promise.resolve();  // one run at a time: the sessions are shared

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

  function loadOrt() {
    if (!ortPromise) {
      ortPromise = loadScript(ORT_DIR + "ort.wasm.min.js").then(function () {
        var ort = window.ort;
        ort.env.wasm.wasmPaths = ORT_DIR;
        ort.env.wasm.numThreads = 1;  // the site is not cross-origin isolated
        ort.env.wasm.proxy = false;
        ort.env.logLevel = "error";
      });
      ortPromise.catch(function () { ortPromise = null; });
    }
    return ortPromise;
  }

  function loadManifest() {
    if (!manifestPromise) {
      manifestPromise = fetchFile(MODEL_DIR + "manifest.json", true);
      manifestPromise.catch(function () { manifestPromise = null; });
    }
    return manifestPromise;
  }

  // The training split's numbers: every number below `below`, and the listed ones above.
  function loadSeen() {
    if (!seenPromise) {
      seenPromise = fetchFile(MODEL_DIR + "train_numbers.json", true).then(function (json) {
        return {below: json.below, numbers: new Set(json.numbers)};
      });
      seenPromise.catch(function () { seenPromise = null; });
    }
    return seenPromise;
  }

  // A model: `lang` "de" or "fr", `step` "final" or a folder name of manifest.training_steps.
  function loadModel(lang, step) {
    lang = lang || "de";
    step = step || "final";
    var key = lang + "/" + step;
    if (!models[key]) {
      models[key] = (async function () {
        var manifest = await loadManifest();
        var langDir = manifest.languages[lang].folder;
        var dir = MODEL_DIR + langDir + (step === "final" ? "" : "steps/" + step + "/");
        if (!tokenizers[lang]) {
          tokenizers[lang] = fetchFile(MODEL_DIR + langDir + "tokenizer.json", true)
            .then(function (json) { return new BpeTokenizer(json); });
          tokenizers[lang].catch(function () { delete tokenizers[lang]; });
        }
        var files = await Promise.all([loadOrt(), tokenizers[lang],
                                       fetchFile(dir + "encoder.onnx", false),
                                       fetchFile(dir + "decoder.onnx", false)]);
        var options = {executionProviders: ["wasm"], graphOptimizationLevel: "all",
                       logSeverityLevel: 3};
        var encoder = await window.ort.InferenceSession.create(files[2], options);
        var decoder = await window.ort.InferenceSession.create(files[3], options);
        return {manifest: manifest, lang: lang, step: step, tokenizer: files[1],
                encoder: encoder, decoder: decoder};
      })();
      models[key].catch(function () { delete models[key]; });  // the next try loads again
    }
    return models[key];
  }

  function argmax(values) {
    var best = 0;
    for (var i = 1; i < values.length; i++) {
      if (values[i] > values[best]) best = i;  // the first of equal maxima, as torch.argmax
    }
    return best;
  }

  // The k most probable ids of a row of log-probabilities: [{id, prob}], most probable first
  // (the lower id first among equals, as torch.topk on the CPU).
  function topK(logProbs, k) {
    var ids = Array.from(logProbs.keys());
    ids.sort(function (a, b) { return logProbs[b] - logProbs[a] || a - b; });
    return ids.slice(0, k).map(function (id) { return {id: id, prob: Math.exp(logProbs[id])}; });
  }

  function int64(ids) {
    return new window.ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]);
  }

  // A (1, N, h, rows, cols) output as maps[layer][head] = rows x cols arrays.
  function maps(tensor) {
    var dims = tensor.dims, data = tensor.data;
    var N = dims[1], h = dims[2], rows = dims[3], cols = dims[4];
    var out = [];
    for (var l = 0; l < N; l++) {
      var layer = [];
      for (var a = 0; a < h; a++) {
        var grid = [];
        for (var i = 0; i < rows; i++) {
          var at = ((l * h + a) * rows + i) * cols;
          grid.push(Array.from(data.subarray(at, at + cols)));
        }
        layer.push(grid);
      }
      out.push(layer);
    }
    return out;
  }

  // A decoding: the source, the encoder's maps, and a prefix `ys` that grows one token a step.
  // `run()` runs the decoder on the prefix: the next token's log-probabilities and the decoder's
  // maps, one row per position of the prefix (row i is where position i looked to predict
  // ys[i + 1]).
  async function begin(model, text) {
    var d = model.manifest.decoding;
    var srcIds = model.tokenizer.encode(text).concat([d.end_symbol]);
    var n = srcIds.length;
    var srcMask = new window.ort.Tensor("bool", new Uint8Array(n).fill(1), [1, 1, n]);
    var enc = await model.encoder.run({src: int64(srcIds), src_mask: srcMask});
    return {model: model, text: text, srcIds: srcIds, srcMask: srcMask, memory: enc.memory,
            encoderMaps: maps(enc.encoder_self_attention), ys: [d.start_symbol],
            maxLen: n + d.max_extra + 1, last: null, forced: 0};
  }

  async function run(state) {
    var out = await state.model.decoder.run({memory: state.memory, src_mask: state.srcMask,
                                             ys: int64(state.ys)});
    state.last = {ys: state.ys.slice(), logProbs: out.log_probs.data,
                  selfMaps: maps(out.decoder_self_attention),
                  crossMaps: maps(out.decoder_cross_attention)};
    return state.last;
  }

  function finished(state) {
    var d = state.model.manifest.decoding;
    return state.ys[state.ys.length - 1] === d.end_symbol || state.ys.length >= state.maxLen;
  }

  // One step: append `id`, or the most probable token; then run on the new prefix unless done.
  async function step(state, id) {
    if (!state.last || state.last.ys.length !== state.ys.length) await run(state);
    var next = id === undefined ? argmax(state.last.logProbs) : id;
    if (id !== undefined && id !== argmax(state.last.logProbs)) state.forced += 1;
    state.ys.push(next);
    if (!finished(state)) await run(state);
    return next;
  }

  // Greedy decoding to the end, as translate_sentences does with beam_size=1.
  async function finish(state, stale) {
    if (!state.last) await run(state);
    while (!finished(state)) {
      if (stale && stale()) return null;
      await step(state);
    }
    return state;
  }

  // What the page shows of a state: tokens, text, and the maps cut to the written rows.
  function view(state) {
    var d = state.model.manifest.decoding;
    var tok = state.model.tokenizer;
    var done = finished(state);
    var written = state.ys.slice(1, state.maxLen);
    // the maps of the last run: one row per written token, plus the pending one if not done
    var rows = done ? written.length : written.length + 1;
    var cut = function (layers) {
      return layers.map(function (heads) {
        return heads.map(function (grid) { return grid.slice(0, rows); });
      });
    };
    var last = state.last;
    return {
      done: done,
      srcTokens: tok.tokens(state.srcIds),
      tgtTokens: tok.tokens(written),
      inputTokens: tok.tokens(state.ys.slice(0, rows)),
      text: tok.decode(written, d),
      encoder: state.encoderMaps,
      selfMaps: last ? cut(last.selfMaps) : [],
      crossMaps: last ? cut(last.crossMaps) : [],
      rows: rows,
      candidates: !done && last ? topK(last.logProbs, 5) : [],
    };
  }

  async function translate(model, text, stale) {
    var state = await begin(model, text);
    state = await finish(state, stale);
    if (!state) return null;
    var v = view(state);
    return {srcIds: state.srcIds, tgtIds: state.ys.slice(1), text: v.text, state: state};
  }

  // ------------------------------------------------------------------------------------------ //
  // The page                                                                                   //
  // ------------------------------------------------------------------------------------------ //

  // What the page translates: the input without outer spaces, runs of spaces as one, lower case.
  function clean(text) {
    return text.trim().replace(/\s+/g, " ").toLowerCase();
  }

  // A number written the way people type it, as the training pairs write it.
  function canonical(text) {
    var n = parseNumber(text);
    return n === null ? text : numberWords(n);
  }

  // The problem with a cleaned input, or null: empty, too long, characters outside the
  // vocabulary. The length is checked before the tokenizer runs.
  function problem(model, text) {
    if (!text) return "Type a number in English words, such as \u201ctwenty-one\u201d.";
    var limit = model.manifest.decoding.max_src_tokens;
    if (text.length > 8 * limit) {
      return "Too long: " + text.length + " characters; the model takes at most " + limit +
        " tokens, a few hundred characters.";
    }
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

  function average(grids) {
    return grids[0].map(function (row, i) {
      return row.map(function (_, j) {
        var sum = 0;
        for (var g of grids) sum += g[i][j];
        return sum / grids.length;
      });
    });
  }

  // One map: `grid` rows x cols of weights in [0, 1]; `onCell(i, j)` when a cell is chosen.
  function drawHeatmap(box, rowTokens, colTokens, grid, title, onCell) {
    var longest = function (tokens) {
      return tokens.reduce(function (m, t) { return Math.max(m, Array.from(t).length); }, 0);
    };
    var left = Math.ceil(longest(rowTokens) * CHAR) + 2 * GAP;
    var top = Math.ceil(longest(colTokens) * CHAR) + 2 * GAP;
    var width = left + colTokens.length * CELL + GAP;
    var height = top + rowTokens.length * CELL + GAP;
    var root = svg("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height,
                           role: "img", "class": "translator-heatmap__svg"});
    box.dataset.rows = rowTokens.length;
    box.dataset.cols = colTokens.length;
    box.setAttribute("aria-label", title);
    svg("title", {}, root).textContent = title;
    colTokens.forEach(function (token, j) {
      var x = left + j * CELL + CELL / 2;
      var label = svg("text", {"class": "translator-tick translator-tick--x",
                               transform: "translate(" + (x + 4) + "," + (top - GAP) +
                                          ") rotate(-90)"}, root);
      label.textContent = token;
    });
    rowTokens.forEach(function (token, i) {
      var y = top + i * CELL + CELL / 2;
      var label = svg("text", {"class": "translator-tick translator-tick--y", x: left - GAP,
                               y: y + 4}, root);
      label.textContent = token;
      grid[i].forEach(function (weight, j) {
        var cell = svg("rect", {"class": "translator-cell", x: left + j * CELL,
                                y: top + i * CELL, width: CELL, height: CELL,
                                "fill-opacity": weight.toFixed(4), "data-row": i,
                                "data-col": j, "data-weight": weight.toFixed(6)}, root);
        svg("title", {}, cell).textContent =
          token + " \u2192 " + colTokens[j] + ": " + weight.toFixed(3);
        cell.addEventListener("click", function () { onCell(i, j); });
        cell.addEventListener("mouseenter", function () { onCell(i, j); });
      });
    });
    svg("rect", {"class": "translator-frame", x: left, y: top, width: colTokens.length * CELL,
                 height: rowTokens.length * CELL}, root);
    box.replaceChildren(root);
  }

  function option(select, value, text) {
    var el = document.createElement("option");
    el.value = value;
    el.textContent = text;
    select.appendChild(el);
  }

  // A stand-in for a control the page does not have (Home's small version has no selectors,
  // no step-through and no slider): detached, so it is never shown.
  function standIn(tag, value) {
    var el = document.createElement(tag);
    if (tag === "select") option(el, value, value);
    if (value !== undefined) el.value = value;
    return el;
  }

  function setUp(input) {
    var root = input.closest(".translator");
    var q = function (selector, tag, value) {
      return root.querySelector(selector) || standIn(tag || "div", value);
    };
    var el = {
      target: q("#translator-target"), status: q("#translator-status"),
      srcList: q("#translator-source-tokens", "ol"),
      tgtList: q("#translator-target-tokens", "ol"),
      heatmap: q("#translator-heatmap"), caption: q("#explorer-caption"),
      seen: q("#translator-seen"), readAs: q("#translator-read-as"),
      language: q("#translator-language", "select", "de"),
      kind: q("#explorer-kind", "select", "cross"),
      layer: q("#explorer-layer", "select"), head: q("#explorer-head", "select"),
      cell: q("#explorer-cell"), step: q("#explorer-step", "button"),
      restart: q("#explorer-restart", "button"), finish: q("#explorer-finish", "button"),
      hint: q("#explorer-hint"),
      topk: q("#explorer-topk", "ol"), checkpoint: q("#explorer-checkpoint", "input", "99"),
      checkpointLabel: q("#explorer-checkpoint-label"),
      replayOff: q("#explorer-replay-off", "button"),
    };
    var latest = 0;
    var timer = null;
    var current = null;  // the state on show
    var stale = function (request) {
      return function () { return request !== latest || !input.isConnected; };
    };
    var say = function (state, text) {
      root.dataset.state = state;
      // a test or a script can wait for the translation of what was typed last
      if (state !== "busy" && state !== "loading") delete root.dataset.pending;
      el.status.textContent = text;
      el.status.classList.toggle("translator-status--problem", state === "invalid" ||
                                 state === "failed");
    };
    var clear = function () {
      current = null;
      el.target.textContent = "";
      el.srcList.replaceChildren();
      el.tgtList.replaceChildren();
      el.heatmap.replaceChildren();
      el.heatmap.dataset.rows = 0;
      el.heatmap.dataset.cols = 0;
      el.topk.replaceChildren();
      el.cell.textContent = "";
      el.seen.hidden = true;
      el.readAs.hidden = true;
      root.dataset.ys = "";
    };
    var lang = function () { return el.language.value || "de"; };
    // "final" (the page's model), or the folder name of the replayed run's checkpoint
    var stepKey = function () {
      var manifest = root.__manifest;
      if (lang() !== "de" || !manifest || root.dataset.replay !== "on") return "final";
      var steps = manifest.training_steps;
      var i = Math.min(Number(el.checkpoint.value), steps.length - 1);
      return steps[i].folder.split("/")[1];
    };

    var fillSelectors = function (v) {
      var N = v.crossMaps.length, h = v.crossMaps[0].length;
      if (el.layer.options.length !== N) {
        el.layer.replaceChildren();
        for (var l = 0; l < N; l++) option(el.layer, String(l), "layer " + (l + 1));
        el.layer.value = String(N - 1);
      }
      if (el.head.options.length !== h + 1) {
        el.head.replaceChildren();
        option(el.head, "average", "average of the " + h + " heads");
        for (var a = 0; a < h; a++) option(el.head, String(a), "head " + (a + 1));
      }
    };

    var drawMap = function () {
      if (!current) return;
      var v = view(current);
      if (!v.crossMaps.length) return;
      fillSelectors(v);
      var kind = el.kind.value, layer = Number(el.layer.value), head = el.head.value;
      var layers = kind === "encoder-self" ? v.encoder :
        kind === "decoder-self" ? v.selfMaps : v.crossMaps;
      var grids = layers[layer];
      var grid = head === "average" ? average(grids) : grids[Number(head)];
      var pending = v.done ? [] : ["\u25b8 next"];
      var rowTokens = kind === "encoder-self" ? v.srcTokens : v.tgtTokens.concat(pending);
      var colTokens = kind === "encoder-self" ? v.srcTokens :
        kind === "decoder-self" ? v.inputTokens : v.srcTokens;
      var what = {"cross": "where each German token looks among the English tokens",
                  "decoder-self": "where each German token looks among the German tokens " +
                                  "before it",
                  "encoder-self": "where each English token looks among the English tokens"};
      var headText = head === "average" ? "averaged over its heads" : "head " + (Number(head) + 1);
      var title = "Layer " + (layer + 1) + ", " + headText + ": " + what[kind] + ".";
      el.caption.textContent = title + " Each row adds up to one.";
      el.heatmap.dataset.kind = kind;
      el.heatmap.dataset.layer = layer;
      el.heatmap.dataset.head = head;
      drawHeatmap(el.heatmap, rowTokens, colTokens, grid, title, function (i, j) {
        el.cell.textContent = rowTokens[i] + " \u2192 " + colTokens[j] + ": " +
          grid[i][j].toFixed(3);
        el.cell.dataset.row = i;
        el.cell.dataset.col = j;
        el.cell.dataset.weight = grid[i][j].toFixed(6);
      });
    };

    var showSeen = function (text) {
      var lang2 = lang();
      var n = parseNumber(text);
      loadSeen().then(function (seen) {
        if (!current || current.text !== text) return;
        var badge = el.seen;
        badge.hidden = false;
        if (n === null) {
          badge.dataset.seen = "no-number";
          badge.textContent = "not a number in words: the model answers all the same";
        } else if (n < seen.below || seen.numbers.has(n)) {
          badge.dataset.seen = "seen";
          badge.textContent = n.toLocaleString("en") + " was in the training pairs";
        } else {
          badge.dataset.seen = "unseen";
          badge.textContent = n.toLocaleString("en") + " was never seen in training";
        }
        badge.dataset.number = n === null ? "" : String(n);
        badge.dataset.lang = lang2;
      });
    };

    var show = function (request) {
      if (!current) return;
      var v = view(current);
      el.target.textContent = v.text;
      drawTokens(el.srcList, v.srcTokens);
      drawTokens(el.tgtList, v.tgtTokens);
      root.dataset.ys = current.ys.join(" ");
      root.dataset.done = v.done ? "1" : "0";
      el.step.disabled = v.done;
      el.finish.disabled = v.done;
      el.hint.textContent = v.done ?
        "Decoding has finished. Start over to write the output one token at a time." :
        "The five most probable next tokens, after the tokens written so far:";
      el.topk.replaceChildren.apply(el.topk, v.candidates.map(function (c, rank) {
        var item = document.createElement("li");
        var token = current.model.tokenizer.tokens([c.id])[0];
        item.dataset.token = token;
        item.dataset.id = c.id;
        item.dataset.prob = c.prob.toFixed(6);
        var button = document.createElement("button");
        button.type = "button";
        button.className = "explorer__candidate";
        var bar = document.createElement("span");
        bar.className = "explorer__bar";
        bar.style.width = (100 * c.prob).toFixed(1) + "%";
        var label = document.createElement("code");
        label.textContent = token;
        var prob = document.createElement("span");
        prob.className = "explorer__prob";
        prob.textContent = (100 * c.prob).toFixed(1) + " %";
        button.append(bar, label, prob);
        button.title = rank === 0 ? "the greedy choice" : "write this token instead";
        button.addEventListener("click", function () { act(c.id); });
        item.appendChild(button);
        return item;
      }));
      drawMap();
    };

    var describe = function (v, ms) {
      if (v.done) {
        return "Translated in " + Math.round(ms) + " ms: " + v.tgtTokens.length +
          " decoder steps" + (current.forced ? ", " + current.forced + " of them chosen by you" : "") +
          ".";
      }
      return "Step " + (v.tgtTokens.length + 1) + ": the five most probable next tokens are " +
        "below. \u201cNext token\u201d writes the first; a click on another writes that one.";
    };

    // Step-through: restart (id null), the greedy next token (undefined) or a chosen one.
    var act = function (id) {
      if (!current) return;
      var state = current;
      var request = latest;
      queue = queue.then(async function () {
        if (stale(request)() || state !== current) return;
        var start = performance.now();
        if (id === null) {
          var fresh = await begin(state.model, state.text);
          await run(fresh);
          current = fresh;
        } else if (id === "finish") {
          await finish(state);
        } else if (!finished(state)) {
          await step(state, id);
        }
        if (stale(request)()) return;
        show(request);
        say(finished(current) ? "done" : "stepping", describe(view(current),
            performance.now() - start));
      }).catch(function (error) {
        say("failed", "The step failed: " + error.message);
      });
    };

    var translateNow = function () {
      clearTimeout(timer);
      var request = ++latest;
      var typed = clean(input.value);
      var text = canonical(typed);
      var key = stepKey();
      say("loading", "Loading the model\u2026");
      loadModel(lang(), key).then(function (model) {
        if (stale(request)()) return;
        root.__manifest = model.manifest;
        var why = problem(model, text);
        if (why) {
          clear();
          root.dataset.source = typed;
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
          current = result.state;
          show(request);
          el.readAs.hidden = text === typed;
          el.readAs.textContent = text === typed ? "" : "Read as \u201c" + text + "\u201d.";
          showSeen(text);
          root.dataset.source = typed;
          root.dataset.text = text;
          root.dataset.lang = model.lang;
          root.dataset.step = model.step;
          root.dataset.ms = ms.toFixed(1);
          say("done", describe(view(current), ms));
        }).catch(function (error) {
          if (stale(request)()) return;
          clear();
          say("failed", "The translation failed: " + error.message);
        });
      }, function (error) {
        if (!stale(request)()) say("failed", "The model could not be loaded: " + error.message);
      });
    };

    var setCheckpointLabel = function () {
      var manifest = root.__manifest;
      if (!manifest) return;
      var steps = manifest.training_steps;
      var i = Math.min(Number(el.checkpoint.value), steps.length - 1);
      var entry = steps[i];
      var text = root.dataset.replay !== "on" ? "off: the page's model" :
        i === 0 ? "step 0: untrained" :
        entry.averaged ? "step " + entry.step + ": the average of steps " +
          entry.averaged.join(", ") : "step " + entry.step;
      el.checkpointLabel.textContent = text;
      el.checkpoint.setAttribute("aria-valuetext", text);
      el.checkpoint.disabled = lang() !== "de";
      el.replayOff.disabled = root.dataset.replay !== "on";
    };

    input.addEventListener("input", function () {
      root.dataset.pending = "1";
      clearTimeout(timer);
      timer = setTimeout(translateNow, DEBOUNCE_MS);
    });
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter") translateNow();
    });
    root.querySelectorAll("[data-example]").forEach(function (button) {
      button.addEventListener("click", function () {
        input.value = button.dataset.example;
        translateNow();
      });
    });
    el.step.addEventListener("click", function () { act(undefined); });
    el.restart.addEventListener("click", function () { act(null); });
    el.finish.addEventListener("click", function () { act("finish"); });
    [el.kind, el.layer].forEach(function (select) {
      select.addEventListener("change", drawMap);
    });
    el.head.addEventListener("change", drawMap);
    el.checkpoint.addEventListener("input", function () {
      root.dataset.replay = "on";
      setCheckpointLabel();
      translateNow();
    });
    el.replayOff.addEventListener("click", function () {
      root.dataset.replay = "off";
      setCheckpointLabel();
      translateNow();
    });
    el.language.addEventListener("change", function () {
      root.dataset.language = lang();
      setCheckpointLabel();
      translateNow();
    });

    var started = performance.now();
    var load = function () {
      say("loading", "Loading the model\u2026");
      return loadModel(lang(), "final");
    };
    // Home's small version loads the model (about 15 MB with the runtime) only when asked
    var ready = root.dataset.load === "on-request" ? new Promise(function (resolve) {
      say("idle", "Click in the box or press Enter to load the model, about 15 MB.");
      var go = function () {
        input.removeEventListener("focus", go);
        started = performance.now();
        resolve(load());
      };
      input.addEventListener("focus", go);
    }) : load();
    ready.then(function (model) {
      if (!input.isConnected) return;
      root.__manifest = model.manifest;
      el.checkpoint.max = String(model.manifest.training_steps.length - 1);
      el.checkpoint.value = el.checkpoint.max;
      root.dataset.replay = "off";
      setCheckpointLabel();
      // since this page was shown, and since the navigation started (a full page load)
      root.dataset.loadMs = (performance.now() - started).toFixed(1);
      root.dataset.readyAt = performance.now().toFixed(1);
      translateNow();
    }, function (error) {
      if (input.isConnected) say("failed", "The model could not be loaded: " + error.message);
    });
  }

  window.translatorDemo = {BpeTokenizer: BpeTokenizer, loadModel: loadModel, clean: clean,
                           canonical: canonical, parseNumber: parseNumber,
                           numberWords: numberWords, translate: translate, begin: begin,
                           run: run, step: step, view: view, topK: topK};

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
