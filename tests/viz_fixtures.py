"""Hand-built ``tracer.model`` captures for the viz tests: small, readable, every field chosen by hand.

``wrap_capture()`` models ``y = x.cos(); wrap(lambda a: wrap(lambda b: b.sin() + y, a), x)``: the
free variable ``y`` is bound in the root graph and lifted into both bodies (seed 003), so its lifted
chain is inner ``y`` <- outer ``y`` <- root ``y``.
"""

from __future__ import annotations

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
    f0 = Frame("0/0", "user.py:5 in f", root_graph(hostile, source_code), subgraphs, specs, guards, aot)
    f1 = Frame("0/1", "user.py:5 in f", root_graph(hostile, source_code), dict(subgraphs), [], guards[:1])
    return Capture(
        frames=[f0, f1],
        graph_breaks=[GraphBreak(f"Unsupported: print() {hostile}".strip(), "user.py:9", ["user.py:9 in f"], "0/0",
                                 f'print("&<>") {hostile}'.strip())],
        recompiles=[Recompile("0/1", "tensor 'L['x']' size mismatch at index 0. expected 3, actual 4")],
        fn=f"f{hostile}",
    )
