// Two additions to the pages that teach with the trained translator, on top of translator.js
// (which must load first: it defines window.translatorDemo).
//
// - Figure 1, small, under Try it's map (#explorer-figure1): the encoder and the decoder,
//   N layers each, with the attention block the map comes from highlighted (its kind and its
//   layer, read from the map's own data-kind/data-layer, or from the menus before a map is
//   drawn). An attention block is a button: it sets the menus. On Try it, pointing at, tapping
//   or focusing any block shows its values for the current token under the figure
//   (#explorer-values), from translator.js's root.__blockValues.
// - Predict, then reveal (.predict-reveal, in the lessons): a question about what the trained
//   model will do on the sentence the learner types. The learner commits to an answer, and only
//   then does the page load the model (the first time) and run it; the model's own numbers
//   grade the answer. Nothing loads before the first click.
//   data-question="cross-argmax": the decoder is fed the right German (num2words' form, as
//     translator.js writes it) up to a piece; while it writes that piece, which English piece
//     does the last decoder layer's cross-attention (averaged over its heads) weigh most? The
//     piece is the units where German writes them first, or any piece the learner picks.
//   data-question="top-above-half": is the greedy choice above one half at every step?
//   After the reveal the element carries data-correct ("true"/"false"), data-choice (the
//   learner's answer), data-answer (the model's) and, for the first, data-piece.
(function () {
  "use strict";

  var script = document.currentScript;
  var ROOT = new URL("..", script ? script.src : location.href);
  var MODEL_DIR = new URL("assets/translator/", ROOT).href;
  var SVG = "http://www.w3.org/2000/svg";

  function svg(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(node);
    return node;
  }

  function html(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // ------------------------------------------------------------------------------------------ //
  // Figure 1 beside the map                                                                    //
  // ------------------------------------------------------------------------------------------ //
  var BOX_W = 80, BOX_GAP = 4, ARROW = 22, HEAD = 18, TITLE = 16, ROW = 19, PAD = 2;
  var BLOCKS = {
    encoder: [["encoder-self", "self-attn", "self"], [null, "feed-fwd", "ff"]],
    decoder: [["decoder-self", "masked self", "self"], ["cross", "cross-attn", "cross"],
              [null, "feed-fwd", "ff"]],
  };

  function drawFigure1(figure, N, onPick, onPoint) {
    var rows = BLOCKS.decoder.length;
    var boxH = TITLE + rows * ROW + 4;
    var side = N * BOX_W + (N - 1) * BOX_GAP;
    var width = 2 * PAD + 2 * side + ARROW, height = HEAD + boxH + PAD;
    figure.setAttribute("viewBox", "0 0 " + width + " " + height);
    figure.replaceChildren();
    svg("title", {}, figure).textContent = "Where the map comes from, in the Transformer";
    ["encoder", "decoder"].forEach(function (part, p) {
      var x0 = PAD + p * (side + ARROW);
      var head = svg("text", {x: x0 + side / 2, y: 13, "class": "figure1__part"}, figure);
      head.textContent = part;
      for (var l = 1; l <= N; l++) {
        var x = x0 + (l - 1) * (BOX_W + BOX_GAP);
        var g = svg("g", {"class": "figure1__layer", "data-part": part, "data-layer": l}, figure);
        svg("rect", {x: x, y: HEAD, width: BOX_W, height: boxH, rx: 4, "class": "figure1__box"}, g);
        svg("text", {x: x + BOX_W / 2, y: HEAD + 12, "class": "figure1__title"}, g)
          .textContent = "layer " + l;
        BLOCKS[part].forEach(function (block, r) {
          var y = HEAD + TITLE + r * ROW;
          var b = svg("g", {"class": "figure1__block" + (block[0] ? " figure1__block--attn" : ""),
                            "data-kind": block[0] || "", "data-layer": l, "data-part": part,
                            "data-block": block[2]}, g);
          svg("rect", {x: x + 3, y: y, width: BOX_W - 6, height: ROW - 3, rx: 3}, b);
          svg("text", {x: x + BOX_W / 2, y: y + 12}, b).textContent = block[1];
          if (onPoint) {
            // pointed at, tapped or focused: the block's values for the current token
            var point = (function (pt, layer, name) {
              return function () { onPoint(pt, layer, name); };
            })(part, l, block[2]);
            b.addEventListener("mouseenter", point);
            b.addEventListener("focus", point);
            b.addEventListener("click", point);
            if (!block[0]) {
              b.setAttribute("role", "button");
              b.setAttribute("tabindex", "0");
              b.setAttribute("aria-label", "feed-forward, " + part + " layer " + l +
                             ": show its values");
              b.classList.add("figure1__block--values");
              b.addEventListener("keydown", function (e) {
                if (e.key === "Enter" || e.key === " ") { e.preventDefault(); point(); }
              });
            }
          }
          if (block[0]) {
            b.setAttribute("role", "button");
            b.setAttribute("tabindex", "0");
            b.setAttribute("aria-label", block[1] + ", " + part + " layer " + l);
            var pick = (function (kind, layer) {
              return function () { onPick(kind, layer); };
            })(block[0], l);
            b.addEventListener("click", pick);
            b.addEventListener("keydown", function (e) {
              if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); }
            });
          }
        });
      }
    });
    // the encoder's output, the memory, goes to every decoder layer's cross-attention
    var ax = PAD + side + 2, ay = HEAD + TITLE + ROW + (ROW - 3) / 2;
    svg("path", {d: "M" + ax + "," + ay + " h" + (ARROW - 6) + " m-5,-4 l5,4 l-5,4",
                 "class": "figure1__arrow"}, figure);
  }

  // A vector as a strip of cells, blue above zero and red below, as dark as its size against
  // the largest size in the vector; each cell's title gives its index and value.
  function strip(vector) {
    var CELL = 9, H = 14;
    var top = vector.reduce(function (m, x) { return Math.max(m, Math.abs(x)); }, 0) || 1;
    var perRow = vector.length > 32 ? 32 : vector.length;
    var rows = Math.ceil(vector.length / perRow);
    var node = svg("svg", {"class": "explorer-values__strip", width: perRow * CELL,
                           height: rows * H, viewBox: "0 0 " + perRow * CELL + " " + rows * H,
                           role: "img"});
    vector.forEach(function (x, i) {
      var cell = svg("rect", {x: (i % perRow) * CELL, y: Math.floor(i / perRow) * H,
                              width: CELL - 1, height: H - 2,
                              "class": x >= 0 ? "is-positive" : "is-negative",
                              "fill-opacity": (Math.abs(x) / top).toFixed(3)}, node);
      svg("title", {}, cell).textContent = "[" + i + "] " + x.toFixed(3);
    });
    return node;
  }

  function drawValues(box, got, part, layer, block) {
    var names = {self: part === "encoder" ? "self-attention" : "masked self-attention",
                 cross: "cross-attention", ff: "feed-forward"};
    box.dataset.part = part;
    box.dataset.layer = String(layer);
    box.dataset.block = block;
    if (!got) {
      box.dataset.state = "none";
      box.replaceChildren(html("p", {}, "The values are those of the page\u2019s model, once a " +
                               "sentence is translated: go back to it to see them."));
      return;
    }
    box.dataset.state = "done";
    box.dataset.pos = String(got.pos);
    box.dataset.ys = got.ys.join(" ");
    box.dataset.src = got.srcIds.join(" ");
    box.dataset.head = String(got.head);
    var title = html("p", {"class": "explorer-values__title"},
      part + " layer " + layer + ", " + names[block] + ", for \u201c" + got.token + "\u201d" +
      (block !== "ff" && got.headIsAverage ? " (head 1: the average has no Q, K or V)" : "") +
      (got.switch !== "none" ? ", switched: " + got.switch : "") + ":");
    var table = html("table", {"class": "explorer-values__table"});
    got.rows.forEach(function (r) {
      var tr = html("tr", {"data-name": r.name,
                           "data-values": r.values.map(function (x) { return x.toFixed(6); })
                             .join(",")});
      if (r.pos !== undefined) tr.dataset.pos = String(r.pos);
      var norm = Math.sqrt(r.values.reduce(function (s, x) { return s + x * x; }, 0));
      var label = html("td", {}, r.label);
      label.appendChild(html("span", {"class": "explorer-values__stats"},
        r.values.length + " numbers, length " + norm.toFixed(2) + ", first " +
        r.values.slice(0, 3).map(function (x) { return x.toFixed(2); }).join(", ")));
      var cell = html("td", {});
      cell.appendChild(strip(r.values));
      tr.appendChild(label);
      tr.appendChild(cell);
      table.appendChild(tr);
    });
    box.replaceChildren(title, table);
  }

  function setUpFigure1(heatmap) {
    var root = heatmap.closest(".translator") || document;
    var kind = root.querySelector("#explorer-kind");
    var layer = root.querySelector("#explorer-layer");
    var head = root.querySelector("#explorer-head");
    // under the map and its cell readout: on a phone the map itself stays near the input
    // (Try it keeps a place for it under the training slider)
    var slot = root.querySelector("#explorer-figure1-slot");
    var anchor = root.querySelector("#explorer-cell") || heatmap;
    if (!kind || !layer || root.querySelector("#explorer-figure1")) return;
    var figure = svg("svg", {id: "explorer-figure1", "class": "explorer-figure1", role: "img"});
    var box = html("div", {"class": "explorer-figure1__box"});
    box.appendChild(figure);
    if (slot) slot.appendChild(box);
    else anchor.insertAdjacentElement("afterend", box);
    var drawnN = 0;
    // Try it shows a block's values under the figure (translator.js computes them)
    var values = null;
    if (slot) {
      box.appendChild(html("p", {"class": "explorer-values__hint"},
        "Point at or tap a block to see its values for the current token."));
      values = html("div", {id: "explorer-values", "class": "explorer-values",
                            "aria-live": "polite"});
      box.appendChild(values);
    }
    var point = !values ? null : function (part, l, block) {
      var got = root.__blockValues ? root.__blockValues(part, l, block) : null;
      drawValues(values, got, part, l, block);
    };

    var pick = function (k, l) {
      if (!layer.querySelector('option[value="' + l + '"]')) return;  // no model yet
      kind.value = k;
      layer.value = String(l);
      kind.dispatchEvent(new Event("change", {bubbles: true}));
      layer.dispatchEvent(new Event("change", {bubbles: true}));
    };

    var update = function () {
      // the map's own attributes once it is drawn; the menus before
      var N = layer.options.length || Number(figure.dataset.n) || 2;
      if (N !== drawnN) {
        drawFigure1(figure, N, pick, point);
        drawnN = N;
        figure.dataset.n = String(N);
      }
      var k = heatmap.dataset.kind || kind.value;
      var l = Number(heatmap.dataset.layer || layer.value || N);
      var h = heatmap.dataset.head || (head ? head.value : "");
      figure.dataset.kind = k;
      figure.dataset.layer = String(l);
      var part = k === "encoder-self" ? "encoder" : "decoder";
      figure.querySelectorAll(".figure1__layer").forEach(function (g) {
        g.classList.toggle("is-on", g.dataset.part === part && Number(g.dataset.layer) === l);
      });
      figure.querySelectorAll(".figure1__block--attn").forEach(function (b) {
        var on = b.dataset.kind === k && Number(b.dataset.layer) === l;
        b.classList.toggle("is-on", on);
        b.setAttribute("aria-pressed", on ? "true" : "false");
      });
      var names = {"cross": "cross-attention", "decoder-self": "masked self-attention",
                   "encoder-self": "self-attention"};
      figure.setAttribute("aria-label", "The Transformer's encoder and decoder, " + N +
        " layers each; the map is the " + names[k] + " of " + part + " layer " + l +
        (h ? (h === "average" ? ", averaged over its heads" : ", head " + h) : ""));
    };

    [kind, layer].concat(head ? [head] : []).forEach(function (select) {
      select.addEventListener("change", update);
    });
    new MutationObserver(update).observe(heatmap, {attributes: true,
      attributeFilter: ["data-kind", "data-layer", "data-head"]});
    new MutationObserver(update).observe(layer, {childList: true});
    update();
  }

  // ------------------------------------------------------------------------------------------ //
  // Predict, then reveal                                                                       //
  // ------------------------------------------------------------------------------------------ //
  var vocabPromise = null;

  function fetchJson(name) {
    return fetch(MODEL_DIR + name).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status + " for " + name);
      return r.json();
    });
  }

  // The German model's tokenizer and its decoding symbols: what the choices need (8 KB).
  function loadVocab() {
    if (!vocabPromise) {
      vocabPromise = Promise.all([fetchJson("tokenizer.json"), fetchJson("manifest.json")])
        .then(function (files) {
          return {tok: new window.translatorDemo.BpeTokenizer(files[0]),
                  decoding: files[1].decoding};
        });
      vocabPromise.catch(function () { vocabPromise = null; });
    }
    return vocabPromise;
  }

  function argmax(values) {
    var best = 0;
    for (var i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return best;
  }

  // a piece without the mark of a word's start, unless the mark is all there is
  function bare(piece) { return piece.replace(/^\u2581(?=.)/, ""); }

  function percent(p) { return (100 * p).toFixed(1) + " %"; }

  // What the learner typed, as the page reads it (translator.js: clean, then canonical).
  function readInput(text) {
    var demo = window.translatorDemo;
    var cleaned = demo.clean(text);
    return demo.canonical ? demo.canonical(cleaned) : cleaned;
  }

  // Each question: `prepare(vocab, text)` reads the sentence before any model runs (an error
  // message, or the prompt, the choices and what `ask` needs); `ask(model, text, prep)` runs the
  // model once the learner has answered and returns its answer, the numbers behind it (rows of
  // a bar table) and what to say.
  var QUESTIONS = {
    "cross-argmax": {
      prepare: function (vocab, text, piece) {
        var demo = window.translatorDemo;
        var n = demo.parseNumber(text);
        if (n === null || n >= 1e6) return "Type a number below a million in English words.";
        var tok = vocab.tok;
        var german = demo.germanWords(n);
        var tgtIds = tok.encode(german);
        var tgt = tok.tokens(tgtIds).map(bare);
        // the piece asked about: the learner's, or the units when German writes them first
        // (the piece before one that starts with "und"), or else the first; never the bare
        // mark of a word's start, "\u2581", which means nothing
        var meant = function (i) { return i >= 0 && i < tgt.length && tgt[i] !== "\u2581"; };
        var unit = tgt.findIndex(function (p, i) {
          return meant(i) && /^und/.test(tgt[i + 1] || "");
        });
        var k = piece !== undefined && meant(piece) ? piece :
          unit >= 0 ? unit : tgt.findIndex(function (p, i) { return meant(i); });
        var srcIds = tok.encode(text).concat([vocab.decoding.end_symbol]);
        return {
          german: german, pieces: tgt, piece: k, tgtIds: tgtIds,
          prompt: "The decoder writes " + german + " piece by piece, each with the right " +
                  "German before it. While it writes \u201c" + tgt[k] + "\u201d, which " +
                  "English piece does its last layer look at most (cross-attention, " +
                  "averaged over the heads)?",
          choices: tok.tokens(srcIds).map(function (p, j) {
            return {value: String(j), label: p === "</s>" ? "</s> (the end)" : bare(p)};
          }),
        };
      },
      ask: async function (model, text, prep) {
        var demo = window.translatorDemo;
        var state = await demo.begin(model, text);
        state.ys = state.ys.concat(prep.tgtIds.slice(0, prep.piece));  // the right German
        var last = await demo.run(state);
        var heads = last.crossMaps[last.crossMaps.length - 1];
        var row = prep.piece;  // row i is where position i looked to write piece i
        var mean = heads[0][row].map(function (_, j) {
          return heads.reduce(function (s, grid) { return s + grid[row][j]; }, 0) / heads.length;
        });
        var best = argmax(mean);
        var src = model.tokenizer.tokens(state.srcIds).map(bare);
        // the units piece of German looking at the English units, which follow the tens
        var crossing = /^und/.test(prep.pieces[row + 1] || "") && best > 0 &&
          /-$/.test(src[best - 1]);
        return {
          answer: String(best),
          rows: src.map(function (p, j) { return {label: p, value: mean[j], on: j === best}; }),
          say: "While it writes \u201c" + prep.pieces[row] + "\u201d, the last decoder layer " +
               "puts " + percent(mean[best]) + " of its attention on \u201c" + src[best] +
               "\u201d." + (crossing ? " German writes the units before the tens, so the " +
               "decoder reads the English units ahead of the tens." : ""),
        };
      },
    },
    "top-above-half": {
      prepare: function (vocab, text) {
        return {
          prompt: "Greedy decoding writes the most probable piece at each step. Will that " +
                  "piece get more than 50 % at every step of this sentence's translation?",
          choices: [{value: "yes", label: "yes, above 50 % at every step"},
                    {value: "no", label: "no, 50 % or less somewhere"}],
        };
      },
      ask: async function (model, text) {
        var demo = window.translatorDemo;
        var d = model.manifest.decoding;
        var state = await demo.begin(model, text);
        await demo.run(state);
        var rows = [];
        for (;;) {
          var lp = state.last.logProbs;
          var id = argmax(lp);
          rows.push({label: bare(model.tokenizer.tokens([id])[0]), value: Math.exp(lp[id])});
          await demo.step(state, id);
          if (id === d.end_symbol || state.ys.length >= state.maxLen) break;
        }
        var lowest = rows.reduce(function (m, r) { return r.value < m.value ? r : m; });
        lowest.on = true;
        return {
          answer: lowest.value > 0.5 ? "yes" : "no",
          rows: rows,
          say: "Its least sure step writes \u201c" + lowest.label + "\u201d, at " +
               percent(lowest.value) + ". Even a sure step stops short of 100 %: the model " +
               "was trained with label smoothing, whose target gives the right piece " +
               "1 \u2212 \u03b5 and spreads \u03b5 over the others, so the top candidate " +
               "stops near 1 \u2212 \u03b5.",
          link: ["Training: why the top candidate stops near 1 \u2212 \u03b5",
                 "training/#top-candidate"],
        };
      },
    },
  };

  function setUpQuestion(box) {
    var q = QUESTIONS[box.dataset.question];
    if (!q) return;
    box.dataset.ready = "on";
    var id = "predict-" + Math.random().toString(36).slice(2, 8);
    var input = html("input", {id: id, type: "text", autocomplete: "off",
                               "aria-label": "Your sentence, a number in English words",
                               autocapitalize: "off", spellcheck: "false",
                               "class": "predict-reveal__input"});
    input.value = box.dataset.sentence || "forty-one";
    var ask = html("button", {type: "button", "class": "md-button predict-reveal__ask"},
                   "Ask me");
    var pieces = html("div", {"class": "predict-reveal__pieces", role: "group",
                              "aria-label": "The German piece asked about"});
    var prompt = html("p", {"class": "predict-reveal__prompt"});
    var choices = html("div", {"class": "predict-reveal__choices", role: "group",
                               "aria-label": "Your prediction"});
    var result = html("div", {"class": "predict-reveal__result", "aria-live": "polite"});
    box.querySelectorAll(".predict-reveal__fallback").forEach(function (n) { n.remove(); });
    var row = html("div", {"class": "predict-reveal__row"});
    row.appendChild(input);
    row.appendChild(ask);
    [row, pieces, prompt, choices, result].forEach(function (n) {
      box.appendChild(n);
    });

    var request = 0;
    var reset = function () {
      request += 1;
      ["correct", "choice", "answer", "state", "piece"].forEach(function (k) {
        delete box.dataset[k];
      });
      [pieces, prompt, choices, result].forEach(function (n) { n.replaceChildren(); });
      ask.hidden = false;
    };

    var reveal = async function (text, prep, choice, button, mine) {
      box.dataset.state = "running";
      box.dataset.choice = choice;
      box.querySelectorAll(".predict-reveal__choices button, .predict-reveal__pieces button")
        .forEach(function (b) {
          b.disabled = true;
          b.classList.toggle("is-chosen", b === button);
        });
      result.replaceChildren(html("p", {}, "Your prediction is in. Asking the model\u2026"));
      var model = await window.translatorDemo.loadModel("de", "final");
      if (mine !== request) return;
      var out = await q.ask(model, text, prep);
      if (mine !== request) return;
      var right = out.answer === choice;
      box.dataset.answer = out.answer;
      box.dataset.correct = right ? "true" : "false";
      box.dataset.state = "revealed";
      Array.from(choices.children).forEach(function (b) {
        b.classList.toggle("is-answer", b.dataset.value === out.answer);
      });
      var verdict = html("p", {"class": "predict-reveal__verdict"},
                         right ? "Right: the model agrees." : "Not this time.");
      var table = html("table", {"class": "predict-reveal__bars"});
      out.rows.forEach(function (r) {
        var tr = html("tr", {"class": r.on ? "is-on" : ""});
        tr.appendChild(html("td", {}, r.label));
        var bar = html("td", {});
        var fill = html("span", {"class": "predict-reveal__fill"});
        fill.style.width = (100 * r.value).toFixed(1) + "%";
        bar.appendChild(fill);
        tr.appendChild(bar);
        tr.appendChild(html("td", {}, percent(r.value)));
        table.appendChild(tr);
      });
      var say = html("p", {}, out.say + " ");
      if (out.link) {
        say.appendChild(html("a", {href: new URL("learn/" + out.link[1], ROOT).href},
                             out.link[0]));
        say.appendChild(document.createTextNode("."));
      }
      var again = html("button", {type: "button", "class": "md-button predict-reveal__again"},
                       "Another sentence");
      again.addEventListener("click", function () { reset(); input.focus(); input.select(); });
      result.replaceChildren(verdict, table, say, again);
    };

    var pose = function (vocab, text, piece, mine) {
      var prep = q.prepare(vocab, text, piece);
      if (typeof prep === "string") {
        box.dataset.state = "refused";
        result.replaceChildren(html("p", {}, prep));
        return;
      }
      ask.hidden = true;
      box.dataset.state = "choosing";
      if (prep.pieces) {
        box.dataset.piece = String(prep.piece);
        pieces.replaceChildren.apply(pieces, [html("span", {}, "German piece: ")].concat(
          prep.pieces.map(function (p, k) {
            var b = html("button", {type: "button", "data-piece": String(k),
                                    "aria-pressed": k === prep.piece ? "true" : "false",
                                    "class": "md-button" + (k === prep.piece ?
                                                            " is-target" : "")}, p);
            if (p === "\u2581") b.style.display = "none";  // a word's start: nothing to ask
            b.addEventListener("click", function () {
              if (box.dataset.state === "choosing") pose(vocab, text, k, mine);
            });
            return b;
          })));
      }
      prompt.textContent = prep.prompt;
      choices.replaceChildren.apply(choices, prep.choices.map(function (c) {
        var b = html("button", {type: "button", "class": "md-button", "data-value": c.value},
                     c.label);
        b.addEventListener("click", function () {
          reveal(text, prep, c.value, b, mine).catch(function (error) {
            if (mine !== request) return;
            box.dataset.state = "failed";
            result.replaceChildren(html("p", {}, "The model could not run: " + error.message));
          });
        });
        return b;
      }));
    };

    var start = function () {
      reset();
      var mine = request;
      box.dataset.state = "loading";
      loadVocab().then(function (vocab) {
        if (mine !== request) return;
        var text = readInput(input.value);
        var ids = vocab.tok.encode(text);
        if (!text || ids.indexOf(vocab.decoding.unk_symbol) >= 0 ||
            ids.length >= vocab.decoding.max_src_tokens) {
          box.dataset.state = "refused";
          result.replaceChildren(html("p", {}, "The model cannot read this: type a number " +
                                      "in English words, below a million."));
          return;
        }
        pose(vocab, text, undefined, mine);
      }, function (error) {
        box.dataset.state = "failed";
        result.replaceChildren(html("p", {}, "Could not load the vocabulary: " + error.message));
      });
    };

    ask.addEventListener("click", start);
    input.addEventListener("keydown", function (e) {
      if (e.key === "Enter") { e.preventDefault(); start(); }
    });
    input.addEventListener("input", reset);
  }

  function onPage() {
    var heatmap = document.getElementById("translator-heatmap");
    if (heatmap) setUpFigure1(heatmap);
    document.querySelectorAll(".predict-reveal:not([data-ready])").forEach(setUpQuestion);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(onPage);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", onPage);
  } else {
    onPage();
  }
})();
