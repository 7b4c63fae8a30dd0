"""Every lesson asks the reader to predict before it reveals, and asks only about meaningful pieces.

A lesson's "Predict, then reveal" block is either a folded `predict` block (a question, lettered
choices, and a folded `reveal` block whose answer the build writes from docs/numbers/predict.py)
or a live question that runs the trained model in the browser (`<div class="predict-reveal">`,
docs/javascripts/explorer_extras.js). Neither may ask about the bare mark of a word's start,
"▁", which carries no meaning.
"""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
LEARN = ROOT / "docs" / "learn"
MARK = "▁"

# the lesson of each page, as docs/numbers/predict.py names it
LESSON_KEY = {"task-and-architecture.md": "task", "positions.md": "positions",
              "heads.md": "heads", "masks.md": "masks", "layers.md": "layers",
              "training.md": "training"}

PREDICT = re.compile(r'^\?\?\? predict "(?P<title>[^"]+)"\n(?P<body>(?:\n|    .*\n)+)', re.M)
LIVE = re.compile(r'^<div class="predict-reveal" data-question="(?P<question>[\w-]+)"', re.M)
CHOICE = re.compile(r"^    - \*\*(?P<letter>[a-h])\.\*\* (?P<label>.+)$", re.M)
REVEAL = re.compile(r'^    \?\?\? reveal "[^"]+"\n(?P<body>(?:\n|        .*\n)+)', re.M)


def lessons() -> list[str]:
    """The lesson pages, in the order of the list on docs/learn/index.md."""
    index = (LEARN / "index.md").read_text(encoding="utf-8")
    listed = index.split("## The lessons", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\. \[[^\]]+\]\(([\w-]+\.md)\)", listed, flags=re.M)


def blocks(page: str) -> list[re.Match[str]]:
    return list(PREDICT.finditer((LEARN / page).read_text(encoding="utf-8")))


def plain(label: str) -> str:
    return label.replace("`", "").strip()


def test_the_lessons_are_found() -> None:
    assert lessons() == ["task-and-architecture.md", "attention.md", "heads.md", "positions.md",
                         "masks.md", "layers.md", "training.md", "decoding.md"]


@pytest.mark.parametrize("page", lessons())
def test_every_lesson_has_a_predict_then_reveal_block(page: str) -> None:
    text = (LEARN / page).read_text(encoding="utf-8")
    found = len(blocks(page)) + len(LIVE.findall(text))
    assert found >= 1, f"docs/learn/{page} has no predict-then-reveal block"


@pytest.mark.parametrize("page", sorted(LESSON_KEY))
def test_a_block_offers_choices_and_reveals_a_computed_answer(page: str) -> None:
    found = blocks(page)
    assert found, f"docs/learn/{page}: no predict admonition"
    key = LESSON_KEY[page]
    choices = runpy.run_path(str(ROOT / "docs" / "numbers" / "predict.py"))["CHOICES"][key]
    for block in found:
        body = block.group("body")
        question = body.split("\n    ??? reveal", 1)[0]
        listed = CHOICE.findall(question)
        assert [letter for letter, _ in listed] == list("abcdefgh"[: len(listed)]), listed
        assert [plain(label) for _, label in listed] == choices, (
            f"docs/learn/{page}: the choices differ from CHOICES[{key!r}] in docs/numbers/predict.py")
        reveal = REVEAL.search(body)
        assert reveal, f"docs/learn/{page}: {block.group('title')!r} has no folded reveal block"
        answer = reveal.group("body")
        # the answer's letter and its numbers are written by the build, never typed
        assert answer.strip().startswith(f"**{{{{ n.predict.{key}_letter }}}}.**"), answer[:80]
        assert len(re.findall(r"\{\{ n\.\w+\.\w+", answer)) >= 2, answer


def meaningless(text: str) -> list[str]:
    """Where `text` names the bare mark "▁" as a piece: alone, not starting a word."""
    return [text[max(0, m.start() - 20): m.end() + 20]
            for m in re.finditer(rf"(?<!\w){MARK}(?!\w)", text)]


@pytest.mark.parametrize("page", lessons())
def test_no_block_asks_about_the_bare_mark_of_a_word_start(page: str) -> None:
    for block in blocks(page):
        assert not meaningless(block.group(0)), (page, meaningless(block.group(0)))
        for _, label in CHOICE.findall(block.group("body")):
            assert plain(label) != MARK, f"docs/learn/{page} offers the choice {MARK!r}"


def test_the_check_finds_the_bare_mark() -> None:
    assert meaningless("the piece ▁ starts a word") == ["the piece ▁ starts a word"]
    assert meaningless("`▁vierhundert`, ein") == []


def test_the_answers_are_choices_and_never_the_bare_mark() -> None:
    script = runpy.run_path(str(ROOT / "docs" / "numbers" / "predict.py"))
    values = script["values"]()
    for key, choices in script["CHOICES"].items():
        assert MARK not in [plain(c) for c in choices]
        letter = values[f"{key}_letter"]
        assert letter in "abcdefgh"[: len(choices)], (key, letter)
    # the task's answer is how the tokenizer cuts the German, without the mark of the word start
    assert values["task_pieces"] == "vierhundert · ein · undvierzig"
    assert MARK not in values["training_piece"] + values["masks_top_piece"] + values["heads_piece"]


def test_the_live_question_never_asks_about_the_bare_mark(site: Path, tab: Any, origin: str) -> None:
    """German writes 1308 as ▁ · ein · tausend · dreihundert · acht: the question asks about a
    piece with a meaning, and offers no button for the bare mark."""
    tab.goto(origin + "/learn/attention/", wait_until="load")
    box = '.predict-reveal[data-question="cross-argmax"]'
    tab.wait_for_selector(f'{box}[data-ready="on"]')
    tab.fill(f"{box} input", "one thousand, three hundred and eight")
    tab.click(f"{box} .predict-reveal__ask")
    tab.wait_for_selector(f'{box}[data-state="choosing"]')
    pieces = tab.evaluate("""(s) => Array.from(
        document.querySelectorAll(s + ' .predict-reveal__pieces button'),
        (b) => ({text: b.textContent, shown: b.offsetParent !== null, k: b.dataset.piece}))""", box)
    asked = tab.evaluate("(s) => document.querySelector(s).dataset.piece", box)
    assert MARK in [p["text"] for p in pieces]  # the German really has the bare mark
    assert [p["text"] for p in pieces if p["shown"]] == ["ein", "tausend", "dreihundert", "acht"]
    assert pieces[int(asked)]["text"] != MARK
    prompt = tab.text_content(f"{box} .predict-reveal__prompt") or ""
    assert f"\u201c{MARK}\u201d" not in prompt and f"\u201c{pieces[int(asked)]['text']}\u201d" in prompt
