"""A logged graph finished once per distinct (text, context) equals each graph finished on its own, and
no hand-out shares a mutable object with another (Note [One finish per distinct graph and context] in
tracer/trace_log/deferred.py).

The logs are real: tests/trace_log_child.py's and tests/log_modules_child.py's (module groups: roles,
``log_module`` with its lists, a tied weight), each repeated three times with frame ids shifted as the
bench's synthetic log does (every copy a distinct compile of equal texts). The reference for every
graph is the parser run on its text (``parse_readable``) and the loader's finish run on that, with the
Sources and tied Sources read again from the log's records.
"""

from __future__ import annotations

import gc
import glob
import os
import sys
import types

import pytest
from test_trace_log_modules import LOGS, run

from bench.report_vs_tlparse import synthetic_log
from tracer.model.graph import Graph
from tracer.trace_log import deferred, load_trace, reader
from tracer.trace_log.assemble import _aot_modules, _graph_input_sources, _root_roles, _split, _tied
from tracer.trace_log.events import LogState, apply
from tracer.trace_log.graph_text import parse_readable
from tracer.trace_log.source import LogText


@pytest.fixture(scope="module")
def logs(child_trace_dir, tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("finish_once")
    (child,) = glob.glob(str(child_trace_dir / "*.log"))
    found = {"child": child}
    for name in ("transformer12", "tied_reused"):
        run(name, out)  # once per session: the log may be in another module's directory
        found[name] = LOGS[name]
    thrice = {}
    for name, path in found.items():
        thrice[name] = str(out / f"{name}_x3.log")
        synthetic_log(path, thrice[name], 3 * os.path.getsize(path) - 1)
    return thrice


def _aot(f) -> list[Graph]:
    """The frame's AOT graphs, each once (an inference graph is also the ``forward``)."""
    gs = [g for g in (f.aot.joint, f.aot.forward, f.aot.backward, f.aot.inference) if g is not None] if f.aot else []
    return list({id(g): g for g in gs}.values())


def _fields(g: Graph) -> list[tuple]:
    return [(n.name, n.op, n.target, n.args, n.kwargs, n.inputs, n.users, n.role, n.calls, n.meta) for n in g.nodes]


def _references(path: str, cap) -> dict[int, list[tuple]]:
    """id(graph) -> the fields of its nodes parsed and finished on their own, for every graph that waited."""
    state = LogState({})
    with LogText(path) as src:
        rd = reader.Reader(src.text)
        state.strings = rd.strings
        for rec in rd:
            apply(rec, state)
    out: dict[int, list[tuple]] = {}
    for f, k in zip(cap.frames, state.order, strict=True):
        a = state.attempts[k]
        tied = _tied(a.guards_json, a.cpp_guards)
        if f.graph is not None and f.graph.code and not f.graph.parsed:
            want = parse_readable(f.graph.code, "").graph
            _root_roles(want, _graph_input_sources(a, state), tied)
            out[id(f.graph)] = _fields(want)
        for g in _aot(f):
            if not g.parsed:
                want = parse_readable(g.code, g.name).graph
                want.code = g.code
                _aot_modules(f, want, tied, _split(a, g.name))  # reads the frame's Dynamo graph first, as loaded
                out[id(g)] = _fields(want)
    return out


def _containers(v, out: set[int]) -> None:
    if isinstance(v, (list, dict, tuple)):
        if not isinstance(v, tuple):  # a tuple is immutable: shared is fine, what it holds is not
            out.add(id(v))
        for x in (v.values() if isinstance(v, dict) else v):
            _containers(x, out)


def _ids(g: Graph) -> set[int]:
    out = {id(g.nodes)}
    for n in g.nodes:
        out.add(id(n))
        for v in (n.args, n.kwargs, n.inputs, n.users, n.calls, n.meta):
            _containers(v, out)
    return out


@pytest.mark.parametrize("name", ["child", "transformer12", "tied_reused"])
def test_every_graph_of_a_repeated_log_equals_its_own_finish(logs, name):
    deferred._shared.clear()
    cap = load_trace(logs[name])
    graphs = [g for f in cap.frames for g in [f.graph, *_aot(f)] if g is not None and g.code and not g.parsed]
    ref = load_trace(logs[name])
    ref_graphs = [g for f in ref.frames for g in [f.graph, *_aot(f)] if g is not None and g.code and not g.parsed]
    want = _references(logs[name], ref)
    assert len(graphs) == len(ref_graphs) >= 3
    for g, r in zip(graphs, ref_graphs, strict=True):
        assert _fields(g) == want[id(r)]
    if name != "child":  # module groups were set, with their lists, on some node of every copy
        assert any(isinstance(n.meta.get("log_module"), dict) for n in graphs[-1].nodes + graphs[-2].nodes)
    seen: set[int] = set()
    for g in graphs:  # no two hand-outs share a list, dict or node at any depth
        ids = _ids(g)
        assert not ids & seen
        seen |= ids
    assert not cap.all_problems()[len(cap.problems):]


def test_an_edit_to_one_frame_changes_no_other_graph(logs):
    """A caller edits a frame's Dynamo graph (roles, modules, sources, arguments) before any other graph is
    read: the same frame's AOT graphs and the other copies' graphs are as loaded."""
    deferred._shared.clear()
    cap = load_trace(logs["transformer12"])
    clean = load_trace(logs["transformer12"])
    n = len(cap.frames) // 3
    first = next(i for i, f in enumerate(cap.frames[:n]) if f.graph is not None and f.aot is not None)
    for node in cap.frames[first].graph.nodes:
        node.role = "changed"
        node.args.append("x")
        lm = node.meta.get("log_module")
        if isinstance(lm, dict):
            lm["path"] = "changed"
            for v in lm.values():
                if isinstance(v, list):
                    v.append("changed")
        if isinstance(node.meta.get("source"), dict):
            node.meta["source"]["line"] = -1
        node.meta["graph_arg_source"] = "changed"
    edited = any(isinstance(nd.meta.get("log_module"), dict) for nd in cap.frames[first].graph.nodes)
    assert edited
    for i in range(first, len(cap.frames), n):
        f, c = cap.frames[i], clean.frames[i]
        for g, h in zip(_aot(f), _aot(c), strict=True):
            assert _fields(g) == _fields(h)
        if i != first:
            assert _fields(f.graph) == _fields(c.graph)


@pytest.mark.parametrize("name", ["child", "transformer12", "tied_reused"])
def test_read_only_graphs_share_equal_nodes_and_read_as_copies_do(logs, name):
    """Note [Read-only graphs]: in a capture loaded read-only every waiting graph reads node for node as
    its own finish, equal graphs (the copies of the repeated log) share one node list, and the frames'
    problems are the same; a capture loaded editable gets fresh copies again."""
    deferred._shared.clear()
    cap = load_trace(logs[name], read_only=True)
    graphs = [g for f in cap.frames for g in [f.graph, *_aot(f)] if g is not None and g.code and not g.parsed]
    for g in graphs:
        g.nodes  # noqa: B018 (the first read parses)
    ref = load_trace(logs[name])
    ref_graphs = [g for f in ref.frames for g in [f.graph, *_aot(f)] if g is not None and g.code and not g.parsed]
    want = _references(logs[name], ref)
    assert len(graphs) == len(ref_graphs) >= 3
    for g, r in zip(graphs, ref_graphs, strict=True):
        assert _fields(g) == want[id(r)]
    n = len(graphs) // 3
    shared = [graphs[i].nodes is graphs[i + n].nodes is graphs[i + 2 * n].nodes for i in range(n)]
    # shared: every graph whose finished parse is kept; a frame's AOT graphs whose Dynamo graph has
    # HOP bodies (parsed at load) are finished on each hand-out, so each is its own copy
    assert all(shared) if name != "child" else any(shared)
    assert [f.problems for f in cap.frames] == [f.problems for f in ref.frames]
    after = load_trace(logs[name])
    fresh = [g for f in after.frames for g in [f.graph, *_aot(f)] if g is not None and g.code and not g.parsed]
    assert not {id(g.nodes) for g in fresh} & {id(g.nodes) for g in graphs}


@pytest.mark.parametrize("name", ["child", "transformer12"])
def test_a_report_of_read_only_graphs_is_the_page_of_copies(logs, name, tmp_path):
    """The CLI's way (read-only graphs, frames let go: viz/cli.py) writes byte for byte the page a report
    of a capture read outside the scope writes (Note [One digest per node list] in viz/report_graphs.py);
    the child's log has a wrap body, a graph break and recompiles (their diffs read both frames' graphs)."""
    from viz.report_file import write_report

    deferred._shared.clear()
    with deferred.read_only_graphs():
        shared = write_report(tmp_path / "shared.html", [load_trace(logs[name])], title="t", release=True)
    deferred._shared.clear()
    copies = write_report(tmp_path / "copies.html", [load_trace(logs[name])], title="t")
    assert shared.path.read_text() == copies.path.read_text()
    assert shared.layouts_reused == copies.layouts_reused > 0


def test_each_distinct_graph_text_is_parsed_once(logs, monkeypatch):
    """A joint's finish reads the forward and backward texts plain and a forward's finish reads its joint
    finished: their own finishes start from those parses (and the other way round), so reading every
    graph of the training log parses each distinct (text, name) once, not the three AOT texts twice."""
    calls = []

    def counted(text, name=""):
        calls.append((text, name))
        return parse_readable(text, name)

    monkeypatch.setattr(deferred, "parse_readable", counted)
    deferred._shared.clear()
    cap = load_trace(logs["transformer12"])
    for f in cap.frames:
        for g in [f.graph, *_aot(f)]:
            g.nodes  # noqa: B018 (the first read parses)
    assert {name for _, name in calls} >= {"", "joint", "forward", "backward"}
    assert len(calls) == len(set(calls))


@pytest.mark.parametrize("read_only", [False, True])
def test_a_joint_is_finished_once_also_when_its_forward_is_read_first(logs, monkeypatch, read_only):
    """A forward's finish reads its joint as the joint's own finish left it (kept by the joint's key, Note [One
    finish per distinct graph and context]), not finished a second time: read backward, forward, then joint,
    each distinct joint is tagged with its partition once, and every graph equals its own finish."""
    assemble = sys.modules["tracer.trace_log.assemble"]  # the package's ``assemble`` is the function
    tagged: list[str] = []
    tag = assemble.tag_logged_partition
    deferred._shared.clear()
    cap = load_trace(logs["transformer12"], read_only=read_only)
    monkeypatch.setattr(assemble, "tag_logged_partition", lambda j, *a: tagged.append(j.code) or tag(j, *a))
    graphs = [g for f in cap.frames for g in [*reversed(_aot(f)), f.graph] if g is not None and not g.parsed]
    for g in graphs:
        g.nodes  # noqa: B018 (the first read parses: a forward before its joint)
    monkeypatch.undo()
    assert tagged and len(tagged) == len(set(tagged))
    ref = load_trace(logs["transformer12"])
    ref_graphs = [g for f in ref.frames for g in [*reversed(_aot(f)), f.graph] if g is not None and not g.parsed]
    want = _references(logs["transformer12"], ref)
    assert len(graphs) == len(ref_graphs)
    for g, r in zip(graphs, ref_graphs, strict=True):
        assert _fields(g) == want[id(r)]
    assert [f.problems for f in cap.frames] == [f.problems for f in ref.frames]


def test_kept_parses_stay_bounded():
    """A finished parse keeps its plain parse too: two entries per new text, still at most ``_SHARED_MAX``."""
    deferred._shared.clear()
    for i in range(deferred._SHARED_MAX + 5):
        text = (f'class GraphModule(torch.nn.Module):\n    def forward(self, x: "f32[3]"):\n'
                f"        sin_{i} = torch.ops.aten.sin.default(x);  x = None\n        return (sin_{i},)\n")
        parsed = deferred.parse_finished([], text, 1, "", lambda g: None, "key")
        assert [n.name for n in parsed.graph.nodes] == ["x", f"sin_{i}", "output"]
        assert len(deferred._shared) <= deferred._SHARED_MAX
    deferred._shared.clear()


def test_equal_aot_texts_of_unequal_dynamo_graphs_are_finished_apart(logs, tmp_path):
    """An AOT graph's finish reads its frame's Dynamo graph as loaded, so the Dynamo text is part of its
    key: the repeated log's middle copy has a Dynamo graph of its own (its two layer norms' weights
    swapped in the text; the same Sources, the same AOT texts), and its AOT graphs share no finished
    parse with the other copies, whose Dynamo texts are equal and whose AOT graphs share one."""
    lines, out, seen, inside = open(logs["transformer12"], encoding="utf-8").read().splitlines(True), [], 0, False
    for line in lines:
        if not line.startswith("\t"):
            seen += '"dynamo_output_graph"' in line
            inside = seen == 2 and '"dynamo_output_graph"' in line
        elif inside and "layer_norm(" in line:
            line = line.replace("norm1", "\0").replace("norm2", "norm1").replace("\0", "norm2")
        out.append(line)
    edited = tmp_path / "edited.log"
    edited.write_text("".join(out), encoding="utf-8")
    deferred._shared.clear()
    cap = load_trace(str(edited), read_only=True)
    n = len(cap.frames) // 3
    first = next(i for i, f in enumerate(cap.frames[:n]) if f.aot is not None and f.aot.forward is not None)
    a, b, c = (cap.frames[first + k * n] for k in range(3))
    assert a.graph.code != b.graph.code and a.graph.code == c.graph.code
    assert a.aot.forward.code == b.aot.forward.code == c.aot.forward.code
    assert a.aot.forward.nodes is c.aot.forward.nodes
    assert b.aot.forward.nodes is not a.aot.forward.nodes
    assert a.aot.backward.nodes is c.aot.backward.nodes and b.aot.backward.nodes is not a.aot.backward.nodes


@pytest.mark.parametrize("read_only", [False, True])
def test_graphs_read_and_let_go_leave_no_cycle(logs, read_only):
    """Each waiting graph read (its finish run), then every frame let go, leaves no reference cycle. The
    loaded log sits in the oldest generation (Note [No cyclic GC while a log is read]), so a cycle through a
    finish held the frame's guard and graph texts until a full collection (``_AotFinish`` in assemble.py)."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds stays in gc.garbage, to be looked at
    try:
        cap = load_trace(logs["transformer12"], read_only=read_only)
        assert sum(f.aot is not None and f.aot.forward is not None and f.aot.joint is not None for f in cap.frames) >= 3
        for f in cap.frames:
            for g in [f.graph, *_aot(f)]:
                assert g.nodes  # the read runs the parse and its finish
            f.let_go()
        del cap, f, g
        gc.collect()  # an earlier test's torch objects a cache let go meanwhile may be found too: only ours count
        ours = [o for o in gc.garbage if str((o if isinstance(o, types.FunctionType) else type(o)).__module__).startswith("tracer")]
        assert ours == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
