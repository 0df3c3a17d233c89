"""What a capture holds per node and per guard: equal texts one object, lists at their exact size, slotted
records (Note [Equal texts held once per conversion] in tracer/_torch/fx_graph.py, Note [Slots on the
per-node records] in tracer/model/graph.py).

The record must not change: each test checks that what is shared or made smaller still reads, compares,
edits and round-trips through JSON as before.
"""

from __future__ import annotations

import copy
import dataclasses
import struct
import sys

import pytest
import torch

import tracer
from tracer._torch.breaks import format_stack
from tracer.model import Guard, Node
from tracer.model.read_only import ReadOnlyError, ReadOnlyGuard, freeze_guards, read_only_guard
from tracer.model.serialize import to_plain

pytestmark = pytest.mark.timeout(300)


class _Repeats(torch.nn.Module):
    """Constants and targets every graph repeats: ``-1`` dims, ``[-1]`` sum dims, getitem of a chunk."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        left, right = self.a(x).relu().chunk(2, dim=-1)
        y = left.softmax(-1) * right.softmax(-1)
        return y.sum(-1) + y.cumsum(-1).sum(-1)


def _capture() -> tracer.Capture:
    torch.manual_seed(0)
    return tracer.capture(_Repeats(), torch.randn(3, 4, requires_grad=True), backward=True)


@pytest.fixture(scope="module")
def cap() -> tracer.Capture:
    """One capture the tests only read."""
    return _capture()


def _exact(items: list) -> int:
    """The bytes of a list holding ``items`` with no room for more."""
    return sys.getsizeof([]) + len(items) * struct.calcsize("P")


def _aot_nodes(cap: tracer.Capture) -> list[Node]:
    aot = cap.frames[0].aot
    return [n for g in (aot.joint, aot.forward, aot.backward) for n in g.nodes]


def test_equal_texts_of_one_compile_are_one_object(cap):
    nodes = _aot_nodes(cap)
    names = {n.name for n in nodes}
    texts: dict[str, set[int]] = {}
    for n in nodes:
        for t in [n.target, *(a for a in n.args if a not in names), *n.kwargs, *n.kwargs.values()]:
            texts.setdefault(t, set()).add(id(t))
    repeated = [t for t, ids in texts.items() if sum(1 for n in nodes for a in [n.target, *n.args] if a == t) > 1]
    assert "-1" in repeated and "[-1]" in repeated and "operator.getitem" in repeated  # the fixture has them
    assert {t: len(texts[t]) for t in repeated} == {t: 1 for t in repeated}


def test_shared_texts_leave_each_node_its_own_lists_and_the_json_unchanged():
    cap = _capture()  # edited below
    a, b = [n for n in _aot_nodes(cap) if n.target == "aten.sum.dim_IntList"][:2]
    assert a.args[1] is b.args[1] and a.args is not b.args and a.kwargs is not b.kwargs
    a.args.append("x")
    assert b.args[-1] != "x"
    a.args.pop()
    back = tracer.Capture.from_json(cap.to_json())
    assert to_plain(back.frames[0].aot) == to_plain(cap.frames[0].aot)
    assert back.to_json() == cap.to_json()


def test_a_nodes_lists_are_at_their_exact_size(cap):
    nodes = [n for g in (cap.frames[0].graph, *(lambda a: (a.joint, a.forward, a.backward))(cap.frames[0].aot))
             for n in g.nodes]
    for field in ("args", "inputs", "users"):
        sizes = [(sys.getsizeof(getattr(n, field)), _exact(getattr(n, field))) for n in nodes]
        assert [s for s, _ in sizes] == [exact for _, exact in sizes], field  # a list comprehension leaves room


def test_guards_hold_equal_texts_once_and_exact_stacks(cap):
    guards = cap.frames[0].guards
    by_text: dict[str, set[int]] = {}
    for g in guards:
        for t in [g.source, *g.code]:
            by_text.setdefault(t, set()).add(id(t))
    assert any(sum(1 for g in guards if g.source == t) > 1 for t in by_text)  # some source is guarded twice
    assert all(len(ids) == 1 for ids in by_text.values())
    assert all(sys.getsizeof(g.user_stack) == _exact(g.user_stack) for g in guards)
    assert all(sys.getsizeof(g.code) == _exact(g.code) for g in guards)


def test_format_stack_gives_an_exact_list():
    class Frame:
        def __init__(self, line: int) -> None:
            self.filename, self.lineno, self.name = "/a/model.py", line, "forward"

    out = format_stack([Frame(1)])
    assert out == ["model.py:1 in forward"] and sys.getsizeof(out) == _exact(out)


def test_a_guard_has_slots_and_reads_edits_copies_as_before():
    g = Guard("TENSOR_MATCH", "L['x']", ["check"], ["model.py:1 in forward"])
    assert not hasattr(g, "__dict__")
    with pytest.raises(AttributeError):
        g.extra = 1  # type: ignore[attr-defined]
    g.code.append("more")
    r = dataclasses.replace(g, source="L['y']")
    assert (r.kind, r.source, r.code, r.user_stack) == ("TENSOR_MATCH", "L['y']", ["check", "more"], g.user_stack)
    assert copy.deepcopy(g) == g and repr(g) == "Guard(TENSOR_MATCH, \"L['x']\")"


def test_a_read_only_guard_built_in_one_call_is_the_field_by_field_one():
    g = read_only_guard("TENSOR_MATCH", "L['x']", ["check"], ["model.py:1 in forward"])
    (f,) = freeze_guards([Guard("TENSOR_MATCH", "L['x']", ["check"], ["model.py:1 in forward"])])
    assert type(g) is type(f) is ReadOnlyGuard and not hasattr(g, "__dict__")
    assert g == f == Guard("TENSOR_MATCH", "L['x']", ["check"], ["model.py:1 in forward"])
    for write in (lambda: setattr(g, "kind", "x"), lambda: g.code.append("x"), lambda: g.user_stack.clear()):
        with pytest.raises(ReadOnlyError):
            write()
    plain = copy.deepcopy(g)
    assert type(plain) is Guard and plain == g
    plain.code.append("x")
    assert g.code == ["check"]


def test_equal_stack_traces_are_one_object_not_interned_and_the_table_is_bounded(cap, monkeypatch):
    """Note [One object per stack trace] in tracer/_torch/fx_graph.py: the joint, forward and backward
    graphs' equal traces are one object, not an interned one (immortal on Python 3.12), and the table
    forgets its oldest traces past its bound."""
    from tracer._torch import fx_graph

    traces: dict[str, set[int]] = {}
    for g in (cap.frames[0].graph, *(getattr(cap.frames[0].aot, k) for k in ("joint", "forward", "backward"))):
        for n in g.nodes:
            st = n.meta.get("stack_trace")
            if st:
                traces.setdefault(st, set()).add(id(st))
    assert traces and all(len(ids) == 1 for ids in traces.values())
    one = next(iter(traces))
    assert sys.intern("".join(one)) is not one  # an equal string is not found in the intern table

    monkeypatch.setattr(fx_graph, "_TRACES", {})
    monkeypatch.setattr(fx_graph, "_TRACES_MAX", 3)
    texts = [f"File \"x.py\", line {i}, in f\n    y = {i}" for i in range(5)]
    assert [fx_graph._one_trace(t) is t for t in texts] == [True] * 5
    assert list(fx_graph._TRACES) == texts[2:]  # the oldest two forgotten
    assert fx_graph._one_trace("".join(texts[4])) is texts[4]
