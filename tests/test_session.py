"""tracer.trace / Session / tracer.pause: pausing real Dynamo mid-trace and reading its state (where it
pauses, what a pause shows, stepping; the session's ending is test_session_lifecycle.py)."""

from __future__ import annotations

import os

import pytest
import torch
from session_cases import (
    FILE,
    TinyNet,
    cell_fn,
    finish,
    graph_break_fn,
    line_of,
    mutated_cell_fn,
    nested_cond_fn,
    no_leftovers,  # noqa: F401 (the autouse fixture every session test runs under)
    root_fn,
    unmarked_fn,
    wrap_fn,
)

import tracer

pytestmark = pytest.mark.timeout(600)


def test_pause_is_a_noop_in_eager_and_in_plain_compiles():
    x = torch.randn(3)
    assert tracer.pause("eager") is None
    torch._dynamo.reset()
    out = torch.compile(root_fn, backend="eager", fullgraph=True)(x, x)  # no session: no pause, no break
    torch.testing.assert_close(out, root_fn(x, x))


def test_pause_in_root_frame():
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    s = tracer.trace(root_fn, x, y, dynamic=False)  # static shapes whatever earlier tests compiled
    assert s.status == "new"
    st = s.start().wait(timeout=120)
    assert st is not None and st is s.state
    assert (st.reason, st.label) == ("pause", "after sin")
    assert st.location.function == "root_fn"
    assert st.location.line == line_of(root_fn, 'tracer.pause("after sin")')
    assert st.location.code == 'tracer.pause("after sin")'
    # Locals: x was used, so it is a TensorVariable backed by a graph placeholder with fake meta.
    lx = st.locals["x"]
    assert lx.kind == "TensorVariable"
    assert lx.meta["shape"] == [3, 4] and lx.meta["dtype"] == "float32"
    assert st.graph.node(lx.node).op == "placeholder"
    la = st.locals["a"]
    assert la.kind == "TensorVariable" and la.meta["shape"] == [3, 4]
    # The partial graph has exactly the ops traced so far: the sin, nothing of the later lines.
    ops = [n for n in st.graph.nodes if n.op not in ("placeholder", "output")]
    assert [n.target for n in ops] == ["sin"]
    assert ops[0].name == la.node and ops[0].inputs == [lx.node]
    assert len(st.tracers) == 1 and st.tracers[0].hop == "" and st.tracers[0].depth == 0
    assert any(g.source == "L['x']" and g.kind == "TENSOR_MATCH" for g in st.guards)
    # Guard stacks read like the rest of the model: "file.py:LINE in fn", user frames only, so a
    # notebook's stored output does not depend on where dynascope is checked out.
    stacks = [line for g in st.guards for line in g.user_stack]
    assert stacks and all("/" not in line and os.sep not in line for line in stacks)
    assert any(line.startswith(f"{FILE}:") and line.endswith(" in root_fn") for line in stacks)
    assert not any(" in comptime_pause" in line or line.startswith("session.py:") for line in stacks)
    s.resume()
    assert s.wait(timeout=120) is None
    torch.testing.assert_close(s.capture.result, root_fn(x, y))
    assert s.error is None
    # s.capture is what tracer.capture gives (the pause marker leaves no trace in the graph).
    plain = tracer.capture(root_fn, x, y, dynamic=False)
    graph = s.capture.frames[0].graph
    assert [(n.op, n.target) for n in graph.nodes] == [(n.op, n.target) for n in plain.frames[0].graph.nodes]
    assert [n.target for n in graph.nodes if n.op not in ("placeholder", "output")][:3] == [
        "sin", "operator.add", "cos"]


def test_pause_inside_wrap_body_shows_two_tracers_and_lifted_freevars():
    s = tracer.trace(wrap_fn, torch.randn(3), torch.randn(3)).start()
    st = s.wait(timeout=120)
    assert st.label == "in wrap" and st.location.function == "body"
    assert [t.hop for t in st.tracers] == ["", "wrap"]
    assert [t.depth for t in st.tracers] == [0, 1]
    root, body = st.tracers
    # a (the operand) and y (a closure of body) were lifted into the body, in order.
    assert len(body.lifted) == 2
    assert body.lifted == [n.name for n in body.graph.placeholders]
    root_names = {n.name for n in root.graph.nodes}
    assert set(body.lifted_from) <= root_names
    y_ph = st.locals["y"]
    assert y_ph.is_cell and y_ph.cell_contents.kind == "TensorVariable"
    assert y_ph.cell_contents.node in root_names  # y lives in the root graph; the body reads its lifted copy
    assert st.graph is body.graph
    assert [n.target for n in st.graph.find(op="call_method")] == ["cos"]
    finish(s)
    assert s.capture is not None


