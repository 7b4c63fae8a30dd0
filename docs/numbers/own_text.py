"""Numbers of the Train on your own text guide: the sizing rules' constants, and the measured
run on this machine's German gettext catalogs (`benchmarks/results/catalogs_de.json`, written
by `benchmarks/catalogs_de.py`)."""

import json
import re
from pathlib import Path
from typing import Any

from vanilla_transformer.config import sizing

RESULTS = Path("benchmarks/results/catalogs_de.json")


def _cell(text: str) -> str:
    """Text as a Markdown table cell: its punctuation escaped, so it is shown as written."""
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", text) or " "


def _samples(result: dict[str, Any]) -> tuple[str, str]:
    """The ten judged test sentences as a table, and the count of each verdict."""
    judged = {j["source"]: j for j in result.get("judged", [])}
    rows = ["| English | reference | the last checkpoint | verdict |", "| --- | --- | --- | --- |"]
    counts: dict[str, int] = {}
    for sample in result["samples"]:
        j = judged.get(sample["source"])
        verdict = f"**{j['verdict']}**: {j['why']}" if j else "not judged"
        counts[j["verdict"] if j else "not judged"] = counts.get(
            j["verdict"] if j else "not judged", 0) + 1
        # a run of one letter (the model looping) is cut, so that the table fits a phone
        output = re.sub(r"(.)\1{7,}", lambda m: m.group(1) * 3 + f"… ({len(m.group(0))} times)",
                        sample["last"])
        rows.append(f"| {_cell(sample['source'])} | {_cell(sample['reference'])} | "
                    f"{_cell(output)} | {verdict} |")
    order = ["right", "partly right", "wrong", "not judged"]
    said = [f"{counts[v]} {v}" for v in order if v in counts]
    return "\n".join(rows), "Of the ten: " + ", ".join(said) + "."


def _paper_cost(result: dict[str, Any]) -> str:
    """The paper's base run against the measured one, in FLOPs and in time on this CPU, as a
    Markdown table (the parameter calculator's counts; a training step is about three forward
    passes of sentences of 25 pieces)."""
    from vanilla_transformer.analysis import forward_flops, parameter_count
    from vanilla_transformer.config import TRANSLATION_PRESETS

    ours = result["training"]
    vocab = ours["settings"]["vocab_size"]
    small, base = TRANSLATION_PRESETS["paper-small"], TRANSLATION_PRESETS["paper-base"]

    def per_token(vocab: int, preset: dict[str, Any]) -> int:
        step = forward_flops(vocab, vocab, **preset, batch=1, src_len=25, tgt_len=25)
        return int(step.training_total // 25)

    seconds = ours["seconds"]
    our_flops = ours["tokens_per_s"] * seconds * per_token(vocab, small)
    paper_flops = 100_000 * 25_000 * per_token(37000, base)
    years = paper_flops / (our_flops / seconds) / (365 * 24 * 3600)
    rows = [("paper-small, the measured run's model",
             f"{parameter_count(vocab, vocab, **small).total:,} parameters"),
            ("paper-base, the paper's", f"{parameter_count(37000, 37000, **base).total:,} parameters"),
            ("the paper's base run, in FLOPs", f"{paper_flops / our_flops:,.0f} times the measured run"),
            ("on this CPU, at the speed measured", f"{years:.1f} years")]
    return "\n".join(["| what | how much |", "| --- | ---: |", *(f"| {a} | {b} |" for a, b in rows)])


def values() -> dict[str, Any]:
    result = json.loads(RESULTS.read_text(encoding="utf-8"))
    summary = result["corpus"]["summary"][0]
    found = re.search(r"read (\d+) catalogs .*?: ([\d,]+) messages", summary)
    assert found, summary
    dropped = {reason: int(n.replace(",", "")) for n, reason in
               re.findall(r"([\d,]+) (plural|untranslated|multi-line|markup|over-long|duplicate)",
                          summary)}
    log = "\n".join(result["training"]["log"])
    averaged = re.search(r"model\.pt: the average of the checkpoints of steps ([\d, ]+?),? the",
                         log)
    steps = averaged.group(1).split(", ") if averaged else []
    what = (f"the average of the checkpoints of steps {', '.join(steps[:-1])} and {steps[-1]}"
            if len(steps) > 1 else "the last checkpoint alone")
    table, verdicts = _samples(result)
    scores = result["scores"]
    # the page says averaging cost BLEU, and that the loss was still falling at the end
    assert scores["last"]["bleu"] > scores["averaged"]["bleu"], scores
    losses = [v["valid_loss"] for v in result["training"]["validations"]]
    assert losses == sorted(losses, reverse=True), losses
    return {
        "paper_cost_table": _paper_cost(result),
        "catalogs": int(found.group(1)),
        "messages": int(found.group(2).replace(",", "")),
        **{f"dropped_{reason.replace('-', '_')}": n for reason, n in dropped.items()},
        **result["corpus"]["sizes"],
        "fewer_pairs": 4.5e6 / result["corpus"]["sizes"]["train"],
        "min_vocab": sizing.MIN_VOCAB,
        "max_vocab": sizing.MAX_VOCAB,
        "min_eval": sizing.MIN_EVAL,
        "vocab_step": sizing.STEP,
        "words_per_piece": sizing.WORDS_PER_PIECE,
        "small_limit": sizing.PRESET_LIMITS[0][0],
        "base_limit": sizing.PRESET_LIMITS[1][0],
        "valid_characters": sizing.VALID_CHARACTERS,
        "sizing": result["sizing"].replace(": ", ":\n  ", 1).replace("), ", ")\n  "),
        "cpus": result["machine"]["cpus"],
        "steps": result["training"]["steps"],
        "minutes": result["training"]["minutes"],
        "tokens_per_s": result["training"]["tokens_per_s"],
        "first_valid_loss": result["training"]["validations"][0]["valid_loss"],
        "last_valid_loss": result["training"]["validations"][-1]["valid_loss"],
        "averaged_what": what,
        "bleu_averaged": scores["averaged"]["bleu"],
        "chrf_averaged": scores["averaged"]["chrf"],
        "bleu_last": scores["last"]["bleu"],
        "chrf_last": scores["last"]["chrf"],
        "averaging_cost": scores["last"]["bleu"] - scores["averaged"]["bleu"],
        "samples_table": table,
        "verdicts": verdicts,
    }
