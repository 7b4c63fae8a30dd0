"""Shared pytest configuration: names available to every docstring example."""

import math

import pytest
import torch
from torch import nn

import vanilla_transformer


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace.update({name: getattr(vanilla_transformer, name) for name in vanilla_transformer.__all__})
    doctest_namespace.update(torch=torch, nn=nn, math=math)
    torch.manual_seed(0)

# Python files under docs/ are notebook pages, figure scripts and build hooks: the site build
# executes them, so pytest does not import them as modules.
# The learner's starter files are package data that import one another by name.
collect_ignore_glob = ["docs/*.py", "docs/**/*.py", "site/*", "benchmarks/*",
                       "src/vanilla_transformer/practice/starters/*"]
