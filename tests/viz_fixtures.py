"""Hand-built ``tracer.model`` captures for the viz tests: small, readable, every field chosen by hand.

``wrap_capture()`` models ``y = x.cos(); wrap(lambda a: wrap(lambda b: b.sin() + y, a), x)``: the
free variable ``y`` is bound in the root graph and lifted into both bodies (torch/_dynamo/output_graph.py
SubgraphTracer.lift_tracked_freevar_to_input), so its lifted
chain is inner ``y`` <- outer ``y`` <- root ``y``.
"""

from __future__ import annotations

import copy
from typing import Any

from tracer.model import (
    Aot,
    AotInput,
    AotOutput,
    Capture,
    Frame,
    Graph,
    GraphBreak,
    Guard,
    Node,
    Recompile,
    SavedValue,
    Speculation,
    Subgraph,
    SubgraphInput,
)

EVIL = "<script>alert(1)</script>"


def t(*shape: Any) -> dict[str, Any]:
    return {"kind": "tensor", "dtype": "float32", "shape": list(shape), "device": "cpu"}


def graph(name: str, specs: list[tuple]) -> Graph:
    """Nodes from (name, op, target, inputs, role[, extra kwargs]) tuples; ``users`` derived from inputs."""
    nodes = []
    for spec in specs:
        nname, op, target, inputs, role, *extra = spec
        kw = dict(extra[0]) if extra else {}
        meta = kw.pop("meta", t(3))
        nodes.append(Node(name=nname, op=op, target=target, args=list(inputs), inputs=list(inputs), role=role,
                          meta=meta, **kw))
    by = {n.name: n for n in nodes}
    for n in nodes:
        for i in n.inputs:
            by[i].users.append(n.name)
    code = "def forward(self):\n" + "".join(
        f"    {n.name} = {n.target}({', '.join(n.args)})\n" for n in nodes if n.op != "output")
    return Graph(nodes=nodes, code=code, name=name)


def root_graph(hostile: str = "", source_code: str = "y = x.cos()") -> Graph:
    src = {"file": "user.py", "line": 7, "fn": "f", "code": source_code}
    last = hostile or "mul"
    return graph("", [
        ("l_x_", "placeholder", "L_x_", [], "operand"),
        ("y", "call_method", "cos", ["l_x_"], "op", {"meta": {**t(3), "source": src}}),
        ("wrap_body_0", "get_attr", "wrap_body_0", [], "op", {"meta": {}}),
        ("wrap", "call_function", "torch.ops.higher_order.wrap", ["wrap_body_0", "l_x_", "y"], "hop",
         {"calls": ["wrap_body_0"], "meta": {"kind": "tuple", "items": [t(3)]}}),
        ("getitem", "call_function", "operator.getitem", ["wrap"], "op"),
        (last, "call_function", "operator.mul", ["getitem"], "op"),
        ("output", "output", "output", [last], "output", {"meta": {}}),
    ])


