"""The HOP feed table (tracer/hop_feeds.py) on hand-built call data, one test per row, no torch.

Each expected list is written from the HOP's own implementation in torch 2.13 (cited per test): the
order in which it passes values to the body is the order of the body's placeholders. A call is
plain data here: a parent node is a ``str`` (its name), a body is a name in ``BODIES``, anything
else is a constant. Every field of every Feed is checked: (node, supplied, constant).
"""

from __future__ import annotations

from typing import Any, Optional

import pytest

from tracer.hop_feeds import CallReader, Feed, call_feeds, leaves

BODIES = {"body_0", "body_1", "fwd_body_0", "bwd_body_0", "score_mod_0", "mask_fn_0", "cond_fn_0"}


def _reader(result: Any = None) -> CallReader:
    return CallReader(is_node=lambda v: isinstance(v, str) and v not in BODIES,
                      body=lambda v: v if isinstance(v, str) and v in BODIES else "",
                      result=lambda attr: result.get(attr) if result is not None else None)


def _feeds(hop: str, args: list[Any], n: int, index: int = 0, kwargs: Optional[dict] = None,
           result: Any = None) -> list[tuple[Any, str, str]]:
    feeds, problems = call_feeds(hop, args, kwargs or {}, index, n, _reader(result), "b", "c")
    assert problems == []
    return [(f.node, f.supplied, f.constant) for f in feeds]


def _problem(hop: str, args: list[Any], n: int, index: int = 0, result: Any = None) -> str:
    feeds, problems = call_feeds(hop, args, {}, index, n, _reader(result), "body_0", "call_0")
    assert feeds == []
    (p,) = problems
    return p


def test_feed_defaults_are_empty():
    f = Feed()
    assert (f.node, f.supplied, f.constant) == (None, "", "")


def test_leaves_flatten_lists_tuples_and_dict_values_in_order():
    assert leaves([("a", 1), {"k": ["b", None], "j": "c"}, (), "de"]) == ["a", 1, "b", None, "c", "de"]
    assert leaves("x") == ["x"] and leaves(3) == [3] and leaves([]) == []


@pytest.mark.parametrize("index", [0, 1])
def test_cond_passes_operands_to_both_branches(index):
    # cond.py cond_op_dense: true_fn(*operands) / false_fn(*operands)
    args = ["gt", "body_0", "body_1", ("x", 2, "y")]
    assert _feeds("cond", args, 3, index) == [("x", "", ""), (None, "", "2"), ("y", "", "")]


def test_cond_operands_by_keyword():
    # three positional args: operands come from the keyword (cond.py CondOp.__call__'s parameter name)
    assert _feeds("cond", ["gt", "body_0", "body_1"], 1, kwargs={"operands": ["x"]}) == [("x", "", "")]
    assert _feeds("cond", ["gt", "body_0", "body_1", ["y"]], 1, kwargs={"operands": ["x"]}) == [("y", "", "")]


@pytest.mark.parametrize("hop", ["while_loop", "while_loop_stack_output"])
@pytest.mark.parametrize("index", [0, 1])
def test_while_loop_carries_then_additional_inputs(hop, index):
    # while_loop.py while_loop_dense: cond_fn(*carried_vals, *additional_inputs), body_fn the same
    args = ["cond_fn_0", "body_0", ("i", 0), ("w", 1.5)]
    assert _feeds(hop, args, 4, index) == [("i", "carry[0]", ""), (None, "carry[1]", "0"),
                                           ("w", "", ""), (None, "", "1.5")]


def test_while_loop_by_keyword():
    kwargs = {"carried_inputs": ["i"], "additional_inputs": ["w"]}
    assert _feeds("while_loop", ["cond_fn_0", "body_0"], 2, kwargs=kwargs) == [("i", "carry[0]", ""), ("w", "", "")]


def test_map_slices_then_pos_args():
    # map.py map_dense: f(*inp, *pos_args) for inp in _unstack_pytree(xs)
    assert _feeds("map_impl", ["body_0", ["x", "y"], ["z", 2]], 4) == [
        ("x", "slice of xs[0]", ""), ("y", "slice of xs[1]", ""), ("z", "", ""), (None, "", "2")]
    assert _feeds("map_impl", ["body_0"], 2, kwargs={"xs": ["x"], "pos_args": ["z"]}) == [
        ("x", "slice of xs[0]", ""), ("z", "", "")]


def test_scan_carry_slices_additional_inputs():
    # scan.py generic_scan: operator(*carry, *[elem.select(dim, 0) for elem in xs], *additional_inputs)
    assert _feeds("scan", ["body_0", ["c0", 5], ["x0", "x1"], ["w"]], 5) == [
        ("c0", "carry[0]", ""), (None, "carry[1]", "5"), ("x0", "slice of xs[0]", ""),
        ("x1", "slice of xs[1]", ""), ("w", "", "")]
    kwargs = {"init": ["c0"], "xs": ["x0"], "additional_inputs": [7]}
    assert _feeds("scan", ["body_0"], 3, kwargs=kwargs) == [
        ("c0", "carry[0]", ""), ("x0", "slice of xs[0]", ""), (None, "", "7")]


