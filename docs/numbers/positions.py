"""Numbers of the Positions lesson (docs/learn/positions.md), computed as its code computes them."""

from __future__ import annotations

import runpy

from vanilla_transformer import sinusoid_table
from vanilla_transformer.data.numbers import number_words


def values() -> dict[str, object]:
    table = sinusoid_table(4, 8)
    sizes = runpy.run_path("docs/figures/positions_scale.py")["sizes"]()
    embedding, scaled, encoding = sizes.values()
    curves = runpy.run_path("docs/figures/positions_curves.py")
    clock = runpy.run_path("docs/figures/positions_clock.py")
    speeds = clock["speeds"]()
    second = 41 * 100 + 4  # "forty-one hundred and four", read literally
    assert number_words(second) != "forty-one hundred and four"
    return {
        "second": second,
        "sin1": float(table[1, 0]),
        "sin2": float(table[2, 0]),
        "sin3": float(table[3, 0]),
        "checked": 103 - 3,  # sinusoid_table(103, 8), shifted by k = 3
        "rms_embedding": embedding,
        "rms_scaled": scaled,
        "rms_encoding": encoding,
        "ratio": encoding / embedding,
        "speed_fast": speeds[0],
        "speed_slow": speeds[1],
        "clock_positions": clock["POSITIONS"] - 1,
        **{f"wave{f}": curves["wavelength"](f) for f in curves["FEATURES"]},
    }
