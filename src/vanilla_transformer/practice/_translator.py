r"""The payoff: the learner's own model, with the site's trained weights, translates numbers.

`check("translator", learner)` builds the learner's model with the trained translator's sizes
(read from `manifest.json`), loads `model.pt` into it by parameter name (the positional table is
the learner's own), and translates English numbers the translator never saw in training into
German with the learner's `greedy_decode`. When a translation is wrong it runs the learner's model
and the package's side by side on that sentence, teacher-forced on the right German, and names
the first stage whose output differs.

Needs the `translate` extra (the tokenizer and the number words), as the command line does.
"""

from __future__ import annotations

import json
import os
import random
import textwrap
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..model.masks import subsequent_mask
from ._core import WIDTH, CheckResult, _error_text, _first_difference, _paragraph
from ._layers import model_taps

__all__ = ["BUILD_OPTIONS", "find_translator", "check_translator", "held_out_numbers"]

BUILD_OPTIONS = ("N", "d_model", "d_ff", "h", "dropout", "norm_first", "layer_norm",
                 "tie_weights", "generator_bias", "max_len")
"""The fields of the translator's configuration passed to the learner's `make_model`."""

STEP_OF_STAGE = {
    "source embeddings": "embeddings", "target embeddings": "embeddings",
    "source positional encoding": "positional_encoding",
    "target positional encoding": "positional_encoding",
    "encoder layer": "encoder_layer (and the blocks inside it: multi_head_attention, "
                     "feed_forward, sublayer)",
    "decoder layer": "decoder_layer (and the blocks inside it: multi_head_attention, "
                     "feed_forward, sublayer)",
    "encoder output": "encoder_decoder (the Encoder stack)",
    "decoder output": "encoder_decoder (the Decoder stack)",
    "generator": "encoder_decoder (the Generator)",
    "decoding": "greedy_decode",
}


def find_translator(folder: str | os.PathLike[str] | None = None) -> Path:
    """The folder of the trained translator: `folder` (a run folder or a packaged translator's
    name), else the German translator that ships with the package, `numbers-de`.

    Raises:
        ValueError: if the folder lacks `manifest.json`, `model.pt` or `tokenizer.json`.
    """
    from ..pretrained import resolve_run, translator_folder

    path = translator_folder("numbers-de") if folder is None else resolve_run(folder)
    missing = [f for f in ("manifest.json", "model.pt", "tokenizer.json") if not (path / f).is_file()]
    if missing:
        raise ValueError(f"no trained translator in {str(path)!r}: the folder lacks "
                         f"{', '.join(missing)} (the package's numbers-de holds all three)")
    return path


def held_out_numbers(seen: set[int], count: int, seed: int, below: int = 1_000_000) -> list[int]:
    """`count` numbers in `[1000, below)` that are not in `seen`, drawn with `seed`.

    Example:
        >>> held_out_numbers({1000, 1001}, 3, seed=0, below=1003)
        [1002]
    """
    rng = random.Random(seed)
    pool = [n for n in range(1000, below) if n not in seen] if below < 10_000 else None
    if pool is not None:
        rng.shuffle(pool)
        return pool[:count]
    picked: list[int] = []
    while len(picked) < count:
        n = rng.randrange(1000, below)
        if n not in seen and n not in picked:
            picked.append(n)
    return picked


def _learner_parts(learner: Any) -> str | None:
    missing = [n for n in ("make_model", "greedy_decode") if not callable(getattr(learner, n, None))]
    if missing:
        return (f"translator takes your module (or any object) with make_model and greedy_decode; "
                f"{type(learner).__name__} lacks {' and '.join(missing)}")
    return None


