"""Build the tutorial notebooks from their sources and execute them in a fresh kernel.

Each notebook ``notebooks/NN_name.ipynb`` is generated from ``notebooks/src/NN_name.py``, a Python
file in jupytext's percent format (``# %%`` starts a code cell, ``# %% [markdown]`` a prose cell whose
lines are ``#``-comments), read by jupytext itself; this script only adds stable cell ids, executes
and strips run metadata. Invariant: a committed notebook is exactly what this script produced
from its source, executed top to bottom in a fresh ``python3`` kernel, so ``pytest --nbval``
reproduces every stored output.

Usage (from the repository root)::

    .venv/bin/python notebooks/_build.py               # every notebook
    .venv/bin/python notebooks/_build.py 00 03         # the ones whose name starts with 00 or 03
    .venv/bin/python notebooks/_build.py --no-execute  # write cells only (no outputs)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
KERNEL = "python3"  # the venv's ipykernel; jupyter_client runs it with this interpreter
TIMEOUT = 120  # seconds per cell: a hung cell fails the build instead of blocking it

FORMAT = "py:percent"


# Cell tags a source may set (``# %% tags=["remove-input"]``): a cell whose code a reader need not see
# (an exercise's check, its solution). Jupyter Book / myst-nb hide such code by tag; JupyterLab and
# Notebook collapse it by ``jupyter.source_hidden``, which the build sets for these tags.
HIDDEN_TAGS = ("remove-input", "hide-input")


def parse(text: str) -> list[nbformat.NotebookNode]:
    """The notebook cells of a percent-format source, as jupytext reads them, keeping only their tags.

    jupytext keeps ``lines_to_next_cell`` and similar hints in each cell's metadata so that it can
    write the ``.py`` back byte for byte; the ``.py`` is the source here, never written, so they are
    dropped. A cell's ``tags`` stay, and a hidden tag (``HIDDEN_TAGS``) also collapses its code.
    """
    cells = jupytext.reads(text, fmt=FORMAT).cells
    for cell in cells:
        tags = list(cell.metadata.get("tags", []))
        cell.metadata = {}
        if tags:
            cell.metadata["tags"] = tags
        if any(t in HIDDEN_TAGS for t in tags):
            cell.metadata["jupyter"] = {"source_hidden": True}
    return cells


def build(src: Path, execute: bool = True) -> Path:
    """Generate (and execute) the notebook for one source file; returns the notebook path."""
    nb = nbformat.v4.new_notebook()
    nb.cells = parse(src.read_text())
    for i, cell in enumerate(nb.cells):
        cell.id = f"{src.stem[:2]}-{i:02d}"  # stable ids: a rebuild changes only what really changed
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": KERNEL},
        "language_info": {"name": "python"},
    }
    if execute:
        client = NotebookClient(
            nb,
            kernel_name=KERNEL,
            timeout=TIMEOUT,
            record_timing=False,  # no wall-clock metadata in the stored file
            resources={"metadata": {"path": str(HERE)}},
        )
        client.execute()
        nb.metadata = {
            "kernelspec": nb.metadata["kernelspec"],
            "language_info": {"name": "python"},
        }
    out = HERE / f"{src.stem}.ipynb"
    nbformat.validate(nb)
    nbformat.write(nb, out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="prefixes of the notebooks to build (default: all)")
    ap.add_argument("--no-execute", action="store_true", help="write the cells without running them")
    args = ap.parse_args(argv)
    sources = sorted(SRC.glob("[0-9][0-9]_*.py"))
    if args.names:
        sources = [s for s in sources if any(s.stem.startswith(n) for n in args.names)]
        if not sources:
            known = [s.stem for s in sorted(SRC.glob("[0-9][0-9]_*.py"))]
            ap.error(f"no notebook source matches {args.names} (sources: {known})")
    for src in sources:
        t0 = time.monotonic()
        out = build(src, execute=not args.no_execute)
        print(f"{out.relative_to(HERE.parent)}  ({time.monotonic() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
