"""tracer/model/lazy.py: a lazy dataclass field reads, writes, compares, copies and serializes like a
plain one, runs its registered work once before the first read returns, and never shows another
thread the empty value it starts with (Note [Fields filled on first read])."""

from __future__ import annotations

import copy
import dataclasses
import threading
import time

import msgspec

from tracer.model import Capture, Frame, Graph, Node
from tracer.model.lazy import on_first_read, pending
from tracer.model.serialize import to_plain


def _node(name: str) -> Node:
    return Node(name, "placeholder", name)


def test_a_lazy_field_is_still_a_dataclass_field():
    assert [f.name for f in dataclasses.fields(Graph)][:2] == ["nodes", "code"]
    g = msgspec.convert({"nodes": [{"name": "x", "op": "placeholder", "target": "x"}], "code": "c"}, type=Graph,
                        strict=True)
    assert g.nodes == [_node("x")] and g.parsed
    assert msgspec.convert({}, type=Graph, strict=True).nodes == []
    assert Graph(nodes=[_node("a")]) == Graph(nodes=[_node("a")]) != Graph()


def test_work_runs_once_before_the_first_read_and_may_read_its_own_field():
    g = Graph(code="text")
    runs = []

    def work():
        runs.append(list(g.nodes))  # a read from within the work sees the value as it is
        g.nodes = [_node("a"), _node("b")]

    on_first_read(g, "nodes", work)
    assert not g.parsed and g.code == "text" and runs == []
    assert [n.name for n in g.nodes] == ["a", "b"]
    assert g.nodes is g.nodes and runs == [[]] and g.parsed
    assert to_plain(g)["nodes"][1]["name"] == "b"


def test_an_assignment_drops_pending_work():
    g = Graph()
    on_first_read(g, "nodes", lambda: setattr(g, "nodes", [_node("late")]))
    g.nodes = [_node("mine")]
    assert [n.name for n in g.nodes] == ["mine"] and not pending(g, "nodes")


def test_frame_problems_run_registered_parses_first():
    f, g = Frame("0/0", "f.py:1 in f"), Graph(code="class X: ...")

    def parse():
        f.problems.append("line 3: output graph text not parsed")
        g.nodes = []

    on_first_read(g, "nodes", parse)
    on_first_read(f, "problems", lambda: g.nodes)
    f.graph = g
    cap = Capture(frames=[f])
    assert cap.all_problems() == ["frame 0/0: line 3: output graph text not parsed"]
    assert g.parsed


def test_a_copy_does_the_work_first_and_shares_nothing_pending():
    g = Graph()
    on_first_read(g, "nodes", lambda: setattr(g, "nodes", [_node("a")]))
    c = copy.deepcopy(g)
    assert "_pending" not in c.__dict__ and [n.name for n in c.nodes] == ["a"]
    c.nodes[0].name = "changed"
    assert g.nodes[0].name == "a"


def test_another_thread_waits_for_running_work():
    g = Graph()
    started = threading.Event()

    def work():
        started.set()
        time.sleep(0.3)
        g.nodes = [_node("a")]

    on_first_read(g, "nodes", work)
    seen = []
    t = threading.Thread(target=lambda: seen.append([n.name for n in g.nodes]))
    t.start()
    assert started.wait(10)
    assert [n.name for n in g.nodes] == ["a"]  # read while the other thread's work sleeps
    t.join(10)
    assert seen == [["a"]]
