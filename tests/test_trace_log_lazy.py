"""A log's graphs and guards read on first access (Note [Graphs parsed on first access]) give what an
eager read gives, parse problems are never lost, and the block reader cuts records as a line reader does.

The log is a real one (tests/trace_log_child.py under TORCH_TRACE: a wrap body, a graph break, a
recompile, a training compile). The eager reference is the parser itself run on the logged text
(``parse_readable``), and for the records the text of the file split by lines.
"""

from __future__ import annotations

import copy
import glob
import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracer
from tracer.trace_log import load_trace, reader
from tracer.trace_log.assemble import _aot_modules, _graph_input_sources, _root_roles, _split, _tied
from tracer.trace_log.deferred import has_bodies
from tracer.trace_log.events import LogState, apply
from tracer.trace_log.graph_text import parse_readable
from tracer.trace_log.guards import cpp_tree
from tracer.trace_log.source import LogText
from viz.html import capture_html


@pytest.fixture(scope="module")
def log_path(child_trace_dir) -> str:
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    return path


def _records(text: str, event: str) -> list[tuple[int, int, int]]:
    """(line of the record, start, end of its payload in ``text``) for each record of ``event``."""
    out = []
    for m in re.finditer('{"%s"' % event, text):
        start = text.index("\n", m.start()) + 1
        end = re.compile(r"\n(?!\t)").search(text, start).start()
        out.append((text.count("\n", 0, m.start()) + 1, start, end))
    return out


def _payload(text: str, start: int, end: int) -> str:
    return text[start + 1:end].replace("\n\t", "\n")


def _aot_graphs(f: tracer.Frame) -> list[tracer.Graph]:
    return [g for g in (f.aot.joint, f.aot.forward, f.aot.backward, f.aot.inference) if g is not None] if f.aot else []


def test_graphs_without_bodies_wait_and_then_equal_the_eager_parse(log_path):
    cap = load_trace(log_path)
    lazy = [g for f in cap.frames for g in [f.graph, *_aot_graphs(f)] if g.code and not g.parsed]
    eager = [f.graph for f in cap.frames if f.subgraphs]
    assert lazy and eager, "the log has both kinds: graphs that wait and a graph with a wrap body"
    assert all(g.parsed for g in eager)
    training = next(f for f in cap.frames if f.aot is not None and f.aot.mode == "training")
    assert not training.aot.joint.parsed and not training.aot.backward.parsed
    state = LogState({})  # the log read again, for the Sources each frame's placeholders were read from
    with LogText(log_path) as src:
        rd = reader.Reader(src.text)
        state.strings = rd.strings
        for rec in rd:
            apply(rec, state)
    roots = {id(f.graph): _graph_input_sources(state.attempts[k], state) for f, k in zip(cap.frames, state.order, strict=True)}
    ties = {id(f): _tied(state.attempts[k].guards_json, state.attempts[k].cpp_guards)
            for f, k in zip(cap.frames, state.order, strict=True)}
    attempt = {id(f): state.attempts[k] for f, k in zip(cap.frames, state.order, strict=True)}
    frame_of = {id(g): f for f in cap.frames for g in [f.graph, *_aot_graphs(f)]}
    for g in lazy:
        want = parse_readable(g.code, g.name).graph
        f = frame_of[id(g)]
        if id(g) in roots:
            _root_roles(want, roots[id(g)], ties[id(f)])
        else:  # an AOT graph: module groups through the Dynamo graph (Note [Module groups from a log])
            want.code = g.code  # its inputs' descriptors are read from the text
            _aot_modules(f, want, ties[id(f)], _split(attempt[id(f)], g.name))  # a joint's partition too
        got = g.nodes
        assert g.parsed
        assert [(n.name, n.op, n.target, n.args, n.kwargs, n.inputs, n.users, n.role, n.meta) for n in got] == \
            [(n.name, n.op, n.target, n.args, n.kwargs, n.inputs, n.users, n.role, n.meta) for n in want.nodes]
    # root placeholders get their roles from the Source they were read from (Note [Root roles from a log]):
    # a frame local L['x'] is an argument or a closure variable, which the log does not say
    roles = {n.role for f in cap.frames for n in f.graph.placeholders}
    assert roles == {"unknown", "param", "lifted_symbol"}, roles
    assert {n.meta["graph_arg_source"] for f in cap.frames for n in f.graph.placeholders if n.role == "unknown"} >= \
        {"L['x']", "L['w']"}
    assert not cap.all_problems()[len(cap.problems):], "the real log parses without a frame problem"


def test_a_graph_text_that_does_not_parse_is_a_problem_before_any_graph_is_read(log_path, tmp_path):
    text = open(log_path, encoding="utf-8").read()
    line, start, end = _records(text, "aot_backward_graph")[0]
    assert text[start:].startswith("\tclass ")
    damaged = tmp_path / "damaged.log"
    damaged.write_text(text[:start] + "\tclas" + text[start + 6:], encoding="utf-8")
    cap = load_trace(str(damaged))
    f = next(f for f in cap.frames if f.aot is not None and f.aot.mode == "training")
    backward = f.aot.backward
    assert not backward.parsed
    assert [p for p in f.problems if "graph text not parsed" in p] == \
        [f"line {line}: backward graph text not parsed (ValueError: graph text does not start with "
         "'class <name>(torch.nn.Module):')"]
    assert backward.parsed and backward.nodes == [] and backward.code.startswith("clas ")
    assert f.status == "compiled" and f.has_graph
    tracer.validate(cap)


