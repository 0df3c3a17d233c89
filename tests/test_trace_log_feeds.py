"""Body input sources read from logged graph text (tracer/trace_log/body_feeds.py), no torch.

The graph texts are written the way torch 2.13 logs them (``print_readable`` of Dynamo's output
graph, as in a TORCH_TRACE ``dynamo_output_graph`` record); the expected Feeds follow the HOP
implementations cited in tests/test_hop_feeds.py.
"""

from __future__ import annotations

import re

import pytest

from tracer.trace_log.body_feeds import LogCalls, _Constant, read_arg
from tracer.trace_log.graph_text import parse_readable

MAP = '''class GraphModule(torch.nn.Module):
    def forward(self, L_y_: "f32[3][1]cpu", L_xs_: "f32[2, 3][3, 1]cpu"):
        l_y_ = L_y_
        l_xs_ = L_xs_
        child: "f32[2, 3][3, 1]cpu" = l_xs_.cos()
        map_body_0 = self.map_body_0
        map_impl = torch.ops.higher_order.map_impl(map_body_0, [l_xs_, child], [l_y_, -2, torch.float32])
        getitem: "f32[2, 3][3, 1]cpu" = map_impl[0];  map_impl = None
        return (getitem,)

    class map_body_0(torch.nn.Module):
        def forward(self, child_1: "f32[3][1]cpu", child_2: "f32[3][1]cpu", l_y_: "f32[3][1]cpu", k, d):
            mul: "f32[3][1]cpu" = child_1 * l_y_
            return (mul,)
'''

AUTOGRAD = '''class GraphModule(torch.nn.Module):
    def forward(self, L_w_: "f32[3][1]cpu", L_x_: "f32[3][1]cpu"):
        l_w_ = L_w_
        l_x_ = L_x_
        arg: "f32[3][1]cpu" = l_w_.cos();  l_w_ = None
        fwd_body_0 = self.fwd_body_0
        bwd_body_0 = self.bwd_body_0
        autograd_function_apply = torch.ops.higher_order.autograd_function_apply(fwd_body_0, bwd_body_0, l_x_, arg, non_differentiable_idx = [], saved_for_backward_idx = [0, 1]);  fwd_body_0 = bwd_body_0 = l_x_ = arg = None
        getitem: "f32[3][1]cpu" = autograd_function_apply[0];  autograd_function_apply = None
        return (getitem,)

    class fwd_body_0(torch.nn.Module):
        def forward(self, l_x_: "f32[3][1]cpu", cos: "f32[3][1]cpu"):
            outs: "f32[3][1]cpu" = l_x_ * cos
            return ((outs,), (cos, l_x_))

    class bwd_body_0(torch.nn.Module):
        def forward(self, g: "f32[3][1]cpu", arg: "f32[3][1]cpu", l_x_: "f32[3][1]cpu"):
            mul: "f32[3][1]cpu" = g * arg
            return (mul, mul)
'''


WRAP = '''class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[3][1]cpu", L_y_: "f32[3][1]cpu"):
        l_x_ = L_x_
        l_y_ = L_y_
        _tensor_constant0 = self._tensor_constant0
        wrap_body_0 = self.wrap_body_0
        wrap = torch.ops.higher_order.wrap(wrap_body_0, _tensor_constant0, [l_x_], {'k': l_y_});  wrap_body_0 = None
        cond_true_0 = self.cond_true_0
        cond_false_0 = self.cond_false_0
        cond = torch.ops.higher_order.cond(l_x_, cond_true_0, cond_false_0, operands = (l_y_, 2))
        return (wrap, cond)

    class wrap_body_0(torch.nn.Module):
        def forward(self, c, x, y):
            return (x,)

    class cond_true_0(torch.nn.Module):
        def forward(self, y, k):
            return (y,)

    class cond_false_0(torch.nn.Module):
        def forward(self, y, k):
            return (y,)
'''


def _calls(text: str):
    p = parse_readable(text)
    (call,) = [n for n in p.graph.nodes if n.target in ("map_impl", "autograd_function_apply")]
    return LogCalls(p.graph, {a: c.graph for a, c in p.children.items()}), call


