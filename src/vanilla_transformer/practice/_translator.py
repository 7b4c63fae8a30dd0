r"""The payoff: the learner's own model, with the site's trained weights, translates numbers.

`check("translator", learner)` builds the learner's model with the trained translator's sizes
(read from `manifest.json`), loads `model.pt` into it by parameter name (the positional table is
the learner's own), and translates English numbers the translator never saw in training into
German with the learner's `greedy_decode`, as one padded batch. It passes only if every stage of
the learner's model (embeddings, positional encodings, each layer, the stacks' outputs, the
generator) equals the trained model's on that same padded batch, teacher-forced on the right
German, and every number comes out right; a failure names the first stage that differs and the
step to check.

Needs the `translate` extra (the tokenizer and the number words), as the command line does.
"""

from __future__ import annotations

import json
import os
import random
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..model.masks import subsequent_mask
from ._attribution import error_sentence
from ._core import (
    NEVER_CALLED,
    WIDTH,
    CheckResult,
    _first_difference,
    _paragraph,
)
from ._model import model_taps

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


_TOLERANCE = (1e-3, 1e-4)
"""`(rtol, atol)` of the stage comparison: a model as deep as the trained one, written another
correct way (einsum, SDPA, a per-head loop), differs from the package's by float32 rounding."""


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


@dataclass
class _Trained:
    """The trained translator and the sentences it is checked on."""

    config: dict[str, Any]
    max_extra: int
    tokenizer: Any
    state: dict[str, torch.Tensor]
    reference: nn.Module
    numbers: list[int]
    english: list[str]
    german: list[str]


def _load_trained(folder: str | os.PathLike[str] | None, seed: int, count: int) -> _Trained:
    """Load the translator and pick `count` held-out numbers that it translates right, so
    that only the learner's code can fail."""
    from ..data.numbers import number_words
    from ..data.tokenizer import BOS, EOS, PAD, SharedTokenizer
    from ..inference.greedy import greedy_decode
    from ..training.checkpoints import load_checkpoint

    path = find_translator(folder)
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    tokenizer = SharedTokenizer.load(path / "tokenizer.json")
    seen_file = path / manifest.get("seen", {}).get("file", "train_numbers.json")
    seen = set(json.loads(seen_file.read_text())["numbers"]) if seen_file.is_file() else set()
    state = torch.load(path / "model.pt", map_location="cpu", weights_only=True)["state_dict"]
    reference, _ = load_checkpoint(path / "model.pt")
    reference.eval()
    trained = _Trained(manifest["model"], manifest["decoding"]["max_extra"], tokenizer, state,
                       reference, [], [], [])
    small, large = (held_out_numbers(seen, count, seed, below) for below in (10_000, 1_000_000))
    for n in (n for pair in zip(small, large, strict=True) for n in pair):
        src, src_mask = _batch([[*tokenizer.encode(number_words(n, "en")), EOS]])
        ys = greedy_decode(reference, src, src_mask, src.size(1) + trained.max_extra + 1, BOS,
                           end_symbol=EOS, pad_symbol=PAD, use_cache=True)
        if tokenizer.decode(ys[0, 1:].tolist()) == number_words(n, "de"):
            trained.numbers.append(n)
            trained.english.append(number_words(n, "en"))
            trained.german.append(number_words(n, "de"))
        if len(trained.numbers) == count:
            break
    return trained


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
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        trained = _load_trained(folder, seed, count)
        model = _build(learner, trained)
        if isinstance(model, CheckResult):
            return model
        got, failure = _translate(learner, model, trained)
        stage = _compare(learner, model, trained)
    wrong = [] if got is None else [i for i, (g, w) in enumerate(zip(got, trained.german,
                                                                    strict=True)) if g != w]
    if stage is None and got is not None and not wrong:
        table = [f"  {n:>6}  {g}" for n, g in zip(trained.numbers, trained.german, strict=True)]
        header = textwrap.fill(f"translator: passed. Your model, with the trained weights, "
                               f"equals the trained model at every stage and translates all "
                               f"{len(trained.numbers)} numbers right, from their English "
                               "words:", WIDTH)
        return CheckResult("translator", True, "\n".join([header, *table]),
                           len(trained.numbers), 0)
    return _report(trained, got, failure, wrong, stage)


def _build(learner: Any, trained: _Trained) -> nn.Module | CheckResult:
    """The learner's model with the trained weights, or the failure to build it."""
    config = trained.config
    built = f"make_model({config['src_vocab']}, {config['tgt_vocab']}, " + ", ".join(
        f"{k}={config[k]!r}" for k in BUILD_OPTIONS) + ")"
    try:
        model = learner.make_model(config["src_vocab"], config["tgt_vocab"],
                                   **{k: config[k] for k in BUILD_OPTIONS})
    except Exception as error:  # noqa: BLE001 - the learner's code may raise anything
        label, text = error_sentence(error, learner.make_model, "make_model")
        return _fail(f"building your model failed: {built}: {label}{text}", "encoder_decoder")
    try:
        _load(model, trained.state)
    except (TypeError, ValueError) as error:
        return _fail(f"building your model failed: {built} gives a model that cannot take the "
                     f"trained weights: {error}", "encoder_decoder")
    model.eval()
    return model


