"""tracer.diff and Recompile.diff on real recompiles: each test asserts the facts of one diff
(which guard, which input, which node), the node facts checked against the GraphModules torch
hands a backend; plus the empty self-diff, JSON round trip and validate() of recompile diffs."""

from __future__ import annotations

import pytest
import torch
from torch._higher_order_ops.wrap import wrap

import tracer
from tracer.diffing import align
from tracer.model import Capture, Graph, Node, ValidationError, validate


def shape_fn(x):
    return x.sin() * 2


def branch_fn(x, flag):
    return x.sin() if flag else x.cos()


FLAG = True


@torch._dynamo.disable
def _flip():
    global FLAG
    FLAG = not FLAG


def global_fn(x):
    y = x.sin() if FLAG else x.cos()
    _flip()  # runs eagerly between the calls: the next call sees the other value
    return y


def hop_fn(x, flag):
    def body(t):
        return t.sin() if flag else t.cos()

    return wrap(body, x) + 1


X = torch.randn(3)
CASES = {
    "shape": (shape_fn, (torch.randn(3),), [(torch.randn(5),)]),
    "dtype": (shape_fn, (torch.randn(3),), [(torch.randn(3, dtype=torch.float64),)]),
    "requires_grad": (shape_fn, (torch.randn(3),), [(torch.randn(3, requires_grad=True),)]),
    "branch": (branch_fn, (X, True), [(X, False)]),
    "global": (global_fn, (X,), [(X,)]),
    "hop": (hop_fn, (X, True), [(X, False)]),
}


@pytest.fixture(scope="module")
def caps():
    global FLAG
    done: dict[str, Capture] = {}

    def get(name: str) -> Capture:
        global FLAG
        if name not in done:
            FLAG = True
            fn, args, more = CASES[name]
            done[name] = tracer.capture(fn, *args, more_calls=more)
        return done[name]

    return get


def torch_graphs(fn, calls) -> list[torch.fx.GraphModule]:
    """The GraphModules Dynamo hands a backend, one per compile (torch's own record of the graphs)."""
    got: list[torch.fx.GraphModule] = []

    def backend(gm, example_inputs):
        got.append(gm)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend)
    for args in calls:
        compiled(*args)
    torch._dynamo.reset()
    return got


def _shape(n: torch.fx.Node):
    v = n.meta.get("example_value")
    return tuple(str(s) for s in v.shape) if isinstance(v, torch.Tensor) else None


def only_recompile(cap: Capture):
    assert len(cap.recompiles) == 1, cap.recompiles
    r = cap.recompiles[0]
    assert r.diff is not None and r.diff, r
    return r, r.diff


def test_shape_change_goes_dynamic(caps):
    cap = caps("shape")
    r, d = only_recompile(cap)
    assert (r.replaced, r.compile_id, d.a, d.b) == ("0/0", "0/1", "0/0", "0/1")
    assert [(i.source, i.what, i.dim, i.before) for i in d.inputs] == [("L['x']", "dynamic", 0, "3")]
    sym = d.inputs[0].after
    assert d.symbols_added == [sym] and not d.symbols_removed
    [g] = d.guards
    assert (g.kind, g.change) == ("SHAPE_ENV", "changed") and "2 <= L['x'].size()[0]" in g.after
    # the nodes: against the GraphModules torch hands a backend for the same two calls
    gm0, gm1 = torch_graphs(shape_fn, [(torch.randn(3),), (torch.randn(5),)])
    shapes0 = {n.name: _shape(n) for n in gm0.graph.nodes}
    shapes1 = {n.name: _shape(n) for n in gm1.graph.nodes}
    root = d.graph("")
    assert set(root.added) == set(shapes1) - set(shapes0) and sym in root.added
    assert not root.removed
    changed = {n for n in shapes0 if n in shapes1 and shapes0[n] != shapes1[n]}
    assert {p.a for p in root.changed} == changed and len(changed) == 3
    assert "went dynamic in dim 0" in d.summary and "size mismatch" in d.summary


def test_dtype_change(caps):
    r, d = only_recompile(caps("dtype"))
    assert "dtype mismatch" in r.reason
    assert [(i.source, i.what, i.before, i.after) for i in d.inputs] == [("L['x']", "dtype", "float32", "float64")]
    assert not d.guards  # TENSOR_MATCH checks dtype in C++: its recorded code does not change
    root = d.graph("")
    assert not root.added and not root.removed
    assert all(c.startswith("type f32[3] → f64[3]") for p in root.changed for c in p.changes)
    aot = d.graph("aot.inference")  # AOT placeholders are positional (arg0_1): matched by kind, not name
    assert not aot.added and not aot.removed


def test_requires_grad_change_trains(caps):
    r, d = only_recompile(caps("requires_grad"))
    assert "requires_grad mismatch" in r.reason
    assert [(i.what, i.before, i.after) for i in d.inputs] == [("requires_grad", "False", "True")]
    assert (d.aot.mode_a, d.aot.mode_b) == ("inference", "training")
    cap = caps("requires_grad")
    saved_b = {s.name: s.nbytes for s in cap.frames[1].aot.saved}
    assert [(s.change, s.b, s.nbytes_b) for s in d.aot.saved] == [("added", n, b) for n, b in saved_b.items()]
    assert d.aot.saved_bytes_b == cap.frames[1].aot.saved_bytes > 0 == d.aot.saved_bytes_a


