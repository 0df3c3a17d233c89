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
    Bytecode,
    CallSite,
    Capture,
    CodeText,
    Frame,
    FrameDiff,
    Graph,
    GraphBreak,
    GraphDiff,
    InductorGraph,
    Kernel,
    Node,
    Recompile,
    SavedValue,
    ShapeSymbol,
    Specialization,
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
                   [Recompile("0/1", "0/0: size mismatch", failed=["0/0: size mismatch"])], fn="f")


def test_base_is_valid():
    validate(base())


def _frame(cap, cid):
    return cap.frame(cid)


def _sg(cap):
    return cap.frame("0/0_1").subgraphs["wrap_body_0"]


# (what is broken, how, a fragment of the message that must name it)
BROKEN = [
    ("duplicate compile id", lambda c: setattr(c.frames[2], "compile_id", "0/0"), "compile id '0/0' names more than one frame"),
    ("compile id format", lambda c: setattr(c.frames[2], "compile_id", "zero"), "frame zero: compile id 'zero' is not of the form 'F/C' or 'F/C_A'"),
    ("status", lambda c: setattr(c.frames[0], "status", "done"), "frame 0/0: status 'done' (must be one of ['compiled', 'restarted', 'no_graph', 'failed'])"),
    ("restarted without reason", lambda c: setattr(c.frames[0], "status_reason", ""), "frame 0/0: status 'restarted' without a reason"),
    ("compiled without graph", lambda c: setattr(c.frames[1], "graph", Graph()), "frame 0/0_1: status 'compiled' without a graph"),
    ("no_graph with a graph", lambda c: setattr(c.frames[2], "graph", copy.deepcopy(c.frames[1].graph)), "frame 0/1: status 'no_graph' but it has a graph"),
    ("time phase", lambda c: c.frames[1].times.update(linking=1.0), "frame 0/0_1: time phase 'linking' (must be one of ['total', 'dynamo', 'aot_autograd', 'backend', 'before_restart'])"),
    ("negative time", lambda c: c.frames[1].times.update(total=-1.0), "frame 0/0_1: time 'total' is -1.0, not a duration"),
    ("break -> frame", lambda c: setattr(c.graph_breaks[0], "compile_id", "7/0"), "graph break at f.py:2: compile id '7/0' is not a frame of the capture"),
    ("recompile -> frame", lambda c: setattr(c.recompiles[0], "compile_id", "0/9"), "recompile: compile id '0/9' is not a frame of the capture"),
    ("recompile reason vs failed", lambda c: c.recompiles[0].failed.insert(0, "0/0_1: other"),
     "recompile 0/1: reason is not the first failed guard"),
    ("duplicate node names", lambda c: c.frames[1].graph.nodes.insert(1, copy.deepcopy(c.frames[1].graph.nodes[0])),
     "frame 0/0_1: duplicate node names"),
    ("node op", lambda c: setattr(c.frames[1].graph.nodes[3], "op", "return"), "frame 0/0_1: node 'output' has op 'return' (must be one of ['placeholder', 'get_attr', 'call_function', 'call_method', 'call_module', 'output'])"),
    ("node role", lambda c: setattr(c.frames[1].graph.nodes[0], "role", "input"), "frame 0/0_1: node 'l_x_' has role 'input' (must be one of ['operand', 'lifted_freevar', 'lifted_symbol', 'hop_supplied', 'param', 'hop', 'output', 'op', 'unknown'])"),
    ("reads a later node", lambda c: c.frames[1].graph.nodes[0].inputs.append("wrap"), "frame 0/0_1: node 'l_x_' reads 'wrap', which is not an earlier node"),
    ("unknown user", lambda c: c.frames[1].graph.nodes[0].users.append("ghost"), "frame 0/0_1: node 'l_x_' has unknown user 'ghost'"),
    ("user does not read it", lambda c: c.frames[1].graph.nodes[0].users.append("output"), "frame 0/0_1: node 'l_x_' lists user 'output', which does not read it"),
    ("subgraph key", lambda c: setattr(_sg(c), "name", "other"), "frame 0/0_1 subgraph 'wrap_body_0': keyed under a different name 'other'"),
    ("subgraph parent", lambda c: setattr(_sg(c), "parent", "nowhere"), "frame 0/0_1 subgraph 'wrap_body_0': parent 'nowhere' is not a graph of the frame"),
    ("call node missing", lambda c: setattr(_sg(c), "call_node", "ghost"), "frame 0/0_1 subgraph 'wrap_body_0': call node 'ghost' not in parent ''"),
    ("call node does not call it", lambda c: setattr(c.frames[1].graph.nodes[2], "calls", []), "frame 0/0_1 subgraph 'wrap_body_0': call node 'wrap' does not call it (calls [])"),
    ("inputs vs placeholders", lambda c: _sg(c).inputs.clear(), "frame 0/0_1 subgraph 'wrap_body_0': inputs [] != placeholders ['x']"),
    ("input kind", lambda c: setattr(_sg(c).inputs[0], "kind", "argument"), "frame 0/0_1 subgraph 'wrap_body_0': input 'x' has kind 'argument' (must be one of ['operand', 'lifted_freevar', 'lifted_symbol', 'hop_supplied', 'unknown'])"),
    ("input source", lambda c: setattr(_sg(c).inputs[0], "source", "ghost"), "frame 0/0_1 subgraph 'wrap_body_0': input 'x' source 'ghost' not in parent ''"),
    ("hop_supplied says what", lambda c: setattr(_sg(c).inputs[0], "kind", "hop_supplied"), "frame 0/0_1 subgraph 'wrap_body_0': input 'x' is hop_supplied without saying what the HOP supplies"),
    ("first call site", lambda c: _sg(c).call_sites.insert(0, CallSite("l_x_", ["l_x_"])), "frame 0/0_1 subgraph 'wrap_body_0': first call site 'l_x_' is not call_node 'wrap'"),
    ("call site node", lambda c: _sg(c).call_sites.append(CallSite("ghost", ["l_x_"])), "frame 0/0_1 subgraph 'wrap_body_0': call site 'ghost' not in parent ''"),
    ("call site arity", lambda c: _sg(c).call_sites[0].sources.append("l_x_"), "frame 0/0_1 subgraph 'wrap_body_0': call site 'wrap' has 2 sources for 1 inputs"),
    ("call site source", lambda c: setattr(_sg(c).call_sites[0], "sources", ["ghost"]), "frame 0/0_1 subgraph 'wrap_body_0': call site 'wrap' source 'ghost' not in parent ''"),
    ("node calls unknown body", lambda c: c.frames[1].graph.nodes[2].calls.append("nope"), "frame 0/0_1: node 'wrap' calls unknown subgraph 'nope'"),
    ("speculation -> body", lambda c: setattr(c.frames[1].speculations[0], "subgraph", "nope"), "frame 0/0_1: speculation names unknown subgraph 'nope'"),
    ("aot mode", lambda c: setattr(c.frames[1].aot, "mode", "eval"), "frame 0/0_1: aot mode 'eval' (must be one of ['training', 'inference'])"),
    ("aot graph checked", lambda c: c.frames[1].aot.forward.nodes[1].inputs.append("ghost"), "frame 0/0_1 aot.forward: node 'sin' reads 'ghost', which is not an earlier node"),
    ("inference mode with training graphs", lambda c: setattr(c.frames[1].aot, "mode", "inference"), "frame 0/0_1: aot mode 'inference' with training graphs (forward must be the inference graph)"),
    ("training with inference graph", lambda c: setattr(c.frames[1].aot, "inference", Graph()), "frame 0/0_1: aot mode 'training' with an inference graph"),
    ("aot subgraph checked", lambda c: c.frames[1].aot.subgraphs.update(b=Graph([_node("a", "placeholder", "a", users=["z"])])), "frame 0/0_1 aot.subgraphs['b']: node 'a' has unknown user 'z'"),
    ("saved kind", lambda c: setattr(c.frames[1].aot.saved[0], "kind", "float"), "frame 0/0_1: saved 'primals_1' kind 'float' (must be one of ['tensor', 'symint', 'symfloat', 'symbool', 'opaque'])"),
    ("saved origin", lambda c: setattr(c.frames[1].aot.saved[0], "origin", "weights"), "frame 0/0_1: saved 'primals_1' origin 'weights' (must be one of ['activation', 'parameter', 'buffer', 'input', 'unknown'])"),
    ("saved -> forward", lambda c: setattr(c.frames[1].aot.saved[0], "name", "ghost"), "frame 0/0_1: saved 'ghost' is not a node of the forward graph"),
    ("saved unknown yet listed", lambda c: setattr(c.frames[1].aot, "saved_known", False), "frame 0/0_1: saved values not known, yet 1 listed"),
    ("saved without forward", lambda c: setattr(c.frames[1].aot, "forward", None), "frame 0/0_1: saved 'primals_1' but the frame has no forward graph"),
    ("saved bytes", lambda c: setattr(c.frames[1].aot.saved[0], "nbytes", -4), "frame 0/0_1: saved 'primals_1' has -4 bytes"),
    ("output alias", lambda c: setattr(c.frames[1].aot.outputs[0], "alias", "view"), "frame 0/0_1: output 'sin' alias 'view' (must be one of ['none', 'alias_of_input', 'is_input', 'alias_of_intermediate', 'alias_of_intermediate_save_as_output', 'alias_of_intermediate_base_is_user_output', 'custom_function_view', 'unsafe_view_alias'])"),
    ("synthetic base index", lambda c: c.frames[1].aot.synthetic_bases.append([0, 5]), "frame 0/0_1: synthetic base groups input indices [5] out of 1 inputs"),
    ("problems are strings", lambda c: c.problems.append(3), "problems must be strings"),
    ("limits are strings", lambda c: c.limits.append(3), "limits must be strings"),
    ("failed without reason", lambda c: (setattr(c.frames[2], "status", "failed"), setattr(c.frames[2], "status_reason", "")),
     "frame 0/1: status 'failed' without a reason"),
    ("inference with a backward", lambda c: (setattr(c.frames[1].aot, "mode", "inference"),
                                             setattr(c.frames[1].aot, "inference", c.frames[1].aot.forward)),
     "frame 0/0_1: aot mode 'inference' with training graphs (forward must be the inference graph)"),
    ("synthetic base index one past the end", lambda c: c.frames[1].aot.synthetic_bases.append([1]),
     "frame 0/0_1: synthetic base groups input indices [1] out of 1 inputs"),
    ("every subgraph is checked", lambda c: c.frames[1].subgraphs.update(
        {"zz": Subgraph("zz", "wrap", "nowhere", "wrap"), "zzz": Subgraph("zzz", "wrap", "", "ghost")}),
     "frame 0/0_1 subgraph 'zzz': call node 'ghost' not in parent ''"),
    ("speculation depth", lambda c: setattr(c.frames[1].speculations[0], "depth", 9),
     "frame 0/0_1: speculation wrap/wrap has depth 9 (must be 1..1)"),
    ("recompile diff of an unknown frame", lambda c: setattr(c.recompiles[0], "diff", FrameDiff("0/0_1", "0/7")),
     "recompile 0/1: diff of '0/0_1'/'0/7', not frames of the capture"),
    ("body graph checked", lambda c: _sg(c).graph.nodes[0].inputs.append("sin"),
     "frame 0/0_1 subgraph 'wrap_body_0': node 'x' reads 'sin', which is not an earlier node"),
    ("recompile diff from an unknown frame", lambda c: setattr(c.recompiles[0], "diff", FrameDiff("0/7", "0/0_1")),
     "recompile 0/1: diff of '0/7'/'0/0_1', not frames of the capture"),
    ("recompile diff naming a node its frames lack", lambda c: setattr(c.recompiles[0], "diff", FrameDiff(
        "0/0_1", "0/0_1", graphs=[GraphDiff("", "", removed=["ghost"])])),
     "diff 0/0_1\u21920/0_1: graph 'root' names nodes not in its frames: ['ghost']"),
    ("inference mode without its forward", lambda c: (setattr(c.frames[1].aot, "mode", "inference"),
                                                      setattr(c.frames[1].aot, "backward", None),
                                                      setattr(c.frames[1].aot, "inference", c.frames[1].aot.forward),
                                                      setattr(c.frames[1].aot, "forward", None),
                                                      setattr(c.frames[1].aot, "saved", [])),
     "frame 0/0_1: aot mode 'inference' with training graphs (forward must be the inference graph)"),
    ("kernel not in its output code", lambda c: c.frames[1].inductor.append(
        InductorGraph("0_inference", output_code="def call(): pass", kernels=[Kernel("cpp_fused_0", 1)])),
     "frame 0/0_1: inductor 0_inference kernel 'cpp_fused_0' is not in its output code"),
    ("kernel names an unknown node", lambda c: c.frames[1].inductor.append(
        InductorGraph("0_inference", output_code="cpp_fused_0", kernels=[Kernel("cpp_fused_0", 1, dynamo_nodes=["ghost"])])),
     "frame 0/0_1: inductor 0_inference kernel 'cpp_fused_0' names unknown Dynamo nodes ['ghost']"),
    ("specialization kind", lambda c: (c.frames[1].symbols.append(ShapeSymbol("s0", "L['x'].size()[0]")),
                                       c.frames[1].specializations.append(Specialization("frozen", "s0"))),
     "frame 0/0_1: specialization kind 'frozen' (must be one of ['static', 'divisibility', 'zero_one'])"),
    ("specialization of an unknown symbol", lambda c: c.frames[1].specializations.append(Specialization("static", "s9")),
     "frame 0/0_1: specialization of 's9', which is not a symbol of the frame"),
    ("bytecode without source or problem", lambda c: setattr(c.frames[1], "bytecode", Bytecode(
        CodeText("f", source="def f(x): ..."), CodeText("f"))),
     "frame 0/0_1: bytecode of 'f' has no source and no problem saying why"),
]


