"""Structure of the tutorial notebooks: each one teaches (title, prose), checks (asserts), and is stored run.

A notebook opens with the situation a reader is in and PyTorch's own page on it, and ends with a
two-line recap and a "try this" exercise: a collapsed solution cell and a hidden cell that checks it.

nbval (``make test``) re-executes every notebook and compares outputs; this test checks what nbval
cannot: that a notebook is a tutorial and not a bare script, and that it was stored executed, in order,
from its source in ``notebooks/src`` (see ``notebooks/_build.py``).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
MAX_CODE_RUN = 2  # at most this many code cells in a row without prose between them
_DOCS_LINK = re.compile(r"\]\(https://(?:docs\.)?pytorch\.org/docs/[^)\s]+\)")


def _load(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _build_module():
    spec = importlib.util.spec_from_file_location("_nb_build", NOTEBOOKS / "_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_there_are_notebooks():
    assert PATHS, f"no notebooks found in {NOTEBOOKS}"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_title_and_prose(path):
    nb = _load(path)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "first cell must be a '# Title'"
    run = 0
    for cell in nb.cells:
        if cell.cell_type == "code" and not _hidden(cell):  # a folded check is not reading matter
            run += 1
            assert run <= MAX_CODE_RUN, f"more than {MAX_CODE_RUN} code cells in a row without prose: {cell.source[:80]!r}"
        elif cell.cell_type == "markdown" and cell.source.strip():
            run = 0
    prose = [c for c in nb.cells if c.cell_type == "markdown"]
    code = [c for c in nb.cells if c.cell_type == "code" and not _hidden(c)]
    assert len(prose) * MAX_CODE_RUN >= len(code)


def _hidden(cell) -> bool:
    return "remove-input" in cell.metadata.get("tags", [])


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_checks_are_folded(path):
    """What a notebook verifies sits in hidden check cells (``remove-input``), not in a visible cell of
    asserts after each teaching cell; a visible assert may remain only inside a cell that does more."""
    for cell in _load(path).cells:
        if cell.cell_type == "code" and not _hidden(cell):
            body = ast.parse(cell.source).body
            assert not all(isinstance(s, ast.Assert) for s in body), f"a visible cell of asserts: {cell.source[:80]!r}"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_asserts_the_facts_it_teaches(path):
    nb = _load(path)
    asserts = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)  # every code cell is plain Python (no magics)
        asserts += sum(isinstance(n, ast.Assert) for n in ast.walk(tree))
    assert asserts >= 1, "a tutorial notebook must assert the facts it teaches"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_stored_executed_in_order_with_outputs(path):
    nb = _load(path)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "run top to bottom once, in a fresh kernel"
    outputs = [o for c in code for o in c.outputs]
    assert outputs, "stored without outputs"
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, f"stored with an error: {errors[0].get('ename')}"
    stderr = [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, f"stderr in stored outputs (silence warnings): {stderr[0].text[:200]!r}"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_matches_its_source(path):
    src = NOTEBOOKS / "src" / f"{path.stem}.py"
    assert src.exists(), f"{path.name} has no source {src.relative_to(NOTEBOOKS.parent)}"
    cells = _build_module().parse(src.read_text())
    nb = _load(path)
    assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in cells], (
        "notebook differs from its source: rebuild it with notebooks/_build.py"
    )


def test_parse_percent_format():
    cells = _build_module().parse("# %% [markdown]\n# # Title\n#\n# prose\n\n# %%\nx = 1\nassert x\n")
    assert [(c.cell_type, c.source) for c in cells] == [("markdown", "# Title\n\nprose"), ("code", "x = 1\nassert x")]


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_opens_with_the_situation_and_pytorch_docs(path):
    first = _load(path).cells[0].source
    assert "**You are here if**" in first, "the first cell says which situation the notebook is for"
    assert _DOCS_LINK.search(first), "the first cell links PyTorch's own documentation page on it"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_ends_with_recap_and_a_checked_exercise(path):
    cells = _load(path).cells
    at = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Recap")]
    assert len(at) == 1, "one '## Recap' cell"
    recap = cells[at[0]].source
    assert len([line for line in recap.splitlines() if line.startswith("- ")]) == 2, "a two-line recap"
    assert "**Try this.**" in recap
    tail = cells[at[0] + 1 :]
    code = [c for c in tail if c.cell_type == "code"]
    assert len(tail) <= 3 and len(code) == 2, "after the recap: the solution, the check, at most a 'next' line"
    solution, check = code
    assert solution.metadata.get("tags") == ["hide-input"] and check.metadata.get("tags") == ["remove-input"]
    assert solution.metadata["jupyter"]["source_hidden"] and check.metadata["jupyter"]["source_hidden"]
    assert any(isinstance(n, ast.Assert) for n in ast.walk(ast.parse(check.source))), "the check asserts the answer"


def test_parse_keeps_tags_and_hides_tagged_code():
    (md, solution, check, plain) = _build_module().parse(
        '# %% [markdown]\n# x\n\n# %% tags=["hide-input"]\na = 1\n\n# %% tags=["remove-input"]\nassert a\n\n# %%\nb = 2\n'
    )
    assert md.metadata == {} and plain.metadata == {}
    assert solution.metadata == {"tags": ["hide-input"], "jupyter": {"source_hidden": True}}
    assert check.metadata == {"tags": ["remove-input"], "jupyter": {"source_hidden": True}}

