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
// - The steering controls (temperature, top-k, top-p) redraw the five candidates as they move:
//   their probabilities at that temperature, greyed out where top-k or top-p cut them, which is
//   the distribution Sample draws from (steered()).
// - A break switch runs the live model (live_model.js) and #explorer-break-effect says what it
//   moved, before and after, with the trained output fed in: that output's probability, a
//   row's largest weight in the map on show, and where the outputs part or why they do not
//   (breakEffect()); silence-head on the average of the heads silences the head that matters
//   most for the sentence (mostImportantHead()).
// - The beam tree is drawn in columns where they fit, as an indented outline where they do not.
// - root.__blockValues gives explorer_extras.js a Figure-1 block's values for the current
//   token, from the live model's trace.
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
  var PLAY_MS = 1200;  // how long Play shows each checkpoint
  var BEAM_SIZE = 4;  // the paper's beam and length penalty (section 6.1)
  var BEAM_ALPHA = 0.6;
  var SVG = "http://www.w3.org/2000/svg";
  // What each switch of #explorer-break does (live_model.js computes the switched model)
  var SWITCH_NOTES = {
    "no-positions": "no positional encoding is added to the English pieces",
    "no-scale": "the scores are not divided by \u221ad_k",
    "no-cross-attention": "each cross-attention sublayer adds nothing, so this map is computed " +
                          "but never used",
    "silence-head": "the chosen head is zeroed before W\u1d3c",
  };

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

  // The words of a number, without "and", hyphens and commas; "a" before "hundred" or
  // "thousand" is "one" ("a hundred and one").
  function wordsOnly(text) {
    var words = text.replace(/[,-]/g, " ").split(" ").filter(function (w) {
      return w && w !== "and";
    });
    return words.map(function (w, i) {
      return w === "a" && (words[i + 1] === "hundred" || words[i + 1] === "thousand") ? "one" : w;
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

  // German number words as num2words(n, lang="de") writes them (the corpus's German side), for
  // 0 <= n < 10^15: its algorithm ported as it is. splitnum() cuts n into (word, value) pieces
  // by the largest "card" that fits, recursively; clean() merges neighbours pairwise with
  // merge(), which puts the units before the tens ("einundzwanzig"), writes "ein" before
  // "hundert" and "tausend", "eine" before "Million", and the plurals with a space. Its quirks
  // come along, "einhunderteinstausend" for 101,000 among them: they are what the model learned.
  var DE_CARDS = [[1e12, "Billion"], [1e9, "Milliarde"], [1e6, "Million"], [1000, "tausend"],
                  [100, "hundert"], [90, "neunzig"], [80, "achtzig"], [70, "siebzig"],
                  [60, "sechzig"], [50, "f\u00fcnfzig"], [40, "vierzig"], [30, "drei\u00dfig"]]
    .concat(["zwanzig", "neunzehn", "achtzehn", "siebzehn", "sechzehn", "f\u00fcnfzehn",
             "vierzehn", "dreizehn", "zw\u00f6lf", "elf", "zehn", "neun", "acht", "sieben",
             "sechs", "f\u00fcnf", "vier", "drei", "zwei", "eins", "null"]
      .map(function (word, i) { return [20 - i, word]; }));
  var DE_LIMIT = 1e15;

  function deSplit(value) {
    for (var card of DE_CARDS) {
      var elem = card[0];
      if (elem > value) continue;
      var div = value === 0 ? 1 : Math.floor(value / elem);
      var mod = value === 0 ? 0 : value % elem;
      var out = [div === 1 ? {t: "eins", n: 1} : deSplit(div), {t: card[1], n: elem}];
      if (mod) out.push(deSplit(mod));
      return out;
    }
  }

  function deMerge(curr, next) {
    var ctext = curr.t, cnum = curr.n, ntext = next.t, nnum = next.n;
    if (cnum === 1) {
      if (nnum === 100 || nnum === 1000) return {t: "ein" + ntext, n: nnum};
      if (nnum < 1e6) return next;
      ctext = "eine";
    }
    var val;
    if (nnum > cnum) {
      if (nnum >= 1e6) {
        if (cnum > 1) ntext += ntext.endsWith("e") ? "n" : "en";
        ctext += " ";
      }
      val = cnum * nnum;
    } else {
      if (nnum < 10 && 10 < cnum && cnum < 100) {
        if (nnum === 1) ntext = "ein";
        var swap = ntext;
        ntext = ctext;
        ctext = swap + "und";
      } else if (cnum >= 1e6) {
        ctext += " ";
      }
      val = cnum + nnum;
    }
    return {t: ctext + ntext, n: val};
  }

  function deClean(val) {
    var out = val;
    while (val.length !== 1) {
      out = [];
      var left = val[0], right = val[1];
      if (!Array.isArray(left) && !Array.isArray(right)) {
        out.push(deMerge(left, right));
        if (val.length > 2) out.push(val.slice(2));
      } else {
        for (var elem of val) {
          if (Array.isArray(elem)) out.push(elem.length === 1 ? elem[0] : deClean(elem));
          else out.push(elem);
        }
      }
      val = out;
    }
    return out[0];
  }

  function germanWords(n) {
    if (!Number.isSafeInteger(n) || n < 0 || n >= DE_LIMIT) {
      throw new RangeError("germanWords takes a whole number from 0 to 10^15 - 1, not " + n);
    }
    return deClean(deSplit(n)).t;
  }

  // ------------------------------------------------------------------------------------------ //
  // The models: ort, the graphs of each language and training step, loaded when first needed   //
  // ------------------------------------------------------------------------------------------ //

  var ortPromise = null;
  var manifestPromise = null;
  var statsPromise = null;
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

  // Each checkpoint's validation loss and exact match (docs/numbers/try_it.py measures them):
  // {checkpoints: {"final" or a step folder: {loss, exact}}, pairs}.
  function loadStats() {
    if (!statsPromise) {
      statsPromise = fetchFile(MODEL_DIR + "checkpoint_stats.json", true);
      statsPromise.catch(function () { statsPromise = null; });
    }
    return statsPromise;
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
        return onnxModel({manifest: manifest, lang: lang, step: step, tokenizer: files[1],
                          encoder: encoder, decoder: decoder});
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

  // A model decodes through two functions: encodeIds(srcIds) gives {memory, maps} and
  // decodeIds(memory, ys, withMaps) gives {logProbs}, and selfMaps, crossMaps when asked (the
  // live model of
  // live_model.js, a switched model, adds the scores before the softmax: scores, selfScores,
  // crossScores). Here the ONNX graphs: `memory` is the encoder's output tensor and the mask.
  function onnxModel(model) {
    model.encodeIds = async function (srcIds) {
      var n = srcIds.length;
      var srcMask = new window.ort.Tensor("bool", new Uint8Array(n).fill(1), [1, 1, n]);
      var enc = await model.encoder.run({src: int64(srcIds), src_mask: srcMask});
      return {memory: {memory: enc.memory, srcMask: srcMask},
              maps: maps(enc.encoder_self_attention)};
    };
    model.decodeIds = async function (memory, ys, withMaps) {
      var out = await model.decoder.run({memory: memory.memory, src_mask: memory.srcMask,
                                         ys: int64(ys)});
      if (!withMaps) return {logProbs: out.log_probs.data};  // beam search reads no map
      return {logProbs: out.log_probs.data, selfMaps: maps(out.decoder_self_attention),
              crossMaps: maps(out.decoder_cross_attention)};
    };
    return model;
  }

  // A decoding: the source, the encoder's maps, and a prefix `ys` that grows one token a step.
  // `run()` runs the decoder on the prefix: the next token's log-probabilities and the decoder's
  // maps, one row per position of the prefix (row i is where position i looked to predict
  // ys[i + 1]).
  async function begin(model, text) {
    var d = model.manifest.decoding;
    var srcIds = model.tokenizer.encode(text).concat([d.end_symbol]);
    var n = srcIds.length;
    var enc = await model.encodeIds(srcIds);
    return {model: model, text: text, srcIds: srcIds, memory: enc.memory,
            encoderMaps: enc.maps, encoderScores: enc.scores || null, ys: [d.start_symbol],
            maxLen: n + d.max_extra + 1, last: null, forced: 0};
  }

  async function run(state) {
    var out = await state.model.decodeIds(state.memory, state.ys, true);
    state.last = {ys: state.ys.slice(), logProbs: out.logProbs, selfMaps: out.selfMaps,
                  crossMaps: out.crossMaps, selfScores: out.selfScores || null,
                  crossScores: out.crossScores || null};
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

  // ------------------------------------------------------------------------------------------ //
  // Steering the decoding: sampling with a temperature and top-k, and beam search               //
  // ------------------------------------------------------------------------------------------ //

  // mulberry32: a small seeded generator of floats in [0, 1), the same sequence for a seed on
  // every browser (tests/docs/test_explorer.py runs it in Python too).
  function mulberry32(seed) {
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // The distribution Sample draws from, after the steering controls: the log-probabilities
  // divided by the temperature and renormalised (temperature 0 puts everything on the argmax);
  // then only the `k` most probable ids (all of them for k = 0), and of those the fewest, most
  // probable first, whose probability renormalised over the k reaches `p` (p = 1 keeps all).
  // Returns {ids: the kept ids, most probable first (the lower id first among equals),
  // weights: exp(logProb / temperature - top) of each kept id, total: their sum, tempered:
  // id -> its probability at this temperature over the whole vocabulary}.
  function steered(logProbs, temperature, k, p) {
    var ids = Array.from(logProbs.keys());
    ids.sort(function (a, b) { return logProbs[b] - logProbs[a] || a - b; });
    var tempered = function (id) { return id === ids[0] ? 1 : 0; };
    if (!(temperature > 0)) return {ids: ids.slice(0, 1), weights: [1], total: 1,
                                    tempered: tempered};
    var top = logProbs[ids[0]] / temperature;
    var all = 0;
    for (var v = 0; v < logProbs.length; v++) all += Math.exp(logProbs[v] / temperature - top);
    tempered = function (id) { return Math.exp(logProbs[id] / temperature - top) / all; };
    if (k > 0) ids = ids.slice(0, k);
    var weights = ids.map(function (id) { return Math.exp(logProbs[id] / temperature - top); });
    var total = weights.reduce(function (s, w) { return s + w; }, 0);
    if (p > 0 && p < 1) {
      var sum = 0;
      for (var i = 0; i < ids.length; i++) {
        sum += weights[i] / total;
        if (sum >= p) break;
      }
      ids = ids.slice(0, i + 1);
      weights = weights.slice(0, i + 1);
      total = weights.reduce(function (s, w) { return s + w; }, 0);
    }
    return {ids: ids, weights: weights, total: total, tempered: tempered};
  }

  // One draw from the steered distribution: the id whose cumulative probability first passes
  // `u`. Temperature 0 is the argmax: greedy decoding.
  function sampleId(logProbs, temperature, k, u, p) {
    if (!(temperature > 0)) return argmax(logProbs);
    var s = steered(logProbs, temperature, k, p === undefined ? 1 : p);
    var sum = 0;
    for (var i = 0; i < s.ids.length; i++) {
      sum += s.weights[i] / s.total;
      if (u < sum) return s.ids[i];
    }
    return s.ids[s.ids.length - 1];
  }

  // Sampling to the end from a fresh start: one draw of the generator per step.
  async function sample(model, text, temperature, k, seed, p) {
    var state = await begin(model, text);
    var random = mulberry32(seed);
    state.sampled = true;
    await run(state);
    while (!finished(state)) {
      var next = sampleId(state.last.logProbs, temperature, k, random(), p);
      if (next !== argmax(state.last.logProbs)) state.forced += 1;
      state.ys.push(next);
      if (!finished(state)) await run(state);
    }
    return state;
  }

  // Beam search as vanilla_transformer.inference.beam.beam_search runs it for one sentence:
  // each step ranks the 2k best one-token extensions of the k alive prefixes (scores summed in
  // float32, as torch does); one of the first k that ends with </s> (or any of them at the last
  // step) is finished with score log P / lp, lp = ((5 + length) / 6)^alpha; the best k that
  // did not end stay alive; it stops once k are finished and the best alive prefix, over the
  // largest penalty still reachable, cannot beat the k-th. Returns every step's prefixes for
  // the tree, and the finished hypotheses, best first.
  async function beamSearch(model, text, k, alpha) {
    var d = model.manifest.decoding;
    var state = await begin(model, text);
    var maxLen = state.maxLen;
    var alive = [{ys: [d.start_symbol], score: 0, node: 0}];
    var nodes = [{parent: -1, token: d.start_symbol, t: 0, logProb: 0, end: false}];
    var finishedHyps = [];
    var bestPenalty = Math.pow((5 + maxLen - 1) / 6, alpha);
    for (var t = 1; t < maxLen; t++) {
      var candidates = [];
      for (var b = 0; b < alive.length; b++) {
        var logProbs = (await model.decodeIds(state.memory, alive[b].ys)).logProbs;
        for (var v = 0; v < logProbs.length; v++) {
          candidates.push({beam: b, token: v, score: Math.fround(alive[b].score + logProbs[v]),
                           index: b * logProbs.length + v});
        }
      }
      candidates.sort(function (x, y) { return y.score - x.score || x.index - y.index; });
      var top = candidates.slice(0, 2 * k);
      var last = t === maxLen - 1;
      var penalty = Math.pow((5 + t) / 6, alpha);
      var grow = function (c) {
        var node = nodes.length;
        nodes.push({parent: alive[c.beam].node, token: c.token, t: t, logProb: c.score,
                    end: c.token === d.end_symbol});
        return node;
      };
      top.slice(0, k).forEach(function (c) {
        if ((last || c.token === d.end_symbol) && isFinite(c.score)) {
          var node = grow(c);
          nodes[node].score = c.score / penalty;
          nodes[node].finished = true;
          finishedHyps.push({ys: alive[c.beam].ys.concat([c.token]), score: c.score / penalty,
                             logProb: c.score, node: node});
        }
      });
      if (last) break;
      var next = top.filter(function (c) { return c.token !== d.end_symbol; }).slice(0, k)
        .map(function (c) {
          return {ys: alive[c.beam].ys.concat([c.token]), score: c.score, node: grow(c)};
        });
      if (finishedHyps.length >= k) {
        var kth = finishedHyps.map(function (h) { return h.score; })
          .sort(function (x, y) { return y - x; })[k - 1];
        if (!next.length || next[0].score / bestPenalty <= kth) break;
      }
      alive = next;
    }
    finishedHyps.sort(function (x, y) { return y.score - x.score; });
    finishedHyps.forEach(function (h) { h.text = model.tokenizer.decode(h.ys.slice(1), d); });
    var ranked = finishedHyps.slice(0, k);
    return {nodes: nodes, ranked: ranked, all: finishedHyps, srcIds: state.srcIds};
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
      if (!layers) return null;
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
      // the scores before the softmax, where the model computes them (the live model)
      encoderScores: state.encoderScores,
      selfScores: last ? cut(last.selfScores) : null,
      crossScores: last ? cut(last.crossScores) : null,
      rows: rows,
      candidates: !done && last ? topK(last.logProbs, 5) : [],
    };
  }

  // ------------------------------------------------------------------------------------------ //
  // What a switch moved: numbers before and after, from the live model                         //
  // ------------------------------------------------------------------------------------------ //

  // The trained greedy output `ys` fed in under switch `sw`: the product of its pieces'
  // probabilities, the first step where the switched model would write another piece (null
  // when it writes the same output), and the closest call, the step where the written piece
  // leads the runner-up least.
  function forcedRun(live, srcIds, ys, sw) {
    var memory = live.encode(srcIds, sw);
    var logP = 0, first = null, closest = null;
    for (var t = 1; t < ys.length; t++) {
      var lp = live.decode(memory, ys.slice(0, t), sw).logProbs;
      logP += lp[ys[t]];
      var two = topK(lp, 2);
      var other = two[0].id === ys[t] ? two[1] : two[0];
      var prob = Math.exp(lp[ys[t]]);
      if (first === null && two[0].id !== ys[t]) {
        first = {t: t, id: ys[t], prob: prob, other: other.id, otherProb: other.prob};
      }
      if (!closest || prob - other.prob < closest.gap) {
        closest = {t: t, id: ys[t], prob: prob, other: other.id, otherProb: other.prob,
                   gap: prob - other.prob};
      }
    }
    return {memory: memory, prob: Math.exp(logP), first: first, closest: closest};
  }

  // One map (kind, layer counted from 0) with the trained output fed in: a row's largest
  // weight, averaged over the heads and the rows, and each row's brightest column.
  function mapPeak(live, ys, run, sw, kind, layer) {
    var grids = kind === "encoder-self" ? run.memory.weights[layer] :
      live.decode(run.memory, ys.slice(0, -1), sw)[kind === "cross" ? "cross" : "self"]
        .weights[layer];
    var sum = 0, brightest = [];
    grids.forEach(function (grid) {
      grid.forEach(function (row) {
        sum += Math.max.apply(null, row);
        brightest.push(argmax(row));
      });
    });
    return {peak: sum / brightest.length, brightest: brightest};
  }

  // Every head of every attention, silenced in turn: the one whose silencing lowers the
  // probability of the trained output most (the first of equals, in the order of KINDS, then
  // layers, then heads).
  function mostImportantHead(live, srcIds, ys) {
    var best = null;
    ["encoder-self", "decoder-self", "cross"].forEach(function (kind) {
      for (var layer = 0; layer < live.config.N; layer++) {
        for (var head = 0; head < live.config.h; head++) {
          var sw = {name: "silence-head", kind: kind, layer: layer, head: head};
          var prob = forcedRun(live, srcIds, ys, sw).prob;
          if (!best || prob < best.prob) {
            best = {kind: kind, layer: layer, head: head, prob: prob};
          }
        }
      }
    });
    return best;
  }

  // Before and after `sw`, for the text's trained greedy output: its probability, the map on
  // show's peaks, and where the outputs part.
  function breakEffect(live, text, sw, kind, layer) {
    var trained = live.greedy(text, "none");
    var before = forcedRun(live, trained.srcIds, trained.ys, "none");
    var after = forcedRun(live, trained.srcIds, trained.ys, sw);
    var effect = {sw: sw, ys: trained.ys, text: trained.text, before: before, after: after,
                  kind: kind, layer: layer,
                  peakBefore: mapPeak(live, trained.ys, before, "none", kind, layer),
                  peakAfter: mapPeak(live, trained.ys, after, sw, kind, layer)};
    if (sw.name === "silence-head") {
      effect.best = mostImportantHead(live, trained.srcIds, trained.ys);
    }
    return effect;
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

  var NARROW_CELL = 28;
  var WIDE_CELL = 40;  // where the box has room: each cell prints its weight
  var MAP_HEIGHT = 480;  // a longer output shrinks the cells, so the map stays in view
  var SMALL_CELL = 12;  // the lowest row, with tick labels of 11 px
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

  // A score before the softmax as the page prints it; a masked key's is -1e9.
  function scoreText(score) {
    return score <= -1e8 ? "masked" : score.toFixed(3);
  }

  // One map: `grid` rows x cols of weights in [0, 1], `scores` the same cells' scores before
  // the softmax (or null where they are not known); `onCell(i, j)` when a cell is chosen.
  function drawHeatmap(box, rowTokens, colTokens, grid, scores, title, onCell) {
    var longest = function (tokens) {
      return tokens.reduce(function (m, t) { return Math.max(m, Array.from(t).length); }, 0);
    };
    var left = Math.ceil(longest(rowTokens) * CHAR) + 2 * GAP;
    var top = Math.ceil(longest(colTokens) * CHAR) + 2 * GAP;
    // wide cells that print their weight where the box has room for them, narrower ones
    // otherwise; a long output makes the rows lower, so that the whole map fits MAP_HEIGHT
    var wide = left + colTokens.length * WIDE_CELL + GAP <= box.clientWidth;
    var CELL = wide ? WIDE_CELL : NARROW_CELL;
    var ROW = Math.max(SMALL_CELL, Math.min(CELL, Math.floor(MAP_HEIGHT / rowTokens.length)));
    var printed = CELL === WIDE_CELL && ROW === CELL;
    var tickSize = Math.max(11, Math.min(12.5, ROW - 1));
    var width = left + colTokens.length * CELL + GAP;
    var height = top + rowTokens.length * ROW + GAP;
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
      var y = top + i * ROW + ROW / 2;
      var label = svg("text", {"class": "translator-tick translator-tick--y", x: left - GAP,
                               y: y + 4, style: "font-size:" + tickSize + "px"}, root);
      label.textContent = token;
      grid[i].forEach(function (weight, j) {
        var cell = svg("rect", {"class": "translator-cell", x: left + j * CELL,
                                y: top + i * ROW, width: CELL, height: ROW,
                                "fill-opacity": weight.toFixed(4), "data-row": i,
                                "data-col": j, "data-weight": weight.toFixed(6)}, root);
        if (scores) cell.dataset.score = scores[i][j].toFixed(6);
        svg("title", {}, cell).textContent = token + " \u2192 " + colTokens[j] + ": " +
          (scores ? "score " + scoreText(scores[i][j]) + ", " : "") + "weight " +
          weight.toFixed(3);
        cell.addEventListener("click", function () { onCell(i, j); });
        cell.addEventListener("mouseenter", function () { onCell(i, j); });
        if (printed) {
          var value = svg("text", {"class": "translator-value" +
                                   (weight > 0.5 ? " translator-value--on-dark" : ""),
                                   x: left + j * CELL + CELL / 2, y: top + i * ROW + ROW / 2 + 4},
                          root);
          value.textContent = weight.toFixed(2).replace(/^0/, "");
        }
      });
    });
    svg("rect", {"class": "translator-frame", x: left, y: top, width: colTokens.length * CELL,
                 height: rowTokens.length * ROW}, root);
    box.replaceChildren(root);
  }

  // The beam tree: one column per step, one box per prefix the search kept (its last piece and
  // log P so far), a line to the prefix it grew from; finished hypotheses end in </s> with their
  // score log P / lp; the best one's path is drawn thick and its box framed. data-best is its
  // text, data-hypotheses every finished one as "text score" lines.
  var BEAM_ROW = 40, BEAM_CHAR = 7.4;  // a character of 12 px monospace text, with some room

  function drawBeamTree(tree, result, tokenizer) {
    var nodes = result.nodes;
    // each box as wide as the longest piece or score it holds
    var chars = nodes.reduce(function (m, node) {
      return Math.max(m, Array.from(tokenizer.tokens([node.token])[0]).length);
    }, "log P -00.000".length);
    var BEAM_BOX = Math.ceil(chars * BEAM_CHAR) + 10, BEAM_COL = BEAM_BOX + 14;
    var perColumn = [];
    nodes.forEach(function (node, i) {
      var column = perColumn[node.t] || (perColumn[node.t] = []);
      node.slot = column.length;
      column.push(i);
    });
    var rows = perColumn.reduce(function (m, c) { return Math.max(m, c.length); }, 0);
    var width = perColumn.length * BEAM_COL + 8, height = rows * BEAM_ROW + 8;
    var room = tree.parentNode ? tree.parentNode.clientWidth : width;
    tree.dataset.layout = width <= room ? "columns" : "outline";
    if (width > room) drawBeamOutline(tree, result, tokenizer, room);
    else drawBeamColumns(tree, result, tokenizer, width, height, BEAM_BOX, BEAM_COL);
    tree.dataset.best = result.ranked[0].text;
    tree.dataset.bestScore = result.ranked[0].score.toFixed(6);
    tree.dataset.hypotheses = result.all.map(function (h) {
      return h.text + " " + h.score.toFixed(6);
    }).join("\n");
    tree.setAttribute("aria-label", "Beam search tree: " + result.all.length +
                      " finished hypotheses; the best is " + result.ranked[0].text + ", score " +
                      result.ranked[0].score.toFixed(3) + ".");
  }

  function beamScoreText(node) {
    return node.t === 0 ? "start" : node.finished ? "score " + node.score.toFixed(3) :
      "log P " + node.logProb.toFixed(3);
  }

  // One box: the node's piece and its score, framed, with the data the tests read.
  function beamBox(tree, node, i, best, x, y, w, oneLine, tokenizer) {
    var g = svg("g", {"class": "beam-node" + (node.finished ? " beam-node--finished" : "") +
                      (i === best.node ? " beam-node--best" : ""),
                      "data-node": i, "data-step": node.t}, tree);
    svg("rect", {x: x, y: y, width: w, height: oneLine ? 20 : 32, rx: 4}, g);
    var token = tokenizer.tokens([node.token])[0];
    var label = svg("text", {x: x + 5, y: y + 14 - (oneLine ? 0 : 1), "class": "beam-token"}, g);
    label.textContent = token;
    var value = svg("text", {x: oneLine ? x + 13 + Array.from(token).length * BEAM_CHAR : x + 5,
                             y: oneLine ? y + 14 : y + 27, "class": "beam-score"}, g);
    value.textContent = beamScoreText(node);
    if (node.finished) {
      g.dataset.score = node.score.toFixed(6);
      g.dataset.logProb = node.logProb.toFixed(6);
    }
  }

  // Where the columns do not fit: one line per kept prefix, each under the prefix it grew from
  // and indented by its step, as a file tree; the indent shrinks until the deepest line fits.
  function drawBeamOutline(tree, result, tokenizer, room) {
    var nodes = result.nodes, best = result.ranked[0];
    var children = nodes.map(function () { return []; });
    nodes.forEach(function (node, i) { if (node.parent >= 0) children[node.parent].push(i); });
    var order = [];
    var visit = function (i) { order.push(i); children[i].forEach(visit); };
    visit(0);
    var chars = function (i) {
      return Array.from(tokenizer.tokens([nodes[i].token])[0]).length + 1 +
        beamScoreText(nodes[i]).length;
    };
    var deepest = 0, widest = 0;
    nodes.forEach(function (node, i) {
      deepest = Math.max(deepest, node.t);
      widest = Math.max(widest, Math.ceil(chars(i) * BEAM_CHAR) + 16);
    });
    // a deep tree (an untrained model's) gets a smaller indent, down to none, to fit the room
    var indent = Math.max(0, Math.min(18, Math.floor((room - widest - 8) / Math.max(1, deepest))));
    var ROW = 24;
    var at = {};
    order.forEach(function (i, r) { at[i] = {x: 4 + nodes[i].t * indent, y: 4 + r * ROW}; });
    var width = 0;
    order.forEach(function (i) { width = Math.max(width, at[i].x + Math.ceil(chars(i) * BEAM_CHAR) + 20); });
    var height = order.length * ROW + 8;
    tree.setAttribute("width", width);
    tree.setAttribute("height", height);
    tree.setAttribute("viewBox", "0 0 " + width + " " + height);
    tree.replaceChildren();
    var onPath = new Set();
    for (var n = best.node; n >= 0; n = nodes[n].parent) onPath.add(n);
    order.forEach(function (i) {
      var parent = nodes[i].parent;
      if (parent < 0) return;
      var a = at[parent], b = at[i];
      svg("path", {"class": "beam-edge" + (onPath.has(i) ? " beam-edge--best" : ""),
                   d: "M" + (a.x + 4) + "," + (a.y + 20) + " V" + (b.y + 10) + " H" + b.x}, tree);
    });
    order.forEach(function (i) {
      beamBox(tree, nodes[i], i, best, at[i].x, at[i].y,
              Math.ceil(chars(i) * BEAM_CHAR) + 16, true, tokenizer);
    });
  }

  function drawBeamColumns(tree, result, tokenizer, width, height, BEAM_BOX, BEAM_COL) {
    var nodes = result.nodes;
    tree.setAttribute("width", width);
    tree.setAttribute("height", height);
    tree.setAttribute("viewBox", "0 0 " + width + " " + height);
    tree.replaceChildren();
    var best = result.ranked[0];
    var onPath = new Set();
    for (var at = best.node; at >= 0; at = nodes[at].parent) onPath.add(at);
    var place = function (i) {
      return {x: 4 + nodes[i].t * BEAM_COL, y: 4 + nodes[i].slot * BEAM_ROW};
    };
    nodes.forEach(function (node, i) {
      if (node.parent < 0) return;
      var a = place(node.parent), b = place(i);
      svg("path", {"class": "beam-edge" + (onPath.has(i) ? " beam-edge--best" : ""),
                   d: "M" + (a.x + BEAM_BOX) + "," + (a.y + 16) + " C" + (a.x + BEAM_COL - 4) +
                      "," + (a.y + 16) + " " + (b.x - 10) + "," + (b.y + 16) + " " + b.x + "," +
                      (b.y + 16)}, tree);
    });
    nodes.forEach(function (node, i) {
      var p = place(i);
      beamBox(tree, node, i, best, p.x, p.y, BEAM_BOX, false, tokenizer);
    });
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
      verdict: q("#translator-verdict"),
      language: q("#translator-language", "select", "de"),
      kind: q("#explorer-kind", "select", "cross"),
      layer: q("#explorer-layer", "select"), head: q("#explorer-head", "select"),
      cell: q("#explorer-cell"), step: q("#explorer-step", "button"),
      restart: q("#explorer-restart", "button"), finish: q("#explorer-finish", "button"),
      hint: q("#explorer-hint"),
      topk: q("#explorer-topk", "ol"), checkpoint: q("#explorer-checkpoint", "input", "99"),
      checkpointLabel: q("#explorer-checkpoint-label"),
      replayOff: q("#explorer-replay-off", "button"),
      play: q("#explorer-play", "button"), ticks: q("#explorer-ticks"),
      stats: q("#explorer-checkpoint-stats"),
      temperature: q("#explorer-temperature", "input", "0"),
      temperatureValue: q("#explorer-temperature-value"),
      topK: q("#explorer-top-k", "select", "0"), topP: q("#explorer-top-p", "input", "1"),
      topPValue: q("#explorer-top-p-value"), cutNote: q("#explorer-cut-note"),
      seed: q("#explorer-seed", "input", "1"),
      sample: q("#explorer-sample", "button"),
      // under the widget, so that the widget stays short while the tree grows
      beam: root.querySelector("#explorer-beam-tree") || (root.querySelector("#explorer-cell") ?
        document.getElementById("explorer-beam-tree") : null),
      brk: q("#explorer-break", "select", "none"),
      effect: q("#explorer-break-effect"), pathNote: q("#explorer-path-note"),
    };
    var lives = {};  // lang -> the loaded live model, for the scores of the ONNX models' maps
    var liveApi = function () {
      return window.translatorDemo && window.translatorDemo.liveModel;
    };
    var loadLive = function (language) {
      var api = liveApi();
      if (!api) return Promise.reject(new Error("live_model.js is not loaded"));
      return api.load(language).then(function (model) {
        lives[language] = model;
        return model;
      });
    };
    // The live model of a language (about 1 MB), for the scores before the softmax of the maps
    // the ONNX graphs draw: once loaded, the map is drawn again with them. Not on Home.
    var scoresFor = function (language) {
      if (!root.querySelector("#explorer-cell")) return;
      loadLive(language).then(function () {
        root.dataset["live" + language.toUpperCase()] = "1";
        drawMap();
      }, function () {});
    };
    // The switch chosen in #explorer-break; silence-head silences the map's head on show, and
    // with the average of the heads on show, the head that matters most (`pick`: the page
    // measures which, for the sentence, once the live model is loaded).
    var chosenSwitch = function () {
      var name = el.brk.value || "none";
      if (name !== "silence-head") return {name: name};
      return {name: name, kind: el.kind.value, layer: Math.max(0, Number(el.layer.value) - 1),
              head: el.head.value === "average" ? 0 : Math.max(0, Number(el.head.value) - 1),
              pick: el.head.value === "average"};
    };
    var showHead = function (head) {
      el.kind.value = head.kind;
      el.layer.value = String(head.layer + 1);
      el.head.value = String(head.head + 1);
    };
    var KIND_NAMES = {"cross": "cross-attention", "decoder-self": "decoder self-attention",
                      "encoder-self": "encoder self-attention"};
    var headName = function (h) {
      return "head " + (h.head + 1) + " of layer " + (h.layer + 1) + "\u2019s " +
        KIND_NAMES[h.kind];
    };
    var fmt = function (x) { return x >= 0.001 || x === 0 ? x.toFixed(3) : x.toExponential(1); };
    var pct = function (x) { return (100 * x).toFixed(x < 0.01 ? 2 : 1) + "\u00a0%"; };
    // #explorer-break-effect: what the switch on show moved, before and after, in numbers, and
    // why the output changes or does not.
    var showEffect = function (text) {
      var box = el.effect;
      var sw = current && current.model.switch;
      var live = lives[lang()];
      if (!sw || sw.name === "none" || !live || !box.isConnected) {
        box.hidden = true;
        box.replaceChildren();
        box.dataset.state = "none";
        return;
      }
      var kind = el.kind.value, layer = Math.max(0, Number(el.layer.value) - 1);
      var e = breakEffect(live, text, sw, kind, layer);
      var tok = live.tokenizer;
      var piece = function (id) { return tok.tokens([id])[0]; };
      var b = e.before, a = e.after;
      box.dataset.switch = sw.name;
      box.dataset.probBefore = b.prob.toExponential(6);
      box.dataset.probAfter = a.prob.toExponential(6);
      box.dataset.peakBefore = e.peakBefore.peak.toFixed(6);
      box.dataset.peakAfter = e.peakAfter.peak.toFixed(6);
      box.dataset.kind = kind;
      box.dataset.layer = String(layer + 1);
      box.dataset.changed = a.first ? "true" : "false";
      var parts = [];
      var em = function (t) {
        var n = document.createElement("em");
        n.textContent = t;
        return n;
      };
      var line = function () {
        var p = document.createElement("p");
        p.append.apply(p, arguments);
        return p;
      };
      if (sw.name === "silence-head") {
        box.dataset.head = [sw.kind, sw.layer + 1, sw.head + 1].join(" ");
        box.dataset.best = [e.best.kind, e.best.layer + 1, e.best.head + 1].join(" ");
        parts.push(line("Silenced: " + headName(sw) + "."));
      }
      var moved = line("What it moved, with the trained translation ", em(e.text),
        " fed in: its probability, the product of its pieces\u2019 probabilities, " +
        (a.prob < b.prob ? "falls" : "rises") + " from ");
      var num = function (x, name) {
        var n = document.createElement("strong");
        n.className = "explorer__effect-number";
        n.dataset.value = name;
        n.textContent = fmt(x);
        return n;
      };
      moved.append(num(b.prob, "before"), " to ", num(a.prob, "after"), ".");
      parts.push(moved);
      if (sw.name === "no-scale") {
        var moves = e.peakBefore.brightest.filter(function (c, i) {
          return c !== e.peakAfter.brightest[i];
        }).length;
        box.dataset.rowsMoved = String(moves);
        parts.push(line("In the map on show (layer " + (layer + 1) + ", " + KIND_NAMES[kind] +
          "), a row\u2019s largest weight, averaged over the heads and rows, goes from " +
          e.peakBefore.peak.toFixed(3) + " to " + e.peakAfter.peak.toFixed(3) +
          "; the brightest cell moves in " + moves + " of " + e.peakBefore.brightest.length +
          " rows."));
      }
      if (a.first) {
        parts.push(line("The output changes at piece " + a.first.t + ": the broken model puts " +
          pct(a.first.otherProb) + " on ", em(piece(a.first.other)), " and " +
          pct(a.first.prob) + " on ", em(piece(a.first.id)), ", the trained model\u2019s piece."));
      } else {
        var c = a.closest;
        var why = line("The output stays the same: every piece of it is still the most " +
          "probable one. The closest call, ", em(piece(c.id)), ", still leads ",
          em(piece(c.other)), " by " + pct(c.prob) + " to " + pct(c.otherProb) + ".");
        if (sw.name === "no-scale") {
          why.append(" Without the division every score is \u221ad_k = " +
            Math.sqrt(live.config.d_model / live.config.h) + " times larger: each softmax " +
            "sharpens, yet at every step the same piece stays on top.");
        }
        parts.push(why);
      }
      if (sw.name === "silence-head") {
        var same = e.best.kind === sw.kind && e.best.layer === sw.layer &&
          e.best.head === sw.head;
        if (same) {
          parts.push(line("Of all " + 3 * live.config.N * live.config.h + " heads, this is " +
            "the one whose silencing moves that probability most, for this sentence."));
        } else {
          var go = document.createElement("button");
          go.type = "button";
          go.className = "md-button";
          go.id = "explorer-best-head";
          go.textContent = "Silence " + headName(e.best);
          go.addEventListener("click", function () {
            showHead(e.best);
            translateNow();
          });
          parts.push(line("The head that matters most for this sentence, of all " +
            3 * live.config.N * live.config.h + ", is " + headName(e.best) +
            ": silenced, it takes that probability to " + fmt(e.best.prob) + ". ", go));
        }
      }
      box.replaceChildren.apply(box, parts);
      box.hidden = false;
      box.dataset.state = "done";
      box.dataset.text = text;
    };
    // Every map's scores before the softmax, cut to the rows on show: the live model computes
    // them with the maps; for the ONNX graphs of a final model, the live model computes them
    // again on the same input (checked equal to PyTorch's by tests/docs/test_live_model.py).
    var scoresOf = function (state, v) {
      var last = state.last;
      if (!last) return null;
      var cut = function (layers) {
        return layers.map(function (heads) {
          return heads.map(function (grid) { return grid.slice(0, v.rows); });
        });
      };
      if (last.crossScores) {
        return {"encoder-self": state.encoderScores, "decoder-self": cut(last.selfScores),
                "cross": cut(last.crossScores)};
      }
      var live = lives[state.model.lang];
      if (!live || state.model.step !== "final") return null;
      if (!last.liveScores) {
        var enc = live.encode(state.srcIds, "none");
        var dec = live.decode(enc, last.ys, "none");
        last.liveScores = {"encoder-self": enc.scores, "decoder-self": dec.self.scores,
                           "cross": dec.cross.scores};
      }
      var s = last.liveScores;
      return {"encoder-self": s["encoder-self"], "decoder-self": cut(s["decoder-self"]),
              "cross": cut(s.cross)};
    };
    var playing = false;
    var playTimer = null;
    var latest = 0;
    var timer = null;
    var current = null;  // the state on show
    var afterTranslation = null;  // what an experiment does once its sentence is translated
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
      showVerdict(null);
      el.effect.hidden = true;
      el.effect.replaceChildren();
      el.effect.dataset.state = "none";
      root.dataset.ys = "";
    };
    var lang = function () { return el.language.value || "de"; };
    // "final" (the page's model), or the folder name of the replayed run's checkpoint
    var stepKey = function () {
      var manifest = root.__manifest;
      if (lang() !== "de" || !manifest || root.dataset.replay !== "on") return "final";
      if (el.brk.value && el.brk.value !== "none") return "final";
      var steps = manifest.training_steps;
      var i = Math.min(Number(el.checkpoint.value), steps.length - 1);
      return steps[i].folder.split("/")[1];
    };

    var fillSelectors = function (v) {
      var N = v.crossMaps.length, h = v.crossMaps[0].length;
      if (el.layer.options.length !== N) {
        el.layer.replaceChildren();
        // numbered from 1, as the page speaks of them; it opens on the last layer
        for (var l = 1; l <= N; l++) option(el.layer, String(l), "layer " + l);
        el.layer.value = String(N);
      }
      if (el.head.options.length !== h + 1) {
        el.head.replaceChildren();
        option(el.head, "average", "average of the " + h + " heads");
        for (var a = 1; a <= h; a++) option(el.head, String(a), "head " + a);
        // head 1 of the last cross-attention is the crisp one; the average is one click away.
        // Home's small version has no menu and shows the average, the whole route at once.
        el.head.value = el.head.isConnected ? "1" : "average";
      }
    };

    var drawMap = function () {
      if (!current) return;
      var v = view(current);
      if (!v.crossMaps.length) return;
      fillSelectors(v);
      // layers and heads are numbered from 1 in the selectors and the data attributes
      var kind = el.kind.value, layer = Number(el.layer.value), head = el.head.value;
      var layers = kind === "encoder-self" ? v.encoder :
        kind === "decoder-self" ? v.selfMaps : v.crossMaps;
      var grids = layers[layer - 1];
      var grid = head === "average" ? average(grids) : grids[Number(head) - 1];
      // an average of softmaxes is no softmax of scores: the average shows weights only
      var allScores = scoresOf(current, v);
      var scoreLayers = allScores && head !== "average" ? allScores[kind] : null;
      var scores = scoreLayers ? scoreLayers[layer - 1][Number(head) - 1] : null;
      var pending = v.done ? [] : ["\u25b8 next"];
      var rowTokens = kind === "encoder-self" ? v.srcTokens : v.tgtTokens.concat(pending);
      var colTokens = kind === "encoder-self" ? v.srcTokens :
        kind === "decoder-self" ? v.inputTokens : v.srcTokens;
      var what = {"cross": "where each German token looks among the English tokens",
                  "decoder-self": "where each German token looks among the German tokens " +
                                  "before it",
                  "encoder-self": "where each English token looks among the English tokens"};
      var headText = head === "average" ? "averaged over its heads" : "head " + head;
      var title = "Layer " + layer + ", " + headText + ": " + what[kind] + ".";
      var sw = current.model.switch;
      var note = !sw || sw.name === "none" ? "" : " Switched: " + SWITCH_NOTES[sw.name] + ".";
      el.caption.textContent = title + " Each row adds up to one." + note;
      el.heatmap.dataset.kind = kind;
      el.heatmap.dataset.switch = sw ? sw.name : "none";
      el.heatmap.dataset.scores = scores ? "1" : "0";
      el.heatmap.dataset.layer = layer;
      el.heatmap.dataset.head = head;
      drawHeatmap(el.heatmap, rowTokens, colTokens, grid, scores, title, function (i, j) {
        el.cell.textContent = rowTokens[i] + " \u2192 " + colTokens[j] + ": " +
          (scores ? "score before the softmax " + scoreText(scores[i][j]) + ", weight " :
           head === "average" ? "average weight " : "weight ") + grid[i][j].toFixed(3);
        el.cell.dataset.row = i;
        el.cell.dataset.col = j;
        el.cell.dataset.weight = grid[i][j].toFixed(6);
        if (scores) el.cell.dataset.score = scores[i][j].toFixed(6);
        else delete el.cell.dataset.score;
      });
    };

    // Right or wrong, for a German output of a text the page reads as a number: the expected
    // words are num2words's. Shown once decoding has finished; hidden otherwise.
    var showVerdict = function (v) {
      var box = el.verdict;
      var n = v && lang() === "de" ? parseNumber(current.text) : null;
      if (n === null) {
        box.hidden = true;
        box.textContent = "";
        delete box.dataset.correct;
        delete box.dataset.expected;
        return;
      }
      var expected = germanWords(n);
      box.dataset.expected = expected;
      if (!v.done) {
        box.hidden = true;
        delete box.dataset.correct;
        return;
      }
      var right = v.text === expected;
      box.dataset.correct = String(right);
      box.hidden = false;
      box.replaceChildren();
      if (right) {
        box.textContent = "\u2713 right";
      } else {
        var word = document.createElement("strong");
        word.lang = "de";
        word.textContent = expected;
        box.append("\u2717 wrong: the right German is ", word);
      }
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
      showVerdict(v);
      el.step.disabled = v.done;
      el.finish.disabled = v.done;
      el.hint.textContent = v.done ?
        "Decoding has finished. Start over to write the output one token at a time." :
        "The five most probable next tokens, after the tokens written so far:";
      drawCandidates(v);
      drawMap();
    };

    // The five most probable next tokens, with their probabilities at the temperature on the
    // slider; those that top-k or top-p cut are greyed out, and the note under the list says
    // what Sample draws from. Redrawn as a steering control moves, without running the model.
    var drawCandidates = function (v) {
      var steer = steering();
      var last = current.last;
      var cut = !v.done && last ? steered(last.logProbs, steer.temperature, steer.k, steer.p) :
        null;
      var kept = cut ? new Set(cut.ids) : new Set();
      el.topk.dataset.temperature = String(steer.temperature);
      el.topk.dataset.topK = String(steer.k);
      el.topk.dataset.topP = String(steer.p);
      el.topk.replaceChildren.apply(el.topk, v.candidates.map(function (c, rank) {
        var item = document.createElement("li");
        var token = current.model.tokenizer.tokens([c.id])[0];
        var prob = cut.tempered(c.id);
        var isCut = !kept.has(c.id);
        item.dataset.token = token;
        item.dataset.id = c.id;
        item.dataset.prob = prob.toFixed(6);
        item.dataset.trained = c.prob.toFixed(6);  // at temperature 1
        item.dataset.cut = isCut ? "1" : "0";
        item.classList.toggle("is-cut", isCut);
        var button = document.createElement("button");
        button.type = "button";
        button.className = "explorer__candidate";
        var bar = document.createElement("span");
        bar.className = "explorer__bar";
        bar.style.width = (100 * prob).toFixed(1) + "%";
        var label = document.createElement("code");
        label.textContent = token;
        var shown = document.createElement("span");
        shown.className = "explorer__prob";
        shown.textContent = (isCut ? "cut, " : "") + (100 * prob).toFixed(1) + " %";
        button.append(bar, label, shown);
        button.title = (rank === 0 ? "the greedy choice" : "write this token instead") +
          (isCut ? "; Sample never draws it at these settings" : "");
        button.addEventListener("click", function () { act(c.id); });
        item.appendChild(button);
        return item;
      }));
      var note = el.cutNote;
      if (!cut) {
        note.textContent = "";
        note.dataset.kept = "0";
        return;
      }
      var mass = cut.ids.reduce(function (s, id) { return s + cut.tempered(id); }, 0);
      note.dataset.kept = String(cut.ids.length);
      note.dataset.mass = mass.toFixed(6);
      note.textContent = (steer.temperature > 0 ? "At temperature " +
        steer.temperature.toFixed(1) + ", " : "At temperature 0, greedy: ") +
        (cut.ids.length === 1 ? "Sample can only write the top piece" :
         "Sample draws from the " + cut.ids.length + " pieces kept") +
        (cut.ids.length < current.last.logProbs.length ? ", " + (100 * mass).toFixed(1) +
         " % of the probability, scaled up to 100 %." : ", the whole vocabulary.");
    };

    var describe = function (v, ms) {
      if (v.done) {
        return "Translated in " + Math.round(ms) + " ms: " + v.tgtTokens.length +
          " decoder steps" + (!current.forced ? "" : current.sampled ? ", " + current.forced +
          " of them not the most probable token" : ", " + current.forced + " of them chosen by you") +
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
        } else if (id === "sample") {
          var steer = steering();
          var sampled = await sample(state.model, state.text, steer.temperature, steer.k,
                                     steer.seed, steer.p);
          current = sampled;
          root.dataset.sample = [steer.temperature, steer.k, steer.seed, steer.p].join(" ");
        } else if (!finished(state)) {
          await step(state, id);
        }
        if (stale(request)()) return;
        if (id !== "sample") delete root.dataset.sample;
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
      var sw = chosenSwitch();
      root.dataset.switch = sw.name;
      say("loading", "Loading the model\u2026");
      el.effect.dataset.state = sw.name === "none" ? "none" : "busy";
      var loading = sw.name === "none" ? loadModel(lang(), key) :
        loadLive(lang()).then(function (live) {
          if (sw.pick && !problem(live, text)) {
            var trained = live.greedy(text, "none");
            showHead(mostImportantHead(live, trained.srcIds, trained.ys));
            sw = chosenSwitch();
          }
          return liveApi().adapter(live, sw);
        });
      loading.then(function (model) {
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
          el.cell.textContent = "";  // a pointed cell belongs to the sentence before
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
          showEffect(text);
          if (afterTranslation) {
            var then = afterTranslation;
            afterTranslation = null;
            then();
          }
          if (playing) {
            // Play shows the maps; the beam tree waits for the last checkpoint (a beam search
            // of an untrained model runs to the longest output, and would hold Play up)
            playTimer = setTimeout(playNext, PLAY_MS);
            if (el.beam) el.beam.dataset.state = "waiting";
          } else {
            drawBeam(model, text, request);
          }
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
      Array.from(el.ticks.children).forEach(function (tick, j) {
        if (j === i && root.dataset.replay === "on") tick.setAttribute("aria-current", "step");
        else tick.removeAttribute("aria-current");
      });
      showStats(root.dataset.replay === "on" ? entry.folder.split("/")[1] : "final");
      el.checkpoint.setAttribute("aria-valuetext", text);
      el.checkpoint.disabled = lang() !== "de";
      el.play.disabled = lang() !== "de";
      if (lang() !== "de") setPlaying(false);
      el.replayOff.disabled = root.dataset.replay !== "on";
    };

    var steering = function () {
      var seed = Math.floor(Number(el.seed.value));
      var p = Number(el.topP.value);
      return {temperature: Number(el.temperature.value), k: Number(el.topK.value),
              p: p > 0 && p <= 1 ? p : 1, seed: Number.isFinite(seed) && seed >= 0 ? seed : 0};
    };

    // The beam tree of the text just translated, drawn once the greedy translation is on show.
    var drawBeam = function (model, text, request) {
      if (!el.beam) return;
      el.beam.dataset.state = "busy";
      queue = queue.then(async function () {
        if (stale(request)()) return;
        var result = await beamSearch(model, text, BEAM_SIZE, BEAM_ALPHA);
        if (stale(request)()) return;
        drawBeamTree(el.beam, result, model.tokenizer);
        el.beam.dataset.text = text;
        el.beam.dataset.step = model.step;
        el.beam.dataset.state = "done";
      }).catch(function (error) {
        el.beam.dataset.state = "failed";
        say("failed", "Beam search failed: " + error.message);
      });
    };

    // The validation scores of a checkpoint ("final": the page's model), as data-loss and
    // data-exact; nothing for the French model, whose checkpoints were not kept.
    var showStats = function (key) {
      var box = el.stats;
      if (!box.isConnected) return;  // Home's small version has no slider
      if (lang() !== "de") {
        box.textContent = "";
        delete box.dataset.loss;
        delete box.dataset.exact;
        return;
      }
      loadStats().then(function (stats) {
        var entry = stats.checkpoints[key];
        box.dataset.checkpoint = key;
        box.dataset.loss = String(entry.loss);
        box.dataset.exact = String(entry.exact);
        box.textContent = "On the " + stats.pairs + " validation numbers: loss " +
          entry.loss.toFixed(3) + " per token, " + entry.exact.toFixed(1) +
          " % translated exactly right.";
      }, function () { box.textContent = ""; });
    };

    // One label per checkpoint under the slider; a click moves the slider there.
    var drawTicks = function (steps) {
      el.ticks.replaceChildren.apply(el.ticks, steps.map(function (entry, i) {
        var tick = document.createElement("button");
        tick.type = "button";
        tick.className = "explorer__tick";
        tick.textContent = String(entry.step);
        tick.title = "step " + entry.step;
        tick.style.setProperty("--at", String(i / Math.max(1, steps.length - 1)));
        tick.addEventListener("click", function () { moveTo(i); });
        return tick;
      }));
    };

    var moveTo = function (i) {
      el.brk.value = "none";
      el.checkpoint.value = String(i);
      root.dataset.replay = "on";
      setCheckpointLabel();
      translateNow();
    };

    // Play: every checkpoint in turn, from the untrained model, each shown for PLAY_MS once
    // translated.
    var setPlaying = function (on) {
      playing = on;
      clearTimeout(playTimer);
      el.play.textContent = on ? "Pause" : "Play";
      el.play.setAttribute("aria-pressed", String(on));
      root.dataset.playing = on ? "1" : "0";
    };
    var playNext = function () {
      var i = Number(el.checkpoint.value) + 1;
      if (i > Number(el.checkpoint.max)) {
        setPlaying(false);
        if (current) drawBeam(current.model, current.text, latest);
        return;
      }
      moveTo(i);
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
    el.sample.addEventListener("click", function () { act("sample"); });
    // the bars and the top-5 list follow the steering controls as they move
    var showSteering = function () {
      el.temperatureValue.textContent = Number(el.temperature.value).toFixed(1);
      el.topPValue.textContent = Number(el.topP.value).toFixed(2);
      if (current) drawCandidates(view(current));
    };
    showSteering();
    [el.temperature, el.topP, el.topK].forEach(function (control) {
      control.addEventListener("input", showSteering);
      control.addEventListener("change", showSteering);
    });
    el.restart.addEventListener("click", function () { act(null); });
    el.finish.addEventListener("click", function () { act("finish"); });
    // with a head silenced, another map chosen is another head to silence: translate again
    var mapChanged = function () {
      if (el.brk.value === "silence-head") return translateNow();
      drawMap();
      if (el.brk.value === "no-scale" && current) showEffect(current.text);
    };
    [el.kind, el.layer, el.head].forEach(function (select) {
      select.addEventListener("change", mapChanged);
    });
    el.brk.addEventListener("change", function () {
      // a switch changes the page's model, not a replayed checkpoint
      if (el.brk.value !== "none" && root.dataset.replay === "on") {
        setPlaying(false);
        root.dataset.replay = "off";
        setCheckpointLabel();
      }
      translateNow();
    });
    el.play.addEventListener("click", function () {
      if (playing) {  // paused: the beam tree of the checkpoint on show
        setPlaying(false);
        if (current) drawBeam(current.model, current.text, latest);
        return;
      }
      setPlaying(true);
      var last = Number(el.checkpoint.max);
      moveTo(root.dataset.replay !== "on" || Number(el.checkpoint.value) >= last ? 0 :
        Number(el.checkpoint.value) + 1);
    });
    el.checkpoint.addEventListener("input", function () {
      setPlaying(false);
      el.brk.value = "none";
      root.dataset.replay = "on";
      setCheckpointLabel();
      translateNow();
    });
    el.replayOff.addEventListener("click", function () {
      setPlaying(false);
      root.dataset.replay = "off";
      setCheckpointLabel();
      translateNow();
    });
    el.language.addEventListener("change", function () {
      root.dataset.language = lang();
      scoresFor(lang());
      setCheckpointLabel();
      translateNow();
    });

    // A Figure-1 block's intermediate values for the current token, from the live model's
    // trace (explorer_extras.js draws them when a block is pointed at or tapped): `part`
    // "encoder" or "decoder", `layer` from 1, `block` "self", "cross" or "ff". The current
    // token is the decoder row of the map's pointed cell, or else the last row (the one that
    // predicts the next piece); on the encoder side, the English piece of the pointed cell, or
    // else the first. Attention blocks give Q of that token and K and V of the same piece (for
    // cross-attention, of the English piece its query weighs most), for the head on show (head
    // 1 for the average); every block gives its residual x + sublayer(x) and the LayerNorm of
    // it, and the feed-forward block its output before the residual. Null where there is
    // nothing to trace: no translation, the live model not loaded, or a replayed checkpoint.
    root.__blockValues = function (part, layer, block) {
      var live = current && lives[current.model.lang];
      if (!live || current.model.step !== "final" || !current.last) return null;
      var v = view(current);
      var ys = current.ys.slice(0, v.rows);
      var sw = current.model.switch || {name: "none"};
      var trace = live.trace(current.srcIds, ys, sw);
      var tok = live.tokenizer;
      var pointed = el.cell.dataset.row !== undefined && el.cell.textContent !== "";
      var kind = el.heatmap.dataset.kind;
      var row = pointed && kind !== "encoder-self" ? Number(el.cell.dataset.row) : v.rows - 1;
      var col = !pointed ? 0 : kind === "cross" ? Number(el.cell.dataset.col) :
        kind === "encoder-self" ? Number(el.cell.dataset.row) : 0;
      var encoder = part === "encoder";
      var pos = encoder ? Math.min(col, current.srcIds.length - 1) :
        Math.max(0, Math.min(row, v.rows - 1));
      var side = encoder ? trace.source : trace.target;
      var values = side.layers[layer - 1][block];
      var head = el.head.value === "average" ? 0 : Number(el.head.value) - 1;
      var name = function (ids, i) { return tok.tokens([ids[i]])[0]; };
      var token = name(side.ids, pos);
      var rows = [];
      if (block !== "ff") {
        var keyIds = block === "cross" ? trace.source.ids : side.ids;
        var keyPos = pos;
        if (block === "cross") {
          var w = values.weights[head][pos];
          keyPos = w.indexOf(Math.max.apply(null, w));
        }
        var keyName = name(keyIds, keyPos);
        rows.push({name: "q", label: "Q, head " + (head + 1) + ", of " + token,
                   values: values.q[head][pos]});
        rows.push({name: "k", label: "K, head " + (head + 1) + ", of " + keyName,
                   values: values.k[head][keyPos], pos: keyPos});
        rows.push({name: "v", label: "V, head " + (head + 1) + ", of " + keyName,
                   values: values.v[head][keyPos], pos: keyPos});
      } else {
        rows.push({name: "out", label: "feed-forward output of " + token,
                   values: values.out[pos]});
      }
      rows.push({name: "residual", label: "residual stream x + sublayer(x) of " + token,
                 values: values.residual[pos]});
      rows.push({name: "norm", label: "LayerNorm output of " + token, values: values.norm[pos]});
      return {part: part, layer: layer, block: block, pos: pos, token: token, head: head + 1,
              srcIds: current.srcIds.slice(), ys: ys, switch: sw.name, rows: rows,
              headIsAverage: el.head.value === "average"};
    };

    // The suggested experiments, in order: one click sets the page up for each, on the
    // crossing sentence, and the note under them says what to look at.
    var EXPERIMENTS = {
      "crossing": "Cross-attention, layer 2, head 1: the row of ein, the units, is darkest " +
        "under \u201cone\u201d, ahead of \u201cforty-\u201d. German writes the units first, " +
        "and the decoder reads ahead to find them.",
      "temperature": "Temperature 2 at the first step: the bars of the five candidates " +
        "flatten. Drag the temperature toward 0 and they sharpen; top-k and top-p grey out " +
        "what Sample may not draw.",
      "no-scale": "The scores are no longer divided by \u221ad_k. Above the map: how much " +
        "the weights sharpen, how the output\u2019s probability moves, and why the output " +
        "changes or stays.",
      "silence-head": "One head zeroed: of every head of the model, the page silences the " +
        "one whose loss lowers this translation\u2019s probability most, and says by how much.",
      "replay": "Training, replayed from the untrained model: watch the map sharpen and the " +
        "output come right, checkpoint by checkpoint.",
    };
    var experiment = function (name) {
      setPlaying(false);
      el.language.value = "de";
      root.dataset.language = "de";
      root.dataset.replay = "off";
      el.brk.value = "none";
      el.temperature.value = "1";
      el.topK.value = "5";
      el.topP.value = "1";
      input.value = "four hundred and forty-one";
      if (el.layer.options.length) {
        el.kind.value = "cross";
        el.layer.value = String(el.layer.options.length);
        el.head.value = "1";
      }
      if (name === "temperature") {
        el.temperature.value = "2";
        el.topK.value = "0";
        afterTranslation = function () { act(null); };
      } else if (name === "no-scale") {
        el.brk.value = "no-scale";
      } else if (name === "silence-head") {
        el.brk.value = "silence-head";
        el.head.value = "average";  // the page picks the head that matters most
      }
      showSteering();
      setCheckpointLabel();
      root.dataset.experiment = name;
      el.pathNote.textContent = EXPERIMENTS[name];
      root.querySelectorAll("[data-experiment]").forEach(function (button) {
        button.setAttribute("aria-pressed", String(button.dataset.experiment === name));
      });
      if (name === "replay") {
        setPlaying(true);
        moveTo(0);
      } else {
        translateNow();
      }
    };
    root.querySelectorAll("[data-experiment]").forEach(function (button) {
      button.setAttribute("aria-pressed", "false");
      button.addEventListener("click", function () { experiment(button.dataset.experiment); });
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
      drawTicks(model.manifest.training_steps);
      root.dataset.replay = "off";
      setCheckpointLabel();
      // since this page was shown, and since the navigation started (a full page load)
      root.dataset.loadMs = (performance.now() - started).toFixed(1);
      root.dataset.readyAt = performance.now().toFixed(1);
      translateNow();
      scoresFor(lang());
    }, function (error) {
      if (input.isConnected) say("failed", "The model could not be loaded: " + error.message);
    });
  }

  // added to, not replaced: live_model.js adds .liveModel, whichever of the two runs first
  window.translatorDemo = Object.assign(window.translatorDemo || {}, {
    BpeTokenizer: BpeTokenizer, loadModel: loadModel, clean: clean, canonical: canonical,
    parseNumber: parseNumber, numberWords: numberWords, translate: translate, begin: begin,
    run: run, step: step, view: view, topK: topK, germanWords: germanWords,
    mulberry32: mulberry32, sampleId: sampleId, steered: steered, sample: sample,
    beamSearch: beamSearch});

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
