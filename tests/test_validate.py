"""validate(): one hand-broken capture per invariant, so removing any check fails a test.

Each case starts from one small capture that is valid (checked first), breaks exactly one thing
and asserts that validate() names it. The base capture is built by hand, not captured, so the
cases stay independent of the recorder.
"""

from __future__ import annotations

import copy

import pytest

from tracer.model import (
    Aot,
    AotInput,
    AotOutput,
    CallSite,
    Capture,
    Frame,
    Graph,
    GraphBreak,
    Node,
    Recompile,
    SavedValue,
    Speculation,
    Subgraph,
    SubgraphInput,
    ValidationError,
    validate,
)


def _node(name, op, target, inputs=(), role="op", users=(), calls=()):
    return Node(name, op, target, list(inputs), {}, list(inputs), list(users), role, list(calls))


def base() -> Capture:
    root = Graph([
        _node("l_x_", "placeholder", "L_x_", role="operand", users=["wrap"]),
        _node("wrap_body_0", "get_attr", "wrap_body_0", users=["wrap"]),
        _node("wrap", "call_function", "torch.ops.higher_order.wrap", ["wrap_body_0", "l_x_"], "hop", ["output"],
              ["wrap_body_0"]),
        _node("output", "output", "output", ["wrap"], "output"),
    ])
    body = Graph([
        _node("x", "placeholder", "x", role="operand", users=["sin"]),
        _node("sin", "call_function", "torch.sin", ["x"], users=["output"]),
        _node("output", "output", "output", ["sin"], "output"),
    ], name="wrap_body_0")
    sg = Subgraph("wrap_body_0", "wrap", "", "wrap", body, [SubgraphInput("x", "operand", "l_x_")],
                  [CallSite("wrap", ["l_x_"])])
    fw = Graph([
        _node("primals_1", "placeholder", "primals_1", role="operand", users=["sin", "output"]),
        _node("sin", "call_function", "aten.sin.default", ["primals_1"], users=["output"]),
        _node("output", "output", "output", ["sin", "primals_1"], "output"),
    ], name="forward")
    aot = Aot("training", forward=fw, backward=Graph(name="backward"),
              saved=[SavedValue("primals_1", "tensor", [3], "float32", 12, origin="input")],
              inputs=[AotInput("primals_1")], outputs=[AotOutput("sin")])
    restarted = Frame("0/0", "f.py:1 in f", status="restarted", status_reason="graph break",
                      speculations=[Speculation("wrap", "wrap", 1, False, reason="graph break")])
    compiled = Frame("0/0_1", "f.py:1 in f", root, {"wrap_body_0": sg},
                     [Speculation("wrap", "wrap", 1, True, subgraph="wrap_body_0")], aot=aot,
                     times={"total": 0.5, "dynamo": 0.3, "backend": 0.2})
    recompiled = Frame("0/1", "f.py:1 in f", status="no_graph", status_reason="no ops")
    return Capture([restarted, compiled, recompiled], [GraphBreak("graph break", "f.py:2", compile_id="0/0")],
                   [Recompile("0/1", "size mismatch")], fn="f")


def test_base_is_valid():
    validate(base())


def _frame(cap, cid):
    return cap.frame(cid)


def _sg(cap):
    return cap.frame("0/0_1").subgraphs["wrap_body_0"]


