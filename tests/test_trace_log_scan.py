"""The loader's line scans that look only at lines holding a needle give what reading every line gave.

``lines_with`` (tracer/trace_log/modules.py) finds the lines of a text that hold a string with
``str.find``; the tied-Sources read of a C++ guard tree and ``aot_input_index`` use it instead of
walking every line. Each is checked against the line-by-line reading it replaced: fuzzed, and on every
guard tree and AOT graph of a real TORCH_TRACE log.
"""

from __future__ import annotations

import glob
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.model.graph import Graph
from tracer.trace_log import load_trace
from tracer.trace_log.assemble import _tied
from tracer.trace_log.modules import aot_input_index, lines_with, tied_sources
from tracer.trace_log.reader import Reader

_AOT_INPUT = re.compile(r"^\s*(\w+)\s*:[^#]*#\s*PlainAOTInput\(idx=(\d+)\)\s*$")


def _aot_input_index_every_line(graph: Graph) -> dict[str, int]:
    """The line-by-line reading ``aot_input_index`` replaced."""
    out: dict[str, int] = {}
    for line in graph.code.splitlines():
        m = _AOT_INPUT.match(line.rstrip().rstrip(","))
        if m is None:
            m = _AOT_INPUT.match(line.replace('",', '"', 1))
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def _tied_every_line(cpp: str) -> set[str]:
    """The line-by-line reading of a C++ guard tree's identity checks that ``_tied`` replaced."""
    return tied_sources(ln.partition("+- ")[2].partition(": ")[2] for ln in cpp.split("\n") if "+- " in ln)


_PIECES = ["\n", "\r", "\r\n", "\x85", "\u2028", "\x0c", " ", "  ", ",", '"', '",', "#", "  # ", ":", " is ", "is",
           "+- ", "| ", "GuardManager: ", "L['a']._parameters['w']", "L['b']", "x", "primals_1", "tangents_2",
           "PlainAOTInput(idx=", "PlainAOTInput(idx=3)", "0", "12", ")", ' "f32[4][1]cpu"']
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXT, st.sampled_from([" is ", "PlainAOTInput(idx=", "+- ", "x", "#"]))
def test_lines_with_is_split_then_filter(text, needle):
    assert lines_with(text, needle) == [ln for ln in text.split("\n") if needle in ln]


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_fuzzed_aot_input_index_and_tied_equal_every_line(text):
    assert aot_input_index(Graph(code=text)) == _aot_input_index_every_line(Graph(code=text))
    assert _tied(None, text) == _tied_every_line(text)


def test_real_log_guard_trees_and_aot_graphs_read_as_every_line(child_trace_dir):
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    with open(path, encoding="utf-8") as fh:
        trees = [r.payload for r in Reader(fh) if r.event == "dynamo_cpp_guards_str" and r.payload]
    assert trees
    for t in trees:
        assert _tied(None, t) == _tied_every_line(t)
    graphs = [g for f in load_trace(path).frames if f.aot is not None
              for g in (f.aot.joint, f.aot.forward, f.aot.backward, f.aot.inference) if g is not None]
    read = [aot_input_index(g) for g in graphs]
    assert any(read)  # the log's AOT graphs name their Dynamo inputs
    assert read == [_aot_input_index_every_line(g) for g in graphs]