def _batch(ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(map(len, ids))
    src = torch.zeros(len(ids), width, dtype=torch.long)
    for i, row in enumerate(ids):
        src[i, : len(row)] = torch.tensor(row)
    return src, (src != 0).unsqueeze(-2)


def _stage_name(stage: str) -> str:
    return stage.rstrip("0123456789").strip()


def check_translator(learner: Any, folder: str | os.PathLike[str] | None = None, seed: int = 0,
                     count: int = 8) -> CheckResult:
    """Translate held-out numbers with the learner's model and decoding (see the module).

    Args:
        learner: a module (or any object) with `make_model` and `greedy_decode`.
        folder: the trained translator's folder (default: see `find_translator`).
        seed: picks the numbers.
        count: how many numbers to translate.

    Returns:
        The [`CheckResult`][vanilla_transformer.practice._core.CheckResult]; nothing is printed.
    """
    problem = _learner_parts(learner)
    if problem is not None:
        return CheckResult("translator", False,
                           textwrap.fill(f"translator: not checked. {problem}.", WIDTH))
    from ..data.numbers import number_words
    from ..data.tokenizer import BOS, EOS, PAD, SharedTokenizer
    from ..inference.greedy import greedy_decode
    from ..training.checkpoints import load_checkpoint

    path = find_translator(folder)
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    config, decoding = manifest["model"], manifest["decoding"]
    tokenizer = SharedTokenizer.load(path / "tokenizer.json")
    seen_file = path / manifest.get("seen", {}).get("file", "train_numbers.json")
    seen = set(json.loads(seen_file.read_text())["numbers"]) if seen_file.is_file() else set()
    state = torch.load(path / "model.pt", map_location="cpu", weights_only=True)["state_dict"]
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        reference, _ = load_checkpoint(path / "model.pt")
        reference.eval()
        # numbers the trained model gets right, so that only the learner's code can fail
        numbers, english, german = [], [], []
        small, large = (held_out_numbers(seen, count, seed, below) for below in (10_000, 1_000_000))
        for n in (n for pair in zip(small, large, strict=True) for n in pair):
            src, src_mask = _batch([[*tokenizer.encode(number_words(n, "en")), EOS]])
            ys = greedy_decode(reference, src, src_mask, src.size(1) + decoding["max_extra"] + 1,
                               BOS, end_symbol=EOS, pad_symbol=PAD, use_cache=True)
            if tokenizer.decode(ys[0, 1:].tolist()) == number_words(n, "de"):
                numbers.append(n)
                english.append(number_words(n, "en"))
                german.append(number_words(n, "de"))
            if len(numbers) == count:
                break
        sources = [[*tokenizer.encode(e), EOS] for e in english]
        src, src_mask = _batch(sources)
        built = f"make_model({config['src_vocab']}, {config['tgt_vocab']}, " + ", ".join(
            f"{k}={config[k]!r}" for k in BUILD_OPTIONS) + ")"
        try:
            model = learner.make_model(config["src_vocab"], config["tgt_vocab"],
                                       **{k: config[k] for k in BUILD_OPTIONS})
            _load(model, state)
            model.eval()
        except Exception as error:  # noqa: BLE001 - the learner's code may raise anything
            return _fail(f"building your model failed: {built} raised {_error_text(error)}",
                         "encoder_decoder")
        failure = ""
        got: list[str] | None = None
        try:
            max_len = src.size(1) + decoding["max_extra"] + 1
            ys = learner.greedy_decode(model, src, src_mask, max_len, BOS, end_symbol=EOS,
                                       pad_symbol=PAD)
            got = [tokenizer.decode([int(t) for t in row[1:]]) for row in ys]
            if len(got) != len(german):
                failure = f"your greedy_decode returned {len(got)} rows for {len(german)} sentences"
                got = None
        except Exception as error:  # noqa: BLE001
            failure = f"your greedy_decode raised {_error_text(error)}"
        if got == german:
            table = [f"  {n:>6}  {g}" for n, g in zip(numbers, german, strict=True)]
            header = textwrap.fill(f"translator: passed. Your model, with the trained weights, "
                                   f"translates all {len(numbers)} numbers right, from their "
                                   "English words:", WIDTH)
            message = "\n".join([header, *table])
            return CheckResult("translator", True, message, len(numbers), 0)
        bad = [0] if got is None else [i for i, (g, w) in enumerate(zip(got, german, strict=True)) if g != w]
        wrong = bad[0]
        stage, text = _side_by_side(model, reference, sources[wrong],
                                    [BOS, *tokenizer.encode(german[wrong])], config["N"])
        if stage == "decoding" and got is None:
            text = failure
        if got is None:
            lines = ["translator: FAILED."]
        else:
            lines = [f"translator: FAILED: {len(bad)} of {len(numbers)} numbers come out wrong.",
                     _paragraph("First wrong: ", f"{english[wrong]} -> {got[wrong]!r}, "
                                f"expected {german[wrong]!r}.")]
        lines.append(_paragraph("Side by side on that sentence, the first stage that differs: ",
                                f"{stage}."))
        lines.append(_paragraph("", text + "."))
        step = STEP_OF_STAGE.get(_stage_name(stage), "encoder_decoder")
        lines.append(_paragraph("Check again: ", step + "."))
        return CheckResult("translator", False, "\n".join(lines), len(numbers), len(bad), stage)


def _fail(text: str, step: str) -> CheckResult:
    message = "\n".join(["translator: FAILED.", _paragraph("", text + "."),
                         _paragraph("Check again: ", step + ".")])
    return CheckResult("translator", False, message, stage="building the model")


def _load(model: Any, state: dict[str, torch.Tensor]) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"make_model must return an nn.Module, got {type(model).__name__}")
    learned = {k: v for k, v in state.items() if not k.endswith(".pe")}
    have = {k for k in model.state_dict() if not k.endswith(".pe")}
    missing, extra = sorted(set(learned) - have), sorted(have - set(learned))
    if missing or extra:
        raise ValueError("the model's parameters are not named as the trained ones: "
                         + (f"it lacks {', '.join(missing[:3])}" if missing else "")
                         + ("; " if missing and extra else "")
                         + (f"it has {', '.join(extra[:3])} which the trained model does not"
                            if extra else ""))
    model.load_state_dict(learned, strict=False)


def _side_by_side(model: nn.Module, reference: nn.Module, source: list[int], target: list[int],
                  n_layers: int) -> tuple[str, str]:
    """The first stage whose output differs on one sentence, teacher-forced on `target`."""
    src, src_mask = _batch([source])
    tgt = torch.tensor([target])
    tgt_mask = subsequent_mask(tgt.size(1))
    taps = model_taps(n_layers)

    def run(m: Any) -> dict[str, Any]:
        from ._inputs import tapped

        out = tapped(m, taps, lambda: m(src, tgt, src_mask, tgt_mask), last="decoder states")
        out["generator"] = m.generator(out.pop("decoder states"))
        return out

    expected = run(reference)
    try:
        got = run(model)
    except Exception as error:  # noqa: BLE001
        return "the model's forward pass", f"your model raised {_error_text(error)}"
    difference = _first_difference(expected, got)
    if difference is None:
        return "decoding", ("your model's outputs agree with the reference's; the tokens your "
                            "greedy_decode chooses or feeds back do not")
    return difference[0], "First value that differs: " + difference[1]