def test_associative_scan_lhs_rhs_then_additional_inputs():
    # associative_scan.py generic_associative_scan: operator(*lhs leaves, *rhs leaves, *additional_inputs)
    assert _feeds("associative_scan", ["body_0", ["a", 3], ["w"]], 5) == [
        ("a", "lhs element of xs[0]", ""), (None, "lhs element of xs[1]", "3"),
        ("a", "rhs element of xs[0]", ""), (None, "rhs element of xs[1]", "3"), ("w", "", "")]
    assert _feeds("associative_scan", ["body_0"], 3, kwargs={"xs": ["a"], "additional_inputs": ["w"]}) == [
        ("a", "lhs element of xs[0]", ""), ("a", "rhs element of xs[0]", ""), ("w", "", "")]


_FLEX = ["q", "k", "v", "score_mod_0", (4, 4, "kv_num", "kv_idx_t", 128, 128, "mask_fn_0"), 0.5,
         {"PRESCALE_QK": False}, ("bias", 2), ("mbuf",)]


def test_flex_attention_score_mod_and_mask_mod():
    # flex_attention.py _math_attention_inner: score_mod(scores, b, h, m, n, *score_mod_other_buffers),
    # mask_mod(b, h, m, n, *mask_mod_other_buffers)
    assert _feeds("flex_attention", _FLEX, 7, 0) == [
        (None, "score", ""), (None, "b", ""), (None, "h", ""), (None, "q_idx", ""), (None, "kv_idx", ""),
        ("bias", "", ""), (None, "", "2")]
    assert _feeds("flex_attention", _FLEX, 5, 1) == [
        (None, "b", ""), (None, "h", ""), (None, "q_idx", ""), (None, "kv_idx", ""), ("mbuf", "", "")]


def test_flex_attention_buffers_by_keyword_or_absent():
    kwargs = {"score_mod_other_buffers": ("bias",), "mask_mod_other_buffers": ("mbuf",)}
    assert [f[0] for f in _feeds("flex_attention", _FLEX[:7], 6, 0, kwargs)] == [None] * 5 + ["bias"]
    assert _feeds("flex_attention", _FLEX[:8], 5, 1, kwargs) == [
        (None, "b", ""), (None, "h", ""), (None, "q_idx", ""), (None, "kv_idx", ""), ("mbuf", "", "")]
    # FlexAttentionHOP.__call__'s defaults: no buffers at all when neither position nor keyword is given
    assert [f[1] for f in _feeds("flex_attention", _FLEX[:7], 5, 0)] == ["score", "b", "h", "q_idx", "kv_idx"]
    assert [f[1] for f in _feeds("flex_attention", _FLEX[:7], 4, 1)] == ["b", "h", "q_idx", "kv_idx"]


def test_autograd_function_forward_and_backward():
    # torch/_functorch/autograd_function.py AutogradFunctionApply: forward runs fwd(*args) ->
    # (output, saved_values); backward runs bwd(*grad, *saved_values), one grad per output
    args = ["fwd_body_0", "bwd_body_0", "x", 2, "y"]
    assert _feeds("autograd_function_apply", args, 3, 0) == [("x", "", ""), (None, "", "2"), ("y", "", "")]
    result = {"fwd_body_0": (("o0", "o1"), ("s0",))}
    assert _feeds("autograd_function_apply", args, 3, 1, result=result) == [
        (None, "grad of output 0", ""), (None, "grad of output 1", ""), (None, "saved[0] of fwd_body_0", "")]
    one = {"fwd_body_0": ("o0", ["s0", "s1"])}  # a single output: one gradient
    assert _feeds("autograd_function_apply", args, 3, 1, result=one) == [
        (None, "grad of output 0", ""), (None, "saved[0] of fwd_body_0", ""), (None, "saved[1] of fwd_body_0", "")]


@pytest.mark.parametrize("result", [None, {"fwd_body_0": None}, {"fwd_body_0": ("o0",)},
                                    {"fwd_body_0": ("o0", ("s0",), "x")}, {"fwd_body_0": "o0"}])
def test_autograd_function_backward_without_a_readable_forward_is_a_problem(result):
    p = _problem("autograd_function_apply", ["fwd_body_0", "bwd_body_0", "x"], 2, 1, result=result)
    assert p == ("body 'body_0' called by 'call_0': the call passes 0 values for 2 placeholders; "
                 "their sources are unknown")


