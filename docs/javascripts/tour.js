// The tour (docs/tour.md): one sentence through the whole trained translator, one step
// at a time, every picture drawn from the live model's own values for that sentence
// (live_model.js: model.trace, model.decode, and translator.js's beamSearch).
//
// Markup: a root #tour holding the sentence field (#tour-source), the map (.tour__map), the
// steps (.tour__step, each with data-tour-step = 1, 2, ... and data-part = the part of Figure 1
// it lights, and an empty .tour__picture that this script fills) and the buttons #tour-prev and
// #tour-next. Without this script every step shows, one under the other, without pictures.
//
// Every number drawn carries the place in the trace it comes from, for the tests
// (tests/docs/test_tour.py compares them with PyTorch): data-trace = a dotted path into
// model.trace(source ids, prefix) (e.g. "source.layers.0.self.scores.0.2.3"), data-value =
// its value, data-exp when the number shown is exp(value) (a probability from a log-probability).
// The root carries data-state ("loading", "done", "invalid", "failed"), data-text (the sentence
// as read), data-src and data-prefix (the ids traced) and data-step (the step on show).
(function () {
  "use strict";

  var SVG = "http://www.w3.org/2000/svg";
  var HEAD_LAYER = 0, HEAD = 0;  // the head whose Q, K and V the tour opens: layer 1, head 1
  var BEAM = 4, ALPHA = 0.6;  // the paper's beam search (section 6.1)
  var SAVED = "vanilla-transformer-tour-sentence";  // sessionStorage key of the typed sentence
  var MAX_PIECES = 16;  // every number below a million, with room for its pictures on a phone

  // The parts of Figure 1 that a step can light: [part, label, column, row from the bottom].
  var PARTS = [
    ["src-input", "English pieces", 0, 0], ["src-embed", "Embedding \u00d7 \u221ad", 0, 1],
    ["src-pos", "+ positions", 0, 2], ["enc-self", "Self-attention", 0, 3.5],
    ["enc-norm", "Add & Norm", 0, 4.5], ["enc-ff", "Feed-forward", 0, 5.5],
    ["enc-norm", "Add & Norm", 0, 6.5], ["memory", "Encoder output", 0, 8],
    ["tgt-input", "German so far", 1, 0], ["tgt-embed", "Embedding \u00d7 \u221ad", 1, 1],
    ["tgt-embed", "+ positions", 1, 2], ["dec-self", "Masked self-attn", 1, 3.5],
    ["dec-norm", "Add & Norm", 1, 4.5], ["cross", "Cross-attention", 1, 5.5],
    ["dec-norm", "Add & Norm", 1, 6.5], ["dec-ff", "Feed-forward", 1, 7.5],
    ["dec-norm", "Add & Norm", 1, 8.5], ["linear", "Linear", 1, 10],
    ["softmax", "Softmax", 1, 11], ["output", "Next piece", 1, 12],
  ];
  // The phone's map: two rows, the encoder's and the decoder's, left to right.
  var COMPACT = [
    [["src-input", "pieces"], ["src-embed", "embed"], ["src-pos", "+pos"], ["enc-self", "self"],
     ["enc-norm", "norm"], ["enc-ff", "ff"], ["memory", "memory"]],
    [["tgt-input", "prefix"], ["tgt-embed", "embed"], ["dec-self", "masked"], ["cross", "cross"],
     ["dec-ff", "ff"], ["linear", "linear"], ["softmax", "softmax"], ["output", "next"]],
  ];

  function svg(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(node);
    return node;
  }

  function el(tag, text, cls, parent) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    if (parent) parent.appendChild(node);
    return node;
  }

  // ------------------------------------------------------------------------------------------ //
  // The map: Figure 1 in the paper's layout, and a compact one for phones                     //
  // ------------------------------------------------------------------------------------------ //

  function drawMap(box, N) {
    var W = 236, ROW = 24, BW = 108, X = [6, 122], H = 13.5 * ROW + 8;
    var full = svg("svg", {"class": "tour-map tour-map--full", viewBox: "0 0 " + W + " " + H,
                           role: "img", "aria-label": "Figure 1: the Transformer's parts"});
    var y = function (r) { return H - 6 - (r + 1) * ROW; };
    // the two stacks of N layers
    [[0, 3, 6.5], [1, 3, 8.5]].forEach(function (s) {
      svg("rect", {x: X[s[0]] - 3, y: y(s[2]) - 3, width: BW + 6, height: (s[2] - s[1] + 1) *
                   ROW + 2, rx: 6, "class": "tour-map__stack"}, full);
      var t = svg("text", {x: X[s[0]] + BW / 2, y: y(s[2]) - 6, "class": "tour-map__note"}, full);
      t.textContent = (s[0] ? "decoder" : "encoder") + ", \u00d7" + N;
    });
    PARTS.forEach(function (p) {
      var g = svg("g", {"class": "tour-map__part", "data-part": p[0]}, full);
      svg("rect", {x: X[p[2]], y: y(p[3]), width: BW, height: ROW - 5, rx: 3}, g);
      svg("text", {x: X[p[2]] + BW / 2, y: y(p[3]) + 13.5}, g).textContent = p[1];
    });
    // the memory into every cross-attention
    var mx = X[0] + BW, my = y(8) + 9, cx = X[1], cy = y(5.5) + 9;
    svg("path", {d: "M" + mx + "," + my + " H" + (mx + 6) + " V" + cy + " H" + (cx - 1) +
                 " m-5,-4 l5,4 l-5,4", "class": "tour-map__arrow"}, full);
    var compact = svg("svg", {"class": "tour-map tour-map--compact", viewBox: "0 0 356 50",
                              role: "img", "aria-label": "Figure 1: the Transformer's parts"});
    COMPACT.forEach(function (row, r) {
      var w = 356 / row.length;
      row.forEach(function (p, i) {
        var g = svg("g", {"class": "tour-map__part", "data-part": p[0]}, compact);
        svg("rect", {x: i * w + 1, y: r * 26 + 1, width: w - 3, height: 21, rx: 3}, g);
        svg("text", {x: i * w + w / 2, y: r * 26 + 15.5}, g).textContent = p[1];
      });
    });
    box.replaceChildren(full, compact);
  }

  function light(box, part) {
    box.querySelectorAll(".tour-map__part").forEach(function (g) {
      g.classList.toggle("is-on", g.dataset.part === part);
    });
  }

  // ------------------------------------------------------------------------------------------ //
  // Pictures                                                                                   //
  // ------------------------------------------------------------------------------------------ //

  function fmt(v, digits) {
    var s = v.toFixed(digits === undefined ? 2 : digits);
    return s === "-0.00" ? "0.00" : s;
  }

  function mark(node, path, value, exp) {
    node.setAttribute("data-trace", path);
    node.setAttribute("data-value", String(value));
    if (exp) node.setAttribute("data-exp", "");
    return node;
  }

  function maxAbs(rows) {
    var m = 1e-9;
    rows.forEach(function (r) { r.forEach(function (v) { m = Math.max(m, Math.abs(v)); }); });
    return m;
  }

  function chars(tokens) {
    return tokens.reduce(function (m, t) { return Math.max(m, Array.from(t).length); }, 0);
  }

  // Rows of numbers as coloured cells (blue above zero, red below), one row per piece:
  // `path` is the trace's path of the matrix. Wide rows get thin cells; `width` is the room.
  function strip(rows, labels, path, width, options) {
    options = options || {};
    var left = options.left || Math.ceil(chars(labels) * 7.2) + 10, top = options.title ? 16 : 2;
    var cols = rows[0].length;
    var cell = Math.max(1, Math.min(options.cell || 14, Math.floor((width - left - 4) / cols)));
    var ch = options.height || (rows.length > 8 ? 12 : 14);
    var w = left + cols * cell + 2, h = top + rows.length * ch + 2;
    // the title starts over the cells, or at the left edge where it would not fit there
    var titleW = options.title ? Math.ceil(options.title.length * 6.4) : 0;
    var titleX = left + titleW <= Math.max(w, width) ? left : 0;
    w = Math.max(w, titleX + titleW);
    var root = svg("svg", {width: w, height: h, viewBox: "0 0 " + w + " " + h, role: "img",
                           "class": "tour-strip"});
    svg("title", {}, root).textContent = options.title || path;
    if (options.title) {
      svg("text", {x: titleX, y: 11, "class": "tour-label"}, root).textContent = options.title;
    }
    var scale = options.scale || maxAbs(rows);
    if (options.frame) {
      svg("rect", {x: left - 0.5, y: top - 0.5, width: cols * cell + 1, height: rows.length * ch,
                   "class": "tour-frame"}, root);
    }
    rows.forEach(function (row, i) {
      svg("text", {x: left - 5, y: top + i * ch + ch - 3, "class": "tour-tick"}, root)
        .textContent = labels[i];
      row.forEach(function (v, k) {
        var r = svg("rect", {x: left + k * cell, y: top + i * ch, width: cell, height: ch - 1,
                             "class": v >= 0 ? "tour-pos" : "tour-neg",
                             "fill-opacity": Math.min(1, Math.abs(v) / scale).toFixed(3)}, root);
        mark(r, path + "." + i + "." + k, v);
      });
    });
    return root;
  }

  // A square map with a number in each cell: rows x cols, `masked` cells (above the diagonal)
  // drawn empty. Weights shade by value; scores by their size in the row.
  function grid(rows, rowLabels, colLabels, path, width, options) {
    options = options || {};
    var left = Math.ceil(chars(rowLabels) * 6.6) + 10;
    var top = Math.ceil(chars(colLabels) * 6.6) + 8;
    var cols = colLabels.length;
    // at most about 250 px tall, so that a long sentence's map still fits one screen
    var cell = options.cell || Math.max(16, Math.min(40, Math.floor((width - left - 4) / cols),
                                                     Math.floor(250 / rows.length)));
    var w = left + cols * cell + 2, h = top + rows.length * cell + 2;
    var root = svg("svg", {width: w, height: h, viewBox: "0 0 " + w + " " + h, role: "img",
                           "class": "tour-grid"});
    svg("title", {}, root).textContent = options.title || path;
    colLabels.forEach(function (t, j) {
      svg("text", {"class": "tour-tick tour-tick--x", transform: "translate(" + (left + j * cell + cell / 2 +
                   4) + "," + (top - 5) + ") rotate(-90)"}, root).textContent = t;
    });
    var scale = options.scores ? maxAbs(rows.map(function (r, i) {
      return r.filter(function (_, j) { return !(options.causal && j > i); });
    })) : 1;
    rows.forEach(function (row, i) {
      svg("text", {x: left - 5, y: top + i * cell + cell / 2 + 4, "class": "tour-tick"}, root)
        .textContent = rowLabels[i];
      row.forEach(function (v, j) {
        var masked = options.causal && j > i;
        var x = left + j * cell, y = top + i * cell;
        var shade = masked ? 0 : options.scores ? Math.abs(v) / scale : v;
        svg("rect", {x: x, y: y, width: cell - 1, height: cell - 1,
                     "class": masked ? "tour-masked" : v >= 0 ? "tour-pos" : "tour-neg",
                     "fill-opacity": masked ? 1 : Math.min(1, shade).toFixed(3)}, root);
        if (cell < 28) return;
        var t = svg("text", {x: x + cell / 2, y: y + cell / 2 + 4, "class": "tour-num" +
                             (!masked && shade > 0.55 ? " tour-num--on-dark" : "")}, root);
        if (masked) { t.textContent = "\u2013"; return; }
        t.textContent = options.scores ? fmt(v, 1) : fmt(v).replace(/^0/, "");
        mark(t, path + "." + i + "." + j, v);
      });
      if (options.chosen === i) {
        svg("rect", {x: left - 1, y: top + i * cell - 1, width: cols * cell + 1, height: cell + 1,
                     "class": "tour-chosen"}, root);
      }
    });
    return root;
  }

  // Horizontal bars: [{label, value, path, exp}], the longest bar the largest value.
  function bars(items, options) {
    options = options || {};
    var box = el("div", null, "tour-bars");
    var top = Math.max.apply(null, items.map(function (b) { return Math.abs(b.shown); }));
    items.forEach(function (b) {
      var row = el("div", null, "tour-bar" + (b.on ? " is-on" : ""), box);
      el("span", b.label, "tour-bar__label", row);
      var track = el("span", null, "tour-bar__track", row);
      var fill = el("span", null, "tour-bar__fill", track);
      fill.style.width = (100 * Math.abs(b.shown) / (top || 1)).toFixed(1) + "%";
      var num = el("span", options.percent ? (100 * b.shown).toFixed(1) + " %" : fmt(b.shown),
                   "tour-bar__value", row);
      mark(num, b.path, b.value, b.exp);
    });
    return box;
  }

  function chipsOf(pieces, ids, path) {
    var box = el("div", null, "tour-chips");
    pieces.forEach(function (p, i) {
      var chip = el("span", null, "tour-chip", box);
      el("span", p, "tour-chip__piece", chip);
      mark(el("span", String(ids[i]), "tour-chip__id", chip), path + "." + i, ids[i]);
    });
    return box;
  }

  function caption(text, parent) { return el("p", text, "tour-caption", parent); }

  function topIds(values, k) {
    return Array.from(values.keys()).sort(function (a, b) {
      return values[b] - values[a] || a - b;
    }).slice(0, k);
  }

  // ------------------------------------------------------------------------------------------ //
  // The steps' pictures, by data-part and position                                             //
  // ------------------------------------------------------------------------------------------ //

  // `s` is the sentence's state: model, trace, pieces, greedy ys, prefix, width.
  var DRAW = [
    // 1. pieces and ids
    function (s, box) {
      box.append(chipsOf(s.src, s.trace.source.ids, "source.ids"));
      caption("The model reads these " + s.src.length + " ids; its vocabulary has " +
              s.model.config.src_vocab + " pieces.", box);
    },
    // 2. embedding x sqrt(d_model)
    function (s, box) {
      box.append(strip(s.trace.source.embedding, s.src, "source.embedding", s.width,
                       {title: "embedding \u00d7 \u221a" + s.d + " (" + s.d + " numbers a row)"}));
      var row = s.trace.source.embedding[0];
      caption("\u201c" + s.src[0] + "\u201d begins " + row.slice(0, 4).map(function (v) {
        return fmt(v);
      }).join(", ") + ", \u2026 (blue above zero, red below)", box);
    },
    // 3. plus the positional encoding
    function (s, box) {
      var at = s.src.map(function (_, i) { return "pos " + i; });
      var left = Math.ceil(Math.max(chars(at), chars(s.src)) * 7.2) + 10;
      box.append(strip(s.trace.source.positions, at, "source.positions", s.width,
                       {title: "positional encoding", scale: 1, left: left}));
      box.append(strip(s.trace.source.sum, s.src, "source.sum", s.width,
                       {title: "embedding + positions: what layer 1 reads", left: left}));
    },
    // 4. Q, K and V of one head
    function (s, box) {
      var att = s.trace.source.layers[HEAD_LAYER].self, path = "source.layers.0.self.";
      var row = el("div", null, "tour-row tour-row--tight", box);
      // side by side, the pieces named once, on Q
      var left = Math.ceil(chars(s.src) * 7.2) + 10;
      var cell = Math.max(3, Math.min(9, Math.floor((s.width - left - 40) / (3 * s.dk))));
      ["q", "k", "v"].forEach(function (name, i) {
        var labels = i ? s.src.map(function () { return ""; }) : s.src;
        row.append(strip(att[name][HEAD], labels, path + name + "." + HEAD,
                         (i ? 12 : left) + s.dk * cell + 2,
                         {title: name.toUpperCase(), cell: cell, left: i ? 8 : left}));
      });
      caption("Each row: d_k = " + s.dk + " numbers of one piece, for head 1 of layer 1.", box);
    },
    // 5. the scores
    function (s, box) {
      var att = s.trace.source.layers[HEAD_LAYER].self;
      box.append(grid(att.scores[HEAD], s.src, s.src, "source.layers.0.self.scores.0", s.width,
                      {scores: true, title: "scores q\u00b7k / \u221a" + s.dk + ", head 1"}));
      caption("Rows ask (their q), columns answer (their k).", box);
    },
    // 6. softmax and the weighted sum
    function (s, box) {
      var att = s.trace.source.layers[HEAD_LAYER].self;
      box.append(grid(att.weights[HEAD], s.src, s.src, "source.layers.0.self.weights.0",
                      s.width, {title: "weights after the softmax, head 1", chosen: 0}));
      // the framed row's output: its weights times the rows of V
      var out = [att.concat[0].slice(0, s.dk)];
      box.append(strip(out, s.src.slice(0, 1), "source.layers.0.self.concat", s.width,
                       {title: "head 1's output for \u201c" + s.src[0] + "\u201d: weights \u00d7 V",
                        cell: 9}));
    },
    // 7. the heads, concatenated, then W^O
    function (s, box) {
      var att = s.trace.source.layers[HEAD_LAYER].self, n = s.src.length;
      var row = el("div", null, "tour-row", box);
      // small enough for two maps a row on a phone, four on a wide screen
      var labelW = Math.ceil(chars(s.src) * 6.6) + 10;
      var headCell = Math.max(6, Math.min(16, Math.floor(140 / n),
                                          Math.floor((s.width - labelW - 30) / (2 * n))));
      att.weights.forEach(function (P, a) {
        var g = grid(P, a ? s.src.map(function () { return ""; }) : s.src, s.src.map(function () {
          return "";
        }), "source.layers.0.self.weights." + a, 0,
                     {title: "head " + (a + 1), cell: headCell});
        var fig = el("figure", null, "tour-head", row);
        fig.append(g);
        el("figcaption", "head " + (a + 1), null, fig);
      });
      box.append(strip(att.concat, s.src, "source.layers.0.self.concat", s.width,
                       {title: "the " + s.h + " heads' outputs side by side (" + s.d + ")",
                        height: 11}));
      if (n <= 8) {  // a long sentence's rows would not fit one screen twice
        box.append(strip(att.out, s.src, "source.layers.0.self.out", s.width,
                         {title: "times W^O", height: 11}));
      }
    },
    // 8. residual and LayerNorm
    function (s, box) {
      var att = s.trace.source.layers[0].self;
      box.append(strip(att.residual, s.src, "source.layers.0.self.residual", s.width,
                       {title: "x + attention: the residual sum", height: 12}));
      box.append(strip(att.norm, s.src, "source.layers.0.self.norm", s.width,
                       {title: "LayerNorm of it", height: 12}));
      var stats = function (r) {
        var m = r.reduce(function (a, b) { return a + b; }, 0) / r.length;
        var v = r.reduce(function (a, b) { return a + (b - m) * (b - m); }, 0) / r.length;
        return [m, Math.sqrt(v)];
      };
      var a = stats(att.residual[0]), b = stats(att.norm[0]);
      var p = caption("\u201c" + s.src[0] + "\u201d: mean " + fmt(a[0]) + ", spread " + fmt(a[1]) +
                      " before; mean " + fmt(b[0]) + ", spread " + fmt(b[1]) + " after.", box);
      p.dataset.stats = [a[0], a[1], b[0], b[1]].join(" ");
    },
    // 9. the feed-forward layer
    function (s, box) {
      var ff = s.trace.source.layers[0].ff, hidden = ff.hidden[0];
      var side = Math.round(Math.sqrt(hidden.length));
      var rows = [];
      for (var i = 0; i < hidden.length; i += side) rows.push(hidden.slice(i, i + side));
      var row = el("div", null, "tour-row", box);
      var g = strip(rows, rows.map(function () { return ""; }), "ff", 200,
                    {title: "hidden layer of \u201c" + s.src[0] + "\u201d", cell: 9, height: 9,
                     frame: true});
      // the cells are the first piece's hidden values, row by row
      g.querySelectorAll("rect[data-trace]").forEach(function (r, k) {
        mark(r, "source.layers.0.ff.hidden.0." + k, hidden[k]);
      });
      row.append(g);
      var zeros = hidden.filter(function (v) { return v === 0; }).length;
      var note = el("p", zeros + " of its " + hidden.length + " numbers are 0 after the ReLU " +
                    "(empty cells).", "tour-caption", row);
      note.dataset.zeros = zeros;
      box.append(strip(ff.norm, s.src, "source.layers.0.ff.norm", s.width,
                       {title: "after Add & Norm: layer 1's output", height: 12}));
    },
    // 10. the encoder's output
    function (s, box) {
      var last = s.trace.source.layers.length - 1;
      box.append(strip(s.trace.memory, s.src, "memory", s.width,
                       {title: "after layer " + (last + 1) + ": the memory"}));
      caption("One row of " + s.d + " numbers per English piece, computed once.", box);
    },
    // 11. the decoder's input
    function (s, box) {
      box.append(chipsOf(s.prefixPieces, s.trace.target.ids, "target.ids"));
      box.append(strip(s.trace.target.sum, s.prefixPieces, "target.sum", s.width,
                       {title: "embedding \u00d7 \u221a" + s.d + " + positions"}));
    },
    // 12. masked self-attention
    function (s, box) {
      var att = s.trace.target.layers[0].self;
      box.append(grid(att.weights[HEAD], s.prefixPieces, s.prefixPieces,
                      "target.layers.0.self.weights.0", s.width,
                      {causal: true, title: "masked self-attention, layer 1, head 1"}));
    },
    // 13. cross-attention
    function (s, box) {
      var L = s.trace.target.layers.length - 1, att = s.trace.target.layers[L].cross;
      box.append(grid(att.weights[s.crossHead], s.prefixPieces, s.src,
                      "target.layers." + L + ".cross.weights." + s.crossHead, s.width,
                      {chosen: s.prefixPieces.length - 1, title: "cross-attention"}));
      caption("Layer " + (L + 1) + ", head " + (s.crossHead + 1) + ": rows German, columns " +
              "English.", box);
    },
    // 14. the logits
    function (s, box) {
      var ids = topIds(s.trace.logits, 6);
      box.append(bars(ids.map(function (id) {
        return {label: s.model.tokenizer.tokens([id])[0], value: s.trace.logits[id],
                shown: s.trace.logits[id], path: "logits." + id, on: id === ids[0]};
      })));
      caption("The 6 largest of " + s.trace.logits.length + " logits.", box);
    },
    // 15. softmax over the vocabulary
    function (s, box) {
      var ids = topIds(s.trace.logProbs, 5);
      box.append(bars(ids.map(function (id) {
        return {label: s.model.tokenizer.tokens([id])[0], value: s.trace.logProbs[id],
                shown: Math.exp(s.trace.logProbs[id]), path: "logProbs." + id, exp: true,
                on: id === ids[0]};
      }), {percent: true}));
      var rest = 1 - ids.reduce(function (a, id) { return a + Math.exp(s.trace.logProbs[id]); },
                                0);
      caption("The other " + (s.trace.logProbs.length - 5) + " pieces share " +
              (100 * rest).toFixed(1) + " %.", box);
    },
    // 16. the next piece
    function (s, box) {
      var next = s.ys[s.prefix.length];
      var line = el("p", null, "tour-sequence", box);
      s.prefixPieces.forEach(function (p) { el("span", p, "tour-chip__piece", line); });
      var chosen = el("span", s.model.tokenizer.tokens([next])[0], "tour-chip__piece is-new",
                      line);
      chosen.dataset.id = next;
      var p = caption("Greedy decoding appends the most probable piece: ", box);
      mark(el("span", (100 * Math.exp(s.trace.logProbs[next])).toFixed(1) + " %", null, p),
           "logProbs." + next, s.trace.logProbs[next], true);
      p.append(".");
    },
    // 17. the loop until </s>
    function (s, box) {
      var table = el("table", null, "tour-loop", box);
      var head = el("tr", null, null, el("thead", null, null, table));
      ["step", "reads", "writes", "probability"].forEach(function (t) { el("th", t, null, head); });
      var body = el("tbody", null, null, table);
      s.loop.forEach(function (r, t) {
        var tr = el("tr", null, null, body);
        tr.dataset.id = r.id;
        tr.dataset.prob = r.prob;
        el("td", String(t + 1), null, tr);
        el("td", s.model.tokenizer.tokens([s.ys[t]])[0], null, tr);
        el("td", s.model.tokenizer.tokens([r.id])[0], null, tr);
        el("td", (100 * r.prob).toFixed(1) + " %", null, tr);
      });
      caption("Output: " + s.greedyText, box).dataset.output = s.greedyText;
    },
    // 18. beam search
    function (s, box) {
      var list = el("ol", null, "tour-beams", box);
      list.append(el("li", "\u2026"));
      caption("Finished translations, best score first (beam " + BEAM + ", \u03b1 = " + ALPHA +
              "); greedy wrote: " + s.greedyText, box);
      var demo = window.translatorDemo;
      var text = s.text;
      demo.beamSearch(demo.liveModel.adapter(s.model), text, BEAM, ALPHA).then(function (r) {
        if (s.stale()) return;
        list.replaceChildren();
        r.ranked.forEach(function (h, i) {
          var li = el("li", null, i === 0 ? "is-on" : null, list);
          el("span", h.text, "tour-beams__text", li);
          el("span", "score " + h.score.toFixed(3), "tour-beams__score", li);
          li.dataset.text = h.text;
          li.dataset.score = h.score;
        });
        list.dataset.best = r.ranked[0].text;
      });
    },
  ];

  // ------------------------------------------------------------------------------------------ //
  // The page                                                                                   //
  // ------------------------------------------------------------------------------------------ //

  function argmax(values) {
    var best = 0;
    for (var i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  // What the tour shows of a sentence: the trace of the source and of the German written up to
  // the last piece before </s> (so the next piece carries meaning), and the greedy loop.
  function prepare(model, text, width) {
    var dec = model.manifest.decoding;
    var srcIds = model.source(text);
    var memory = model.encode(srcIds, "none");
    var ys = [dec.start_symbol], loop = [];
    var maxLen = srcIds.length + dec.max_extra + 1;
    while (ys[ys.length - 1] !== dec.end_symbol && ys.length < maxLen) {
      var lp = model.decode(memory, ys, "none").logProbs;
      var id = argmax(lp);
      loop.push({id: id, prob: Math.exp(lp[id])});
      ys.push(id);
    }
    var end = ys[ys.length - 1] === dec.end_symbol ? ys.length - 1 : ys.length;
    var prefix = ys.slice(0, Math.max(1, end - 1));
    var trace = model.trace(srcIds, prefix, "none");
    var tok = model.tokenizer;
    // the head of the last cross-attention whose last row is the most peaked
    var last = trace.target.layers[trace.target.layers.length - 1].cross.weights;
    var peaks = last.map(function (P) { return Math.max.apply(null, P[P.length - 1]); });
    return {model: model, text: text, trace: trace, ys: ys, prefix: prefix, loop: loop,
            src: tok.tokens(srcIds), prefixPieces: tok.tokens(prefix),
            greedyText: tok.decode(ys.slice(1), dec), d: model.config.d_model,
            h: model.config.h, dk: model.config.d_model / model.config.h, width: width,
            crossHead: peaks.indexOf(Math.max.apply(null, peaks))};
  }

  function problem(model, text) {
    if (!text) return "Type a number in English words, such as \u201cforty-two\u201d.";
    var unknown = Array.from(text).filter(function (c) {
      return c !== " " && !model.tokenizer.vocab.has(c);
    });
    if (unknown.length) {
      return "The vocabulary has no \u201c" + unknown[0] + "\u201d: it knows the letters, " +
        "hyphens and commas of number words.";
    }
    var limit = model.manifest.decoding.max_src_tokens;
    var n = model.tokenizer.encode(text).length + 1;
    if (n > limit) return "Too long: " + n + " pieces with </s>; the model takes " + limit + ".";
    if (n > MAX_PIECES) {
      return "The tour draws a cell per piece and this number has " + n + " pieces with </s>: " +
        "take one of at most " + MAX_PIECES + ", such as any number below a million.";
    }
    return null;
  }

  function setUp(root) {
    var steps = Array.from(root.querySelectorAll("[data-tour-step]"));
    var input = root.querySelector("#tour-source");
    var status = root.querySelector("#tour-status");
    var mapBox = root.querySelector(".tour__map");
    var prev = root.querySelector("#tour-prev"), next = root.querySelector("#tour-next");
    var counter = root.querySelector("#tour-count");
    var model = null, state = null, current = 1, generation = 0;
    root.classList.add("tour--on");

    var fromHash = function () {
      var m = /^#step-(\d+)$/.exec(location.hash);
      var n = m ? Number(m[1]) : 1;
      return n >= 1 && n <= steps.length ? n : 1;
    };

    var draw = function (step) {
      var box = step.querySelector(".tour__picture");
      if (!box || !state || box.dataset.drawn === String(generation)) return;
      box.replaceChildren();
      DRAW[Number(step.dataset.tourStep) - 1](state, box);
      box.dataset.drawn = String(generation);
    };

    var show = function (n, focus) {
      current = Math.min(steps.length, Math.max(1, n));
      steps.forEach(function (s, i) { s.hidden = i + 1 !== current; });
      var step = steps[current - 1];
      light(mapBox, step.dataset.part);
      root.dataset.step = String(current);
      prev.disabled = current === 1;
      next.disabled = current === steps.length;
      counter.textContent = "Step " + current + " of " + steps.length;
      draw(step);
      if (location.hash !== "#step-" + current) {
        history.replaceState(null, "", "#step-" + current);
      }
      if (focus) {
        var top = root.getBoundingClientRect().top;
        if (top < 0 || top > innerHeight / 3) root.scrollIntoView({block: "start"});
      }
    };

    var render = function () {
      if (!model) return;
      var typed = window.translatorDemo.clean(input.value);
      var text = window.translatorDemo.canonical(typed);
      var bad = problem(model, text);
      generation++;
      if (bad) {
        state = null;
        root.dataset.state = "invalid";
        status.textContent = bad;
        steps.forEach(function (s) {
          var box = s.querySelector(".tour__picture");
          if (box) { box.replaceChildren(); delete box.dataset.drawn; }
        });
        return;
      }
      var width = Math.min(560, steps[current - 1].clientWidth || root.clientWidth);
      var mine = generation;
      state = prepare(model, text, width);
      state.stale = function () { return mine !== generation; };
      root.dataset.text = text;
      root.dataset.src = state.trace.source.ids.join(" ");
      root.dataset.prefix = state.prefix.join(" ");
      root.dataset.output = state.greedyText;
      root.dataset.state = "done";
      status.textContent = (text === typed ? "" : "Read as \u201c" + text + "\u201d. ") +
        "German: " + state.greedyText;
      show(current, false);
    };

    drawMap(mapBox, 2);
    prev.addEventListener("click", function () { show(current - 1, true); });
    next.addEventListener("click", function () { show(current + 1, true); });
    document.addEventListener("keydown", function (event) {
      if (!root.isConnected || event.altKey || event.ctrlKey || event.metaKey) return;
      var t = event.target;
      if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA" ||
                t.isContentEditable)) return;
      if (event.key === "ArrowRight") { event.preventDefault(); show(current + 1, true); }
      if (event.key === "ArrowLeft") { event.preventDefault(); show(current - 1, true); }
    });
    window.addEventListener("hashchange", function () {
      if (root.isConnected && fromHash() !== current) show(fromHash(), true);
    });
    // the sentence outlives the page: Material's instant navigation draws the page again when
    // the address changes by a link or the history (#step-N), and so does a reload
    try {
      var saved = sessionStorage.getItem(SAVED);
      if (saved !== null) input.value = saved;
    } catch (e) { /* storage off: the field's own value */ }
    var timer = null;
    input.addEventListener("input", function () {
      try { sessionStorage.setItem(SAVED, input.value); } catch (e) { /* storage off */ }
      clearTimeout(timer);
      timer = setTimeout(render, 250);
    });
    show(fromHash(), false);
    root.dataset.state = "loading";
    status.textContent = "Loading the trained translator (about 1 MB)\u2026";
    window.translatorDemo.liveModel.load("de").then(function (m) {
      model = m;
      root.dataset.vocab = m.config.src_vocab;
      render();
    }, function (error) {
      root.dataset.state = "failed";
      status.textContent = "The model could not be loaded: " + error.message;
    });
  }

  function onPage() {
    var root = document.getElementById("tour");
    if (!root || root.dataset.tour) return;
    if (!window.translatorDemo || !window.translatorDemo.liveModel) return;
    root.dataset.tour = "on";
    setUp(root);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(onPage);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onPage);
  } else {
    onPage();
  }
})();
