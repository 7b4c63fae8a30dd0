"""`translate RUN` and `translate eval` for analysis and speed: --nbest, --scores, --verbose,
--batch-size, --max-tokens, --threads and a BLEU tokenizer fixed per run, on the shipped
translator (docs/assets/translator is a run folder)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
import torch

from vanilla_transformer.cli import main
from vanilla_transformer.data.numbers import DEFAULT_SIZES, number_pairs, split_numbers, write_tsv

RUN = str(Path(__file__).resolve().parents[2] / "docs" / "assets" / "translator")
WORDS = ["four hundred and one", "twenty-two", "seven thousand and eight"]


@pytest.fixture(autouse=True, scope="module")
def threads():
    """`--threads` changes the process's setting: put it back."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _out(capsys, argv: list[str]) -> list[str]:
    assert main(argv) == 0
    return capsys.readouterr().out.splitlines()


def _error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    return err[0]


def test_nbest_with_scores_prints_k_lines_an_input_best_first(capsys):
    plain = _out(capsys, ["translate", RUN, *WORDS, "--threads", "1"])
    lines = _out(capsys, ["translate", RUN, *WORDS, "--nbest", "3", "--scores"])
    assert len(lines) == 3 * len(WORDS)
    for i, best in enumerate(plain):
        group = [line.split("\t") for line in lines[3 * i : 3 * i + 3]]
        scores = [float(score) for score, _ in group]
        assert scores == sorted(scores, reverse=True) and all(s < 0 for s in scores)
        assert group[0][1] == best and len({text for _, text in group}) == 3
    assert _out(capsys, ["translate", RUN, *WORDS, "--nbest", "2"]) == [
        line.split("\t")[1] for i, line in enumerate(lines) if i % 3 < 2]


def test_verbose_gives_source_hypotheses_scores_and_piece_log_probabilities(capsys):
    lines = _out(capsys, ["translate", RUN, *WORDS[:2], "--nbest", "2", "--verbose"])
    assert [line.split("\t")[0] for line in lines] == [
        f"{kind}-{i}" for i in range(2) for kind in ["S", *["H", "D", "P"] * 2]]
    assert lines[0] == f"S-0\t{WORDS[0]}"
    _, score, pieces = lines[1].split("\t")
    _, d_score, text = lines[2].split("\t")
    probs = [float(p) for p in lines[3].split("\t")[1].split()]
    assert score == d_score and text == "vierhunderteins"
    assert pieces.split()[-1] == "</s>" and len(pieces.split()) == len(probs)
    assert all(p <= 0 for p in probs)
    from vanilla_transformer.inference import length_penalty

    assert float(score) == pytest.approx(sum(probs) / length_penalty(len(probs)), abs=2e-3)


def test_greedy_scores_and_batches_of_any_size_give_the_same_text(capsys):
    default = _out(capsys, ["translate", RUN, *WORDS, "--beam", "1", "--scores"])
    small = _out(capsys, ["translate", RUN, *WORDS, "--beam", "1", "--scores",
                          "--batch-size", "1", "--max-tokens", "5"])
    assert [line.split("\t")[1] for line in small] == [line.split("\t")[1] for line in default]
    assert len(default) == 3 and all(float(line.split("\t")[0]) < 0 for line in default)


def test_threads_sets_pytorchs_intra_op_threads(capsys):
    _out(capsys, ["translate", RUN, "one", "--threads", "1"])
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["--nbest", "5"], "--nbest must be between 1 and --beam (4), got 5"),
    (["--nbest", "2", "--beam", "1"], "--nbest must be between 1 and --beam (1), got 2"),
    (["--nbest", "0"], "--nbest must be between 1"),
    (["--threads", "0"], "--threads must be between 1 and"),
    (["--threads", str((os.cpu_count() or 1) + 1)], "this machine's CPUs"),
    (["--batch-size", "0"], "--batch-size must be between 1 and 1,000,000, got 0"),
    (["--max-tokens", "-3"], "--max-tokens must be between 1 and 1,000,000, got -3"),
])
def test_bad_sizes_are_refused_in_one_line(capsys, argv, message):
    assert message in _error(capsys, ["translate", RUN, "one", *argv])


def test_stdin_gets_k_lines_a_line_and_blank_lines_stay(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("one\n\ntwo\n"))
    lines = _out(capsys, ["translate", RUN, "--nbest", "2", "--scores"])
    assert len(lines) == 6 and lines[2:4] == ["", ""]
    assert lines[0].endswith("\teins") and lines[4].endswith("\tzwei")


@pytest.fixture(scope="module")
def test_tsv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("eval") / "test.tsv"
    write_tsv(path, number_pairs(split_numbers(DEFAULT_SIZES, seed=0)["test"][:40], "de"))
    return path


def test_eval_uses_13a_unless_told_and_says_so(capsys, test_tsv, tmp_path):
    scores = tmp_path / "scores.json"
    assert main(["translate", "eval", RUN, "--data", str(test_tsv), "--no-progress",
                 "--json", str(scores), "--batch-size", "7", "--threads", "1"]) == 0
    shown = capsys.readouterr()
    assert "|tok:13a|" in shown.out.splitlines()[0]
    assert "--bleu-tokenize char" in shown.err  # one-word references: a note, not a switch
    saved = json.loads(scores.read_text())
    assert saved["bleu_tokenize"] == "13a" and "|tok:13a|" in saved["signatures"]["bleu"]
    assert main(["translate", "eval", RUN, "--data", str(test_tsv), "--no-progress",
                 "--bleu-tokenize", "char"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "|tok:char|" in out[0] and float(out[0].split()[1]) > 90
    assert "--bleu-tokenize must be one of" in _error(
        capsys, ["translate", "eval", RUN, "--data", str(test_tsv), "--bleu-tokenize", "auto"])


def _page_runs() -> list[tuple[list[str], list[str]]]:
    """`(arguments, printed lines)` of each console block of the Command line guide that runs
    the shipped translator and shows its output."""
    import re
    import shlex

    page = Path(__file__).resolve().parents[2] / "docs" / "guides" / "command-line.md"
    blocks = re.findall(r"^```console\n(.*?)^```", page.read_text(encoding="utf-8"),
                        re.MULTILINE | re.DOTALL)
    runs = []
    for block in blocks:
        command, *printed = block.replace("\\\n", " ").splitlines()
        if "numbers-de" in command and printed:
            runs.append((shlex.split(command)[2:], printed))
    return runs


@pytest.mark.parametrize(("argv", "printed"), _page_runs(), ids=lambda v: " ".join(v)[:40])
def test_the_command_line_guide_shows_what_the_command_prints(capsys, argv, printed):
    lines = _out(capsys, argv)
    assert len(lines) == len(printed)
    for got, shown in zip(lines, printed, strict=True):
        fields, expected = got.split("\t"), shown.split("\t")
        assert len(fields) == len(expected)
        for a, b in zip(fields, expected, strict=True):
            numbers = [w for w in b.split() if w.lstrip("-").replace(".", "", 1).isdigit()]
            if numbers and len(numbers) == len(b.split()):  # scores: to the last digit shown
                assert [float(w) for w in a.split()] == pytest.approx(
                    [float(w) for w in numbers], abs=2e-4)
            else:
                assert a == b


def test_the_page_shows_two_runs():
    assert {tuple(a[3:]) for a, _ in _page_runs()} >= {("--verbose",), ("--nbest", "3", "--scores")}
