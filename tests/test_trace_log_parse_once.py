"""A graph text parsed once and handed out again (Note [One parse per distinct graph text] in
tracer/trace_log/deferred.py) gives node for node what a plain parse of that text gives, and no two
hand-outs share a mutable object.

The texts are every graph a real log holds (tests/trace_log_child.py under TORCH_TRACE: Dynamo
graphs, a wrap body, AOT joint/forward/backward); the reference is ``parse_readable`` itself.
"""

from __future__ import annotations

import glob
import os

import pytest
from test_trace_log_lazy import _records  # the same record cutter (tests/ is on sys.path)

from tracer.model.graph import Graph
from tracer.trace_log import deferred, load_trace
from tracer.trace_log.deferred import parse_logged
from tracer.trace_log.graph_text import ParsedModule, parse_readable
from tracer.trace_log.guards import _trees
from tracer.trace_log.guards import cpp_tree as _cpp_tree
from tracer.trace_log.guards import guards_of as _guards_of


@pytest.fixture(scope="module")
def texts(child_trace_dir) -> list[tuple[str, str]]:
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    cap = load_trace(path)
    out: dict[tuple[str, str], None] = {}
    for f in cap.frames:
        graphs: list[Graph] = [f.graph, *(s.graph for s in f.subgraphs.values())]
        if f.aot is not None:
            graphs += [g for g in [f.aot.joint, f.aot.forward, f.aot.backward, f.aot.inference,
                                   *f.aot.subgraphs.values()] if g is not None]
        for g in graphs:
            if g.code:
                out[(g.code, g.name)] = None
    assert len(out) >= 6  # the log's Dynamo graphs, a body and the AOT graphs
    return list(out)


def _same(a: ParsedModule, b: ParsedModule) -> None:
    assert a.graph.name == b.graph.name and a.graph.code == b.graph.code
    assert len(a.graph.nodes) == len(b.graph.nodes)
    for x, y in zip(a.graph.nodes, b.graph.nodes, strict=True):
        assert x == y  # every dataclass field: name, op, target, args, kwargs, inputs, users, role, calls, meta
    assert a.errors == b.errors
    assert list(a.children) == list(b.children)
    for k in a.children:
        _same(a.children[k], b.children[k])


def _ids(p: ParsedModule) -> set[int]:
    out = {id(p.graph), id(p.graph.nodes), id(p.errors), id(p.children)}
    for n in p.graph.nodes:
        out |= {id(n), id(n.args), id(n.kwargs), id(n.inputs), id(n.users), id(n.calls), id(n.meta)}
        for v in n.meta.values():
            if isinstance(v, (list, dict)):
                out.add(id(v))  # one level of containers: what the hand-out copies
                assert all(isinstance(x, (str, int)) for x in (v.values() if isinstance(v, dict) else v))
    for c in p.children.values():
        out |= _ids(c)
    return out


def test_each_text_parsed_once_equals_a_plain_parse(texts):
    deferred._shared.clear()
    for text, name in texts:
        plain = parse_readable(text, name)
        plain.graph.code = text
        p1: list[str] = []
        first = parse_logged(p1, text, 7, name)  # parsed (a miss)
        assert (text, name) in deferred._shared
        p2: list[str] = []
        again = parse_logged(p2, text, 7, name)  # handed out again (a hit)
        assert first is not None and again is not None
        assert first.graph.nodes
        _same(plain, first)
        _same(plain, again)
        assert p1 == p2
        assert not _ids(first) & _ids(again)  # nothing mutable shared between two hand-outs


def test_a_changed_hand_out_changes_no_later_one(texts):
    text, name = max(texts, key=lambda t: len(t[0]))
    first = parse_logged([], text, 1, name)
    assert first is not None
    for n in first.graph.nodes:  # what a caller may do to its own graph
        n.role = "changed"
        n.args.append("x")
        n.users.clear()
        n.meta.setdefault("shape", []).append(99)
        n.meta["source"] = {"file": "changed"}
    first.graph.nodes.pop()
    later = parse_logged([], text, 1, name)
    plain = parse_readable(text, name)
    plain.graph.code = text
    assert later is not None
    _same(plain, later)


def test_a_text_that_does_not_parse_is_not_kept_and_says_so_each_time():
    deferred._shared.clear()
    bad = "class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        y = (\n"
    for _ in range(2):
        problems: list[str] = []
        assert parse_logged(problems, bad, 3, "") is None
        assert len(problems) == 1 and "SyntaxError" in problems[0]
    assert not deferred._shared


def test_the_kept_texts_are_bounded():
    deferred._shared.clear()
    base = "class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        y = torch.sin(x);  x = None\n        return (y,)\n"
    for i in range(deferred._SHARED_MAX + 5):
        assert parse_logged([], base + "#" * i, 1, "") is not None
    assert len(deferred._shared) == deferred._SHARED_MAX
    assert (base, "") not in deferred._shared  # the oldest went first


def _guard_ids(guards: list) -> set[int]:
    return {i for g in guards for i in (id(g), id(g.code), id(g.user_stack))}


def test_each_guard_tree_read_once_equals_a_plain_read(child_trace_dir):
    """Note [One read per distinct guard tree] in tracer/trace_log/assemble.py."""
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    text = open(path, encoding="utf-8").read()
    trees = [text[s + 1:e].replace("\n\t", "\n") for _, s, e in _records(text, "dynamo_cpp_guards_str")]
    assert trees
    _trees.clear()
    for tree in trees:
        first, again = _guards_of(tree), _guards_of(tree)
        assert first == again == _cpp_tree(tree) and first
        assert not _guard_ids(first) & _guard_ids(again)
        for g in first:  # what a caller may do to its own guards
            g.code.append("changed")
            g.user_stack.clear()
            g.kind = "changed"
        assert _guards_of(tree) == _cpp_tree(tree)


def test_equal_texts_of_a_log_are_held_once(child_trace_dir, tmp_path):
    """Note [Equal payloads held once] in tracer/trace_log/events.py: the log twice over (frame ids
    shifted, as the bench's synthetic log) loads equal graph texts as one string object, and every
    graph and guard equals the once-over log's."""
    from bench.report_vs_tlparse import synthetic_log

    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    twice = tmp_path / "twice.log"
    synthetic_log(path, str(twice), 2 * os.path.getsize(path) - 1)
    once, both = load_trace(path), load_trace(str(twice))
    n = len(once.frames)
    assert len(both.frames) == 2 * n
    for a, b, c in zip(once.frames, both.frames[:n], both.frames[n:], strict=True):
        assert b.graph.code == c.graph.code == a.graph.code
        assert not a.graph.code or b.graph.code is c.graph.code
        assert b.graph.nodes == c.graph.nodes == a.graph.nodes
        assert b.graph.nodes is not c.graph.nodes
        assert b.guards == c.guards == a.guards
