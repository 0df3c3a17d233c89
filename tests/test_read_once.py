"""What a capture reads once: fake tensors per AOT compile (Note [Values read once per conversion] in
tracer/_torch/fx_values.py), the joint's ``seq_nr`` origins.

The record must not change: each test compares what a real capture records with the tables against
what it records with every value read again, and counts the reads the tables save.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx

import tracer
import tracer._torch.aot as aot_module
import tracer._torch.fx_values as fx_values
from tracer._torch.fx_graph import graph_from_fx
from tracer._torch.fx_values import ReadOnce
from tracer._torch.unknowns import recording_into
from tracer.model.serialize import to_plain

pytestmark = pytest.mark.timeout(300)


class _Block(torch.nn.Module):
    """A tuple-returning op (``chunk``: getitem nodes share its tensors) and a backward."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        left, right = self.a(x).relu().chunk(2, dim=-1)
        return (left * right.sin()).sum(-1)


def _capture() -> tracer.Capture:
    torch.manual_seed(0)
    model = _Block()
    x = torch.randn(3, 4, requires_grad=True)
    return tracer.capture(model, x, backward=True)


def _graphs(cap: tracer.Capture) -> list:
    frame = cap.frames[0]
    aot = frame.aot
    return [to_plain(g) for g in (frame.graph, aot.joint, aot.forward, aot.backward)] + [list(frame.problems)]


class _Forgetful(dict):
    """A tensor table that keeps nothing: every read is made again (the conversion before the tables)."""

    def __setitem__(self, key, value) -> None:
        pass


def _forgetful_init(self: ReadOnce) -> None:
    self.tensors = _Forgetful()
    self.texts = {}


def _counting(monkeypatch: pytest.MonkeyPatch) -> list:
    """The tensors read while converting AOT graphs (other reads, of the AOT inputs' metadata, are not
    graph conversions)."""
    reads: list = []
    inside = [False]
    real, convert = fx_values._tensor_meta, aot_module.graph_from_fx

    def counted(t):
        if inside[0]:
            reads.append(t)  # holds the tensor: ids below stay distinct
        return real(t)

    def converting(*args, **kwargs):
        inside[0] = True
        try:
            return convert(*args, **kwargs)
        finally:
            inside[0] = False

    monkeypatch.setattr(fx_values, "_tensor_meta", counted)
    monkeypatch.setattr(aot_module, "graph_from_fx", converting)
    return reads


def test_tensors_read_once_per_compile_record_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _counting(monkeypatch)
    shared = _capture()
    shared_reads = list(reads)
    reads.clear()
    with monkeypatch.context() as m:
        m.setattr(ReadOnce, "__init__", _forgetful_init)
        again = _capture()
    assert _graphs(shared) == _graphs(again)
    # every tensor read once: the joint's, forward's and backward's nodes share them, and getitem nodes
    # share the chunk's
    assert len(shared_reads) == len({id(t) for t in shared_reads})
    assert len(shared_reads) < len(reads)
    assert _round_trips(shared)


def _round_trips(cap: tracer.Capture) -> bool:
    """Through JSON and back, the record is the same (no shared object changes what is written)."""
    back = tracer.Capture.from_json(cap.to_json())
    return _graphs(back)[:4] == _graphs(cap)[:4]


def test_nodes_sharing_a_tensor_get_their_own_meta(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list = []
    real = fx_values._tensor_meta
    monkeypatch.setattr(fx_values, "_tensor_meta", lambda t: (reads.append(t), real(t))[1])
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(torch.neg, (x,))
    g.output(y)
    t = torch.zeros(2, 3)
    x.meta["val"] = y.meta["val"] = t
    graph = graph_from_fx(g)
    a, b = graph.node("x").meta, graph.node("neg").meta
    assert len(reads) == 1
    assert a == b == {"kind": "tensor", "shape": [2, 3], "stride": [3, 1], "dtype": "float32", "device": "cpu",
                      "requires_grad": False}
    assert a is not b and a["shape"] is not b["shape"] and a["stride"] is not b["stride"]
    a["shape"].append(7)
    assert b["shape"] == [2, 3]


class _NoDevice(torch.Tensor):
    @property
    def device(self):  # type: ignore[override]
        raise RuntimeError("no device here")


def test_a_read_that_said_a_problem_is_read_again() -> None:
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(torch.neg, (x,))
    g.output(y)
    t = torch.Tensor._make_subclass(_NoDevice, torch.zeros(2))
    x.meta["val"] = y.meta["val"] = t
    problems: list[str] = []
    with recording_into(problems):
        graph = graph_from_fx(g)
    assert len([p for p in problems if "the device of a _NoDevice" in p]) == 2  # once per node, as before
    assert "device" not in graph.node("x").meta and "device" not in graph.node("neg").meta


def test_joint_seq_nr_origins_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    graphs: list = []
    real = aot_module.seq_nr_origins

    def counted(fx_graph, index):
        graphs.append(fx_graph)
        return real(fx_graph, index)

    monkeypatch.setattr(aot_module, "seq_nr_origins", counted)
    cap = _capture()
    assert cap.frames[0].aot.backward_ran
    assert len(graphs) == 3  # the joint (by the partition), the forward, the backward
    assert len({id(g) for g in graphs}) == 3