def wrap_capture(hostile: str = "", source_code: str = "y = x.cos()") -> Capture:
    outer = graph("wrap_body_0", [
        ("a", "placeholder", "a", [], "operand"),
        ("y", "placeholder", "y", [], "lifted_freevar"),
        ("wrap_body_0", "get_attr", "wrap_body_0", [], "op", {"meta": {}}),
        ("wrap", "call_function", "torch.ops.higher_order.wrap", ["wrap_body_0", "a", "y"], "hop",
         {"calls": ["wrap_body_0.wrap_body_0"], "meta": {"kind": "tuple", "items": [t(3)]}}),
        ("getitem", "call_function", "operator.getitem", ["wrap"], "op"),
        ("output", "output", "output", ["getitem"], "output", {"meta": {}}),
    ])
    inner = graph("wrap_body_0.wrap_body_0", [
        ("b", "placeholder", "b", [], "operand"),
        ("y", "placeholder", "y", [], "lifted_freevar"),
        ("sin", "call_method", "sin", ["b"], "op"),
        ("add", "call_function", "operator.add", ["sin", "y"], "op"),
        ("output", "output", "output", ["add"], "output", {"meta": {}}),
    ])
    subgraphs = {
        "wrap_body_0": Subgraph("wrap_body_0", "wrap", "", "wrap", outer,
                                [SubgraphInput("a", "operand", "l_x_", t(3)), SubgraphInput("y", "lifted_freevar", "y", t(3))]),
        "wrap_body_0.wrap_body_0": Subgraph(
            "wrap_body_0.wrap_body_0", "wrap", "wrap_body_0", "wrap", inner,
            [SubgraphInput("b", "operand", "a", t(3)), SubgraphInput("y", "lifted_freevar", "y", t(3))]),
    }
    specs = [
        Speculation("wrap", "wrap", 1, True, subgraph="wrap_body_0", lifted=["y"]),
        Speculation("wrap", "wrap", 2, True, subgraph="wrap_body_0.wrap_body_0", lifted=["y"]),
        Speculation("cond", "true_fn", 1, False, reason=f"graph break in body {hostile}".strip()),
    ]
    guards = [
        Guard("TENSOR_MATCH", "L['x']", ["check_tensor(L['x'], Tensor, torch.float32, [3])"], ["user.py:7 in f"]),
        Guard("TYPE_MATCH", "G['torch']", [f"___check_type_id(G['torch'], 1) {hostile}".strip()]),
        Guard("BACKEND_MATCH", "", ["___check_current_backend(1)"]),
    ]
    fw = graph("forward", [
        ("primals_1", "placeholder", "primals_1", [], "operand"),
        ("cos", "call_function", "aten.cos.default", ["primals_1"], "op"),
        ("output", "output", "output", ["cos", "primals_1"], "output", {"meta": {}}),
    ])
    bw = graph("backward", [
        ("primals_1", "placeholder", "primals_1", [], "operand"),
        ("tangents_1", "placeholder", "tangents_1", [], "operand"),
        ("sin", "call_function", "aten.sin.default", ["primals_1"], "op"),
        ("neg", "call_function", "aten.neg.default", ["sin"], "op"),
        ("mul", "call_function", "aten.mul.Tensor", ["tangents_1", "neg"], "op"),
        ("output", "output", "output", ["mul"], "output", {"meta": {}}),
    ])
    aot = Aot("training", joint=None, forward=fw, backward=bw,
              saved=[SavedValue("primals_1", "tensor", [3], "float32", 12)],
              inputs=[AotInput("primals_1", requires_grad=True), AotInput("buf", mutates_data=True, mutation_in_graph=True)],
              outputs=[AotOutput("cos"), AotOutput("view", alias="alias_of_input", base_index=0)],
              backward_ran=True)
    f0 = Frame("0/0", "user.py:5 in f", graph=root_graph(hostile, source_code), subgraphs=subgraphs,
               speculations=specs, guards=guards, aot=aot)
    f1 = Frame("0/1", "user.py:5 in f", graph=root_graph(hostile, source_code), subgraphs=copy.deepcopy(subgraphs),
               guards=guards[:1])
    return Capture(
        frames=[f0, f1],
        graph_breaks=[GraphBreak(f"Unsupported: print() {hostile}".strip(), "user.py:9", ["user.py:9 in f"], "0/0",
                                 f'print("&<>") {hostile}'.strip())],
        recompiles=[Recompile("0/1", "tensor 'L['x']' size mismatch at index 0. expected 3, actual 4")],
        fn=f"f{hostile}",
    )


def fidelity_capture(hostile: str = "") -> Capture:
    """``wrap_capture`` plus what the fidelity work records: an attempt that restarted at a graph
    break and one that produced no graph (both before the compiled ones), compile times with a phase
    torch did not report, problems, one graph break hit twice (one group of two) and one elsewhere,
    saved values of every origin, and a body input the HOP supplies (``hostile`` in every user string).
    """
    h = f" {hostile}" if hostile else ""
    cap = wrap_capture(hostile)
    f0, f1 = cap.frames
    f0.times = {"total": 1.5, "dynamo": 0.25, "backend": 1.25}  # aot_autograd, before_restart: unknown
    f0.problems = [f"guards of L['x']{h} not recorded"]
    restarted = Frame("0/0_0", f"user.py:5 in f{h}", status="restarted",
                      status_reason=f"Unsupported: print(){h}\nsecond line of the reason", dynamo_id="4/0_0",
                      times={"total": 0.5})
    no_graph = Frame("1/0", f"user.py:12 in torch_dynamo_resume_in_f_at_9{h}", status="no_graph",
                     status_reason=f"no tensor ops{h}")
    cap.frames = [restarted, f0, f1, no_graph]
    cap.problems = [f"frame 2/0 was compiled before the capture started{h}"]
    cap.limits = [f"the source does not record speculations{h}"]  # Note [Limits of the source]
    brk = cap.graph_breaks[0]
    cap.graph_breaks = [brk, GraphBreak(brk.reason, brk.location, list(brk.user_stack), "0/1", brk.code_line),
                        GraphBreak(f"Unsupported: input(){h}", f"user.py:11{h}", [], "0/1", f"input(){h}")]
    aot = f0.aot
    aot.forward.nodes[1:1] = graph("forward", [(f"primals_2{hostile}", "placeholder", "primals_2", [], "param"),
                                               ("cos_big", "call_function", "aten.cos.default", [], "op")]).nodes
    aot.saved = [SavedValue("primals_1", "tensor", [3], "float32", 12, origin="input"),
                 SavedValue("cos", "tensor", [1024], "float32", 4096, origin="activation"),
                 SavedValue("cos_big", "tensor", [1024, 1024], "float32", 4 << 20, origin="activation"),
                 SavedValue(f"primals_2{hostile}", "tensor", [256, 1024], "float32", 1 << 20, origin="parameter")]
    body = f0.subgraphs["wrap_body_0.wrap_body_0"]
    body.graph.nodes.insert(1, graph(body.name, [("score", "placeholder", "score", [], "hop_supplied")]).nodes[0])
    body.inputs.insert(1, SubgraphInput("score", "hop_supplied", "", t(3), supplied=f"score{h}"))
    return cap
