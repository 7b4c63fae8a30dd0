"""Fixtures shared by the command-line tests."""

from __future__ import annotations

import pytest

from vanilla_transformer.cli import main


@pytest.fixture(scope="module")
def make_numbers(tmp_path_factory):
    """`make_numbers(seed, train_size)`: a folder with a small number corpus's three TSVs."""

    def make(seed: int = 1, train_size: int = 40):
        out = tmp_path_factory.mktemp("numbers")
        assert main(["translate", "numbers", "--out", str(out), "--seed", str(seed),
                     "--train-size", str(train_size), "--valid-size", "3", "--test-size", "3",
                     "--always-train", "0", "--limit", "1000"]) == 0
        return out

    return make