def test_pause_inside_nested_cond_branch_shows_three_tracers():
    s = tracer.trace(nested_cond_fn, torch.randn(3), torch.randn(3)).start()
    st = s.wait(timeout=120)
    assert st.label == "in inner cond" and st.location.function == "inner_true"
    assert [t.hop for t in st.tracers] == ["", "cond", "cond"]
    assert [t.depth for t in st.tracers] == [0, 1, 2]
    for parent, child in zip(st.tracers, st.tracers[1:], strict=False):
        # Lifted recursively: every freevar of the inner body was lifted from its direct parent's graph.
        assert child.lifted, child
        assert set(child.lifted_from) <= {n.name for n in parent.graph.nodes}
        assert child.lifted == [n.name for n in child.graph.placeholders]  # branches take no operands
    assert [n.target for n in st.graph.find(op="call_function")] == ["operator.add"]
    # The inlining stack, root first: torch.cond's own Python wrapper sits between the bodies.
    assert [f.function for f in st.frames] == ["nested_cond_fn", "cond", "outer_true", "cond", "inner_true"]
    finish(s)


def test_step_shows_the_graph_growing_by_the_next_lines_ops():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3), dynamic=False).start()
    st1 = s.wait(timeout=120)
    s.step()
    st2 = s.wait(timeout=120)
    assert st2.reason == "step" and st2.index == st1.index + 1
    assert st2.location.line == line_of(root_fn, "LINE-ADD")
    assert st2.graph.nodes == st1.graph.nodes  # the pause line itself adds no op
    s.step()
    st3 = s.wait(timeout=120)
    assert st3.location.line == line_of(root_fn, "LINE-COS")
    before = {n.name for n in st2.graph.nodes}
    new = [n for n in st3.graph.nodes if n.name not in before]
    assert [n.target for n in new if n.op != "placeholder"] == ["operator.add"]
    # y was first used on that line: Dynamo realized it then, adding its graph input.
    assert st2.locals["y"].kind == "LazyVariableTracker"
    assert [n.name for n in new if n.op == "placeholder"] == [st3.locals["y"].node]
    assert st3.locals["b"].node == new[-1].name
    assert "b" not in st2.locals
    s.step()
    st4 = s.wait(timeout=120)
    new = [n for n in st4.graph.nodes if n.name not in {m.name for m in st3.graph.nodes}]
    assert [n.target for n in new] == ["cos"]
    finish(s)


def test_break_at_without_any_marker_in_user_code():
    line = line_of(unmarked_fn, "LINE-NEG")
    s = tracer.trace(unmarked_fn, torch.randn(5)).break_at(f"{FILE}:{line}").start()
    st = s.wait(timeout=120)
    assert (st.reason, st.label) == ("break_at", f"{FILE}:{line}")
    assert (st.location.line, st.location.function) == (line, "unmarked_fn")
    assert st.location.code.startswith("b = a.neg()")
    assert [n.target for n in st.graph.nodes if n.op == "call_method"] == ["exp"]
    assert "b" not in st.locals and st.locals["a"].kind == "TensorVariable"
    assert st.location.instruction and st.location.offset >= 0
    assert s.wait(timeout=5) is st  # waiting again while paused returns the same pause
    finish(s)


def test_break_on_hop_pauses_when_the_body_speculation_starts():
    s = tracer.trace(wrap_fn, torch.randn(3), torch.randn(3)).break_on_hop("wrap").start()
    st = s.wait(timeout=120)
    assert (st.reason, st.label) == ("break_on_hop", "wrap")
    assert [t.hop for t in st.tracers] == ["", "wrap"]
    assert st.location.function == "body"
    assert [n for n in st.graph.nodes if n.op != "placeholder"] == []  # nothing traced in the body yet
    finish(s)


def test_cell_variable():
    x = torch.randn(3)
    s = tracer.trace(cell_fn, x).start()
    st = s.wait(timeout=120)
    assert st.location.function == "inner"
    scale = st.locals["scale"]
    assert scale.is_cell and scale.kind == "CellVariable"
    assert scale.cell_contents is not None and scale.cell_contents.value == "3"
    assert st.locals["t"].kind == "TensorVariable" and not st.locals["t"].is_cell
    finish(s)
    torch.testing.assert_close(s.capture.result, cell_fn(x))


def test_cell_written_through_nonlocal_shows_the_pending_value():
    s = tracer.trace(mutated_cell_fn, torch.randn(3)).start()
    st = s.wait(timeout=120)
    count = st.locals["count"]
    # The write is buffered in Dynamo's SideEffects, not applied yet; the pause shows the new value.
    assert count.is_cell and count.cell_contents.value == "1"
    assert st.locals["bump"].kind == "NestedUserFunctionVariable"
    assert "0x" not in str(st)  # no memory addresses: the text is deterministic
    finish(s)


