"""``load_trace(path, read_only=True)`` and ``load_job(dir, read_only=True)``: a write into a read-only
loaded graph raises ``ReadOnlyError`` and changes no other frame; JSON, the explorer widget, the
static report and the job loader and page give exactly what an editable load gives (Note [Read-only
graphs] in tracer/trace_log/deferred.py).

The logs are real: tests/trace_log_child.py's (a wrap body, a graph break, recompiles) repeated three
times with frame ids shifted as the bench's synthetic log does, so equal graphs of distinct frames
share one node list; and the TORCH_TRACE logs of a real 2-rank ``torchrun`` DDP job.
"""

from __future__ import annotations

import copy
import glob
import os

import pytest
from explorer_capture import _state
from test_viz_explorer_real import _walk_everything

import tracer
from bench.report_vs_tlparse import synthetic_log
from tracer import Capture, Node, ReadOnlyError, load_job, load_trace, validate
from tracer.trace_log import deferred, read_only_graphs


@pytest.fixture(scope="module")
def log(child_trace_dir, tmp_path_factory) -> str:
    (child,) = glob.glob(str(child_trace_dir / "*.log"))
    out = str(tmp_path_factory.mktemp("read_only") / "child_x3.log")
    synthetic_log(child, out, 3 * os.path.getsize(child) - 1)
    return out


def _graphs(cap: Capture) -> list[tracer.Graph]:
    out = []
    for f in cap.frames:
        out += f.graphs().values()
        if f.aot is not None:
            out += [g for g in (f.aot.joint, f.aot.forward, f.aot.backward, f.aot.inference) if g is not None]
    return list({id(g): g for g in out}.values())


def _shared_pair(cap: Capture) -> tuple[tracer.Graph, tracer.Graph]:
    """Two graphs of distinct frames sharing one node list (with a node that has a ``shape``)."""
    seen: dict[int, tracer.Graph] = {}
    for g in _graphs(cap):
        if g.nodes and any("shape" in n.meta for n in g.nodes):
            if id(g.nodes) in seen and seen[id(g.nodes)] is not g:
                return seen[id(g.nodes)], g
            seen[id(g.nodes)] = g
    raise AssertionError("no two graphs share their nodes")


def _containers(v):
    """``v`` and every list, dict and tuple in it."""
    yield v
    for x in (v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else ()):
        yield from _containers(x)


def test_the_default_load_stays_editable(log):
    cap = load_trace(log)
    g = next(g for g in _graphs(cap) if g.nodes)
    n = g.nodes[0]
    n.role, n.meta["x"] = "changed", 1
    g.nodes.append(Node("extra", "call_function", "f"))
    assert type(n) is Node and g.nodes[-1].name == "extra" and n.meta["x"] == 1


def _writes(g: tracer.Graph):
    n = next(n for n in g.nodes if "shape" in n.meta)
    return {
        "node field": lambda: setattr(n, "role", "changed"),
        "node field deleted": lambda: delattr(n, "target"),
        "meta key": lambda: n.meta.__setitem__("mine", 1),
        "meta update": lambda: n.meta.update(dtype="float64"),
        "meta list": lambda: n.meta["shape"].append(7),
        "meta list item": lambda: n.meta["shape"].__setitem__(0, 7),
        "args": lambda: n.args.append("x"),
        "kwargs": lambda: n.kwargs.__setitem__("k", "v"),
        "users": lambda: n.users.clear(),
        "node list append": lambda: g.nodes.append(n),
        "node list item": lambda: g.nodes.__setitem__(0, n),
        "node list +=": lambda: g.nodes.__iadd__([n]),
        "node list sort": lambda: g.nodes.sort(key=lambda x: x.name),
    }


@pytest.mark.parametrize("write", sorted(_writes(tracer.Graph(nodes=[Node("x", "placeholder", "x", meta={"shape": [1]})]))))
def test_a_write_to_a_read_only_graph_raises_and_changes_no_other_frame(log, write):
    cap = load_trace(log, read_only=True)
    a, b = _shared_pair(cap)
    before = copy.deepcopy(b.nodes)
    with pytest.raises(ReadOnlyError, match=r"read_only=True.*copy\.deepcopy\(graph\)"):
        _writes(a)[write]()
    assert b.nodes == before and a.nodes == before  # nothing changed, in this frame or the other
    assert load_trace(log).frames[0].graph.nodes == cap.frames[0].graph.nodes


def test_every_graph_of_a_read_only_capture_is_read_only_and_equal_to_the_editable_load(log):
    ro, ed = load_trace(log, read_only=True), load_trace(log)
    graphs, plain = _graphs(ro), _graphs(ed)
    assert len(graphs) == len(plain) and sum(1 for g in graphs if g.nodes) >= 6
    for g, h in zip(graphs, plain, strict=True):
        assert g == h and g.nodes == h.nodes and h.nodes == g.nodes
        assert all(type(n) is tracer.model.read_only.ReadOnlyNode for n in g.nodes)
        assert not [v for n in g.nodes for f in (n.args, n.kwargs, n.inputs, n.users, n.calls, n.meta)
                    for v in _containers(f) if type(v) in (list, dict)]  # every list and dict in a node refuses writes
        with pytest.raises(ReadOnlyError):
            g.nodes.append(None)
    assert len({id(g.nodes) for g in graphs}) < len(graphs)  # equal graphs share their nodes
    assert [f.problems for f in ro.frames] == [f.problems for f in ed.frames]
    validate(ro)


