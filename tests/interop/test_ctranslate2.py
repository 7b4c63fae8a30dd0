"""Tests of vanilla_transformer.interop.ctranslate2: the exported folder, run by CTranslate2,
against the PyTorch model it came from.

A post-norm model trained for a few seconds to copy variable-length sequences and end them with
`</s>` (uncertain enough that beams and length penalties matter), and a random pre-norm model,
must give the same greedy tokens, the same beam-search tokens without a length penalty, and the
same log-probabilities. How CTranslate2 normalises a score is checked from its own outputs; its
own penalty changes some beams, and rescoring its hypotheses with the package's GNMT penalty
gives the package's beams. Models CTranslate2 would compute differently are refused before
anything is written.
"""

from __future__ import annotations

import random
import sys

import pytest
import torch

from vanilla_transformer import make_model
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD
from vanilla_transformer.inference.evaluate import translate_sentences
from vanilla_transformer.interop import export_ctranslate2, translate_ctranslate2
from vanilla_transformer.model.masks import subsequent_mask

ctranslate2 = pytest.importorskip("ctranslate2")
tokenizers = pytest.importorskip("tokenizers")

V = 40
TOKENS = ["<pad>", "<s>", "</s>", "<unk>", *(f"w{i}" for i in range(4, V))]
EXTRA = 6  # an output may be this many tokens longer than its source (</s> included)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


