"""Static checks of the annotated-walkthrough notebook page (the site build executes it).

These checks read the page without running it, so they take well under a second: the header
declares the percent format and the python3 kernel, every code cell ends with something the
reader can see or that can fail, and no class of the package is redefined on the page.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import pytest

import vanilla_transformer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "articles" / "annotated-walkthrough.py"


@pytest.fixture(scope="module")
def notebook():
    return jupytext.read(PAGE)


def _code_cells(nb):
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def test_header_declares_percent_format_and_python3_kernel(notebook):
    text = PAGE.read_text(encoding="utf-8")
    assert text.startswith("# ---\n# jupyter:")
    assert notebook.metadata["jupytext"]["text_representation"]["format_name"] == "percent"
    assert notebook.metadata["kernelspec"]["name"] == "python3"


def test_page_has_prose_and_code(notebook):
    kinds = [cell.cell_type for cell in notebook.cells]
    assert kinds[0] == "markdown" and notebook.cells[0].source.startswith("# Annotated walkthrough")
    assert kinds.count("code") >= 30 and kinds.count("markdown") >= 30


def _ends_visibly(source: str) -> bool:
    last = ast.parse(source).body[-1]
    if isinstance(last, ast.Assert):
        return True
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        func = last.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in {"print", "show", "show_source", "table"}  # table: a displayed table
    return False


def test_every_code_cell_ends_in_an_assert_or_visible_output(notebook):
    bad = [src.splitlines()[-1] for src in _code_cells(notebook) if not _ends_visibly(src)]
    assert bad == []


def test_no_package_class_or_function_is_redefined(notebook):
    exported = set(vanilla_transformer.__all__)
    defined = {
        node.name
        for src in _code_cells(notebook)
        for node in ast.walk(ast.parse(src))
        if isinstance(node, (ast.ClassDef, ast.FunctionDef))
    }
    assert defined & exported == set()


def test_the_notebook_s_mistakes_are_gathered_in_one_errata_box(notebook):
    prose = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    assert "**Correction.**" not in prose  # the body teaches; the errata live at the end
    errata = [cell.source for cell in notebook.cells
              if cell.cell_type == "markdown" and "<summary>Errata</summary>" in cell.source]
    assert len(errata) == 1 and notebook.cells[-1].source == errata[0]
    rows = [line for line in errata[0].splitlines() if line.startswith("| ")][2:]
    assert len(rows) >= 20
    for row in rows:  # what the notebook says | in fact | a link to the cell that checks it
        said, fact, where = (c.strip() for c in row.strip("|").split(" | "))
        assert said and fact and where.startswith("[") and "](#" in where, row
    for fixed in ("sqrt{d_{model}}", "(batch, seq_len, d_model)", "xavier_uniform_",
                  "(batch, seq_len, h, d_k)"):
        assert fixed in prose, fixed
