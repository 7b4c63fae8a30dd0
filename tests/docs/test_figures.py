"""Checks of the figures of the site.

- The figure scripts drawn for the *Vanilla Transformer explained* page: the page itself
  (docs/articles/vanilla-transformer-explained.md) is run by pytest-codeblocks; these tests check
  the numbers the three figures plot, against the package's own modules and the paper's
  formulas.
- Heatmaps: every figure script that draws an image (`imshow`, `matshow`, `pcolormesh`) labels
  its ticks, checked on the drawn figure; every notebook cell that draws one is tagged "heatmap"
  (the dark scheme shows it as drawn instead of inverting its colour map), draws it in the
  transparent mid-grey style `HEATMAP`, and neither hides its ticks nor labels them below 10 pt
  (11.8 px at the 85% that docs/javascripts/figures.js keeps at least).
"""

from __future__ import annotations

import math
import re
import runpy
from pathlib import Path

import pytest
import torch

from vanilla_transformer import sinusoid_table
from vanilla_transformer.model import LayerNorm

DOCS = Path(__file__).resolve().parents[2] / "docs"
FIGURES = DOCS / "figures"


@pytest.fixture(scope="module")
def mask_fill():
    return runpy.run_path(str(FIGURES / "explained_mask_fill.py"))


@pytest.fixture(scope="module")
def cost():
    return runpy.run_path(str(FIGURES / "explained_cost.py"))


@pytest.fixture(scope="module")
def layernorm():
    return runpy.run_path(str(FIGURES / "explained_layernorm.py"))


@pytest.mark.parametrize("score", [-100.0, -5000.0, -9800.0])
def test_both_fills_leak_nothing_for_ordinary_scores(mask_fill, score):
    assert mask_fill["leak_article"](score) == 0.0
    assert mask_fill["leak_package"](score) == 0.0


def test_fill_minus_10000_leaks_when_scores_reach_it(mask_fill):
    assert mask_fill["leak_article"](-10000.0) == pytest.approx(0.5)
    assert mask_fill["leak_article"](-10100.0) == pytest.approx(1.0)
    assert mask_fill["leak_package"](-10100.0) == 0.0


def test_article_layer_norm_matches_torch(layernorm):
    torch.manual_seed(0)
    x = torch.randn(3, 16) * 2 + 1
    ours = layernorm["article_layer_norm"](x)
    assert torch.allclose(ours, torch.nn.functional.layer_norm(x, (16,), eps=1e-12), atol=1e-6)


@pytest.mark.parametrize("n", [2, 8, 64])
def test_annotated_layer_norm_is_smaller_by_sqrt_n_minus_1_over_n(layernorm, n):
    torch.manual_seed(0)
    x = torch.randn(5, n)
    with torch.no_grad():
        ratio = LayerNorm(n)(x).std(-1) / layernorm["article_layer_norm"](x).std(-1)
    assert torch.allclose(ratio, torch.full_like(ratio, math.sqrt((n - 1) / n)), atol=1e-4)


def test_measured_costs_follow_table_1_and_cross_at_n_equal_d(cost):
    d, lengths = 64, [16, 32, 64, 128, 256]
    measured = cost["costs"](d, lengths)
    assert measured["self-attention"] == [4 * n * n * d for n in lengths]
    assert measured["recurrence"] == [4 * n * d * d for n in lengths]
    cheaper = [a < r for a, r in zip(measured["self-attention"], measured["recurrence"])]
    assert cheaper == [n < d for n in lengths]
    assert measured["self-attention"][2] == measured["recurrence"][2]  # n = d = 64


@pytest.mark.parametrize(
    ("name", "axes"), [("explained_mask_fill", 2), ("explained_layernorm", 2), ("explained_cost", 1)]
)
def test_figures_draw(name, axes):
    import matplotlib.pyplot as plt

    fig = runpy.run_path(str(FIGURES / f"{name}.py"))["draw"]()
    assert len(fig.axes) == axes
    plt.close(fig)


def test_heads_cost_counts_the_same_products_for_every_h():
    cost = runpy.run_path(str(FIGURES / "heads_cost.py"))
    n, d = 16, 64
    measured = cost["costs"]((1, 4, 16), n=n, d_model=d)
    assert measured["projections"] == [4 * 2 * n * d * d] * 3  # four d x d projections
    assert measured["products"] == [2 * 2 * n * n * d] * 3  # QK^T and weights V
    assert measured["scores"] == [h * n * n for h in (1, 4, 16)]