def test_autograd_function_backward_needs_the_forward_to_be_a_body():
    result = {"fwd_body_0": (("o0",), ())}
    assert _feeds("autograd_function_apply", ["fwd_body_0", "bwd_body_0"], 1, 1, result=result) == [
        (None, "grad of output 0", "")]
    # a result the reader would give for no body at all must not be asked for
    p = _problem("autograd_function_apply", ["x", "bwd_body_0"], 1, 1, result={"x": (("o0",), ()), "": (("o0",), ())})
    assert "passes 0 values for 1 placeholders" in p


def test_invoke_subgraph_operands_after_identifier():
    # invoke_subgraph.py: subgraph(*operands) for invoke_subgraph(subgraph, identifier, *operands)
    assert _feeds("invoke_subgraph", ["body_0", "subgraph_0", "y", 3], 2) == [("y", "", ""), (None, "", "3")]


def test_register_hook_grad_then_captured_values():
    # register_hook.py: hook_body(grad, *freevars) for register_hook(tensor, hook_body, *freevars)
    assert _feeds("register_hook", ["z", "hook_body_0", "l_y_"], 2) == [(None, "grad of the hooked tensor", ""),
                                                                        ("l_y_", "", "")]
    assert _feeds("register_hook", ["z", "hook_body_0"], 1) == [(None, "grad of the hooked tensor", "")]


@pytest.mark.parametrize("hop, head", [
    ("wrap", []), ("tag_activation_checkpoint", []), ("wrap_activation_checkpoint", []),
    ("wrap_with_set_grad_enabled", [True]), ("wrap_with_autocast", ["cpu", None, True, None]),
])
def test_wrap_family_passes_everything_after_the_body(hop, head):
    # wrap.py: Wrap func(*args); WrapWithSetGradEnabled / WrapWithAutocast wrapped_func(*args);
    # WrapActivationCheckpoint checkpoint(Interpreter(function).run, *args); TagActivationCheckpoint
    assert _feeds(hop, [*head, "body_0", "x", ("y", 4)], 3) == [("x", "", ""), ("y", "", ""), (None, "", "4")]


def test_hints_wrapper_flattens_args_and_kwargs():
    # hints_wrap.py hints_wrapper_dense: body_fn(*args, **kwargs)
    assert _feeds("hints_wrapper", ["body_0", ("x", "y"), {}], 2) == [("x", "", ""), ("y", "", "")]


def test_after_body_reads_after_the_last_body():
    assert _feeds("wrap", ["body_0", "x", "body_1", "y"], 1) == [("y", "", "")]


def test_a_constant_is_the_readers_text():
    r = CallReader(is_node=lambda v: False, body=lambda v: "", result=lambda a: None)
    feeds, _ = call_feeds("cond", ["p", "t", "f", ["s", 2.5]], {}, 0, 2, r)
    assert [f.constant for f in feeds] == ["'s'", "2.5"]  # default: repr
    r = CallReader(is_node=lambda v: False, body=lambda v: "", result=lambda a: None, constant=lambda v: f"<{v}>")
    feeds, _ = call_feeds("map_impl", ["f", [1], [2]], {}, 0, 2, r)
    assert [(f.node, f.supplied, f.constant) for f in feeds] == [(None, "slice of xs[0]", "<1>"), (None, "", "<2>")]


def test_count_mismatch_is_a_problem_not_a_guess():
    assert _problem("cond", ["gt", "body_0", "body_1", ("x", "y")], 3) == (
        "body 'body_0' called by 'call_0': the call passes 2 values for 3 placeholders; their sources are unknown")
    assert _problem("cond", ["gt", "body_0", "body_1", ("x", "y")], 1).startswith(
        "body 'body_0' called by 'call_0': the call passes 2 values for 1 placeholders")


def test_unknown_hop_reads_after_the_body_and_says_so_when_it_does_not_fit():
    assert _feeds("some_new_hop", ["body_0", "x"], 1) == [("x", "", "")]
    assert _problem("some_new_hop", ["body_0", "x", "y"], 1) == (
        "body 'body_0' called by 'call_0': the call passes 2 values for 1 placeholders (no layout known for "
        "HOP 'some_new_hop'; read as body(*values after the body)); their sources are unknown")


def test_no_body_among_the_arguments():
    assert _problem("wrap", ["x", "y"], 2) == (
        "body 'body_0' called by 'call_0': the call passes 0 values for 2 placeholders; their sources are unknown")
    assert call_feeds("wrap", ["x"], {}, 0, 0, _reader()) == ([], [])


def test_problem_names_default_to_empty():
    _, problems = call_feeds("cond", ["p", "t", "f", ()], {}, 0, 1, _reader())
    assert problems == ["body '' called by '': the call passes 0 values for 1 placeholders; their sources are unknown"]
