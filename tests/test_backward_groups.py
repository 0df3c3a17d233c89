"""viz.backward_groups on real torch.compile captures: where torch gives no module, what the views show.

Compared with torch's own record: an epilogue ``copy_`` of a BatchNorm running stat shows in the module
that owns the buffer by the Dynamo input's Source (``graph_arg_source``); a backward node shows in the
"(no module)" box exactly when torch gave it no ``fwd_nn_module_stack``; saved values are their own edge kind.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import tracer  # noqa: E402
from tracer.trace_log.modules import owner_of  # noqa: E402
from viz.backward_groups import NO_MODULE  # noqa: E402
from viz.grouping import graph_chains, visible  # noqa: E402


class ConvBN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)
        self.c2, self.b2 = torch.nn.Conv2d(4, 4, 3), torch.nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.b1(self.c1(x)).relu()
        return self.b2(self.c2(x)).relu() + x[:, :, 1:-1, 1:-1]


@pytest.fixture(scope="module")
def frame() -> tracer.Frame:
    torch.manual_seed(0)
    cap = tracer.capture(ConvBN().train(), torch.randn(2, 3, 12, 12))
    (f,) = [f for f in cap.frames if f.aot is not None]
    return f


def test_running_stat_copies_show_in_the_module_owning_the_buffer(frame):
    dyn = {n.name: n for n in frame.graph.placeholders}
    for kind in ("forward", "joint"):
        g = getattr(frame.aot, kind)
        chains = graph_chains(g)
        copies = [(n, c) for n, c in zip(g.nodes, chains, strict=True) if n.target.startswith("aten.copy_")]
        assert len(copies) == 6  # running_mean, running_var, num_batches_tracked of two BatchNorms
        for n, chain in copies:
            assert not n.meta.get("nn_module_stack")  # torch gives the epilogue no stack
            src = dyn[g.node(n.inputs[0]).meta["from"]["node"]].meta["graph_arg_source"]  # torch's Source
            assert chain[-1][0] == owner_of(src), (n.name, src, chain)
            assert "nn_module_stack" not in n.meta  # display only: the record is untouched


def test_backward_nodes_without_a_forward_module_go_to_one_box(frame):
    g = frame.aot.backward
    chains = graph_chains(g)
    loose = [n.name for n, c in zip(g.nodes, chains, strict=True) if c and c[-1][0] == NO_MODULE]
    torch_none = [n.name for n in g.nodes if n.op not in ("placeholder", "output")
                  and not n.meta.get("fwd_nn_module_stack")]
    assert loose == torch_none and loose  # the relus and the residual add's backward run outside any module
    vis = visible(g, threshold=0)
    assert len({vis.item_of[name] for name in loose}) == 1
    flat = visible(g, threshold=10**9)  # node by node: each edge is one fx edge
    saved = {s for (s, _), k in zip(flat.edges, flat.kinds, strict=True) if k}
    values = {n.name for n in g.placeholders if not n.meta.get("desc", "").startswith("TangentAOTInput")}
    assert saved == values  # every saved activation and parameter the backward reads, and nothing else