# (what is broken, how, a fragment of the message that must name it)
BROKEN = [
    ("duplicate compile id", lambda c: setattr(c.frames[2], "compile_id", "0/0"), "compile id '0/0' names more than one frame"),
    ("compile id format", lambda c: setattr(c.frames[2], "compile_id", "zero"), "is not of the form"),
    ("status", lambda c: setattr(c.frames[0], "status", "done"), "status 'done'"),
    ("restarted without reason", lambda c: setattr(c.frames[0], "status_reason", ""), "without a reason"),
    ("compiled without graph", lambda c: setattr(c.frames[1], "graph", Graph()), "status 'compiled' without a graph"),
    ("no_graph with a graph", lambda c: setattr(c.frames[2], "graph", copy.deepcopy(c.frames[1].graph)), "status 'no_graph' but it has a graph"),
    ("time phase", lambda c: c.frames[1].times.update(linking=1.0), "time phase 'linking'"),
    ("negative time", lambda c: c.frames[1].times.update(total=-1.0), "not a duration"),
    ("break -> frame", lambda c: setattr(c.graph_breaks[0], "compile_id", "7/0"), "compile id '7/0' is not a frame"),
    ("recompile -> frame", lambda c: setattr(c.recompiles[0], "compile_id", "0/9"), "recompile: compile id '0/9'"),
    ("duplicate node names", lambda c: c.frames[1].graph.nodes.insert(1, copy.deepcopy(c.frames[1].graph.nodes[0])), "duplicate node names"),
    ("node op", lambda c: setattr(c.frames[1].graph.nodes[3], "op", "return"), "has op 'return'"),
    ("node role", lambda c: setattr(c.frames[1].graph.nodes[0], "role", "input"), "has role 'input'"),
    ("reads a later node", lambda c: c.frames[1].graph.nodes[0].inputs.append("wrap"), "reads 'wrap', which is not an earlier node"),
    ("unknown user", lambda c: c.frames[1].graph.nodes[0].users.append("ghost"), "unknown user 'ghost'"),
    ("user does not read it", lambda c: c.frames[1].graph.nodes[0].users.append("output"), "lists user 'output', which does not read it"),
    ("subgraph key", lambda c: setattr(_sg(c), "name", "other"), "keyed under a different name"),
    ("subgraph parent", lambda c: setattr(_sg(c), "parent", "nowhere"), "parent 'nowhere' is not a graph"),
    ("call node missing", lambda c: setattr(_sg(c), "call_node", "ghost"), "call node 'ghost' not in parent"),
    ("call node does not call it", lambda c: setattr(c.frames[1].graph.nodes[2], "calls", []), "does not call it"),
    ("inputs vs placeholders", lambda c: _sg(c).inputs.clear(), "!= placeholders"),
    ("input kind", lambda c: setattr(_sg(c).inputs[0], "kind", "argument"), "has kind 'argument'"),
    ("input source", lambda c: setattr(_sg(c).inputs[0], "source", "ghost"), "source 'ghost' not in parent"),
    ("hop_supplied says what", lambda c: setattr(_sg(c).inputs[0], "kind", "hop_supplied"), "without saying what the HOP supplies"),
    ("first call site", lambda c: _sg(c).call_sites.insert(0, CallSite("l_x_", ["l_x_"])), "first call site 'l_x_' is not call_node"),
    ("call site node", lambda c: _sg(c).call_sites.append(CallSite("ghost", ["l_x_"])), "call site 'ghost' not in parent"),
    ("call site arity", lambda c: _sg(c).call_sites[0].sources.append("l_x_"), "has 2 sources for 1 inputs"),
    ("call site source", lambda c: setattr(_sg(c).call_sites[0], "sources", ["ghost"]), "call site 'wrap' source 'ghost'"),
    ("node calls unknown body", lambda c: c.frames[1].graph.nodes[2].calls.append("nope"), "calls unknown subgraph 'nope'"),
    ("speculation -> body", lambda c: setattr(c.frames[1].speculations[0], "subgraph", "nope"), "speculation names unknown subgraph 'nope'"),
    ("aot mode", lambda c: setattr(c.frames[1].aot, "mode", "eval"), "aot mode 'eval'"),
    ("aot graph checked", lambda c: c.frames[1].aot.forward.nodes[1].inputs.append("ghost"), "aot.forward: node 'sin' reads 'ghost'"),
    ("inference mode with training graphs", lambda c: setattr(c.frames[1].aot, "mode", "inference"), "with training graphs"),
    ("training with inference graph", lambda c: setattr(c.frames[1].aot, "inference", Graph()), "with an inference graph"),
    ("aot subgraph checked", lambda c: c.frames[1].aot.subgraphs.update(b=Graph([_node("a", "placeholder", "a", users=["z"])])), "aot.subgraphs['b']: node 'a' has unknown user 'z'"),
    ("saved kind", lambda c: setattr(c.frames[1].aot.saved[0], "kind", "float"), "kind 'float'"),
    ("saved origin", lambda c: setattr(c.frames[1].aot.saved[0], "origin", "weights"), "origin 'weights'"),
    ("saved -> forward", lambda c: setattr(c.frames[1].aot.saved[0], "name", "ghost"), "saved 'ghost' is not a node of the forward"),
    ("saved without forward", lambda c: setattr(c.frames[1].aot, "forward", None), "has no forward graph"),
    ("saved bytes", lambda c: setattr(c.frames[1].aot.saved[0], "nbytes", -4), "has -4 bytes"),
    ("output alias", lambda c: setattr(c.frames[1].aot.outputs[0], "alias", "view"), "alias 'view'"),
    ("synthetic base index", lambda c: c.frames[1].aot.synthetic_bases.append([0, 5]), "input indices [5]"),
    ("problems are strings", lambda c: c.problems.append(3), "problems must be strings"),
]


@pytest.mark.parametrize("what,breakit,message", BROKEN, ids=[b[0] for b in BROKEN])
def test_each_broken_invariant_is_reported(what, breakit, message):
    cap = base()
    breakit(cap)
    with pytest.raises(ValidationError) as info:
        validate(cap)
    assert message in str(info.value), str(info.value)


def test_every_problem_is_listed_at_once():
    cap = base()
    cap.recompiles[0].compile_id = "0/9"
    cap.graph_breaks[0].compile_id = "7/0"
    with pytest.raises(ValidationError) as info:
        validate(cap)
    assert "'0/9'" in str(info.value) and "'7/0'" in str(info.value)