@pytest.mark.parametrize("what,breakit,message", BROKEN, ids=[b[0] for b in BROKEN])
def test_each_broken_invariant_is_reported(what, breakit, message):
    """The whole line is expected, so the place it names (frame, subgraph, graph) is checked too."""
    cap = base()
    breakit(cap)
    with pytest.raises(ValidationError) as info:
        validate(cap)
    head, *lines = str(info.value).split("\n")
    assert head == "invalid capture:" and lines and all(line.startswith("  ") for line in lines)
    assert f"  {message}" in lines, str(info.value)


@pytest.mark.parametrize("what,fix", [
    ("a saved value of 0 bytes (an empty tensor)", lambda c: setattr(c.frames[1].aot.saved[0], "nbytes", 0)),
    ("a phase that took no measurable time", lambda c: c.frames[1].times.update(backend=0.0)),
    ("a synthetic base of the last input", lambda c: c.frames[1].aot.synthetic_bases.append([0])),
    ("an inference graph that is the forward", lambda c: (setattr(c.frames[1].aot, "mode", "inference"),
                                                          setattr(c.frames[1].aot, "backward", None),
                                                          setattr(c.frames[1].aot, "saved", []),
                                                          setattr(c.frames[1].aot, "inference", c.frames[1].aot.forward))),
    ("a failed attempt with its reason", lambda c: setattr(c.frames[2], "status", "failed")),
    ("limits of the source, as strings", lambda c: c.limits.extend(["the source has no speculations", ""])),
    ("a recompile that does not list its failed guards", lambda c: setattr(c.recompiles[0], "failed", [])),
    ("bytecode that says why it has no source", lambda c: setattr(c.frames[1], "bytecode", Bytecode(
        CodeText("f", source="def f(x): ..."), CodeText("f", problem="depyf could not decompile f")))),
    ("a recompile diff of two frames of the capture", lambda c: setattr(c.recompiles[0], "diff", FrameDiff(
        "0/0_1", "0/0_1", graphs=[GraphDiff("", "", removed=["wrap"])]))),
])
def test_edge_values_are_valid(what, fix):
    cap = base()
    fix(cap)
    validate(cap)


def test_every_problem_is_listed_at_once():
    cap = base()
    cap.recompiles[0].compile_id = "0/9"
    cap.recompiles[0].diff = FrameDiff("0/0_1", "0/0_1")  # valid: checking it must not drop earlier problems
    cap.graph_breaks[0].compile_id = "7/0"
    with pytest.raises(ValidationError) as info:
        validate(cap)
    assert "'0/9'" in str(info.value) and "'7/0'" in str(info.value)