def _model(norm_first: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    return make_model(V, V, N=2, d_model=32, d_ff=64, h=4, dropout=0.0, layer_norm="torch",
                      norm_first=norm_first, tie_weights=True, generator_bias=True, max_len=64)


def _copy_batch(rng: random.Random, n: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    rows = [[rng.randrange(4, V) for _ in range(rng.randint(1, 8))] for _ in range(n)]
    width = max(map(len, rows)) + 1
    src = torch.tensor([r + [EOS] + [PAD] * (width - len(r) - 1) for r in rows])
    tgt = torch.tensor([[BOS] + r + [EOS] + [PAD] * (width - len(r) - 1) for r in rows])
    return src, tgt


@pytest.fixture(scope="module")
def trained(_one_thread):
    """80 Adam steps of copying: the outputs have many lengths and the beams disagree."""
    model, rng = _model(False), random.Random(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(80):
        src, tgt = _copy_batch(rng)
        tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
        tgt_mask = (tgt_in != PAD).unsqueeze(-2) & subsequent_mask(tgt_in.size(1))
        logp = model.generator(model(src, tgt_in, (src != PAD).unsqueeze(-2), tgt_mask))
        loss = torch.nn.functional.nll_loss(logp.reshape(-1, V), tgt_out.reshape(-1),
                                            ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


@pytest.fixture(scope="module")
def tokenizer():
    """A word-level tokenizer over `TOKENS`: "w5 w6" is the pieces ["w5", "w6"]."""
    from vanilla_transformer.data.tokenizer import SharedTokenizer

    inner = tokenizers.Tokenizer(tokenizers.models.WordLevel(
        vocab={t: i for i, t in enumerate(TOKENS)}, unk_token="<unk>"))
    inner.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    return SharedTokenizer(inner)


@pytest.fixture(scope="module", params=["trained post-norm", "random pre-norm"])
def pair(request, trained, tmp_path_factory):
    model = trained if request.param.startswith("trained") else _model(True).eval()
    folder = tmp_path_factory.mktemp("ct2")
    export_ctranslate2(model, TOKENS, folder)
    return model, ctranslate2.Translator(str(folder), intra_threads=1)


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    rng = random.Random(3)
    return [" ".join(f"w{rng.randrange(4, V)}" for _ in range(rng.randint(1, 8)))
            for _ in range(60)]


def _sources() -> dict[int, list[list[int]]]:
    """Source ids (without </s>) grouped by length, so that a group shares one length limit."""
    rng = random.Random(5)
    groups: dict[int, list[list[int]]] = {}
    for _ in range(48):
        n = rng.randint(1, 8)
        groups.setdefault(n, []).append([rng.randrange(4, V) for _ in range(n)])
    return groups


def _ct2(translator, ids, beam: int, **options) -> list:
    return translator.translate_batch(
        [[TOKENS[i] for i in row] for row in ids], beam_size=beam, return_end_token=True,
        max_decoding_length=len(ids[0]) + 1 + EXTRA, min_decoding_length=0, **options)


def test_greedy_outputs_are_the_package_s(pair, tokenizer, sentences):
    model, translator = pair
    want = translate_sentences(model, tokenizer, sentences, beam_size=1, max_extra=EXTRA)
    assert translate_ctranslate2(translator, tokenizer, sentences, beam_size=1,
                                 max_extra=EXTRA) == want


def test_the_trained_model_s_outputs_have_many_lengths(trained, tokenizer, sentences):
    out = translate_sentences(trained, tokenizer, sentences, beam_size=1, max_extra=EXTRA)
    assert len({len(s.split()) for s in out}) >= 5  # the comparisons mean something


def test_beam_outputs_and_log_probs_are_the_package_s_without_a_length_penalty(pair):
    from vanilla_transformer.inference.beam import beam_search

    model, translator = pair
    for ids in _sources().values():
        src = torch.tensor([row + [EOS] for row in ids])
        tokens, scores = beam_search(model, src, src != PAD, src.size(1) + EXTRA + 1, BOS, EOS,
                                     4, 0.0, pad_symbol=PAD)
        want = [[TOKENS[i] for i in row[1:row.index(EOS) + 1 if EOS in row else None]]
                for row in tokens.tolist()]
        results = _ct2(translator, ids, 4, length_penalty=0.0, return_scores=True)
        assert [r.hypotheses[0] for r in results] == want
        got = torch.tensor([r.scores[0] for r in results])
        assert torch.allclose(got, scores.float(), atol=1e-4)


def test_ctranslate2_divides_by_the_length_to_the_power_alpha(trained, tmp_path):
    """score = log P / |Y|^alpha, |Y| counting the generated tokens, </s> included whether
    return_end_token shows it or not."""
    export_ctranslate2(trained, TOKENS, tmp_path)
    translator = ctranslate2.Translator(str(tmp_path), intra_threads=1)
    checked = 0
    for ids in _sources().values():
        raw = _ct2(translator, ids, 4, length_penalty=0.0, return_scores=True, num_hypotheses=4)
        for alpha in (0.6, 1.0):
            for with_end in (False, True):
                scored = _ct2(translator, ids, 4, length_penalty=alpha, return_scores=True,
                              num_hypotheses=4) if with_end else translator.translate_batch(
                    [[TOKENS[i] for i in row] for row in ids], beam_size=4, return_scores=True,
                    num_hypotheses=4, length_penalty=alpha, min_decoding_length=0,
                    max_decoding_length=len(ids[0]) + 1 + EXTRA)
                limit = len(ids[0]) + 1 + EXTRA
                for r0, r in zip(raw, scored):
                    # a hypothesis: its words, and whether it ended with </s> (not at the limit)
                    log_p = {(tuple(t for t in h if t != "</s>"), h[-1:] == ["</s>"]): s
                             for h, s in zip(r0.hypotheses, r0.scores)}
                    for hyp, score in zip(r.hypotheses, r.scores):
                        words = tuple(t for t in hyp if t != "</s>")
                        ended = hyp[-1:] == ["</s>"] if with_end else len(hyp) < limit
                        if (words, ended) not in log_p:
                            continue
                        length = len(words) + ended  # </s> counted, returned or not
                        assert score == pytest.approx(log_p[words, ended] / length ** alpha,
                                                      abs=1e-4)
                        checked += 1
    assert checked > 100


@pytest.mark.parametrize("alpha", [0.6, 1.0])
def test_rescoring_gives_the_package_s_beams_where_ctranslate2_s_penalty_does_not(
        alpha, trained, tokenizer, sentences, tmp_path):
    export_ctranslate2(trained, tokenizer, tmp_path)
    translator = ctranslate2.Translator(str(tmp_path), intra_threads=1)
    # batch_size=1: each sentence searched under its own length limit, as CTranslate2's groups
    want = translate_sentences(trained, tokenizer, sentences, beam_size=4, alpha=alpha,
                               max_extra=EXTRA, batch_size=1)
    rescored = translate_ctranslate2(translator, tokenizer, sentences, beam_size=4, alpha=alpha,
                                     max_extra=EXTRA)
    native = translate_ctranslate2(translator, tokenizer, sentences, beam_size=4, alpha=alpha,
                                   max_extra=EXTRA, rescore=False)
    assert rescored == want
    assert sum(a != b for a, b in zip(native, want)) >= 3  # |Y|^alpha ranks otherwise


@pytest.mark.parametrize("quantization", [None, "int8", "float16"])
def test_the_model_is_left_as_it_was(quantization, tmp_path):
    model = _model(False)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    export_ctranslate2(model, TOKENS, tmp_path, quantization=quantization)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_int8_weights_are_stored_smaller_and_translate(trained, tokenizer, sentences, tmp_path):
    for folder in ("int8", "float32"):
        (tmp_path / folder).mkdir()
    export_ctranslate2(trained, tokenizer, tmp_path / "int8", quantization="int8")
    export_ctranslate2(trained, tokenizer, tmp_path / "float32")
    sizes = [(tmp_path / f / "model.bin").stat().st_size for f in ("int8", "float32")]
    assert sizes[0] < sizes[1]
    stored = ctranslate2.Translator(str(tmp_path / "int8"), intra_threads=1)
    out = translate_ctranslate2(stored, tokenizer, sentences, beam_size=1)
    assert len(out) == len(sentences) and all(w in TOKENS for s in out for w in s.split())


@pytest.mark.parametrize("options, message", [
    (dict(layer_norm="annotated"), "layer_norm='annotated'"),
    (dict(norm_first=False, final_norm=True), "no final LayerNorm after post-norm layers"),
])
def test_models_ctranslate2_would_compute_differently_are_refused(options, message, tmp_path):
    model = make_model(len(TOKENS), len(TOKENS), N=1, d_model=16, d_ff=32, h=2,
                       **{"layer_norm": "torch", **options})
    with pytest.raises(ValueError, match=message):
        export_ctranslate2(model, TOKENS, tmp_path)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("vocabulary, error, message", [
    (TOKENS + ["w40"], ValueError, "the model only"),
    (["<s>", "<pad>", *TOKENS[2:]], ValueError, "must start with"),
    (TOKENS[:-1] + ["w4"], ValueError, "a token twice"),
    ("<pad><s>", TypeError, "not one string"),
    ([1, 2, 3], TypeError, "list of token strings"),
])
def test_a_vocabulary_that_does_not_fit_is_refused(vocabulary, error, message, tmp_path):
    with pytest.raises(error, match=message):
        export_ctranslate2(_model(False), vocabulary, tmp_path)
    assert not list(tmp_path.iterdir())


def test_bad_arguments_are_refused_before_anything_is_written(tmp_path):
    model = _model(False)
    with pytest.raises(ValueError, match="does not exist"):
        export_ctranslate2(model, TOKENS, tmp_path / "missing")
    with pytest.raises(ValueError, match="quantization must be one of"):
        export_ctranslate2(model, TOKENS, tmp_path, quantization="int4")
    with pytest.raises(TypeError, match="EncoderDecoder"):
        export_ctranslate2(torch.nn.Linear(2, 2), TOKENS, tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_smaller_vocabulary_is_padded_with_unused_names(tmp_path):
    import json

    export_ctranslate2(_model(False), TOKENS[:30], tmp_path)
    names = json.loads((tmp_path / "shared_vocabulary.json").read_text())
    assert names[:30] == TOKENS[:30] and names[30:] == [f"<unused{i}>" for i in range(30, 40)]


def test_without_ctranslate2_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)
    monkeypatch.setitem(sys.modules, "ctranslate2.specs", None)
    with pytest.raises(ImportError):
        export_ctranslate2(_model(False), TOKENS, tmp_path)
    assert not list(tmp_path.iterdir())
