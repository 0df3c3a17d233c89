"""Every ``Note [...]`` that ``tracer`` and ``viz`` cite exists, in our code or in torch's own source.

A Note is defined in our code as a ``# Note [Name]`` line over a ``# ~~~`` underline (or inline, as
``# Note [Name]: why...``); torch writes ``Note [Name]``, ``NOTE: [Name]`` or ``Note: [Name]`` in its
source (e.g. torch/_dynamo/output_graph.py, Note [Auto lift basic free symbols when create_graph_input]).
A citation wrapped over two comment or docstring lines is joined (one space) before the lookup.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
TORCH = Path(torch.__file__).resolve().parent
CITE = re.compile(r"Note \[([^\]\n]+)\]")
OPEN = re.compile(r"Note \[[^\]]*$")  # a citation wrapped over two lines: joined with the next one
HEADER = re.compile(r"\s*(?:#|//) Note \[([^\]]+)\]\s*$")  # Python's comments, and the browser code's
INLINE = re.compile(r"\s*(?:#|//) Note \[([^\]]+)\]:")
RULE = re.compile(r"\s*(?:#|//) ~~~")
TORCH_NOTE = re.compile(r"(?i)note:?\s*\[\s*([^\]\n]+?)\s*\]")


def _sources() -> list[Path]:
    return sorted(p for d in ("tracer", "viz") for ext in ("*.py", "*.js") for p in (REPO / d).rglob(ext))


def _ours() -> tuple[dict[str, str], list[tuple[str, str]]]:
    defined: dict[str, str] = {}
    cited: list[tuple[str, str]] = []
    for p in _sources():
        lines = p.read_text().splitlines()
        for i, line in enumerate(lines):
            where = f"{p.relative_to(REPO)}:{i + 1}"
            m = HEADER.match(line)
            if m and i + 1 < len(lines) and RULE.match(lines[i + 1]):
                defined[m.group(1)] = where
            elif (m := INLINE.match(line)) is not None:
                defined[m.group(1)] = where
            if OPEN.search(line) and i + 1 < len(lines):
                line = f"{line} {lines[i + 1].strip().lstrip('#/').strip()}"
            cited += [(c.group(1), where) for c in CITE.finditer(line)]
    return defined, cited


def _torch_notes() -> set[str]:
    names: set[str] = set()
    for p in TORCH.rglob("*.py"):
        names.update(m.group(1) for m in TORCH_NOTE.finditer(p.read_text(errors="replace")))
    return names


def test_every_cited_note_exists():
    defined, cited = _ours()
    assert cited and defined, "no Notes found: the scan is broken"
    torch_notes = _torch_notes()
    missing = [(name, where) for name, where in cited if name not in defined and name not in torch_notes]
    assert missing == [], f"cited Notes that exist neither in tracer/viz nor in torch's source: {missing}"


def test_a_note_of_ours_is_defined_once():
    seen: dict[str, list[str]] = {}
    for p in _sources():
        lines = p.read_text().splitlines()
        for i, line in enumerate(lines):
            m = HEADER.match(line)
            if m and i + 1 < len(lines) and RULE.match(lines[i + 1]):
                seen.setdefault(m.group(1), []).append(f"{p.relative_to(REPO)}:{i + 1}")
    assert {k: v for k, v in seen.items() if len(v) > 1} == {}


def test_the_scan_finds_torch_notes():
    assert "Auto lift basic free symbols when create_graph_input" in _torch_notes()