def _fields(feeds) -> list[tuple]:
    return [(f.node, f.supplied, f.constant) for f in feeds]


def test_map_slices_pos_args_and_constants_as_printed():
    calls, call = _calls(MAP)
    feeds, problems = calls.feeds(call, 0, "map_body_0", 5)
    assert problems == []
    assert _fields(feeds) == [("l_xs_", "slice of xs[0]", ""), ("child", "slice of xs[1]", ""), ("l_y_", "", ""),
                              (None, "", "-2"), (None, "", "torch.float32")]


def test_wrap_values_after_the_body_and_keywords():
    p = parse_readable(WRAP)
    calls = LogCalls(p.graph, {a: c.graph for a, c in p.children.items()})
    wrap, cond = (p.graph.node(name) for name in ("wrap", "cond"))
    feeds, problems = calls.feeds(wrap, 0, "wrap_body_0", 3)  # a get_attr of no body is a parent value
    assert problems == [] and _fields(feeds) == [("_tensor_constant0", "", ""), ("l_x_", "", ""), ("l_y_", "", "")]
    for index, body in enumerate(("cond_true_0", "cond_false_0")):
        feeds, problems = calls.feeds(cond, index, body, 2)
        assert problems == [] and _fields(feeds) == [("l_y_", "", ""), (None, "", "2")]


def test_autograd_function_backward_from_the_forward_return():
    calls, call = _calls(AUTOGRAD)
    feeds, problems = calls.feeds(call, 0, "fwd_body_0", 2)
    assert problems == [] and _fields(feeds) == [("l_x_", "", ""), ("arg", "", "")]
    feeds, problems = calls.feeds(call, 1, "bwd_body_0", 3)
    assert problems == [] and _fields(feeds) == [
        (None, "grad of output 0", ""), (None, "saved[0] of fwd_body_0", ""), (None, "saved[1] of fwd_body_0", "")]


def test_a_forward_without_one_return_is_a_problem():
    p = parse_readable(AUTOGRAD)
    p.children["fwd_body_0"].graph.nodes = [n for n in p.children["fwd_body_0"].graph.nodes if n.op != "output"]
    calls = LogCalls(p.graph, {a: c.graph for a, c in p.children.items()})
    (call,) = [n for n in p.graph.nodes if n.target == "autograd_function_apply"]
    feeds, problems = calls.feeds(call, 1, "bwd_body_0", 3)
    assert feeds == [] and problems == ["body 'bwd_body_0' called by 'autograd_function_apply': the call passes 0 "
                                        "values for 3 placeholders; their sources are unknown"]


def test_an_unreadable_argument_is_a_problem():
    calls, call = _calls(MAP)
    call.args[1] = "[l_xs_, child"
    feeds, problems = calls.feeds(call, 0, "map_body_0", 5)
    assert feeds == [] and len(problems) == 1
    assert problems[0].startswith("body 'map_body_0' called by 'map_impl': its arguments were not read from the "
                                  "log (SyntaxError: ")
    assert problems[0].endswith("; their sources are unknown")


@pytest.mark.parametrize("text, want", [
    ("[a, (b, 2)]", ["a", ("b", _Constant("2"))]),
    ("{'k': a, 'j': [None]}", {"'k'": "a", "'j'": [_Constant("None")]}),
    ("  other  ", _Constant("other")),  # a name that is no node of the graph is a constant
    ("torch.ops.aten.sin.default", _Constant("torch.ops.aten.sin.default")),
    ("()", ()),
])
def test_read_arg(text, want):
    assert read_arg(text, {"a", "b"}) == want


@pytest.mark.parametrize("text, error", [("{**a}", "a ** entry in a dict argument"), ("(*a,)", "a starred argument"),
                                         ("[a", "'[' was never closed (<unknown>, line 1)")])
def test_read_arg_refuses_what_fx_does_not_print(text, error):
    with pytest.raises((ValueError, SyntaxError), match=f"^{re.escape(error)}$"):
        read_arg(text, {"a"})
