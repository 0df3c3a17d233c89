"""Every HOP body input says what it is and where it comes from, checked against torch's own graph.

The oracle is the GraphModule Dynamo hands a plain ``torch.compile(fn, backend=oracle)``: the
same graph the capture records. For each HOP call in it, the values the call passes to a body are
read off the call's arguments by the HOP's own signature (torch/_higher_order_ops/*.py, e.g.
``map_impl(f, xs, pos_args)`` runs ``f(*slices of xs, *pos_args)``), independently of the code
under test; which parent nodes are operands follows from what each case passes to the HOP.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest
import torch
import torch.fx
from cases_inputs import DYNAMIC, INPUT_CASES

import tracer


def _leaves(a: Any) -> list[Any]:
    if isinstance(a, (list, tuple)):
        return [x for v in a for x in _leaves(v)]
    if isinstance(a, dict):
        return [x for v in a.values() for x in _leaves(v)]
    return [a]


def _name(v: Any) -> str:
    return v.name if isinstance(v, torch.fx.Node) else ""


def _expected(call: torch.fx.Node, body: torch.fx.Node) -> Optional[list[str]]:
    """Per body placeholder, the parent node the call passes (sliced, or as initial carry); "" for
    none; None for a body no parent node feeds at all (autograd.Function's backward)."""
    hop, a = call.target.name(), call.args
    if hop == "wrap":
        vals = list(a[1:])
    elif hop == "invoke_subgraph":
        vals = list(a[2:])
    elif hop == "cond":
        vals = _leaves(a[3])
    elif hop == "map_impl":
        vals = _leaves(a[1]) + _leaves(a[2])
    elif hop == "scan":
        vals = _leaves(a[1]) + _leaves(a[2]) + _leaves(a[3])
    elif hop == "while_loop":
        vals = _leaves(a[2]) + _leaves(a[3])
    elif hop == "flex_attention":
        vals = [None] * 5 + _leaves(a[7]) if body is a[3] else [None] * 4 + _leaves(a[8])
    elif hop == "autograd_function_apply":
        vals = list(a[2:]) if body is a[0] else None
    else:
        raise AssertionError(f"no oracle for {hop}")
    return None if vals is None else [_name(v) for v in vals]


def _hop_calls(gm: torch.fx.GraphModule, qual: str = ""):
    """(qualified parent, call node, body get_attr node, body module) for every body call, nested too."""
    for n in gm.graph.nodes:
        if n.op == "call_function" and isinstance(n.target, torch._ops.HigherOrderOperator):
            for b in _leaves([n.args, n.kwargs]):
                if isinstance(b, torch.fx.Node) and b.op == "get_attr":
                    mod = getattr(gm, b.target)
                    if isinstance(mod, torch.fx.GraphModule):
                        name = f"{qual}.{b.target}" if qual else b.target
                        yield qual, n, b, mod, name
                        yield from _hop_calls(mod, name)


@pytest.fixture(scope="module")
def recorded():
    done: dict[str, tuple] = {}

    def get(name: str):
        if name not in done:
            fn, args = INPUT_CASES[name]()
            dynamic = True if name in DYNAMIC else None
            seen: list[torch.fx.GraphModule] = []

            def oracle(gm, example_inputs):
                seen.append(gm)
                # Dynamo drops the GraphArgs after compiling; keep each input's Source name now
                gm.meta["test_sources"] = {_source_name(n): n.name for n in gm.graph.find_nodes(op="placeholder")}
                return gm.forward

            torch._dynamo.reset()
            torch.compile(fn, backend=oracle, dynamic=dynamic)(*args)
            cap = tracer.capture(fn, *args, dynamic=dynamic)
            (gm,) = seen
            done[name] = (cap, gm)
        return done[name]

    return get


@pytest.mark.parametrize("name", sorted(INPUT_CASES))
def test_exact_and_valid(recorded, name):
    cap, gm = recorded(name)
    assert cap.all_problems() == []
    tracer.validate(cap)
    assert tracer.Capture.from_json(cap.to_json()) == cap


@pytest.mark.parametrize("name", sorted(INPUT_CASES))
def test_sources_are_what_each_call_passes(recorded, name):
    cap, gm = recorded(name)
    (f,) = cap.frames
    calls = list(_hop_calls(gm))
    assert calls
    for qual, call, body_node, body, qn in calls:
        sg = f.subgraphs[qn]
        assert sg.parent == qual
        placeholders = [p.name for p in body.graph.find_nodes(op="placeholder")]
        assert [i.name for i in sg.inputs] == placeholders  # every placeholder accounted for
        (site,) = [s for s in sg.call_sites if s.node == call.name]
        expected = _expected(call, body_node)
        if expected is None:
            assert site.sources == [""] * len(placeholders)
            continue
        assert site.sources == expected
        if call.name == sg.call_node:
            assert [i.source for i in sg.inputs] == expected


def _source_name(n: torch.fx.Node) -> str:
    name = n.meta["grapharg"].source.name
    return name() if callable(name) else name


def _root_operands(gm: torch.fx.GraphModule, name: str) -> set[str]:
    """The parent nodes behind what each case passes to its HOP (by the case's own source)."""
    by_source = gm.meta["test_sources"]
    made = {getattr(n.target, "__name__", str(n.target)): n.name for n in gm.graph.nodes
            if n.op in ("call_function", "call_method")}
    return {
        "wrap_dict": lambda: {by_source["L['x']"], by_source["L['y']"]},
        "wrap_nested": lambda: {by_source["L['x']"], by_source["L['y']"], made["cos"]},
        "wrap_dataclass": lambda: {by_source["L['x']"], made["cos"]},
        "wrap_dataclass_argument": lambda: {by_source["L['p'].a"], by_source["L['p'].b"]},
        "wrap_constants": lambda: {by_source["L['x']"], by_source["L['y']"], made["sin"]},
        "wrap_symint": lambda: {by_source["L['x']"], by_source["L['n']"], by_source["L['y']"]},
        "cond_dict": lambda: {by_source["L['x']"], by_source["L['y']"]},
        "map_nested": lambda: {by_source["L['y']"]},
        "scan_tuple": lambda: set(),
        "while_loop_dict": lambda: set(),
        "flex_attention": lambda: set(),
        "autograd_function": lambda: {by_source["L['x']"], made["cos"]},
        "compile_region_three_calls": lambda: {by_source["L['x']"], by_source["L['y']"]},
        "map_constant": lambda: {by_source["L['y']"]},
        "while_loop_int_carry": lambda: set(),
    }[name]()


@pytest.mark.parametrize("name", sorted(INPUT_CASES))
def test_operands_are_exactly_what_the_user_passed(recorded, name):
    cap, gm = recorded(name)
    (f,) = cap.frames
    top = [s for s in f.subgraphs.values() if s.parent == ""]
    fed = {i.source for s in top for i in s.inputs if i.kind == "operand" and i.source}
    assert fed == _root_operands(gm, name)


def _kinds(sg) -> list[tuple[str, str]]:
    return [(i.kind, i.supplied) for i in sg.inputs]


def test_closures_stay_lifted(recorded):
    f = recorded("wrap_dict")[0].frames[0]
    (sg,) = f.subgraphs.values()
    assert sg.inputs[-1].kind == "lifted_freevar" and f.graph.node(sg.inputs[-1].source).target == "cos"
    f = recorded("cond_dict")[0].frames[0]
    for sg in f.subgraphs.values():
        assert [i.kind for i in sg.inputs] == ["lifted_freevar", "operand", "operand"]  # c = y.sum() closes


def test_symint_operand_and_lifted_symbol(recorded):
    (sg,) = recorded("wrap_symint")[0].frames[0].subgraphs.values()
    kinds = {i.source: i.kind for i in sg.inputs}
    assert kinds["l_n_"] == "operand"  # n passed by the user, a SymInt under dynamic=True
    (sym,) = [i for i in sg.inputs if i.kind == "lifted_symbol"]
    assert sym.meta["kind"] == "symint"


def test_constant_operand_keeps_later_sources_aligned(recorded):
    cap, gm = recorded("map_constant")
    (sg,) = cap.frames[0].subgraphs.values()
    (call,) = [n for n in gm.graph.nodes if n.name == sg.call_node]
    assert call.args[2][0] == 2  # torch passes the constant itself
    k = sg.inputs[1]
    assert k.source == "" and k.meta["constant"] == "2" and k.kind == "operand"
    assert sg.inputs[2].source == "l_y_" and sg.inputs[2].kind == "operand"


def test_map_and_scan_slices_and_carries(recorded):
    (sg,) = recorded("map_nested")[0].frames[0].subgraphs.values()
    assert _kinds(sg)[:2] == [("hop_supplied", "slice of xs[0]"), ("hop_supplied", "slice of xs[1]")]
    (sg,) = recorded("scan_tuple")[0].frames[0].subgraphs.values()
    assert _kinds(sg) == [("hop_supplied", "carry[0]"), ("hop_supplied", "carry[1]"),
                          ("hop_supplied", "slice of xs[0]"), ("lifted_freevar", "")]


def test_while_loop_carries(recorded):
    f = recorded("while_loop_dict")[0].frames[0]
    for sg in f.subgraphs.values():
        assert _kinds(sg)[:3] == [("hop_supplied", f"carry[{j}]") for j in range(3)]
        assert [i.kind for i in sg.inputs[3:]] == ["lifted_freevar", "lifted_freevar"]
    f = recorded("while_loop_int_carry")[0].frames[0]
    for sg in f.subgraphs.values():
        first = sg.inputs[0]
        assert (first.kind, first.supplied, first.source, first.meta["constant"]) == ("hop_supplied", "carry[0]", "", "0")


def test_flex_attention_indices_are_supplied(recorded):
    f = recorded("flex_attention")[0].frames[0]
    score = next(s for s in f.subgraphs.values() if s.name.startswith("score_mod"))
    assert [i.supplied for i in score.inputs[:5]] == ["score", "b", "h", "q_idx", "kv_idx"]
    assert all(i.source == "" and i.kind == "hop_supplied" for i in score.inputs[:5])
    assert (score.inputs[5].kind, score.inputs[5].source) == ("lifted_freevar", "l_bias_")  # closure
    mask = next(s for s in f.subgraphs.values() if s.name.startswith("mask"))
    assert [i.supplied for i in mask.inputs] == ["b", "h", "q_idx", "kv_idx"]


def test_autograd_function_backward_inputs(recorded):
    cap, gm = recorded("autograd_function")
    f = cap.frames[0]
    bwd = f.subgraphs["bwd_body_0"]
    fwd_out = gm.fwd_body_0.graph.find_nodes(op="output")[0].args[0]
    n_out, n_saved = len(_leaves(fwd_out[0])), len(_leaves(fwd_out[1]))
    assert len(bwd.inputs) == n_out + n_saved
    assert [i.supplied for i in bwd.inputs] == (
        [f"grad of output {j}" for j in range(n_out)] + [f"saved[{j}] of fwd_body_0" for j in range(n_saved)]
    )
    assert cap.meta["backward_ran"] is True


def test_every_call_site_is_recorded(recorded):
    cap, gm = recorded("compile_region_three_calls")
    (sg,) = cap.frames[0].subgraphs.values()
    calls = [n for n in gm.graph.nodes if isinstance(n.target, torch._ops.HigherOrderOperator)]
    assert [s.node for s in sg.call_sites] == [c.name for c in calls] and len(calls) == 3
    assert sg.call_sites[0].node == sg.call_node
    assert [s.sources for s in sg.call_sites] == [[_name(v) for v in c.args[2:]] for c in calls]
    assert all(c.calls == [sg.name] for c in cap.frames[0].graph.find(role="hop"))


def test_missing_speculation_is_a_problem_not_a_guess(recorded):
    from tracer._torch.subgraphs import convert_tree

    _, gm = recorded("wrap_dict")
    problems: list[str] = []
    _, subgraphs, _ = convert_tree(gm, [], None, problems)
    (sg,) = subgraphs.values()
    assert [i.source for i in sg.inputs] == ["l_x_", "l_y_", "w"]  # sources are still known
    assert [i.kind for i in sg.inputs] == ["unknown"] * 3  # operand or lifted: not guessed
    assert [n.role for n in sg.graph.placeholders] == ["unknown"] * 3
    assert len(problems) == 1 and "no speculation record" in problems[0] and "unknown" in problems[0]


def test_unaligned_call_is_a_problem(recorded):
    from tracer._torch.body_inputs import call_feeds

    _, gm = recorded("wrap_dict")
    (call,) = [n for n in gm.graph.nodes if isinstance(n.target, torch._ops.HigherOrderOperator)]
    feeds, problems = call_feeds(call, "some_new_hop", 0, "wrap_body_0", 2, gm)
    assert feeds == [] and "passes 3 values for 2 placeholders" in problems[0] and "no layout known" in problems[0]
