"""The AOT backward graph converted once (Note [The backward converted once] in tracer/_torch/aot.py).

A capture whose backward runs converts only the graph torch's backward compiler received; one whose
backward never runs converts the partitioner's backward when the capture ends. Both must record the
same graph: each test compares the two ways on real captures of the same seeded model, and the late
record read after ``del model`` and through JSON against the one read at once.
"""

from __future__ import annotations

import gc
import re

import pytest
import torch
from aot_checks import _capture, _only_aot

import tracer._torch.aot as aot_module
from tracer.model import Capture
from tracer.model.serialize import to_plain

pytestmark = pytest.mark.timeout(300)


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x))).sin()


@torch.compiler.nested_compile_region
def _region(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * 2


def _regions(x: torch.Tensor) -> torch.Tensor:
    """Two calls of one nested compile region: invoke_subgraph bodies in the joint, forward and backward."""
    return _region(x) + _region(x * 3)


MODELS = {"block": _Block, "regions": lambda: _regions}


def _model(name: str):
    torch.manual_seed(0)
    return MODELS[name]()


def _input() -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randn(3, 4, requires_grad=True)


# torch numbers each invoke_subgraph call from a process-wide counter and prints it in the graph text's
# annotations (torch/_higher_order_ops/invoke_subgraph.py, ``_next_invoke_subgraph_call_id``): two
# captures in one process differ there and only there, so the number is masked.
_CALL_ID = re.compile(r"'call_id': \d+")


def _backward_record(a) -> dict:
    """What a capture records of the backward: the graph, the HOP bodies it calls, in order."""
    bodies = {k: to_plain(g) for k, g in a.subgraphs.items() if k.startswith("backward.")}
    graph = to_plain(a.backward)
    graph["code"] = _CALL_ID.sub("'call_id': N", graph["code"])
    return {"backward": graph, "bodies": bodies, "order": list(a.subgraphs)}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_backward_recorded_at_the_end_equals_the_compiled_one(name):
    x = _input()
    ran = _only_aot(_capture(_model(name), x, backward=True))
    late = _only_aot(_capture(_model(name), x, backward=False))
    assert ran.backward_ran and not late.backward_ran
    assert late.backward is not None and late.backward.nodes and late.backward.code
    assert _backward_record(late) == _backward_record(ran)
    if name == "regions":  # the bodies path is exercised, not vacuous
        assert any(k.startswith("backward.") for k in late.subgraphs)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_backward_read_late_equals_read_early(name):
    model, x = _model(name), _input()
    cap = _capture(model, x, backward=False)
    early = cap.to_json()
    del model
    gc.collect()
    assert cap.to_json() == early
    loaded = Capture.from_json(early)
    assert _backward_record(_only_aot(loaded)) == _backward_record(_only_aot(cap))
    assert all(aot_module.PENDING_BACKWARD not in f.meta for f in cap.frames)


def test_a_backward_that_runs_is_converted_once(monkeypatch):
    converted: list[str] = []
    real = aot_module.graph_from_fx

    def counting(gm, name="", **kwargs):
        converted.append(name)
        return real(gm, name, **kwargs)

    monkeypatch.setattr(aot_module, "graph_from_fx", counting)
    _capture(_model("block"), _input(), backward=True)
    assert converted.count("backward") == 1 and converted.count("forward") == 1 and converted.count("joint") == 1
    converted.clear()
    _capture(_model("block"), _input(), backward=False)
    assert converted.count("backward") == 1  # at the end: a backward that never ran is still recorded
