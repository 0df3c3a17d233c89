"""AOTAutograd (tracer/_torch/aot.py) on higher-order operators: ``invoke_subgraph`` survives into the
AOT graphs, activation checkpointing is desugared and recomputed in the backward.

Every expectation below is reasoned from AOTAutograd's own Notes and source, then checked against
the graphs torch really produced; each capture is also validated and round-tripped through JSON
(tests/aot_checks.py).
"""

from __future__ import annotations

import pytest
import torch
from aot_checks import _capture, _only_aot

pytestmark = pytest.mark.timeout(300)


# -- higher-order operators ----------------------------------------------------------------------


def test_invoke_subgraph_survives_into_aot():
    @torch.compiler.nested_compile_region
    def g(x):
        return torch.sin(x) * 2

    def f(x):
        return g(x) + g(x * 3)

    cap = _capture(f, torch.randn(4, requires_grad=True))
    a = _only_aot(cap)
    for graph, body_prefix in ((a.forward, "forward."), (a.backward, "backward.")):
        hops = graph.find(role="hop")
        assert len(hops) == 2 and all(h.target == "invoke_subgraph" for h in hops)
        for h in hops:
            (body,) = h.calls
            assert body.startswith(body_prefix) and body in a.subgraphs
    # The joint is the frame's (the bodies' own joints went through the partitioner first).
    assert a.joint.placeholders[0].meta["desc"] == "PlainAOTInput(idx=0)"
    assert len(a.joint.find(role="hop")) == 4  # two forward and two backward calls
    fw_body = a.subgraphs[a.forward.find(role="hop")[0].calls[0]]
    assert fw_body.find(target="aten.sin.default")
    bw_body = a.subgraphs[a.backward.find(role="hop")[0].calls[0]]
    assert bw_body.find(target="aten.cos.default")  # d/dx sin
    # Both calls share one body: a region compiled once.
    assert len({h.calls[0] for h in a.forward.find(role="hop")}) == 1
    # Each HOP call maps back to its own Dynamo invoke_subgraph node.
    dyn_calls = {n.name for n in cap.frames[0].graph.nodes if "invoke_subgraph" in n.target}
    assert {h.meta["from"]["node"] for h in a.forward.find(role="hop")} == dyn_calls


def test_checkpoint_is_desugared_and_recomputed():
    from torch.utils.checkpoint import checkpoint

    def g(x):
        return torch.sin(x).cos()

    def f(x):
        return checkpoint(g, x, use_reentrant=False) + 1

    cap = _capture(f, torch.randn(4, requires_grad=True))
    frame = cap.frames[0]
    a = _only_aot(cap)
    assert any(s.hop == "tag_activation_checkpoint" for s in frame.subgraphs.values())
    # AOT inlines the checkpoint HOP: no HOP left, and its body's ops are plain aten ops ...
    assert not a.forward.find(role="hop") and not a.backward.find(role="hop")
    (sin,) = a.forward.find(target="aten.sin.default")
    # ... whose activations are not saved but recomputed in the backward.
    assert [s.name for s in a.saved] == [a.forward.placeholders[0].name]
    assert a.joint.node(sin.name).meta.get("recomputed") is True
    assert sin.name in {n.name for n in a.backward.nodes}
    # Provenance points into the checkpoint body in the Dynamo graph.
    body = sin.meta["from"]["graph"]
    assert frame.subgraphs[body].hop == "tag_activation_checkpoint"
    assert sin.meta["from"]["node"] in {n.name for n in frame.subgraphs[body].graph.nodes}