def test_an_editable_copy_of_a_read_only_graph(log):
    cap = load_trace(log, read_only=True)
    a, b = _shared_pair(cap)
    mine = copy.deepcopy(a)
    assert mine == a and type(mine.nodes) is list and all(type(n) is Node for n in mine.nodes)
    n = next(n for n in mine.nodes if "shape" in n.meta)
    n.meta["shape"].append(7)
    n.role = "changed"
    mine.nodes.append(Node("extra", "call_function", "f"))
    assert mine != a and a.nodes is b.nodes and "changed" not in {m.role for m in b.nodes}


def test_json_round_trip_of_a_read_only_capture(log):
    ro, ed = load_trace(log, read_only=True), load_trace(log)
    text = ro.to_json()
    assert text == ed.to_json()
    back = Capture.from_json(text)
    assert back == ro and ro == back
    next(g for g in _graphs(back) if g.nodes).nodes[0].meta["x"] = 1  # read back from JSON: editable


def test_the_mode_is_fixed_at_load(log):
    """``read_only_graphs()`` gives load_trace's default; a capture read later, in or out of it, keeps its mode."""
    with read_only_graphs():
        ro, ed = load_trace(log), load_trace(log, read_only=False)
    with read_only_graphs():
        late = load_trace(log, read_only=False)
    for g in _graphs(late):
        g.nodes  # noqa: B018 (parsed inside no scope, after it)
    early = load_trace(log)
    with read_only_graphs():
        assert all(type(g.nodes) is list for g in _graphs(early))
    assert all(tracer.model.read_only.is_read_only(g.nodes) for g in _graphs(ro))
    assert all(type(g.nodes) is list for g in [*_graphs(ed), *_graphs(late)])
    with pytest.raises(TypeError, match="read_only must be True, False or None"):
        load_trace(log, read_only="yes")


def test_the_report_and_the_explorer_of_a_read_only_capture_are_the_editable_ones(log, tmp_path):
    from viz import Explorer, export_html
    from viz.report_file import write_report

    deferred._shared.clear()
    ro = write_report(tmp_path / "ro.html", [load_trace(log, read_only=True)], title="t", release=True)
    deferred._shared.clear()
    ed = write_report(tmp_path / "ed.html", [load_trace(log)], title="t", release=True)
    assert ro.path.read_bytes() == ed.path.read_bytes() and ro.layouts_reused == ed.layouts_reused > 0
    a, b = export_html(load_trace(log, read_only=True), tmp_path / "a.html"), export_html(load_trace(log), tmp_path / "b.html")
    assert a.read_bytes() == b.read_bytes()
    x, y = Explorer(load_trace(log, read_only=True)), Explorer(load_trace(log))
    _walk_everything(x)
    _walk_everything(y)
    for e in (x, y):
        e.select("", frame=e.capture.frames[-1].compile_id)
    assert _state(x) == _state(y)


@pytest.mark.parametrize("workers", [1, 2])
def test_load_job_read_only_finds_what_the_editable_load_finds(ddp_job_dir, workers, tmp_path):
    from viz import export_job_html

    trace = str(ddp_job_dir / "trace")
    ro, ed = load_job(trace, read_only=True, workers=workers), load_job(trace, workers=workers)
    assert len(ro.ranks) == 2
    assert {s.loader for s in ro.ranks.values()} == {"trace-read-only"}
    assert ro.to_json().replace('"trace-read-only"', '"trace"') == ed.to_json()
    g = next(f.graph for f in ro.rank(1).frames if f.graph.nodes)
    with pytest.raises(ReadOnlyError):
        g.nodes[0].meta["x"] = 1
    next(f.graph for f in ed.rank(1).frames if f.graph.nodes).nodes[0].meta["x"] = 1  # the editable job's ranks stay editable
    a, b = export_job_html(ro, tmp_path / "ro.html"), export_job_html(ed, tmp_path / "ed.html")
    assert a.read_bytes() == b.read_bytes()


def test_equal_guard_trees_share_read_only_guards(log):
    """Frames that logged equal guard trees (the copies of the repeated log, as a job's ranks do): read-only,
    they share the Guards, which raise on a write; the guards equal the editable load's, and
    dataclasses.replace / deepcopy still work."""
    import dataclasses

    a, plain = load_trace(log, read_only=True), load_trace(log)
    assert [f.guards for f in a.frames] == [f.guards for f in plain.frames]
    n = len(a.frames) // 3
    fa, fb = next((f, a.frames[i + n]) for i, f in enumerate(a.frames[:n]) if f.guards)
    assert all(x is y for x, y in zip(fa.guards, fb.guards, strict=True)) and fa.guards is not fb.guards
    g = fa.guards[0]
    for write in (lambda: setattr(g, "source", "x"), lambda: g.code.append("x"), lambda: g.user_stack.clear()):
        with pytest.raises(ReadOnlyError, match="read_only=True"):
            write()
    assert dataclasses.replace(g, source="masked").source == "masked" and g.source != "masked"
    mine = copy.deepcopy(g)
    mine.code.append("x")
    assert type(mine) is tracer.Guard and g.code != mine.code
    fa.guards.append(mine)  # the frame's own list: this frame only
    assert len(fa.guards) == len(fb.guards) + 1


def test_equal_graphs_of_two_read_only_loads_share_one_text_that_is_not_interned(log):
    """Equal read-only graphs share their code text through the kept parse, not through ``sys.intern``,
    whose strings are immortal on Python 3.12 (a graph's text would stay for the life of the process)."""
    import sys

    a, b = load_trace(log, read_only=True), load_trace(log, read_only=True)
    ga, gb = _shared_pair(a)[0], None
    for g in _graphs(b):
        if g.nodes is ga.nodes:
            gb = g
    assert gb is not None and gb.code == ga.code and gb.code is ga.code  # one string, also across loads
    assert sys.intern("".join(ga.code)) is not ga.code  # an equal string is not found in the intern table