def test_heads_split_figures_number_heads_from_one_over_consecutive_features():
    split = runpy.run_path(str(FIGURES / "heads_split.py"))
    assert split["head_features"](8, 512) == [(64 * i, 64 * i + 63) for i in range(8)]
    x, heads = runpy.run_path(str(FIGURES / "heads_numbers.py"))["split"]()
    assert torch.equal(heads, x.view(3, 2, 4).transpose(0, 1))


def test_positions_figures_follow_the_formula():
    clock = runpy.run_path(str(FIGURES / "positions_clock.py"))
    assert clock["speeds"](8) == pytest.approx([1.0, 0.1, 0.01, 0.001])
    curves = runpy.run_path(str(FIGURES / "positions_curves.py"))
    table = sinusoid_table(400, 64)
    for feature in curves["FEATURES"]:
        period = curves["wavelength"](feature)
        omega = 2 * math.pi / period
        assert torch.allclose(table[:, feature], torch.sin(omega * torch.arange(400.0)), atol=1e-4)


def test_positions_scale_compares_the_translator_embedding_with_the_encoding():
    sizes = list(runpy.run_path(str(FIGURES / "positions_scale.py"))["sizes"]().values())
    embedding, scaled, encoding = sizes
    assert scaled == pytest.approx(embedding * math.sqrt(64), rel=1e-5)
    assert encoding == pytest.approx(1 / math.sqrt(2), rel=1e-5)
    assert encoding > 5 * embedding  # unscaled, the position would outweigh the token


HEATMAP_CALL = re.compile(r"\.(imshow|matshow|pcolormesh)\(")
HIDDEN_TICKS = re.compile(r"set_[xy]ticks\(\[\]\)|axis\(\s*[\"']off|tick_params\([^)]*label\w*=False")
SMALL_FONT = re.compile(r"fontsize=([0-9.]+)")


def notebook_cells() -> list[tuple[str, int, list[str], str]]:
    """(page, cell number, tags, source) of every code cell of the notebook pages."""
    import jupytext

    cells = []
    for path in sorted([*DOCS.glob("articles/*.py"), *DOCS.glob("guides/*.py")]):
        notebook = jupytext.read(path)
        for i, cell in enumerate(notebook.cells):
            if cell.cell_type == "code":
                cells.append((path.relative_to(DOCS).as_posix(), i, cell.metadata.get("tags", []),
                              cell.source))
    return cells


def heatmap_problems(page: str, number: int, tags: list[str], source: str) -> list[str]:
    where = f"{page}, cell {number}"
    problems = []
    if "heatmap" not in tags:
        problems.append(f"{where} draws a heatmap but is not tagged \"heatmap\"")
    if "rc_context(HEATMAP)" not in source:
        problems.append(f"{where} does not draw inside plt.rc_context(HEATMAP)")
    if HIDDEN_TICKS.search(source):
        problems.append(f"{where} hides the tick labels of a heatmap")
    if not re.search(r"set_[xy]ticks\(", source):
        problems.append(f"{where} does not label the ticks with the tokens or positions")
    small = [float(size) for size in SMALL_FONT.findall(source) if float(size) < 10]
    if small:
        problems.append(f"{where} labels text at {min(small):g} pt, below 10 pt")
    return problems


def test_every_notebook_heatmap_is_tagged_and_labelled():
    cells = [c for c in notebook_cells() if HEATMAP_CALL.search(c[3])]
    assert len(cells) >= 5, "the notebook pages draw fewer heatmaps than expected"
    problems = [p for cell in cells for p in heatmap_problems(*cell)]
    assert not problems, "\n".join(problems)
    tagged = [c for c in notebook_cells() if "heatmap" in c[2] and not HEATMAP_CALL.search(c[3])]
    assert not tagged, f"tagged \"heatmap\" without drawing one: {[c[:2] for c in tagged]}"