def test_the_first_reader_may_be_a_view(log_path, tmp_path):
    text = open(log_path, encoding="utf-8").read()
    line, start, end = next(r for r in _records(text, "dynamo_output_graph") if not has_bodies(_payload(text, *r[1:])))
    k = text.index(" = ", start)
    damaged = tmp_path / "syntax.log"
    damaged.write_text(text[:k] + " = = (" + text[k + 3:], encoding="utf-8")
    cap = load_trace(str(damaged))
    html = capture_html(cap)  # draws the graphs before anything asked for the problems
    assert "graph text not parsed (SyntaxError" in html
    assert sum(f"line {line}: output graph text not parsed (SyntaxError" in p for p in cap.all_problems()) == 1
    tracer.validate(cap)


def test_reading_one_graph_parses_only_that_graph_and_problems_parse_all(log_path, tmp_path):
    text = open(log_path, encoding="utf-8").read()
    no_metrics = tmp_path / "no_metrics.log"  # the loader then appends a problem to each frame itself
    no_metrics.write_text("".join(ln for ln in text.splitlines(keepends=True) if '{"compilation_metrics"' not in ln),
                          encoding="utf-8")
    for path in (log_path, str(no_metrics)):
        cap = load_trace(path)
        f = next(f for f in cap.frames if f.aot is not None and f.aot.mode == "training")
        assert not f.graph.parsed and not f.aot.forward.parsed, "nothing parsed at load"
        f.aot.forward.nodes  # noqa: B018
        assert f.aot.forward.parsed and not f.aot.joint.parsed and not f.aot.backward.parsed
        problems = f.problems
        assert f.graph.parsed and f.aot.joint.parsed and f.aot.backward.parsed
        assert any("no compilation metrics" in p for p in problems) == (path != log_path)


def test_json_round_trip_keeps_parsed_nodes_and_the_guards(log_path):
    cap = load_trace(log_path)
    back = tracer.Capture.from_json(cap.to_json())
    assert back == cap
    assert all(g.parsed for f in back.frames for g in [f.graph, *_aot_graphs(f)])
    assert [len(f.guards) for f in back.frames] == [len(f.guards) for f in cap.frames]


def test_guards_are_read_on_first_access(log_path):
    cap = load_trace(log_path)
    text = open(log_path, encoding="utf-8").read()
    trees = [_payload(text, start, end) for _, start, end in _records(text, "dynamo_cpp_guards_str")]
    guarded = [f for f in cap.frames if "_pending" in f.__dict__ and "guards" in f.__dict__["_pending"]]
    assert len(guarded) == len(trees) > 0
    for f, tree in zip(guarded, trees, strict=True):
        leaves = [ln for ln in tree.split("\n") if re.match(r"^[| ]*\+- [A-Z_]+(: |$)", ln)]
        assert len(f.guards) == len(leaves) > 0
        assert f.guards == cpp_tree(tree)
        assert "_pending" not in f.__dict__ or "guards" not in f.__dict__["_pending"]


def test_a_copy_of_a_waiting_graph_is_its_own(log_path):
    cap = load_trace(log_path)
    f = next(f for f in cap.frames if f.aot is not None and f.aot.mode == "training")
    joint = copy.deepcopy(f.aot.joint)
    joint.nodes.clear()
    assert f.aot.joint.nodes, "the original keeps its nodes"
    f2 = copy.deepcopy(next(fr for fr in load_trace(log_path).frames if fr.aot is not None and fr.aot.mode == "training"))
    assert f2.aot.joint.parsed and f2.aot.joint.nodes == f.aot.joint.nodes


@pytest.mark.parametrize("chunk", [1, 5, 64, 4096])
def test_block_reader_cuts_the_records_a_line_reader_does(log_path, chunk, monkeypatch):
    text = "\tstray payload\n\n" + open(log_path, encoding="utf-8").read() + "\tno newline at the end"
    lines = text.split("\n")
    starts = [k for k, ln in enumerate(lines) if ln.strip() and not ln.startswith("\t")]
    monkeypatch.setattr(reader, "_CHUNK", chunk)
    r = reader.Reader(io.StringIO(text, newline="\n"))
    recs = list(r)
    assert r.lines == len(lines)
    assert r.skipped == ["line 1: payload line without a record before it"]
    assert [rec.line for rec in recs] == [k + 1 for k in starts if '{"str": [' not in lines[k]]
    for rec in recs:
        k, body = rec.line, []  # the payload lines follow the record's line, tab removed
        while k < len(lines) and lines[k].startswith("\t"):
            body.append(lines[k][1:])
            k += 1
        assert rec.payload == ("\n".join(body) if body else "" if "has_payload" in rec.meta else None)
    assert recs[-1].payload.endswith("no newline at the end")


_NESTED = re.compile(r"^[ \t]+class ", re.MULTILINE)


@given(st.lists(st.sampled_from(["class ", " class ", "\tclass ", "  ", "\n", "x", "subclass ", "# class ", "\t"]),
                max_size=12))
def test_has_bodies_sees_every_indented_class_line(parts):
    text = "".join(parts)
    assert has_bodies(text) == (_NESTED.search(text) is not None)
