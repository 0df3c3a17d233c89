"""tracer/model/subgraph.py: the short texts and lookups of HOP bodies, their inputs and speculations."""

from __future__ import annotations

import pytest

from tracer.model import Speculation, Subgraph, SubgraphInput
from tracer.model.subgraph import CallSite


def _sg() -> Subgraph:
    return Subgraph("wrap_body_0.wrap_body_1", "wrap", "wrap_body_0", "wrap", inputs=[
        SubgraphInput("x", "operand", "l_x_"), SubgraphInput("y", "lifted_freevar", "cos"),
        SubgraphInput("s0", "lifted_symbol", "s0"), SubgraphInput("g", "hop_supplied", "", supplied="carry[0]")])


def test_input_repr_names_the_source_or_what_is_supplied():
    assert [repr(i) for i in _sg().inputs] == ["x:operand<-l_x_", "y:lifted_freevar<-cos", "s0:lifted_symbol<-s0",
                                               "g:hop_supplied<-carry[0]"]
    assert repr(SubgraphInput("z", "unknown", "")) == "z:unknown<-?"
    assert repr(SubgraphInput("c", "hop_supplied", "xs", supplied="slice of xs[0]")) == "c:hop_supplied<-xs"


def test_subgraph_lifted_depth_and_repr():
    sg = _sg()
    assert sg.lifted == ["y", "s0"] and sg.depth == 2
    assert repr(sg) == "Subgraph('wrap_body_0.wrap_body_1', hop='wrap', 4 inputs, 2 lifted)"
    assert repr(CallSite("wrap", ["l_x_"])) == "CallSite(wrap)"


def test_input_lookup_and_its_error_names_the_choices():
    assert _sg().input("s0").source == "s0"
    with pytest.raises(KeyError) as e:
        _sg().input("q")
    assert e.value.args[0] == ("no input 'q' in subgraph 'wrap_body_0.wrap_body_1' "
                               "(inputs: ['x', 'y', 's0', 'g'])")


def test_speculation_repr():
    assert repr(Speculation("cond", "true_fn", 1, True)) == "Speculation(cond/true_fn, depth=1, ok)"
    failed = Speculation("wrap", "wrap", 2, False, reason="Graph break in user code: " + "x" * 80)
    assert repr(failed) == f"Speculation(wrap/wrap, depth=2, failed: Graph break in user code: {'x' * 34})"  # the first 60 characters
