"""Where the partitioner put each node of an AOT joint graph, from the node names of the forward and backward graphs it returned.

Invariant: torch-free and shared by the live capture (tracer/_torch/aot_graphs.py, names read from
the GraphModules the real partitioner returned) and the log loader (tracer/trace_log/assemble.py,
names read from the logged forward and backward graphs): the two cannot drift apart. A joint node
is tagged only by where a returned graph holds a node of its name, never by where its tags suggest
it might go.
"""

from __future__ import annotations

from typing import Iterable

from tracer.model.graph import Graph

__all__ = ["tag_partition_by_names"]

_SKIP_OPS = ("placeholder", "output")


def tag_partition_by_names(joint: Graph, fw_ops: Iterable[str], bw_ops: Iterable[str], fw_in: Iterable[str],
                           bw_in: Iterable[str]) -> None:
    """``meta["partition"]`` ("forward" / "backward"), ``meta["recomputed"]`` and ``meta["dead"]`` on
    ``joint``'s nodes, given the computing-node and placeholder names of the forward and backward graphs.

    A computing node the forward graph holds is "forward" (``recomputed`` too when the backward holds
    one of its name: min-cut recomputes it); else "backward" when the backward holds it; else ``dead``.
    A placeholder neither graph reads is "backward" when its descriptor says tangent or backward
    token, else "forward".
    """
    fw_ops, bw_ops, fw_in, bw_in = set(fw_ops), set(bw_ops), set(fw_in), set(bw_in)
    for n in joint.nodes:
        if n.op == "output":
            continue
        if n.op == "placeholder":
            part = "forward" if n.name in fw_in else "backward" if n.name in bw_in else None
            if part is None:
                part = (
                    "backward"
                    if str(n.meta.get("desc", "")).startswith(("TangentAOTInput", "BackwardToken"))
                    else "forward"
                )
        elif n.name in fw_ops:
            part = "forward"
            if n.name in bw_ops:
                n.meta["recomputed"] = True  # min-cut recomputes it in the backward too
        elif n.name in bw_ops:
            part = "backward"
        else:
            n.meta["dead"] = True  # neither graph kept it
            continue
        n.meta["partition"] = part