def _translate(learner: Any, model: nn.Module,
               trained: _Trained) -> tuple[list[str] | None, str]:
    """The learner's translations of the batch, or `None` and what went wrong."""
    from ..data.tokenizer import BOS, EOS, PAD

    src, src_mask = _batch([[*trained.tokenizer.encode(e), EOS] for e in trained.english])
    max_len = src.size(1) + trained.max_extra + 1
    try:
        ys = learner.greedy_decode(model, src, src_mask, max_len, BOS, end_symbol=EOS,
                                   pad_symbol=PAD)
        got = [trained.tokenizer.decode([int(t) for t in row[1:]]) for row in ys]
    except Exception as error:  # noqa: BLE001
        label, text = error_sentence(error, learner.greedy_decode, "greedy_decode", model,
                                     *model.modules())
        return None, f"{label}{text}".rstrip(".")
    if len(got) != len(trained.german):
        return None, f"your greedy_decode returned {len(got)} rows for {len(trained.german)} " \
                     "sentences"
    return got, ""


def _outputs(m: Any, batch: tuple[torch.Tensor, ...], n_layers: int) -> dict[str, Any]:
    from ._inputs import tapped

    src, src_mask, tgt, tgt_mask = batch
    out = tapped(m, model_taps(n_layers), lambda: m(src, tgt, src_mask, tgt_mask),
                 last="decoder states")
    out["generator"] = m.generator(out.pop("decoder states"))
    return out


def _compare(learner: Any, model: nn.Module, trained: _Trained) -> tuple[str, str] | None:
    """The first stage whose output differs on the padded batch, teacher-forced on the right
    German, with the sentence; `None` if every stage agrees."""
    from ..data.tokenizer import BOS, EOS, PAD

    tokenizer = trained.tokenizer
    src, src_mask = _batch([[*tokenizer.encode(e), EOS] for e in trained.english])
    tgt, _ = _batch([[BOS, *tokenizer.encode(g)] for g in trained.german])
    tgt_mask = (tgt != PAD).unsqueeze(-2) & subsequent_mask(tgt.size(1))
    batch = (src, src_mask, tgt, tgt_mask)
    expected = _outputs(trained.reference, batch, trained.config["N"])
    try:
        got = _outputs(model, batch, trained.config["N"])
    except Exception as error:  # noqa: BLE001
        label, text = error_sentence(error, learner.make_model, "model", model,
                                     *model.modules())
        return _raising_stage(model, error, trained.config["N"]), f"{label}{text}".rstrip(".")
    difference = _first_difference(expected, got, _TOLERANCE)
    if difference is None:
        return None
    stage, text = difference
    if text.startswith(NEVER_CALLED):
        text = ("Your model never called it. The first value that differs after it: "
                + text.removeprefix(f"{NEVER_CALLED}; later, "))
    else:
        text = "First value that differs: " + text
    return stage, text


def _raising_stage(model: nn.Module, error: BaseException, n_layers: int) -> str:
    """The innermost stage of the model whose forward was running when `error` was raised."""
    stages = {}
    for stage, path, _ in model_taps(n_layers):
        try:
            stages[id(model.get_submodule(path))] = stage
        except AttributeError:
            continue
    found = "the model's forward pass"
    tb = error.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if owner is not None and id(owner) in stages:
            found = stages[id(owner)]
        tb = tb.tb_next
    return found


def _report(trained: _Trained, got: list[str] | None, failure: str, wrong: list[int],
            compared: tuple[str, str] | None) -> CheckResult:
    count = len(trained.numbers)
    if compared is not None and compared[1].startswith("Your "):  # the forward pass raised
        lines = ["translator: FAILED.", _paragraph("", f"On the batch of {count} sentences it "
                                                       f"translates, {compared[0]} raised. "
                                                       + compared[1] + ".")]
        step = STEP_OF_STAGE.get(_stage_name(compared[0]), "encoder_decoder")
        lines.append(_paragraph("Check again: ", step + "."))
        return CheckResult("translator", False, "\n".join(lines), count, count, compared[0])
    if got is None:
        lines = ["translator: FAILED.", _paragraph("", failure + ".")]
    elif wrong:
        i = wrong[0]
        lines = [f"translator: FAILED: {len(wrong)} of {count} numbers come out wrong.",
                 _paragraph("First wrong: ", f"{trained.english[i]} -> {got[i]!r}, "
                            f"expected {trained.german[i]!r}.")]
    else:
        lines = [textwrap.fill(f"translator: FAILED: all {count} numbers come out right, but "
                               "your model does not compute what the trained model computes.",
                               WIDTH)]
    if compared is None:
        stage, text = "decoding", ("your model's outputs agree with the trained model's at "
                                   "every stage; the tokens your greedy_decode chooses or "
                                   "feeds back do not")
    else:
        stage, text = compared
    lines.append(_paragraph(f"On the batch of {count} sentences it translates, teacher-forced "
                            "on the right German, the first stage that differs: ", f"{stage}."))
    lines.append(_paragraph("", text + "."))
    step = STEP_OF_STAGE.get(_stage_name(stage), "encoder_decoder")
    lines.append(_paragraph("Check again: ", step + "."))
    return CheckResult("translator", False, "\n".join(lines), count, len(wrong), stage)


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
