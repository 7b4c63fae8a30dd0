"""The committed translator of the "Try it" page matches the package's code.

docs/assets/translator/ holds what scripts/build_translator_demo.py wrote: `model.pt` (a
`save_checkpoint` file), `encoder.onnx` and `decoder.onnx` with every attention map as an output,
`tokenizer.json`, `manifest.json`, `train_numbers.json`, the same run at earlier steps in
`steps/NNNN/` and the English-to-French model in `fr/`. These tests rebuild what they can from
the checkpoints with the package and compare: the graphs (against a fresh `export_onnx` and
against PyTorch), the tokenizer file, greedy decoding on held-out numbers, the manifest, the
training split, and the numbers the page states.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from vanilla_transformer.data.numbers import DEFAULT_SIZES, number_pairs, split_numbers
from vanilla_transformer.data.tokenizer import BOS, EOS, PAD, SharedTokenizer
from vanilla_transformer.inference.evaluate import MAX_EXTRA, translate_ids
from vanilla_transformer.interop.onnx import export_onnx, greedy_decode_onnx
from vanilla_transformer.model.masks import subsequent_mask
from vanilla_transformer.training.checkpoints import load_checkpoint
from vanilla_transformer.training.translation import (
    TRANSLATION_PRESETS,
    TranslationConfig,
)

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "docs" / "assets" / "translator"
PAGE = ROOT / "docs" / "try-it.md"
FILES = ("encoder.onnx", "decoder.onnx", "tokenizer.json", "model.pt")
TOLERANCE = 1e-5


def _session(path: Path):
    import onnxruntime

    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((ASSETS / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def model():
    model, _ = load_checkpoint(ASSETS / "model.pt")
    return model.eval()


@pytest.fixture(scope="module")
def tokenizer() -> SharedTokenizer:
    return SharedTokenizer.load(ASSETS / "tokenizer.json")


@pytest.fixture(scope="module")
def committed():
    return {"encoder": _session(ASSETS / "encoder.onnx"),
            "decoder": _session(ASSETS / "decoder.onnx")}


@pytest.fixture(scope="module")
def fresh(model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("export")
    paths = export_onnx(model, folder, opset=18, attention_weights="all")
    return {name: _session(path) for name, path in paths.items()}


def held_out(count: int) -> list[tuple[str, str]]:
    """The first `count` test numbers of the corpus the model was trained on: never seen."""
    return number_pairs(split_numbers(DEFAULT_SIZES, seed=0)["test"][:count], "de")


def test_the_manifest_describes_the_files(manifest):
    for name in FILES:
        data = (ASSETS / name).read_bytes()
        assert manifest["files"][name] == {"bytes": len(data),
                                           "sha256": hashlib.sha256(data).hexdigest()}, name


def test_the_checkpoint_is_plain_data_and_the_settings_are_the_defaults(manifest, model):
    data = torch.load(ASSETS / "model.pt", map_location="cpu", weights_only=True)
    assert data["config"] == manifest["model"] == model.config.to_dict()
    assert sum(p.numel() for p in model.parameters()) == manifest["parameters"]
    preset = dict(TRANSLATION_PRESETS[manifest["preset"]], max_len=manifest["model"]["max_len"])
    assert {k: manifest["model"][k] for k in preset} == preset
    # settings added since the assets were built read back as their defaults
    assert TranslationConfig.from_dict(manifest["training"]) == TranslationConfig()
    assert manifest["decoding"]["max_extra"] == MAX_EXTRA
    assert [manifest["decoding"][k] for k in ("start_symbol", "end_symbol", "pad_symbol")] == [
        BOS, EOS, PAD]
    # a source of max_src_tokens ids (with </s>) decodes within the positional table
    assert manifest["decoding"]["max_src_tokens"] + MAX_EXTRA == manifest["model"]["max_len"]
    assert manifest["test_exact_match"] >= 99.0


def test_the_tokenizer_file_is_what_the_package_writes(tokenizer, tmp_path, model):
    committed = (ASSETS / "tokenizer.json").read_bytes()
    assert tokenizer.save(tmp_path / "tokenizer.json").read_bytes() == committed
    _, metadata = load_checkpoint(ASSETS / "model.pt")
    assert metadata["tokenizer"].encode("utf-8") == committed  # the one the model was trained on
    assert tokenizer.vocab_size == model.config.src_vocab == model.config.tgt_vocab


def _inputs(tokenizer: SharedTokenizer):
    """(src, src_mask, ys) cases: one sentence, and a padded batch of two."""
    sentences = ["four hundred and twenty-one", "twelve",
                 "nine hundred and ninety-nine thousand, nine hundred and ninety-nine",
                 "one million"]
    cases = []
    for i, sentence in enumerate(sentences):
        ids = tokenizer.encode(sentence) + [EOS]
        ys = [BOS] + tokenizer.encode("vierhundert")[: i + 1]
        cases.append((np.array([ids]), np.ones((1, 1, len(ids)), dtype=bool), np.array([ys])))
    long, short = (tokenizer.encode(s) + [EOS] for s in (sentences[2], sentences[1]))
    src = np.array([long, short + [PAD] * (len(long) - len(short))])
    cases.append((src, (src != PAD)[:, None, :], np.array([[BOS, 5, 9], [BOS, 7, 7]])))
    return cases


def test_committed_graphs_match_a_fresh_export_and_pytorch(model, tokenizer, committed, fresh):
    for src, src_mask, ys in _inputs(tokenizer):
        feeds = {"src": src.astype(np.int64), "src_mask": src_mask}
        memory, enc_maps = committed["encoder"].run(None, feeds)
        memory_fresh, enc_maps_fresh = fresh["encoder"].run(None, feeds)
        np.testing.assert_allclose(enc_maps, enc_maps_fresh, atol=TOLERANCE, rtol=0)
        with torch.no_grad():
            mask = torch.from_numpy(src_mask)
            memory_torch = model.encode(torch.from_numpy(src), mask)
            out = model.decode(memory_torch, mask, torch.from_numpy(ys),
                               subsequent_mask(ys.shape[1]))
            log_probs_torch = model.generator(out[:, -1])
        np.testing.assert_allclose(memory, memory_fresh, atol=TOLERANCE, rtol=0)
        np.testing.assert_allclose(memory, memory_torch.numpy(), atol=TOLERANCE, rtol=0)
        step = {"memory": memory, "src_mask": src_mask, "ys": ys.astype(np.int64)}
        names = ["log_probs", "cross_attention", "decoder_self_attention",
                 "decoder_cross_attention"]
        log_probs, attention, *maps = committed["decoder"].run(names, step)
        log_probs_fresh, attention_fresh, *maps_fresh = fresh["decoder"].run(names, step)
        for got, want in zip(maps, maps_fresh):
            np.testing.assert_allclose(got, want, atol=TOLERANCE, rtol=0)
        np.testing.assert_allclose(log_probs, log_probs_fresh, atol=TOLERANCE, rtol=0)
        np.testing.assert_allclose(attention, attention_fresh, atol=TOLERANCE, rtol=0)
        np.testing.assert_allclose(log_probs, log_probs_torch.numpy(), atol=TOLERANCE, rtol=0)
        assert attention.shape == src.shape
        np.testing.assert_allclose(attention.sum(-1), 1.0, atol=TOLERANCE)
        assert (attention[src_mask[:, 0] == 0] < TOLERANCE).all()  # padding gets no attention


def test_greedy_decoding_of_the_graphs_equals_pytorch_on_held_out_numbers(
        model, tokenizer, committed):
    pairs = held_out(60)
    sources = [tokenizer.encode(s) + [EOS] for s, _ in pairs]
    expected = translate_ids(model, sources, beam_size=1, batch_size=1)
    right = 0
    for (_, reference), ids, want in zip(pairs, sources, expected):
        ys = greedy_decode_onnx(committed["encoder"], committed["decoder"], [ids], None,
                                len(ids) + MAX_EXTRA + 1, BOS, EOS)[0, 1:].tolist()
        assert (ys[: ys.index(EOS)] if EOS in ys else ys) == want, tokenizer.decode(want)
        right += tokenizer.decode(ys) == reference
    assert right >= 0.95 * len(pairs)  # unseen numbers, and mostly right


def _page_as_built() -> str:
    """Try it's Markdown with the build's numbers filled in (docs/hooks/numbers.py)."""
    spec = importlib.util.spec_from_file_location("numbers_hook", ROOT / "docs/hooks/numbers.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook.substitute(PAGE.read_text(encoding="utf-8"), "try-it.md", ROOT / "docs")


def test_the_page_states_the_manifests_numbers(manifest):
    text = " ".join(_page_as_built().split())
    kb = {name: round(manifest["files"][name]["bytes"] / 1000) for name in FILES}
    stated = [f"{manifest['parameters']:,} parameters",
              f"vocabulary of {manifest['vocab_size']} tokens",
              f"{manifest['corpus']['sizes']['train']:,} pairs",
              f"{manifest['steps']:,} steps",
              f"{manifest['test_exact_match']:.1f} % of {manifest['test_size']:,} numbers",
              f"an encoder graph of {kb['encoder.onnx']} KB",
              f"decoder graph of {kb['decoder.onnx']} KB",
              f"{manifest['model']['N']} layers on each side",
              f"$d_{{model}} = {manifest['model']['d_model']}$",
              f"{manifest['model']['h']} heads"]
    missing = [phrase for phrase in stated if phrase not in text]
    assert not missing, f"docs/try-it.md no longer states: {missing}"
    count = len(manifest["averaged"])
    assert re.search(rf"average of its last ({_words(count)}|{count}) checkpoints", text)


def _words(n: int) -> str:
    return {3: "three", 4: "four", 5: "five", 6: "six"}.get(n, str(n))


def _other_models(manifest: dict) -> list[Path]:
    folders = [ASSETS / entry["folder"] for entry in manifest["training_steps"]]
    return folders + [ASSETS / manifest["languages"]["fr"]["folder"]]


def test_the_earlier_steps_and_the_french_model_are_described_and_match_their_checkpoints(
        manifest, tmp_path):
    steps = manifest["training_steps"]
    assert [s["step"] for s in steps] == [0, 100, 200, 400, 800, manifest["steps"]]
    assert steps[-1]["averaged"] == manifest["averaged"]  # the same recipe: the last five
    assert steps[-1]["test_exact_match"] >= 99.0
    for entry in steps:
        for name, facts in entry["files"].items():
            data = (ASSETS / entry["folder"] / name).read_bytes()
            assert facts == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    french = manifest["languages"]["fr"]
    for name, facts in french["files"].items():
        data = (ASSETS / french["folder"] / name).read_bytes()
        assert facts == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    for folder in _other_models(manifest):
        model, metadata = load_checkpoint(folder / "model.pt")
        model.eval()
        tokenizer_file = folder / "tokenizer.json"
        if not tokenizer_file.is_file():  # an earlier step: the run's tokenizer
            tokenizer_file = ASSETS / "tokenizer.json"
        assert metadata["tokenizer"].encode("utf-8") == tokenizer_file.read_bytes()
        tokenizer = SharedTokenizer.load(tokenizer_file)
        ids = tokenizer.encode("four hundred and forty-one") + [EOS]
        src = np.array([ids])
        src_mask = np.ones((1, 1, len(ids)), dtype=bool)
        ys = np.array([[BOS] + ids[:3]])
        committed = {name: _session(folder / f"{name}.onnx") for name in ("encoder", "decoder")}
        memory, _ = committed["encoder"].run(None, {"src": src, "src_mask": src_mask})
        log_probs, *_ = committed["decoder"].run(
            None, {"memory": memory, "src_mask": src_mask, "ys": ys})
        with torch.no_grad():
            mask = torch.from_numpy(src_mask)
            out = model.decode(model.encode(torch.from_numpy(src), mask), mask,
                               torch.from_numpy(ys), subsequent_mask(ys.shape[1]))
            expected = model.generator(out[:, -1]).numpy()
        np.testing.assert_allclose(log_probs, expected, atol=TOLERANCE, rtol=0)


def test_the_french_model_translates_held_out_numbers(manifest):
    folder = ASSETS / manifest["languages"]["fr"]["folder"]
    model, _ = load_checkpoint(folder / "model.pt")
    tokenizer = SharedTokenizer.load(folder / "tokenizer.json")
    pairs = number_pairs(split_numbers(DEFAULT_SIZES, seed=0)["test"][:100], "fr")
    sources = [tokenizer.encode(s) + [EOS] for s, _ in pairs]
    outputs = translate_ids(model.eval(), sources, beam_size=1, batch_size=50)
    right = sum(tokenizer.decode(o) == ref for o, (_, ref) in zip(outputs, pairs))
    assert right >= 90, right
    assert manifest["languages"]["fr"]["test_exact_match"] >= 90.0


def test_the_training_numbers_are_the_corpus_split(manifest):
    seen = json.loads((ASSETS / "train_numbers.json").read_text(encoding="utf-8"))
    train = split_numbers(DEFAULT_SIZES, seed=0)["train"]
    assert seen["below"] == 1000 and all(n in train for n in range(1000))
    assert seen["numbers"] == sorted(n for n in train if n >= 1000)
    data = (ASSETS / "train_numbers.json").read_bytes()
    assert manifest["seen"]["sha256"] == hashlib.sha256(data).hexdigest()
