// The live model: the number translator's forward pass written out in JavaScript, over the
// weights of its model.pt (scripts/export_live_model.py writes them as live_model.bin and
// live_model.json beside it), so that a page can see what the ONNX graphs hide and change
// what the model does.
//
// It computes what EncoderDecoder.encode, .decode and .generator compute for the shipped
// translator (post-norm layers, torch's LayerNorm, no final LayerNorm, tied embeddings), in
// float64 over float32 weights, and returns every attention map twice: the scores before the
// softmax, QK^T / sqrt(d_k) with masked keys at -1e9, and the weights after it. A switch
// changes one thing, as vanilla_transformer.analysis.switches does in PyTorch:
//   "none"                the trained model;
//   "no-positions"        the source's positional encodings are not added;
//   "no-scale"            the scores are not divided by sqrt(d_k), in every attention;
//   "no-cross-attention"  each cross-attention sublayer adds zero (its maps are still computed);
//   "silence-head"        one head's slice of the concatenated heads is zeroed before W^O:
//                         {name, kind: "encoder-self" | "decoder-self" | "cross", layer, head},
//                         layer and head counted from 0.
// tests/docs/test_live_model.py checks every switch's greedy output, probabilities, scores and
// weights against PyTorch.
//
// window.translatorDemo.liveModel (translator.js, loaded first, makes window.translatorDemo):
//   SWITCHES                      the switch names above;
//   load(lang)                    Promise of the model of "de" (default) or "fr": a LiveModel
//                                 with .tokenizer, .manifest, .config;
//   model.encode(srcIds, sw)      {memory, scores, weights}, maps indexed [layer][head][row][col];
//   model.decode(memory, ys, sw)  {logProbs (the next token's), self: {scores, weights},
//                                 cross: {scores, weights}};
//   model.greedy(text, sw)        {srcIds, ys, text}: greedy decoding, as the page decodes;
//   model.trace(srcIds, ys, sw)   every intermediate value of encode(srcIds), decode(ys) and
//                                 the generator on ys's last position, as plain arrays:
//     {switch, source: SIDE, memory: [pos][d_model], target: SIDE,
//      logits: [tgt_vocab], logProbs: [tgt_vocab]}   (the next piece's, after ys)
//     SIDE = {ids, embedding: [pos][d_model] (the embedding times sqrt(d_model)),
//             positions: [pos][d_model] (the table's rows, shown even when "no-positions"
//             leaves them out of the sum), sum: [pos][d_model] (what the first layer reads),
//             layers: [layer]{self: ATT, ff: FF} on the source side,
//                     [layer]{self: ATT, cross: ATT, ff: FF} on the target side}
//     ATT  = {q: [head][pos][d_k], k: [head][key][d_k], v: [head][key][d_k],
//             scores: [head][pos][key] (before the softmax), weights: [head][pos][key],
//             concat: [pos][d_model] (the heads side by side), out: [pos][d_model] (after W^O),
//             residual: [pos][d_model] (x + out), norm: [pos][d_model] (LayerNorm of it)}
//     FF   = {hidden: [pos][d_ff] (after the ReLU), out: [pos][d_model],
//            residual: [pos][d_model], norm: [pos][d_model]}
//     the keys of cross-attention are the source's positions, read from the memory.
//   adapter(model, sw)            the model in the form translator.js decodes with (its begin,
//                                 run, step, beamSearch and the Try it page's switches).
// Pages with an element of class "live-model" (docs/snippets/live-*.html, in the lessons) get a
// small widget that loads the model on the first interaction with it, never before.
(function () {
  "use strict";

  var script = document.currentScript;
  var ROOT = new URL("..", script ? script.src : location.href);
  var MODEL_DIR = new URL("assets/translator/", ROOT).href;
  var SWITCHES = ["none", "no-positions", "no-scale", "no-cross-attention", "silence-head"];
  var KINDS = ["encoder-self", "decoder-self", "cross"];
  var MASKED = -1e9;  // mask_fill_value(torch.float32)
  var SVG = "http://www.w3.org/2000/svg";

  // ------------------------------------------------------------------------------------------ //
  // The forward pass                                                                           //
  // ------------------------------------------------------------------------------------------ //

  function LiveModel(description, buffer, tokenizer, manifest) {
    if (description.format !== "vanilla-transformer-live-model" || description.version !== 1) {
      throw new Error("live_model.json is not a live model of version 1");
    }
    var floats = new Float32Array(buffer);
    if (floats.length * 4 !== description.bytes) {
      throw new Error("live_model.bin holds " + buffer.byteLength + " bytes, not " +
                      description.bytes);
    }
    this.config = description.config;
    this.tokenizer = tokenizer;
    this.manifest = manifest;
    var tensors = {};
    var entries = description.tensors;
    for (var name in entries) {
      var e = entries[name];
      var size = e.shape.reduce(function (a, b) { return a * b; }, 1);
      tensors[name] = floats.subarray(e.offset, e.offset + size);
    }
    for (var alias in description.aliases) tensors[alias] = tensors[description.aliases[alias]];
    this.w = tensors;
  }

  // A switch as an object; a name alone is a switch without a head.
  function asSwitch(sw) {
    if (!sw) return {name: "none"};
    if (typeof sw === "string") sw = {name: sw};
    if (SWITCHES.indexOf(sw.name) < 0) {
      throw new Error("unknown switch " + JSON.stringify(sw.name) + "; expected one of " +
                      SWITCHES.join(", "));
    }
    if (sw.name === "silence-head" && KINDS.indexOf(sw.kind) < 0) {
      throw new Error("silence-head needs a kind among " + KINDS.join(", "));
    }
    return sw;
  }

  // x (rows x in) times W^T (W: out x in) plus b: nn.Linear.
  function linear(x, rows, W, b, inDim, outDim) {
    var y = new Float64Array(rows * outDim);
    for (var i = 0; i < rows; i++) {
      for (var o = 0; o < outDim; o++) {
        var sum = b ? b[o] : 0;
        var xi = i * inDim, wo = o * inDim;
        for (var k = 0; k < inDim; k++) sum += x[xi + k] * W[wo + k];
        y[i * outDim + o] = sum;
      }
    }
    return y;
  }

  // nn.LayerNorm: the biased variance, eps inside the square root.
  function layerNorm(x, rows, d, gain, bias, eps) {
    var y = new Float64Array(rows * d);
    for (var i = 0; i < rows; i++) {
      var mean = 0, v = 0;
      for (var k = 0; k < d; k++) mean += x[i * d + k];
      mean /= d;
      for (k = 0; k < d; k++) v += (x[i * d + k] - mean) * (x[i * d + k] - mean);
      var inv = 1 / Math.sqrt(v / d + eps);
      for (k = 0; k < d; k++) y[i * d + k] = (x[i * d + k] - mean) * inv * gain[k] + bias[k];
    }
    return y;
  }

  function add(a, b) {
    var y = new Float64Array(a.length);
    for (var i = 0; i < a.length; i++) y[i] = a[i] + b[i];
    return y;
  }

  // MultiHeadedAttention.forward, keeping the scores and weights of every head.
  LiveModel.prototype.attention = function (prefix, query, nq, key, nk, causal, options) {
    var w = this.w, d = this.config.d_model, h = this.config.h, dk = d / h;
    var L = function (i) { return [w[prefix + ".linears." + i + ".weight"],
                                   w[prefix + ".linears." + i + ".bias"]]; };
    var q = linear(query, nq, L(0)[0], L(0)[1], d, d);
    var k = linear(key, nk, L(1)[0], L(1)[1], d, d);
    var v = linear(key, nk, L(2)[0], L(2)[1], d, d);
    var scale = options.noScale ? 1 : Math.sqrt(dk);
    var concat = new Float64Array(nq * d);
    var scores = [], weights = [];
    for (var a = 0; a < h; a++) {
      var S = [], P = [];
      for (var i = 0; i < nq; i++) {
        var row = new Array(nk), max = -Infinity;
        for (var j = 0; j < nk; j++) {
          if (causal && j > i) {
            row[j] = MASKED;
          } else {
            var dot = 0;
            for (var c = 0; c < dk; c++) dot += q[i * d + a * dk + c] * k[j * d + a * dk + c];
            row[j] = dot / scale;
          }
          if (row[j] > max) max = row[j];
        }
        var p = new Array(nk), total = 0;
        for (j = 0; j < nk; j++) { p[j] = Math.exp(row[j] - max); total += p[j]; }
        for (j = 0; j < nk; j++) p[j] /= total;
        S.push(row);
        P.push(p);
        if (a === options.silence) continue;  // this head's slice stays zero
        for (c = 0; c < dk; c++) {
          var sum = 0;
          for (j = 0; j < nk; j++) sum += p[j] * v[j * d + a * dk + c];
          concat[i * d + a * dk + c] = sum;
        }
      }
      scores.push(S);
      weights.push(P);
    }
    var out = options.zero ? new Float64Array(nq * d) : linear(concat, nq, L(3)[0], L(3)[1], d, d);
    return {out: out, scores: scores, weights: weights, q: q, k: k, v: v, concat: concat};
  };

  // PositionwiseFeedForward: w_2(relu(w_1(x))), keeping the hidden layer.
  LiveModel.prototype.feedForwardParts = function (prefix, x, rows) {
    var w = this.w, d = this.config.d_model, f = this.config.d_ff;
    var hidden = linear(x, rows, w[prefix + ".w_1.weight"], w[prefix + ".w_1.bias"], d, f);
    for (var i = 0; i < hidden.length; i++) if (hidden[i] < 0) hidden[i] = 0;
    return {hidden: hidden,
            out: linear(hidden, rows, w[prefix + ".w_2.weight"], w[prefix + ".w_2.bias"], f, d)};
  };

  LiveModel.prototype.feedForward = function (prefix, x, rows) {
    return this.feedForwardParts(prefix, x, rows).out;
  };

  // The sublayer connection of the post-norm layer: LayerNorm(x + Sublayer(x)).
  LiveModel.prototype.norm = function (prefix, x, rows) {
    var w = this.w;
    return layerNorm(x, rows, this.config.d_model, w[prefix + ".norm.weight"],
                     w[prefix + ".norm.bias"], this.config.layer_norm_eps);
  };

  // Embeddings * sqrt(d_model), plus the positional table unless `positions` is false.
  LiveModel.prototype.embed = function (side, ids, positions) {
    var d = this.config.d_model, lut = this.w[side + "_embed.0.lut.weight"];
    var pe = this.w[side + "_embed.1.pe"], scale = Math.sqrt(d);
    if (ids.length > this.config.max_len) {
      throw new Error(ids.length + " tokens: the positional table has " + this.config.max_len);
    }
    var x = new Float64Array(ids.length * d);
    for (var i = 0; i < ids.length; i++) {
      for (var k = 0; k < d; k++) {
        x[i * d + k] = lut[ids[i] * d + k] * scale + (positions ? pe[i * d + k] : 0);
      }
    }
    return x;
  };

  function headOptions(sw, kind, layer) {
    var silenced = sw.name === "silence-head" && sw.kind === kind && sw.layer === layer;
    return {noScale: sw.name === "no-scale", silence: silenced ? sw.head : -1,
            zero: kind === "cross" && sw.name === "no-cross-attention"};
  }

  function checkIds(ids, vocab, name) {
    if (!ids.length) throw new Error(name + " is empty");
    ids.forEach(function (id) {
      if (!Number.isInteger(id) || id < 0 || id >= vocab) {
        throw new Error(name + " holds " + id + ", outside the vocabulary of " + vocab);
      }
    });
  }

  LiveModel.prototype.encode = function (srcIds, sw) {
    sw = asSwitch(sw);
    checkIds(srcIds, this.config.src_vocab, "the source");
    var n = srcIds.length;
    var x = this.embed("src", srcIds, sw.name !== "no-positions");
    var scores = [], weights = [];
    for (var l = 0; l < this.config.N; l++) {
      var p = "encoder.layers." + l;
      var att = this.attention(p + ".self_attn", x, n, x, n, false,
                               headOptions(sw, "encoder-self", l));
      x = this.norm(p + ".sublayer.0", add(x, att.out), n);
      x = this.norm(p + ".sublayer.1", add(x, this.feedForward(p + ".feed_forward", x, n)), n);
      scores.push(att.scores);
      weights.push(att.weights);
    }
    return {memory: x, length: n, scores: scores, weights: weights};
  };

  LiveModel.prototype.decode = function (memory, ys, sw) {
    sw = asSwitch(sw);
    checkIds(ys, this.config.tgt_vocab, "the prefix");
    var d = this.config.d_model, t = ys.length, n = memory.length;
    var x = this.embed("tgt", ys, true);
    var self = {scores: [], weights: []}, cross = {scores: [], weights: []};
    for (var l = 0; l < this.config.N; l++) {
      var p = "decoder.layers." + l;
      var a = this.attention(p + ".self_attn", x, t, x, t, true,
                             headOptions(sw, "decoder-self", l));
      x = this.norm(p + ".sublayer.0", add(x, a.out), t);
      var c = this.attention(p + ".src_attn", x, t, memory.memory, n, false,
                             headOptions(sw, "cross", l));
      x = this.norm(p + ".sublayer.1", add(x, c.out), t);
      x = this.norm(p + ".sublayer.2", add(x, this.feedForward(p + ".feed_forward", x, t)), t);
      self.scores.push(a.scores);
      self.weights.push(a.weights);
      cross.scores.push(c.scores);
      cross.weights.push(c.weights);
    }
    // the generator on the last position: tied weights, no bias, log-softmax
    var last = x.subarray((t - 1) * d, t * d);
    var logits = linear(last, 1, this.w["generator.proj.weight"], null, d,
                        this.config.tgt_vocab);
    var max = -Infinity, total = 0;
    for (var i = 0; i < logits.length; i++) max = Math.max(max, logits[i]);
    for (i = 0; i < logits.length; i++) total += Math.exp(logits[i] - max);
    var logZ = max + Math.log(total);
    var logProbs = new Float32Array(logits.length);
    for (i = 0; i < logits.length; i++) logProbs[i] = logits[i] - logZ;
    return {logProbs: logProbs, self: self, cross: cross};
  };

  // A flat (rows x cols) array as rows of plain numbers.
  function matrix(x, rows, cols) {
    var m = [];
    for (var i = 0; i < rows; i++) m.push(Array.from(x.subarray(i * cols, (i + 1) * cols)));
    return m;
  }

  // A flat (rows x d_model) projection split into heads: [head][row][d_k].
  function perHead(x, rows, h, dk) {
    var out = [];
    for (var a = 0; a < h; a++) {
      var head = [];
      for (var i = 0; i < rows; i++) {
        var start = i * h * dk + a * dk;
        head.push(Array.from(x.subarray(start, start + dk)));
      }
      out.push(head);
    }
    return out;
  }

  // One attention sublayer's values, then LayerNorm(x + out), as the trace reports them.
  LiveModel.prototype.traceAttention = function (prefix, sub, x, nq, key, nk, causal, options) {
    var d = this.config.d_model, h = this.config.h;
    var att = this.attention(prefix, x, nq, key, nk, causal, options);
    var residual = add(x, att.out);
    var normed = this.norm(sub, residual, nq);
    return {x: normed, values: {
      q: perHead(att.q, nq, h, d / h), k: perHead(att.k, nk, h, d / h),
      v: perHead(att.v, nk, h, d / h), scores: att.scores, weights: att.weights,
      concat: matrix(att.concat, nq, d), out: matrix(att.out, nq, d),
      residual: matrix(residual, nq, d), norm: matrix(normed, nq, d)}};
  };

  LiveModel.prototype.traceFeedForward = function (prefix, sub, x, rows) {
    var d = this.config.d_model;
    var ff = this.feedForwardParts(prefix, x, rows);
    var residual = add(x, ff.out);
    var normed = this.norm(sub, residual, rows);
    return {x: normed, values: {
      hidden: matrix(ff.hidden, rows, this.config.d_ff), out: matrix(ff.out, rows, d),
      residual: matrix(residual, rows, d), norm: matrix(normed, rows, d)}};
  };

  // The embedding side of the trace: the scaled embeddings, the table, and their sum.
  LiveModel.prototype.traceEmbed = function (side, ids, positions) {
    var d = this.config.d_model;
    var scaled = this.embed(side, ids, false);
    var x = positions ? this.embed(side, ids, true) : scaled;
    var pe = this.w[side + "_embed.1.pe"].subarray(0, ids.length * d);
    return {x: x, values: {ids: ids.slice(), embedding: matrix(scaled, ids.length, d),
                           positions: matrix(pe, ids.length, d), sum: matrix(x, ids.length, d)}};
  };

  // Every intermediate value of encode, then decode of the prefix `ys`, then the generator on
  // its last position (the header comment gives the shape).
  LiveModel.prototype.trace = function (srcIds, ys, sw) {
    sw = asSwitch(sw);
    checkIds(srcIds, this.config.src_vocab, "the source");
    checkIds(ys, this.config.tgt_vocab, "the prefix");
    var d = this.config.d_model, n = srcIds.length, t = ys.length;
    var src = this.traceEmbed("src", srcIds, sw.name !== "no-positions");
    var x = src.x, encoder = [];
    for (var l = 0; l < this.config.N; l++) {
      var p = "encoder.layers." + l;
      var a = this.traceAttention(p + ".self_attn", p + ".sublayer.0", x, n, x, n, false,
                                  headOptions(sw, "encoder-self", l));
      var f = this.traceFeedForward(p + ".feed_forward", p + ".sublayer.1", a.x, n);
      encoder.push({self: a.values, ff: f.values});
      x = f.x;
    }
    var memory = x;
    var tgt = this.traceEmbed("tgt", ys, true);
    var y = tgt.x, decoder = [];
    for (l = 0; l < this.config.N; l++) {
      p = "decoder.layers." + l;
      var s = this.traceAttention(p + ".self_attn", p + ".sublayer.0", y, t, y, t, true,
                                  headOptions(sw, "decoder-self", l));
      var c = this.traceAttention(p + ".src_attn", p + ".sublayer.1", s.x, t, memory, n, false,
                                  headOptions(sw, "cross", l));
      var g = this.traceFeedForward(p + ".feed_forward", p + ".sublayer.2", c.x, t);
      decoder.push({self: s.values, cross: c.values, ff: g.values});
      y = g.x;
    }
    var logits = linear(y.subarray((t - 1) * d, t * d), 1, this.w["generator.proj.weight"], null,
                        d, this.config.tgt_vocab);
    var max = -Infinity, total = 0;
    for (var i = 0; i < logits.length; i++) max = Math.max(max, logits[i]);
    for (i = 0; i < logits.length; i++) total += Math.exp(logits[i] - max);
    var logZ = max + Math.log(total);
    return {switch: sw.name,
            source: {ids: src.values.ids, embedding: src.values.embedding,
                     positions: src.values.positions, sum: src.values.sum, layers: encoder},
            memory: matrix(memory, n, d),
            target: {ids: tgt.values.ids, embedding: tgt.values.embedding,
                     positions: tgt.values.positions, sum: tgt.values.sum, layers: decoder},
            logits: Array.from(logits),
            logProbs: Array.from(logits, function (z) { return z - logZ; })};
  };

  function argmax(values) {
    var best = 0;
    for (var i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  // The source ids of a text as the page encodes it: its pieces, then </s>.
  LiveModel.prototype.source = function (text) {
    return this.tokenizer.encode(text).concat([this.manifest.decoding.end_symbol]);
  };

  // Greedy decoding as the page (and translate_sentences with beam_size=1) does it.
  LiveModel.prototype.greedy = function (text, sw) {
    var dec = this.manifest.decoding;
    var srcIds = this.source(text);
    var memory = this.encode(srcIds, sw);
    var ys = [dec.start_symbol];
    var maxLen = srcIds.length + dec.max_extra + 1;
    while (ys[ys.length - 1] !== dec.end_symbol && ys.length < maxLen) {
      ys.push(argmax(this.decode(memory, ys, sw).logProbs));
    }
    return {srcIds: srcIds, ys: ys, text: this.tokenizer.decode(ys.slice(1), dec),
            memory: memory};
  };

  // The model in the form translator.js decodes with: encodeIds and decodeIds return promises
  // of its maps (weights, and scores too) as the ONNX sessions' outputs are read.
  function adapter(model, sw) {
    sw = asSwitch(sw);
    return {
      manifest: model.manifest, tokenizer: model.tokenizer, live: model, switch: sw,
      lang: model.lang, step: "final",
      encodeIds: function (srcIds) {
        var enc = model.encode(srcIds, sw);
        return Promise.resolve({memory: enc, maps: enc.weights, scores: enc.scores});
      },
      decodeIds: function (memory, ys) {
        var out = model.decode(memory, ys, sw);
        return Promise.resolve({logProbs: out.logProbs, selfMaps: out.self.weights,
                                crossMaps: out.cross.weights, selfScores: out.self.scores,
                                crossScores: out.cross.scores});
      },
    };
  }

  // ------------------------------------------------------------------------------------------ //
  // Loading                                                                                    //
  // ------------------------------------------------------------------------------------------ //

  var loading = {};

  async function fetchOk(url, how) {
    var response = await fetch(url);
    if (!response.ok) throw new Error("HTTP " + response.status + " for " + url);
    return how === "json" ? response.json() : response.arrayBuffer();
  }

  function load(lang) {
    lang = lang || "de";
    if (!loading[lang]) {
      loading[lang] = (async function () {
        var demo = window.translatorDemo;
        if (!demo || !demo.BpeTokenizer) throw new Error("translator.js is not loaded");
        var dir = MODEL_DIR + (lang === "de" ? "" : lang + "/");
        var files = await Promise.all([fetchOk(dir + "live_model.json", "json"),
                                       fetchOk(dir + "live_model.bin"),
                                       fetchOk(dir + "tokenizer.json", "json"),
                                       fetchOk(MODEL_DIR + "manifest.json", "json")]);
        var model = new LiveModel(files[0], files[1], new demo.BpeTokenizer(files[2]), files[3]);
        model.lang = lang;
        return model;
      })();
      loading[lang].catch(function () { delete loading[lang]; });
    }
    return loading[lang];
  }

  var api = {SWITCHES: SWITCHES, KINDS: KINDS, LiveModel: LiveModel, load: load,
             adapter: adapter, asSwitch: asSwitch};
  window.translatorDemo = window.translatorDemo || {};
  window.translatorDemo.liveModel = api;

  // ------------------------------------------------------------------------------------------ //
  // The widget of the lessons                                                                  //
  // ------------------------------------------------------------------------------------------ //

  var STYLE = [
    ".md-typeset .live-model{--translator-heat:#3949ab;--translator-line:var(--md-default-fg-color--lighter);",
    "border:1px solid var(--md-default-fg-color--lightest);border-radius:.2rem;padding:.6em .8em;margin:1.5em 0}",
    "[data-md-color-scheme=slate] .md-typeset .live-model{--translator-heat:#82b1ff}",
    ".md-typeset .live-model input[type=text]{box-sizing:border-box;width:100%;padding:.4em .6em;font:inherit;",
    "font-size:.85rem;color:var(--md-default-fg-color);background:var(--md-default-bg-color);",
    "border:1px solid var(--md-default-fg-color--lighter);border-radius:.2rem}",
    ".md-typeset .live-model select{font:inherit;font-size:.75rem;color:var(--md-default-fg-color);",
    "background:var(--md-default-bg-color);border:1px solid var(--md-default-fg-color--lighter);",
    "border-radius:.2rem;max-width:100%}",
    ".md-typeset .live-model>p:first-child{margin-top:0}",
    ".md-typeset .live-model__row{display:flex;flex-wrap:wrap;align-items:center;gap:.3em 1em}",
    ".md-typeset .live-model label{display:inline-flex;align-items:center;gap:.4em;font-size:.75rem}",
    ".md-typeset .live-model label.live-model__wide{flex:1 1 18em}",
    ".md-typeset .live-model__status{font-size:.7rem;color:var(--md-default-fg-color--light);margin:.3em 0}",
    ".md-typeset .live-model__maps{display:flex;flex-wrap:wrap;gap:.8em;max-width:100%;overflow-x:auto}",
    ".md-typeset .live-model__map{max-width:100%;overflow-x:auto}",
    ".md-typeset .live-model__map svg{display:block;max-width:none;height:auto}",
    ".md-typeset .live-model__map p{font-size:.7rem;margin:.2em 0}",
    ".md-typeset .live-model table{font-size:.7rem;display:block;max-width:100%;overflow-x:auto}",
    ".md-typeset .live-model td,.md-typeset .live-model__pair em{overflow-wrap:anywhere}",
    ".md-typeset .live-model__output{overflow-wrap:anywhere;font-weight:700}",
    ".md-typeset .live-model .md-button{font-size:.7rem;padding:.2em .8em;margin:0;cursor:pointer}",
    ".md-typeset .live-model ol.live-model__topk{display:flex;flex-wrap:wrap;gap:.3em;list-style:none;",
    "margin:.3em 0;padding:0;font-size:.75rem}",
    ".md-typeset .live-model ol.live-model__topk li{margin:0}",
    ".md-typeset .live-model ol.live-model__topk li::before{content:none}",
    ".live-model__silenced .translator-cell{fill:var(--md-default-fg-color--light)}",
  ].join("");

  function injectStyle() {
    if (document.getElementById("live-model-style")) return;
    var style = document.createElement("style");
    style.id = "live-model-style";
    style.textContent = STYLE;
    document.head.appendChild(style);
  }

  function svg(name, attrs, parent) {
    var el = document.createElementNS(SVG, name);
    for (var key in attrs) el.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(el);
    return el;
  }

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }

  function fmtScore(s) {
    return s <= MASKED / 2 ? "masked" : s.toFixed(2);
  }

  // A heatmap of weights: rows x cols; `values` prints each cell's weight (or null);
  // `onRow(i)` when a row is chosen.
  function heatmap(rowTokens, colTokens, weights, scores, cell, options) {
    options = options || {};
    var chars = function (tokens) {
      return tokens.reduce(function (m, t) { return Math.max(m, Array.from(t).length); }, 0);
    };
    var left = Math.ceil(chars(rowTokens) * 7.6) + 12, top = Math.ceil(chars(colTokens) * 7.6) + 12;
    var width = left + colTokens.length * cell + 6, height = top + rowTokens.length * cell + 6;
    var root = svg("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height,
                           role: "img"});
    svg("title", {}, root).textContent = options.title || "attention map";
    colTokens.forEach(function (token, j) {
      var t = svg("text", {"class": "translator-tick translator-tick--x",
                           transform: "translate(" + (left + j * cell + cell / 2 + 4) + "," +
                                      (top - 6) + ") rotate(-90)"}, root);
      t.textContent = token;
    });
    rowTokens.forEach(function (token, i) {
      var t = svg("text", {"class": "translator-tick translator-tick--y", x: left - 6,
                           y: top + i * cell + cell / 2 + 4}, root);
      t.textContent = token;
      weights[i].forEach(function (w, j) {
        var r = svg("rect", {"class": "translator-cell", x: left + j * cell, y: top + i * cell,
                             width: cell, height: cell, "fill-opacity": w.toFixed(4),
                             "data-row": i, "data-col": j, "data-weight": w.toFixed(6),
                             "data-score": scores[i][j].toFixed(6)}, root);
        svg("title", {}, r).textContent = token + " \u2192 " + colTokens[j] + ": score " +
          fmtScore(scores[i][j]) + ", weight " + w.toFixed(3);
        if (options.onRow) r.addEventListener("click", function () { options.onRow(i); });
        if (cell >= 30) {
          var v = svg("text", {"class": "translator-value" +
                               (w > 0.5 ? " translator-value--on-dark" : ""),
                               x: left + j * cell + cell / 2, y: top + i * cell + cell / 2 + 4},
                      root);
          v.textContent = w.toFixed(2).replace(/^0/, "");
        }
      });
      if (options.chosen === i) {
        svg("rect", {x: left - 1, y: top + i * cell, width: colTokens.length * cell + 2,
                     height: cell, fill: "none", stroke: "var(--md-accent-fg-color)",
                     "stroke-width": 2}, root);
      }
    });
    svg("rect", {"class": "translator-frame", x: left, y: top, width: colTokens.length * cell,
                 height: rowTokens.length * cell}, root);
    return root;
  }

  function pieces(model, ids) { return model.tokenizer.tokens(ids); }

  // Pieces that carry no number's meaning: the end of the sentence, "and", bare marks.
  function meaningless(piece) {
    var bare = piece.replace(/^\u2581/, "");
    return piece === "</s>" || piece === "<s>" || bare === "and" || !/[a-z]/.test(bare);
  }

  // The row of a cross-attention map to open on: of the rows whose largest weight falls on a
  // piece that carries meaning, the least peaked (where the softmax has work to do); the least
  // peaked row of all if none does.
  function meaningfulRow(P, src) {
    var best = -1, all = 0;
    P.forEach(function (row, i) {
      var peak = Math.max.apply(null, row);
      if (peak < Math.max.apply(null, P[all])) all = i;
      if (meaningless(src[argmax(row)])) return;
      if (best < 0 || peak < Math.max.apply(null, P[best])) best = i;
    });
    return best < 0 ? all : best;
  }

  // What each lesson's widget draws after a run; `w` is the widget's state.
  var LESSONS = {
    // Attention: one cross-attention map, and the chosen row's scores and weights.
    attention: function (w, model, text, sw) {
      var res = model.greedy(text, sw);
      var ys = res.ys;
      var out = model.decode(res.memory, ys.slice(0, -1), sw);
      var layer = Number(w.q("[data-control=layer]").value) - 1;
      var head = Number(w.q("[data-control=head]").value) - 1;
      var S = out.cross.scores[layer][head], P = out.cross.weights[layer][head];
      var src = pieces(model, res.srcIds), tgt = pieces(model, ys.slice(1));
      // it opens on a row that reads a piece carrying meaning (see meaningfulRow)
      var key = text + "|" + layer + "|" + head;
      if (w.row === undefined || w.row >= tgt.length || w.rowKey !== key) {
        w.row = meaningfulRow(P, src);
        w.rowKey = key;
        w.rowChosen = false;
      }
      var box = w.out;
      box.replaceChildren();
      box.append(el("p", "Output: " + res.text, "live-model__output"));
      var map = el("div", null, "live-model__map");
      map.dataset.kind = "cross";
      map.dataset.layer = layer + 1;
      map.dataset.head = head + 1;
      map.appendChild(heatmap(tgt, src, P, S, w.wide ? 36 : 26, {
        chosen: w.row, title: "Cross-attention, layer " + (layer + 1) + ", head " + (head + 1),
        onRow: function (i) { w.row = i; w.rowChosen = true; w.render(); }}));
      box.append(map);
      var table = el("table");
      var head1 = el("tr");
      var scoreName = sw.name === "no-scale" ? "score q\u00b7k (not divided)" :
        "score q\u00b7k/\u221ad_k";
      ["English piece", scoreName, "weight"].forEach(function (t) {
        head1.append(el("th", t));
      });
      var thead = el("thead");
      thead.append(head1);
      var body = el("tbody");
      src.forEach(function (token, j) {
        var tr = el("tr");
        tr.dataset.col = j;
        tr.dataset.score = S[w.row][j].toFixed(6);
        tr.dataset.weight = P[w.row][j].toFixed(6);
        tr.append(el("td", token), el("td", S[w.row][j].toFixed(3)), el("td", P[w.row][j].toFixed(3)));
        body.append(tr);
      });
      table.append(thead, body);
      var read = src[argmax(P[w.row])];
      var why = w.rowChosen ? "" : " The map opens on it because its largest weight falls on " +
        "\u201c" + read + "\u201d, a piece that carries meaning (not \u201cand\u201d or " +
        "</s>), and it is the least sure such row, where the softmax has work to do.";
      var note = el("p", "Row \u201c" + tgt[w.row] + "\u201d, writing while it reads \u201c" +
                    read + "\u201d: its scores, then the softmax's weights, which add up to 1. " +
                    "Click a row of the map to choose another." + why, "live-model__why");
      note.dataset.row = w.row;
      note.dataset.reads = read;
      box.append(note);
      box.append(table);
      return res;
    },
    // Several heads: the four heads of one layer's cross-attention, side by side.
    heads: function (w, model, text, sw) {
      var layer = Number(w.q("[data-control=layer]").value) - 1;
      if (sw.name === "silence-head") {
        sw = {name: "silence-head", kind: "cross", layer: layer,
              head: Number(w.q("[data-control=head]").value) - 1};
      }
      var res = model.greedy(text, sw);
      var out = model.decode(res.memory, res.ys.slice(0, -1), sw);
      var src = pieces(model, res.srcIds), tgt = pieces(model, res.ys.slice(1));
      w.out.replaceChildren(el("p", "Output: " + res.text, "live-model__output"));
      var maps = el("div", null, "live-model__maps");
      out.cross.weights[layer].forEach(function (P, a) {
        var box = el("div", null, "live-model__map");
        box.dataset.head = a + 1;
        var silenced = sw.name === "silence-head" && sw.head === a;
        if (silenced) box.classList.add("live-model__silenced");
        box.append(el("p", "head " + (a + 1) + (silenced ? " (silenced)" : "")));
        // every map labelled and every cell's weight printed, as the lesson's figures are
        box.append(heatmap(tgt, src, P, out.cross.scores[layer][a], 30,
                           {title: "Cross-attention, layer " + (layer + 1) + ", head " + (a + 1)}));
        maps.append(box);
      });
      w.out.append(maps);
      return res;
    },
    // Positions: the same words in two orders, with and without the source's positions.
    positions: function (w, model, text) {
      var other = window.translatorDemo.canonical(window.translatorDemo.clean(
        w.q("[data-control=other]").value));
      var list = el("ul", null, "live-model__pairs");
      var first = null;
      [text, other].forEach(function (t, i) {
        if (!t) return;
        var plain = model.greedy(t, "none"), blind = model.greedy(t, "no-positions");
        if (i === 0) first = blind;
        var item = el("li", null, "live-model__pair");
        item.dataset.input = t;
        item.dataset.trained = plain.text;
        item.dataset.noPositions = blind.text;
        item.append(el("strong", t), el("br"), "trained model: ", el("em", plain.text),
                    el("br"), "no positions: ", el("em", blind.text));
        list.append(item);
      });
      w.out.replaceChildren(list);
      var a = model.source(text).slice().sort().join(" ");
      var b = model.source(other).slice().sort().join(" ");
      w.out.append(el("p", a === b ?
        "The two inputs are the same pieces in another order: without positions the encoder " +
        "cannot tell them apart, and its two outputs are the same." :
        "These two inputs are not made of the same pieces, so they may differ even without " +
        "positions."));
      return first;
    },
    // Decoding: one token at a time, the five candidates, then greedy against beam search.
    decoding: function (w, model, text, sw) {
      var dec = model.manifest.decoding;
      if (!w.steps || w.steps.text !== text || w.steps.sw !== sw.name) {
        w.steps = {text: text, sw: sw.name, srcIds: model.source(text), ys: [dec.start_symbol]};
        w.steps.memory = model.encode(w.steps.srcIds, sw);
      }
      var st = w.steps;
      var maxLen = st.srcIds.length + dec.max_extra + 1;
      var done = st.ys[st.ys.length - 1] === dec.end_symbol || st.ys.length >= maxLen;
      w.out.replaceChildren();
      var written = pieces(model, st.ys.slice(1));
      w.out.append(el("p", "Written so far: " + (written.length ? written.join(" ") : "(nothing)")));
      var list = el("ol", null, "live-model__topk");
      if (!done) {
        var logProbs = model.decode(st.memory, st.ys, sw).logProbs;
        var ids = Array.from(logProbs.keys()).sort(function (x, y) {
          return logProbs[y] - logProbs[x] || x - y;
        }).slice(0, 5);
        ids.forEach(function (id) {
          var li = el("li");
          li.dataset.id = id;
          li.dataset.prob = Math.exp(logProbs[id]).toFixed(6);
          var b = el("button", pieces(model, [id])[0] + "  " +
                     (100 * Math.exp(logProbs[id])).toFixed(1) + " %", "md-button");
          b.type = "button";
          b.addEventListener("click", function () { st.ys.push(id); w.render(); });
          li.append(b);
          list.append(li);
        });
        w.out.append(el("p", "The five most probable next pieces (click one to write it):"), list);
      } else {
        w.out.append(el("p", "Finished: " + model.tokenizer.decode(st.ys.slice(1), dec)));
      }
      var greedy = model.greedy(text, sw);
      w.out.append(el("p", "Greedy, always the top piece: " + greedy.text));
      var beamLine = el("p", "Beam search, 4 prefixes kept, \u03b1 = 0.6: \u2026",
                        "live-model__beam");
      w.out.append(beamLine);
      window.translatorDemo.beamSearch(adapter(model, sw), text, 4, 0.6).then(function (r) {
        beamLine.textContent = "Beam search, 4 prefixes kept, \u03b1 = 0.6: " + r.ranked[0].text +
          " (score " + r.ranked[0].score.toFixed(3) + ")";
        beamLine.dataset.best = r.ranked[0].text;
      });
      w.root.dataset.ys = st.ys.join(" ");
      return greedy;
    },
  };

  function widget(root) {
    var lesson = root.dataset.lesson;
    var draw = LESSONS[lesson];
    if (!draw) return;
    var w = {root: root, q: function (s) { return root.querySelector(s); }};
    w.out = w.q(".live-model__out");
    w.status = w.q(".live-model__status");
    var input = w.q("[data-control=text]");
    var started = false, model = null;
    // the widget's switch; a lesson's draw function picks the head to silence
    var chosen = function () {
      var select = w.q("[data-control=switch]");
      var name = select ? select.value : "none";
      return asSwitch(name === "silence-head" ? {name: name, kind: "cross", layer: 1, head: 0} :
                      name);
    };
    w.render = function () {
      if (!model) return;
      var typed = window.translatorDemo.clean(input.value);
      var text = window.translatorDemo.canonical(typed);
      var sw = chosen();
      w.wide = root.clientWidth >= 600;
      var unknown = Array.from(text).filter(function (c) {
        return c !== " " && !model.tokenizer.vocab.has(c);
      });
      if (!text || unknown.length) {
        w.out.replaceChildren();
        w.status.textContent = !text ? "Type a number in English words." :
          "The vocabulary has no \u201c" + unknown[0] + "\u201d: type a number in words.";
        root.dataset.state = "invalid";
        return;
      }
      var start = performance.now();
      var res = draw(w, model, text, sw);
      var ms = performance.now() - start;
      root.dataset.text = text;
      root.dataset.switch = sw.name;
      root.dataset.output = res ? res.text : "";
      root.dataset.ms = ms.toFixed(1);
      root.dataset.state = "done";
      w.status.textContent = (text === typed ? "" : "Read as \u201c" + text + "\u201d. ") +
        "Computed in your browser in " + Math.round(ms) + " ms.";
    };
    var start = function () {
      if (started) return;
      started = true;
      root.dataset.state = "loading";
      w.status.textContent = "Loading the model (about 1 MB)\u2026";
      var t0 = performance.now();
      load("de").then(function (m) {
        model = m;
        root.dataset.loadMs = (performance.now() - t0).toFixed(1);
        w.render();
      }, function (error) {
        started = false;
        root.dataset.state = "failed";
        w.status.textContent = "The model could not be loaded: " + error.message;
      });
    };
    ["focusin", "pointerdown", "keydown"].forEach(function (type) {
      root.addEventListener(type, start);
    });
    var timer = null;
    root.addEventListener("input", function (event) {
      if (event.target.tagName !== "INPUT") return;
      clearTimeout(timer);
      timer = setTimeout(w.render, 200);
    });
    root.addEventListener("change", function (event) {
      if (event.target.tagName === "SELECT") {
        if (event.target.dataset.control === "switch") delete w.steps;
        w.render();
      }
    });
    root.querySelectorAll("[data-action]").forEach(function (button) {
      button.addEventListener("click", function () {
        if (!model) return;
        if (button.dataset.action === "restart") delete w.steps;
        if (button.dataset.action === "next" && w.steps) {
          var st = w.steps, dec = model.manifest.decoding;
          if (st.ys[st.ys.length - 1] !== dec.end_symbol) {
            st.ys.push(argmax(model.decode(st.memory, st.ys, chosen()).logProbs));
          }
        }
        w.render();
      });
    });
    root.dataset.state = "idle";
  }

  function onPage() {
    var roots = document.querySelectorAll(".live-model");
    if (!roots.length) return;
    injectStyle();
    roots.forEach(function (root) {
      if (root.dataset.live) return;
      root.dataset.live = "on";
      widget(root);
    });
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(onPage);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onPage);
  } else {
    onPage();
  }
})();
