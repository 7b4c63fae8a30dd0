"""The final model's average: which checkpoints it takes."""

from __future__ import annotations

import pytest

from vanilla_transformer.training.averaging import AVERAGE_SPAN, averaging_window


@pytest.mark.parametrize("steps, average, window", [
    ([500, 877], 5, [877]),  # a short run: the older checkpoint would mix in a weaker model
    ([800, 900, 1000, 1100, 1200], 5, [1000, 1100, 1200]),  # the last fifth of the run
    ([1200, 800, 1000], 2, [1000, 1200]),  # by step, not by the order given; at most `average`
    ([9_999_999, 10_000_000, 3], 5, [9_999_999, 10_000_000]),  # steps, never names, decide
    ([7], 5, [7]),
    ([], 5, []),
])
def test_averaging_window_keeps_the_end_of_the_run(steps, average, window):
    assert averaging_window(steps, average) == window
    if window:
        assert all(step >= max(steps) * (1 - AVERAGE_SPAN) for step in window)
