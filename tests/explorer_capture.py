"""The synthetic capture the explorer tests open (two nested ``wrap`` bodies lifting one freevar, an
AOT record, a recompile, a graph break; every user string can be made hostile) and readers of a
widget tree's synced state."""

from __future__ import annotations

import copy
import json

import ipywidgets as W
from viz_fixtures import graph, t

from tracer.model import (
    Aot,
    AotInput,
    AotOutput,
    Capture,
    Frame,
    GraphBreak,
    Guard,
    Recompile,
    SavedValue,
    Speculation,
    Subgraph,
    SubgraphInput,
    validate,
)
from viz.explorer import Explorer


def make_capture(hostile: str = "") -> Capture:
    """y = x.cos(); wrap(lambda a: wrap(lambda b: b.sin() + y, a), x): a lifted freevar through two bodies."""
    src = {"file": "user.py", "line": 7, "fn": "f", "code": f"    y = x.cos()  # {hostile}"}
    root = graph("", [
        ("l_x_", "placeholder", "L_x_", [], "operand"),
        ("y", "call_method", "cos", ["l_x_"], "op", {"meta": {**t(3), "source": src,
                                                            "nn_module_stack": [["block", "Block"]]}}),
        ("wrap_body_0", "get_attr", "wrap_body_0", [], "param"),
        ("wrap", "call_function", "torch.ops.higher_order.wrap", ["wrap_body_0", "l_x_", "y"], "hop",
         {"calls": ["wrap_body_0"], "meta": {"kind": "tuple", "items": [t(3)]}}),
        ("getitem", "call_function", "operator.getitem", ["wrap"], "op"),
        (hostile or "mul", "call_function", "operator.mul", ["getitem"], "op"),
        ("output", "output", "output", [hostile or "mul"], "output"),
    ])
    outer = graph("wrap_body_0", [
        ("a", "placeholder", "a", [], "operand"),
        ("y", "placeholder", "y", [], "lifted_freevar"),
        ("wrap_body_0", "get_attr", "wrap_body_0", [], "param"),
        ("wrap", "call_function", "torch.ops.higher_order.wrap", ["wrap_body_0", "a", "y"], "hop",
         {"calls": ["wrap_body_0.wrap_body_0"]}),
        ("getitem", "call_function", "operator.getitem", ["wrap"], "op"),
        ("output", "output", "output", ["getitem"], "output"),
    ])
    inner = graph("wrap_body_0.wrap_body_0", [
        ("b", "placeholder", "b", [], "operand"),
        ("y", "placeholder", "y", [], "lifted_freevar"),
        ("sin", "call_method", "sin", ["b"], "op"),
        ("add", "call_function", "operator.add", ["sin", "y"], "op"),
        ("output", "output", "output", ["add"], "output"),
    ])
    f0 = Frame(
        compile_id="0/0", code=f"user.py:5 in f{hostile}", graph=root,
        subgraphs={
            "wrap_body_0": Subgraph("wrap_body_0", "wrap", "", "wrap", outer, [
                SubgraphInput("a", "operand", "l_x_", t(3)), SubgraphInput("y", "lifted_freevar", "y", t(3))]),
            "wrap_body_0.wrap_body_0": Subgraph("wrap_body_0.wrap_body_0", "wrap", "wrap_body_0", "wrap", inner, [
                SubgraphInput("b", "operand", "a", t(3)), SubgraphInput("y", "lifted_freevar", "y", t(3))]),
        },
        speculations=[
            Speculation("wrap", "wrap", 1, True, subgraph="wrap_body_0", lifted=["y"]),
            Speculation("wrap", "wrap", 2, True, subgraph="wrap_body_0.wrap_body_0", lifted=["y"]),
            Speculation("cond", "true_fn", 1, False, reason=f"graph break in body: print() {hostile}"),
        ],
        guards=[
            Guard("TENSOR_MATCH", "L['x']", ["check_tensor(L['x'], Tensor, ...)"]),
            Guard("BACKEND_MATCH", "", ["___check_current_backend(123)"]),
            Guard("TYPE_MATCH", f"G['{hostile or 'g'}']", ["___check_type_id(G['g'], 1)"]),
        ],
    )
    fw = graph("forward", [
        ("primals_1", "placeholder", "primals_1", [], "operand"),
        ("sin", "call_function", "aten.sin.default", ["primals_1"], "op"),
        ("output", "output", "output", ["sin", "primals_1"], "output"),
    ])
    bw = graph("backward", [
        ("primals_1", "placeholder", "primals_1", [], "operand"),
        ("tangents_1", "placeholder", "tangents_1", [], "operand"),
        ("cos", "call_function", "aten.cos.default", ["primals_1"], "op"),
        ("mul", "call_function", "aten.mul.Tensor", ["tangents_1", "cos"], "op"),
        ("output", "output", "output", ["mul"], "output"),
    ])
    aot = Aot("training", forward=fw, backward=bw, saved=[SavedValue("primals_1", "tensor", [3], "float32", 12)],
              inputs=[AotInput("primals_1", requires_grad=True)], outputs=[AotOutput("sin")], backward_ran=True)
    f1 = Frame(compile_id="1/0", code="user.py:12 in g", graph=graph("", [
        ("l_x_", "placeholder", "L_x_", [], "operand"),
        ("sin", "call_method", "sin", ["l_x_"], "op"),
        ("output", "output", "output", ["sin"], "output")]), aot=aot)
    # the recompile of f0 (its guard on L['x'].size()[0] failed); shape-generic, so its graph is f1's
    f2 = Frame(compile_id="0/1", code=f"user.py:5 in f{hostile}", graph=copy.deepcopy(f1.graph))
    cap = Capture(
        frames=[f0, f1, f2], fn=f"f{hostile}",
        graph_breaks=[GraphBreak(f"print() {hostile}", "user.py:9", ["user.py:9 in f"], "0/0", f"print({hostile!r})")],
        recompiles=[Recompile("1/0", f"L['x'].size()[0] == 3 {hostile}")],
    )
    validate(cap)
    return cap


def _widgets(w: W.Widget):
    yield w
    for child in getattr(w, "children", ()):
        yield from _widgets(child)


def _state(ex: Explorer) -> list:
    """Every widget's synced state, model references replaced by the widget's position in the tree."""
    out = []
    for w in _widgets(ex.widget):
        state = {k: v for k, v in w.get_state().items() if k not in ("layout", "style", "children", "tabbable", "tooltip")}
        out.append((type(w).__name__, json.dumps(state, sort_keys=True, default=str)))
    return out