def test_branch_taken_differently(caps):
    r, d = only_recompile(caps("branch"))
    [g] = d.guards
    assert (g.change, g.kind, g.source, g.before, g.after) == (
        "changed", "CONSTANT_MATCH", "L['flag']", ["L['flag'] == True"], ["L['flag'] == False"])
    gm0, gm1 = torch_graphs(branch_fn, [(X, True), (X, False)])
    targets0 = {n.name: n.target for n in gm0.graph.nodes if n.op == "call_method"}
    targets1 = {n.name: n.target for n in gm1.graph.nodes if n.op == "call_method"}
    root = d.graph("")
    assert root.removed == list(targets0) and targets0 == {"sin": "sin"}
    assert root.added == list(targets1) and targets1 == {"cos": "cos"}
    assert [p.a for p in root.changed] == ["output"]  # it now returns cos


def test_global_value_change(caps):
    cap = caps("global")
    r, d = only_recompile(cap)
    # the frame restarted at the graph break: the diff is of the attempts whose guards were installed
    assert (r.replaced, d.a, d.b) == ("0/0", "0/0_1", "0/1_1")
    [g] = d.guards
    assert (g.kind, g.source, g.before, g.after) == ("CONSTANT_MATCH", "G['FLAG']", ["G['FLAG'] == True"],
                                                     ["G['FLAG'] == False"])
    root = d.graph("")
    a, b = cap.frame(d.a).graph, cap.frame(d.b).graph
    assert [a.node(n).target for n in root.removed] == ["sin"] and [b.node(n).target for n in root.added] == ["cos"]


def test_hop_body_changes(caps):
    cap = caps("hop")
    r, d = only_recompile(cap)
    assert not d.graph("")  # the root graph calls the body the same way
    [body] = d.bodies
    assert (body.change, body.a, body.b, body.hop) == ("changed", "wrap_body_0", "wrap_body_0", "wrap")
    gd = d.graph("wrap_body_0")
    a, b = cap.frame("0/0").subgraphs["wrap_body_0"].graph, cap.frame("0/1").subgraphs["wrap_body_0"].graph
    assert [a.node(n).target for n in gd.removed] == ["sin"] and [b.node(n).target for n in gd.added] == ["cos"]
    assert "1 HOP body differs" in d.summary


@pytest.mark.parametrize("name", sorted(CASES))
def test_self_diff_is_empty_and_capture_round_trips(caps, name):
    cap = caps(name)
    for f in cap.frames:
        d = tracer.diff(f, f)
        assert not d and d.summary == "no difference" and all(not p.changes for g in d.graphs for p in g.pairs)
    validate(cap)
    again = Capture.from_json(cap.to_json())
    assert again == cap and again.recompiles[0].diff == cap.recompiles[0].diff
    assert str(again.recompiles[0].diff) == str(cap.recompiles[0].diff)


def test_validate_rejects_a_diff_naming_unknown_nodes(caps):
    cap = Capture.from_json(caps("shape").to_json())
    cap.recompiles[0].diff.graph("").added.append("no_such_node")
    with pytest.raises(ValidationError, match="no_such_node"):
        validate(cap)


def test_guard_value_change_is_changed_not_removed_and_added():
    from tracer.model import Frame, Guard

    a = Frame("0/0", "f", guards=[Guard("TENSOR_MATCH", "L['x']", ["L['x'].size()[0] == 4"]), Guard("GRAD_MODE", "")])
    b = Frame("0/1", "f", guards=[Guard("TENSOR_MATCH", "L['x']", ["L['x'].size()[0] == 8"]), Guard("SHAPE_ENV", "")])
    d = tracer.diff(a, b)
    assert [(g.change, g.kind) for g in d.guards] == [("changed", "TENSOR_MATCH"), ("added", "SHAPE_ENV"),
                                                       ("removed", "GRAD_MODE")]


def _chain(names_targets: list[tuple[str, str]]) -> Graph:
    nodes, prev = [Node("x", "placeholder", "x", role="operand")], "x"
    for name, target in names_targets:
        nodes.append(Node(name, "call_function", target, args=[prev], inputs=[prev]))
        prev = name
    nodes.append(Node("output", "output", "output", args=[f"({prev},)"], inputs=[prev], role="output"))
    return Graph(nodes)


def test_alignment_follows_structure_not_names():
    # one node inserted at the front renames every later add (fx numbers names per target)
    a = _chain([("add", "operator.add"), ("add_1", "operator.add"), ("mul", "operator.mul")])
    b = _chain([("add", "operator.add"), ("add_1", "operator.add"), ("add_2", "operator.add"), ("mul", "operator.mul")])
    d = align(a, b)
    assert len(d.added) == 1 and not d.removed
    assert ("mul", "mul") in [(p.a, p.b) for p in d.pairs]
    assert d.partner("output") == "output"


def test_bench_diff_speed_keys():
    from bench import diff_speed

    res = diff_speed.run(repeat=1, size="tiny")  # no timing asserted: benchmarks live in bench/
    assert res["diff_seconds_transformer12"] > 0 and res["diff_joint_nodes"][0] > 0
    assert "went dynamic in dim 1" in res["diff_summary"]