def test_the_heatmap_check_catches_each_bad_form():
    good = 'with plt.rc_context(HEATMAP):\n    ax.imshow(w)\n    ax.set_xticks(range(3), keys)\n'
    assert heatmap_problems("p", 0, ["heatmap"], good) == []
    assert heatmap_problems("p", 0, [], good)
    assert heatmap_problems("p", 0, ["heatmap"], good.replace("rc_context(HEATMAP)", "figure()"))
    assert heatmap_problems("p", 0, ["heatmap"], good + "ax.set_yticks([])\n")
    assert heatmap_problems("p", 0, ["heatmap"], good + 'ax.axis("off")\n')
    assert heatmap_problems("p", 0, ["heatmap"], good.replace("keys)", "keys, fontsize=8)"))
    assert heatmap_problems("p", 0, ["heatmap"], "with plt.rc_context(HEATMAP):\n    ax.imshow(w)\n")


def test_figure_scripts_label_the_ticks_of_every_heatmap():
    """Every heatmap a figure script draws (an image or a mesh on its axes) labels its ticks."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    scripts = sorted(FIGURES.glob("[!_]*.py"))
    assert scripts
    for script in scripts:
        fig = runpy.run_path(str(script))["draw"]()
        fig.canvas.draw()
        for ax in fig.axes:
            meshes = [c for c in ax.collections if type(c).__name__ == "QuadMesh"]
            if ax.images or meshes:
                for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
                    assert any(t.get_text().strip() for t in labels), (
                        f"{script.name}: a heatmap without tick labels"
                    )
        plt.close(fig)


@pytest.fixture(scope="module")
def attention_example():
    return runpy.run_path(str(FIGURES / "attention_projection.py"))["example"]()


def test_attention_page_and_figures_share_the_worked_example(attention_example):
    """The lesson's first block types X and the three matrices; its figures draw from
    attention_projection.py. Both must be the same example."""
    import contextlib
    import io

    from pytest_codeblocks import extract_from_file

    first = extract_from_file(DOCS / "learn" / "attention.md")[0]
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(first.code, namespace)
    for name in ("X", "W_Q", "W_K", "W_V", "Q", "K", "V"):
        assert torch.equal(namespace[name], attention_example[name]), name


def test_attention_example_agrees_with_pytorch(attention_example):
    ex = attention_example
    Q, K, V = ex["Q"], ex["K"], ex["V"]
    weights = (Q @ K.T / math.sqrt(K.size(-1))).softmax(dim=-1)
    expected = torch.nn.functional.scaled_dot_product_attention(Q, K, V)
    assert torch.allclose(weights @ V, expected, atol=1e-6)
    one = weights[ex["query"]]
    assert ex["tokens"][int(one.argmax())] == "forty"
    assert ex["tokens"][int(one.argmin())] == "hundred"


def test_task_alignment_lines_cross():
    """The translator's last decoder layer reads `one` for `ein` and `forty-` for `undvierzig`:
    the German says the units first, so the two lines of the figure cross."""
    weights, written, read = runpy.run_path(str(FIGURES / "task_alignment.py"))["cross_weights"]()
    ein, tens = written.index("ein"), written.index("undvierzig")
    assert read[int(weights[ein].argmax())] == "one"
    assert read[int(weights[tens].argmax())] == "▁forty-"
    assert ein < tens and read.index("one") > read.index("▁forty-")


def test_smoothed_targets_of_the_training_lesson_follow_their_formulas():
    rows = runpy.run_path(str(FIGURES / "training_smoothing.py"))["targets"]()
    eps, size = 0.1, 11
    for row in rows.values():
        assert math.isclose(sum(row), 1.0, abs_tol=1e-6)
    szegedy, package = rows["Szegedy et al."], rows["this package"]
    assert szegedy[3] == pytest.approx(1 - eps + eps / size)
    assert szegedy[0] == pytest.approx(eps / size)  # padding too
    assert package[3] == pytest.approx(1 - eps) and package[0] == 0.0
    assert package[1] == pytest.approx(eps / (size - 2))


def test_beam_tree_of_the_decoding_lesson_keeps_four_and_ends_as_beam_search():
    tree = runpy.run_path(str(FIGURES / "decoding_beam_tree.py"))
    rows, finished = tree["beam_tree"]()  # checks its result against beam_search itself
    assert all(len(row) == tree["BEAM"] for row in rows)
    for row in rows:  # each step keeps its prefixes best first
        assert [n.log_prob for n in row] == sorted((n.log_prob for n in row), reverse=True)
    result = sorted(finished, key=lambda f: f[0].score, reverse=True)[: tree["BEAM"]]
    assert max(node.step for node, _ in result) <= tree["SHOWN"]  # all four are drawn
