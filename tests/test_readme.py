"""The README's Python examples run: each block on its own, verbatim, in a fresh interpreter.

A reader copies one block, not the whole page, so no block may lean on an earlier one's names.
Each runs as ``python block.py`` in its own empty directory (blocks write files such as a
``TORCH_TRACE`` directory or ``report.html``), with this checkout first on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def _run(block: str, cwd: Path) -> subprocess.CompletedProcess:
    (cwd / "block.py").write_text(block)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "block.py"], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_readme_has_examples_for_each_part_of_the_api():
    text = "\n".join(python_blocks())
    for name in ("tracer.capture(", "tracer.trace(", "tracer.pause(", "viz.Explorer(", "viz.export_html(",
                 "tracer.diff(", "tracer.load_trace(", "tracer.export(", "tracer.load_export("):
        assert name in text, f"README has no example of {name}"


def test_readme_blocks_are_found():
    # The blocks the parametrized test below runs: one per ```python fence of the README.
    assert len(python_blocks()) == README.read_text().count("```python") >= 6


@pytest.mark.parametrize("i", range(len(python_blocks())))
def test_readme_block_runs_on_its_own(i, tmp_path):
    block = python_blocks()[i]
    r = _run(block, tmp_path)
    assert r.returncode == 0, f"README block {i} failed on its own:\n{block}\n--- stderr:\n{r.stderr[-4000:]}"
    if "wrap_body_0" in block:  # the first example: y is lifted into the wrap body as a free variable
        assert "('l_y_', 'lifted_freevar', 'l_y_')" in r.stdout
    if "viz.export_html(" in block:  # the render example writes one standalone file with drawn graphs
        assert (tmp_path / "report.html").read_text().count("<svg") >= 1
    if "tracer.export(" in block:  # the export example: signature, mutation after decompositions, failure, .pt2
        assert "('b_calls', 'buffer', 'calls')" in r.stdout and "{'add': 'calls'}" in r.stdout
        assert "failed data_dependent" in r.stdout and "loaded ['user_output']" in r.stdout
    if "TORCH_TRACE" in block:  # the log example reads what torch wrote, in the block's own directory
        assert list((tmp_path / "trace").glob("*.log")) and "('0/0', 'compiled')" in r.stdout