def test_pauses_around_a_graph_break():
    s = tracer.trace(graph_break_fn, torch.randn(3)).start()
    seen = []
    while (st := s.wait(timeout=120)) is not None:
        seen.append(st)
        s.resume()
    # Dynamo traces up to the break, restarts analysis to compile the prefix (attempt 1), then
    # traces the resume function as a new frame whose graph starts from its own inputs.
    assert [(p.label, p.attempt) for p in seen] == [("before break", 0), ("before break", 1), ("after break", 0)]
    assert seen[0].compile_id == seen[1].compile_id != seen[2].compile_id
    assert seen[2].location.function.startswith("torch_dynamo_resume_in_graph_break_fn")
    frames = {f.dynamo_id: f for f in s.capture.frames}
    assert set(frames) == {seen[0].compile_id, f"{seen[0].compile_id}_1", seen[2].compile_id}
    assert frames[seen[0].compile_id].status == "restarted"
    # The pause inside the resume frame saw the start of that frame's graph.
    final = frames[seen[2].compile_id].graph
    assert [n.name for n in seen[2].graph.nodes] == [n.name for n in final.nodes][: len(seen[2].graph.nodes)]
    assert len(s.capture.graph_breaks) == 1


def test_break_at_in_a_module_forward_and_in_a_hop_body():
    line = line_of(TinyNet.forward, "LINE-RELU")
    s = tracer.trace(TinyNet(), torch.randn(2, 4)).break_at(f"{FILE}:{line}").start()
    st = s.wait(timeout=120)
    assert (st.location.function, st.location.line) == ("forward", line)
    assert st.locals["h"].kind == "TensorVariable" and st.locals["h"].meta["shape"][-1] == 4
    assert st.locals["self"].kind.endswith("NNModuleVariable") and st.locals["self"].value == "TinyNet"
    ops = [n for n in st.graph.nodes if n.op not in ("placeholder", "output")]
    assert [n.target.rsplit(".", 1)[-1] for n in ops] == ["linear"]  # relu is not traced yet
    assert ops[0].name == st.locals["h"].node
    finish(s)

    body_line = line_of(wrap_fn, "b = z.cos() + y")
    s = tracer.trace(wrap_fn, torch.randn(3), torch.randn(3)).break_at(f"{FILE}:{body_line}").start()
    st = s.wait(timeout=120)
    assert (st.reason, st.location.function) == ("break_at", "body")
    assert [t.hop for t in st.tracers] == ["", "wrap"]
    assert [n for n in st.graph.nodes if n.op != "placeholder"] == []  # before the line's ops
    finish(s)


def test_lifted_symbols_show_at_a_pause():
    # pytorch/pytorch#138363: lifting a tensor with a symbolic size also binds and lifts its symbol.
    s = tracer.trace(nested_cond_fn, torch.randn(3), torch.randn(3), dynamic=True).start()
    st = s.wait(timeout=120)
    for t in st.tracers[1:]:
        metas = {n.name: n.meta for n in t.graph.placeholders}
        symbols = [n for n in t.lifted if metas[n].get("kind") == "symint"]
        tensors = [n for n in t.lifted if metas[n].get("kind") == "tensor"]
        assert len(symbols) == 1 and len(tensors) == 2, t
        assert all(metas[n]["shape"] == [metas[symbols[0]]["value"]] for n in tensors)
        assert f"{symbols[0]} (symbol)" in str(t)
    finish(s)


def _plain(obj, path="state"):
    """Assert ``obj`` holds only JSON-friendly values and our dataclasses (no torch object)."""
    import dataclasses

    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            _plain(getattr(obj, f.name), f"{path}.{f.name}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _plain(v, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            assert isinstance(k, str), path
            _plain(v, f"{path}[{k!r}]")
    else:
        assert obj is None or type(obj) in (str, int, float, bool), (path, type(obj))


def test_paused_state_is_plain_data():
    s = tracer.trace(nested_cond_fn, torch.randn(3), torch.randn(3), dynamic=True).start()
    st = s.wait(timeout=120)
    _plain(st)
    assert st.problems == []  # everything was read
    again = tracer.PausedState.from_json(st.to_json())
    assert again == st and again.graph == st.graph and tracer.Session.of(again) is s
    s.abort()
    s = tracer.trace(TinyNet(), torch.randn(2, 4)).break_on_hop("*").break_at(f"{FILE}:{line_of(TinyNet.forward, 'LINE-RELU')}")
    _plain(s.start().wait(timeout=120))
    s.abort()


def test_break_at_a_function_and_its_source_text():
    s = tracer.trace(unmarked_fn, torch.randn(5)).break_at(unmarked_fn, "a.neg()").start()
    st = s.wait(timeout=120)
    assert (st.reason, st.location.line) == ("break_at", line_of(unmarked_fn, "LINE-NEG"))
    finish(s)
    net = TinyNet()
    s = tracer.trace(net, torch.randn(2, 4)).break_at(net, "torch.relu").start()
    assert s.wait(timeout=120).location.line == line_of(TinyNet.forward, "LINE-RELU")
    finish(s)
    s = tracer.trace(unmarked_fn, torch.randn(5))
    with pytest.raises(ValueError, match="exactly one"):
        s.break_at(unmarked_fn, "x")  # on several lines: the error lists them
    with pytest.raises(ValueError, match="exactly one"):
        s.break_at(unmarked_fn, "not in the source")
    with pytest.raises(TypeError, match="function, line"):
        s.break_at(42, 3)
