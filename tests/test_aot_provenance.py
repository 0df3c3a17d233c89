"""AOTAutograd (tracer/_torch/aot.py): every forward node with a user line maps back to a Dynamo node,
and every example case's AOT record is consistent.

Every expectation below is reasoned from AOTAutograd's own Notes and source, then checked against
the graphs torch really produced; each capture is also validated and round-tripped through JSON
(tests/aot_checks.py).
"""

from __future__ import annotations

import pytest
import torch
from aot_checks import _capture, _checked, _outputs, _tangents
from cases import CASES

pytestmark = pytest.mark.timeout(300)


# -- provenance ----------------------------------------------------------------------------------


def _provenance_cases():
    def mlp_like(x, w):
        y = torch.sin(x) @ w
        return y.relu().sum()

    def mutation(x):
        x.mul_(2)
        return x.mul(3)

    from torch.utils.checkpoint import checkpoint

    def ckpt(x):
        return checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False) * 2

    return {
        "mlp_like": (
            mlp_like,
            (torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)),
        ),
        "mutation": (mutation, (torch.randn(3, requires_grad=True).clone(),)),
        "checkpoint": (ckpt, (torch.randn(3, requires_grad=True),)),
        "inference": (mlp_like, (torch.randn(4, 4), torch.randn(4, 4))),
    }


@pytest.mark.parametrize("case", list(_provenance_cases()))
def test_every_forward_node_with_a_user_line_maps_to_a_dynamo_node(case):
    fn, args = _provenance_cases()[case]
    cap = _capture(fn, *args)
    frame = cap.frames[0]
    a = frame.aot
    graphs = frame.graphs()
    this_file = __file__
    checked = 0
    for g in (a.forward, a.backward, a.joint):
        if g is None:
            continue
        for n in g.nodes:
            src = n.meta.get("source")
            if n.op in ("placeholder", "output") or not src or src["file"] != this_file:
                continue
            origin = n.meta.get("from")
            assert origin is not None, f"{g.name}.{n.name} has a user line but no Dynamo node"
            dyn_graph = graphs[origin["graph"]]
            dyn = dyn_graph.node(origin["node"])
            assert origin["line"] == src["line"] and origin["file"] == this_file
            assert dyn.meta["source"]["line"] == src["line"]
            checked += 1
    assert checked >= 3
    # Primal placeholders map to the Dynamo placeholder of the same input.
    for p in a.forward.placeholders:
        if p.meta.get("desc", "").startswith("PlainAOTInput"):
            assert graphs[""].node(p.meta["from"]["node"]).op == "placeholder"
    if a.backward is not None:
        # A tangent is the gradient of a user output: it maps to the node Dynamo returns there.
        returned = graphs[""].output.inputs
        for t in _tangents(a.backward):
            if "PlainAOTOutput" in t.meta["desc"]:
                assert t.meta["from"]["node"] in returned
        # A saved value's backward placeholder has the origin of the forward node it holds.
        for s in a.saved:
            assert a.backward.node(s.name).meta.get("from") == a.forward.node(s.name).meta.get("from")


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_capture_case_has_a_consistent_aot_record(name, captured):
    """The capture core's shared cases (tests/cases.py): provenance and names hold up everywhere."""
    cap = _checked(captured(name))
    assert any(f.status == "compiled" for f in cap.frames)
    for frame in cap.frames:
        a = frame.aot
        if frame.status != "compiled":  # a restarted or graph-less attempt never reached the backend
            assert a is None and frame.graph.nodes == []
            continue
        assert a is not None, f"frame {frame.compile_id}: AOT did not run"
        graphs = frame.graphs()
        for g in (a.joint, a.forward, a.backward, a.inference, *a.subgraphs.values()):
            for n in g.nodes if g is not None else ():
                origin = n.meta.get("from")
                if origin is not None:
                    graphs[origin["graph"]].node(origin["node"])  # raises KeyError if missing
                    # A HOP body's seq_nr belong to another trace: never used there.
                    assert not (g.name in a.subgraphs and origin["via"] == "seq_nr")
                for body in n.calls:
                    assert body in a.subgraphs
        assert len(a.inputs) == len(frame.graph.placeholders)
        assert [i.name for i in a.inputs] == [p.name for p in frame.graph.placeholders]
        if a.mode == "training":
            assert [s.name for s in a.saved] == _outputs(a.forward)[len(_outputs(a.forward)) - len(a.saved) :]
