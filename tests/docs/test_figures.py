"""Checks of the figure scripts drawn for the *Vanilla Transformer explained* page.

The page itself (docs/articles/vanilla-transformer-explained.md) is run by pytest-codeblocks; these
tests check the numbers the two figures plot, against the package's own modules.
"""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import pytest
import torch

from vanilla_transformer.model import LayerNorm

FIGURES = Path(__file__).resolve().parents[2] / "docs" / "figures"


@pytest.fixture(scope="module")
def mask_fill():
    return runpy.run_path(str(FIGURES / "explained_mask_fill.py"))


@pytest.fixture(scope="module")
def layernorm():
    return runpy.run_path(str(FIGURES / "explained_layernorm.py"))


@pytest.mark.parametrize("score", [-100.0, -5000.0, -9800.0])
def test_both_fills_leak_nothing_for_ordinary_scores(mask_fill, score):
    assert mask_fill["leak_second_style"](score) == 0.0
    assert mask_fill["leak_package"](score) == 0.0


def test_fill_minus_10000_leaks_when_scores_reach_it(mask_fill):
    assert mask_fill["leak_second_style"](-10000.0) == pytest.approx(0.5)
    assert mask_fill["leak_second_style"](-10100.0) == pytest.approx(1.0)
    assert mask_fill["leak_package"](-10100.0) == 0.0


def test_second_style_layer_norm_matches_torch(layernorm):
    torch.manual_seed(0)
    x = torch.randn(3, 16) * 2 + 1
    ours = layernorm["second_style_layer_norm"](x)
    assert torch.allclose(ours, torch.nn.functional.layer_norm(x, (16,), eps=1e-12), atol=1e-6)


@pytest.mark.parametrize("n", [2, 8, 64])
def test_annotated_layer_norm_is_smaller_by_sqrt_n_minus_1_over_n(layernorm, n):
    torch.manual_seed(0)
    x = torch.randn(5, n)
    with torch.no_grad():
        ratio = LayerNorm(n)(x).std(-1) / layernorm["second_style_layer_norm"](x).std(-1)
    assert torch.allclose(ratio, torch.full_like(ratio, math.sqrt((n - 1) / n)), atol=1e-4)


@pytest.mark.parametrize("name", ["explained_mask_fill", "explained_layernorm"])
def test_figures_draw(name):
    import matplotlib.pyplot as plt

    fig = runpy.run_path(str(FIGURES / f"{name}.py"))["draw"]()
    assert len(fig.axes) == 2
    plt.close(fig)
