"""Helpers shared by the tests of the parameter and FLOP counts."""

import re

import pytest


def evaluate_latex(latex: str, **symbols: int) -> int:
    """Evaluate the right-hand side of one of the calculator's LaTeX formulas.

    Only their small vocabulary is understood: `\\,` and juxtaposition are products, `d_{ff}`
    is `F`, `V_{src}` is `A`, `V_{tgt}` is `C`, `\\big[...\\big]` are brackets.
    """
    expr = latex.split("=", 1)[1]
    for old, new in [(r"\,", "*"), ("d_{ff}", "F"), ("V_{src}", "A"), ("V_{tgt}", "C"),
                     ("^2", "**2"), (r"\big", ""), ("[", "("), ("]", ")")]:
        expr = expr.replace(old, new)
    expr = re.sub(r"(\d)([A-Za-z(])", r"\1*\2", expr)  # 12d -> 12*d, 2(1 - t) -> 2*(1 - t)
    for _ in range(2):  # fd -> f*d, )( -> )*(, NBd -> N*B*d
        expr = re.sub(r"([A-Za-z)])\s*([A-Za-z(])", r"\1*\2", expr)
    return eval(expr, {}, symbols)


@pytest.fixture(scope="session")
def latex_value():
    """The LaTeX evaluator, as a fixture (test modules cannot import each other)."""
    return evaluate_latex
