"""tracer/_torch/body_inputs.py reads a HOP call off hand-built ``torch.fx`` graphs (no compile).

What is checked is only the adapter's part: a parent value is a ``torch.fx.Node``, a body is a
``get_attr`` of a GraphModule submodule (not of a parameter, not of a missing attribute), a body's
result is its output node's argument, and keyword arguments are read too. The table itself is
tests/test_hop_feeds.py.
"""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx

from tracer._torch.body_inputs import call_feeds


def _body(n_in: int, result=None) -> torch.fx.GraphModule:
    g = torch.fx.Graph()
    phs = [g.placeholder(f"a{i}") for i in range(n_in)]
    g.output(result(g, phs) if result else tuple(phs))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def _module(build) -> tuple[torch.fx.GraphModule, torch.fx.Node]:
    root = torch.nn.Module()
    root.body_0 = _body(2)
    root.fwd_body_0 = _body(2, lambda g, p: ((g.call_function(operator.mul, (p[0], p[1])),), (p[0], p[1])))
    root.weight = torch.nn.Parameter(torch.ones(1))
    root.lin = torch.nn.Linear(1, 1)
    g = torch.fx.Graph()
    call = build(g, g.placeholder("x"), g.placeholder("y"))
    g.output(call)
    return torch.fx.GraphModule(root, g), call


def _fields(feeds) -> list[tuple]:
    return [(f.node.name if f.node is not None else None, f.supplied, f.constant) for f in feeds]


def test_nodes_and_constants_of_a_wrap_call():
    gm, call = _module(lambda g, x, y: g.call_function(operator.add, (g.get_attr("body_0"), x, 2)))
    feeds, problems = call_feeds(call, "wrap", 0, "body_0", 2, gm)
    assert problems == [] and _fields(feeds) == [("x", "", ""), (None, "", "2")]
    assert feeds[0].node is next(iter(gm.graph.nodes))  # the fx Node itself


@pytest.mark.parametrize("attr", ["weight", "lin"])
def test_a_parameter_or_plain_module_is_not_a_body(attr):
    gm, call = _module(lambda g, x, y: g.call_function(operator.add, (g.get_attr(attr), x, y)))
    feeds, problems = call_feeds(call, "wrap", 0, "body_0", 2, gm)
    assert feeds == [] and problems == [
        f"body 'body_0' called by {call.name!r}: the call passes 0 values for 2 placeholders; their sources are unknown"]


def test_a_missing_attribute_is_not_a_body():
    gm, call = _module(lambda g, x, y: g.call_function(operator.add, (g.get_attr("body_0"), x, y)))
    del gm.body_0
    feeds, problems = call_feeds(call, "wrap", 0, "body_0", 2, gm)
    assert feeds == [] and "passes 0 values for 2 placeholders" in problems[0]


def test_keyword_arguments_are_read():
    gm, call = _module(lambda g, x, y: g.call_function(
        operator.add, (g.get_attr("body_0"), x, g.get_attr("body_0")), {"operands": (y, x)}))
    feeds, problems = call_feeds(call, "cond", 1, "body_0", 2, gm)
    assert problems == [] and _fields(feeds) == [("y", "", ""), ("x", "", "")]


def test_autograd_function_backward_reads_the_forward_output():
    gm, call = _module(lambda g, x, y: g.call_function(
        operator.add, (g.get_attr("fwd_body_0"), g.get_attr("body_0"), x, y)))
    feeds, problems = call_feeds(call, "autograd_function_apply", 1, "body_0", 3, gm)
    assert problems == [] and _fields(feeds) == [
        (None, "grad of output 0", ""), (None, "saved[0] of fwd_body_0", ""), (None, "saved[1] of fwd_body_0", "")]
    feeds, _ = call_feeds(call, "autograd_function_apply", 0, "fwd_body_0", 2, gm)
    assert _fields(feeds) == [("x", "", ""), ("y", "", "")]
