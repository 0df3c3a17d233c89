"""The docstring examples of ``tracer`` and ``viz`` run, and each listed module really has some.

``MODULES`` names every module with ``>>>`` examples (modules without examples are not listed, so no
parametrization can pass by running nothing); a test checks the list against the source tree.
Examples that compile with torch run here too: the venv has torch.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

MODULES = [
    "tracer",
    "tracer._text",
    "tracer.capturing",
    "tracer.diffing",
    "tracer.exporting",
    "tracer.hop_feeds",
    "tracer.model.attempts",
    "tracer.model.break_reason",
    "tracer.model.graph",
    "tracer.model.job",
    "tracer.model.validate",
    "tracer.options",
    "tracer.profile_compare",
    "tracer.profiling",
    "tracer.rank_pool",
    "tracer.root_roles",
    "tracer.session",
    "tracer.trace_log.body_feeds",
    "tracer.trace_log.graph_text",
    "tracer.trace_log.line_modules",
    "tracer.trace_log.modules",
    "viz",
    "viz.backward_groups",
    "viz.browser_code",
    "viz.dot",
    "viz.drawing",
    "viz.explorer",
    "viz.export_view",
    "viz.graph_layout",
    "viz.grouping",
    "viz.guard_groups",
    "viz.inspector",
    "viz.job_view",
    "viz.layout_linear",
    "viz.markup",
    "viz.module_paths",
    "viz.mimebundle",
    "viz.panels",
    "viz.node_facts",
    "viz.per_graph",
    "viz.profile_explorer",
    "viz.report_blocks",
    "viz.report_frames",
    "viz.report_graphs",
    "viz.report_info",
    "viz.style",
    "viz.svg",
    "viz.synthetic",
    "viz.time_chart",
]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.attempted >= 1, f"{name} is listed but runs no example"
    assert result.failed == 0


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_list_is_every_module_with_examples():
    found = sorted(_module_name(p) for d in ("tracer", "viz") for p in (REPO / d).rglob("*.py")
                   if ">>> " in p.read_text())
    assert sorted(MODULES) == found
