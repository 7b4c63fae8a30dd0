"""The Parameter calculator page's live calculator agrees with the package's calculator.

docs/javascripts/calculator.js recomputes the parameter count, the training FLOPs per target
token and the training memory in the browser as the reader types. These tests fill its form with
random configurations and compare the numbers it shows (`data-value` of each output, exact
integers) with `parameter_count`, `forward_flops` and `memory_estimate`; they also check that
bad input is named, and that the form fits a phone in both colour schemes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from vanilla_transformer.analysis import forward_flops, memory_estimate, parameter_count
from vanilla_transformer.model.config import PAPER_OPTIONS, PRESETS

ROOT = Path(__file__).resolve().parents[2]

PAGE = "/guides/parameter-calculator/"


def options(arrangement: str, tie: bool, bias: bool) -> dict:
    if arrangement == "paper":
        return {**PAPER_OPTIONS, "tie_weights": tie, "generator_bias": bias}
    return {"tie_weights": tie, "generator_bias": bias}


def random_configs(count: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    configs = []
    for _ in range(count):
        h = rng.choice([1, 2, 3, 4, 8, 16])
        d_model = h * rng.randint(1, 96)
        tie = rng.random() < 0.5
        src_vocab = rng.randint(0, 50_000)
        tgt_vocab = src_vocab if tie else rng.randint(0, 50_000)
        configs.append(dict(
            N=rng.randint(1, 12), d_model=d_model, d_ff=rng.randint(1, 8192), h=h,
            src_vocab=src_vocab, tgt_vocab=tgt_vocab, tie=tie, bias=rng.random() < 0.5,
            arrangement=rng.choice(["paper", "annotated"]), batch=rng.randint(1, 128),
            length=rng.randint(1, 512), bytes=rng.choice([4, 2]),
        ))
    return configs


def fill(tab, c: dict) -> None:
    for field, value in [("N", c["N"]), ("d-model", c["d_model"]), ("d-ff", c["d_ff"]),
                         ("h", c["h"]), ("src-vocab", c["src_vocab"]),
                         ("tgt-vocab", c["tgt_vocab"]), ("batch", c["batch"]),
                         ("len", c["length"])]:
        tab.fill(f"#calc-{field}", str(value))
    tab.select_option("#calc-arrangement", c["arrangement"])
    tab.select_option("#calc-dtype", str(c["bytes"]))
    tab.set_checked("#calc-tie", c["tie"])
    tab.set_checked("#calc-bias", c["bias"])


def shown(tab, name: str) -> str:
    return tab.get_attribute(f"#calc-{name}", "data-value")


@pytest.fixture(scope="module")
def page(tab, origin):
    tab.goto(origin + PAGE)
    tab.wait_for_selector("#calc-params[data-value]:not([data-value=''])")
    yield tab
    blocked, errors = tab.recorder.take()
    assert not blocked and not errors, (blocked, errors)


def test_the_defaults_are_the_papers_base_model(page):
    expected = parameter_count(37000, 37000, 6, 512, 2048, 8, **PAPER_OPTIONS).total
    assert int(shown(page, "params")) == expected == 63_082_496
    assert page.is_hidden("#calc-error")


@pytest.mark.parametrize("c", random_configs(12), ids=lambda c: f"N{c['N']}-d{c['d_model']}")
def test_random_configurations_match_the_python_calculator(page, c):
    fill(page, c)
    sizes = (c["src_vocab"], c["tgt_vocab"], c["N"], c["d_model"], c["d_ff"], c["h"])
    opts = options(c["arrangement"], c["tie"], c["bias"])
    count = parameter_count(*sizes, **opts)
    assert int(shown(page, "params")) == count.total
    assert breakdown_shown(page) == breakdown_expected(count)
    flops = forward_flops(*sizes, batch=c["batch"], src_len=c["length"],
                          tgt_len=c["length"], **opts)
    assert int(shown(page, "flops")) == flops.training_total // (c["batch"] * c["length"])
    dtype = {4: "float32", 2: "bfloat16"}[c["bytes"]]
    memory = memory_estimate(*sizes, batch=c["batch"], src_len=c["length"],
                             tgt_len=c["length"], dtype=dtype, mask_bytes=1, **opts)
    assert int(shown(page, "memory")) == memory.training_total


def breakdown_shown(tab) -> dict[str, int]:
    rows = tab.eval_on_selector_all(
        "#calc-breakdown tr[data-component]", "rows => rows.map(r => [r.dataset.component, r.dataset.value])")
    return {name: int(value) for name, value in rows}


def breakdown_expected(count) -> dict[str, int]:
    """The calculator's five rows from `parameter_count`'s six components."""
    return {
        "embeddings": count.src_embedding.subtotal + count.tgt_embedding.subtotal,
        "attention": count.attention.subtotal,
        "feed-forward": count.feed_forward.subtotal,
        "norms": count.layer_norm.subtotal,
        "output": count.generator.subtotal,
    }


def preset_expectations() -> dict[str, tuple[tuple[int, ...], dict]]:
    """Each preset's sizes and options, from the package's PRESETS and the shipped translator."""
    manifest = json.loads((ROOT / "docs/assets/translator/manifest.json").read_text())
    m = manifest["model"]
    sizes = ("N", "d_model", "d_ff", "h")
    return {
        "paper-base": ((37000, 37000, *(PRESETS["paper-base"][k] for k in sizes)), PAPER_OPTIONS),
        "paper-big": ((37000, 37000, *(PRESETS["paper-big"][k] for k in sizes)), PAPER_OPTIONS),
        # make_model's defaults are the Annotated Transformer's: N=6, d_model=512, d_ff=2048, h=8
        "annotated": ((37000, 37000, 6, 512, 2048, 8), {}),
        "translator": ((m["src_vocab"], m["tgt_vocab"], *(m[k] for k in sizes)),
                       {k: m[k] for k in ("norm_first", "tie_weights", "generator_bias",
                                          "layer_norm", "final_norm")}),
    }


@pytest.mark.parametrize("preset", ["paper-base", "paper-big", "annotated", "translator"])
def test_each_preset_is_its_model_and_the_breakdown_sums_to_the_total(page, preset):
    page.select_option("#calc-preset", "custom")
    page.fill("#calc-N", "1")
    page.select_option("#calc-preset", preset)
    sizes, opts = preset_expectations()[preset]
    count = parameter_count(*sizes, **opts)
    assert int(shown(page, "params")) == count.total
    assert int(page.get_attribute("#calc-breakdown", "data-value")) == count.total
    rows = breakdown_shown(page)
    assert rows == breakdown_expected(count) and sum(rows.values()) == count.total
    assert page.eval_on_selector_all(
        "#calc-breakdown tr[data-component] a", "links => links.every(a => a.href.includes('/learn/'))")
    page.fill("#calc-N", str(sizes[2] + 1))  # an edited size is no longer the preset
    assert page.input_value("#calc-preset") == "custom"
    page.fill("#calc-N", str(sizes[2]))
    assert page.input_value("#calc-preset") == preset


@pytest.mark.parametrize("field, digits, message", [
    ("N", 200, "than the calculator can show"),  # 1e200 layers of 1e200 wide feed-forwards
    ("batch", 200, "than the calculator can show"),
    ("N", 5000, "too large to read"),  # the browser reads no number from the field
])
def test_sizes_whose_results_overflow_are_refused(page, field, digits, message):
    page.select_option("#calc-preset", "paper-base")
    page.fill("#calc-d-ff", "9" * 200)
    page.fill(f"#calc-{field}", "9" * digits)
    assert message in page.inner_text("#calc-error")
    assert shown(page, "params") == "" and "Infinity" not in page.inner_text("#calculator")
    assert breakdown_shown_or_empty(page) == {}
    page.select_option("#calc-preset", "paper-base")
    assert page.is_hidden("#calc-error") and shown(page, "params") != ""


def breakdown_shown_or_empty(tab) -> dict[str, str]:
    rows = tab.eval_on_selector_all(
        "#calc-breakdown tr[data-component]", "rows => rows.map(r => [r.dataset.component, r.dataset.value])")
    return {name: value for name, value in rows if value}


@pytest.mark.parametrize("field, value, message", [
    ("h", "7", "d_model must be divisible by h: got d_model = 512, h = 7"),
    ("N", "0", "must be at least 1, got 0"),
    ("d-ff", "2.5", "must be a whole number, got \u201c2.5\u201d"),
    ("tgt-vocab", "100", "one shared matrix needs one vocabulary"),
])
def test_bad_input_is_named_and_clears_the_results(page, field, value, message):
    fill(page, random_configs(1, seed=1)[0] | dict(
        N=6, d_model=512, d_ff=2048, h=8, src_vocab=37000, tgt_vocab=37000, tie=True))
    page.fill(f"#calc-{field}", value)
    assert message in page.inner_text("#calc-error")
    assert shown(page, "params") == ""
    page.fill(f"#calc-{field}", {"h": "8", "N": "6", "d-ff": "2048", "tgt-vocab": "37000"}[field])
    assert page.is_hidden("#calc-error") and shown(page, "params") != ""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_calculator_fits_a_phone(browser, origin, scheme):
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme)
    try:
        tab = context.new_page()
        tab.goto(origin + PAGE)
        tab.wait_for_selector("#calc-params[data-value]:not([data-value=''])")
        widths = tab.evaluate("""() => {
            const box = document.getElementById('calculator');
            return [box.scrollWidth, box.clientWidth, document.documentElement.scrollWidth,
                    window.innerWidth];
        }""")
        assert widths[0] <= widths[1] and widths[2] <= widths[3], widths
    finally:
        context.close()
