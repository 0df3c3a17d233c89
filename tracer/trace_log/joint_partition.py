"""Where the partitioner put each node of a logged AOT joint graph, and what its traced-order forward half tells the forward graph.

Invariant: torch-free; the partition is the live capture's rule (tracer/partition.py), fed with the
node names of the forward and backward graphs the log holds for the same compile (a joint logged
without both gets none); a forward-graph node takes a joint node's module only by equal name.
"""

from __future__ import annotations

import re
from typing import Optional

from tracer.model.graph import Graph
from tracer.partition import tag_partition_by_names
from tracer.trace_log.deferred import logged_nodes
from tracer.trace_log.modules import lines_with

__all__ = ["forward_half", "from_joint", "tag_logged_partition"]

_SKIP_OPS = ("placeholder", "output")


def _names(text: str, name: str) -> Optional[tuple[set[str], set[str]]]:
    """(computing-node names, placeholder names) of a logged graph text as loaded; None when it does not
    parse (its own read records why)."""
    nodes = logged_nodes(text, name)  # read, not copied
    if nodes is None:
        return None
    return {n.name for n in nodes if n.op not in _SKIP_OPS}, {n.name for n in nodes if n.op == "placeholder"}


def tag_logged_partition(joint: Graph, forward: tuple[str, int], backward: tuple[str, int]) -> None:
    """``meta["partition"]`` (and ``recomputed`` / ``dead``) on the nodes of a logged ``joint``, from the
    (text, log line) of the forward and backward graphs logged for the same compile. A placeholder
    neither reads is a tangent when its logged descriptor comment says so (``# TangentAOTInput(...)``)."""
    fw, bw = _names(forward[0], "forward"), _names(backward[0], "backward")
    if fw is None or bw is None:
        return
    tangents = {ln.split(":", 1)[0].strip() for ln in lines_with(joint.code, "# TangentAOTInput(")}
    tag_partition_by_names(joint, fw[0], bw[0], fw[1], bw[1] | tangents)


# Note [Joint forward half in traced order]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# AOTAutograd traces the joint graph with make_fx: it runs the Dynamo graph's nodes in order, each
# node's aten ops one after another, and only then the backward. So every node before the last one the
# joint returns as a forward output (its logged descriptor ``PlainAOTOutput(idx=k)``, or an input
# mutation or intermediate base: ``forward_half``) was traced in the forward, in traced order like the
# Dynamo graph -- the partition does not say this: the partitioner puts forward-traced nodes only the
# backward reads (a ``detach`` of a saved tanh) into the backward. The "between" rule of Note [Module groups from a log] (modules.py) holds there as
# it holds in the Dynamo graph: nodes traced between two nodes reading one module's parameters ran in
# their common module, when that module ran once (its parameters read by one Dynamo node each). The
# forward graph is cut from the joint by the partitioner, which keeps the joint's node names but may
# move nodes (GPT-2's forward ends with weight transposes the backward half traced), so it is not in
# traced order itself; a node of it takes the module of the joint node of the same name
# (``from_joint``), which is the same node. Nodes after the forward half (the backward, and what the
# partitioner moved from it) get no "between".


_FORWARD_OUT = re.compile(r"^\s*(\w+),?\s*#\s*(?:PlainAOTOutput|InputMutationAOTOutput|IntermediateBaseAOTOutput)\(")


def forward_half(joint: Graph) -> Optional[int]:
    """One past the last node of ``joint`` that its output names as a forward output (logged descriptor
    ``PlainAOTOutput`` and the like): every node before it was traced in the forward; None when the
    log names none (Note [Joint forward half in traced order])."""
    outs = {m.group(1) for ln in lines_with(joint.code, "AOTOutput(") if (m := _FORWARD_OUT.match(ln))}
    at = [k for k, n in enumerate(joint.nodes) if n.name in outs and n.op not in _SKIP_OPS]
    return max(at) + 1 if at else None


def from_joint(forward: Graph, joint: Graph) -> None:
    """Give each computing node of ``forward`` without a module the ``log_module`` the joint node of
    its name got by "between" (Note [Joint forward half in traced order])."""
    by_name = {n.name: n for n in joint.nodes}
    for n in forward.nodes:
        j = by_name.get(n.name)
        lm = j.meta.get("log_module") if j is not None and n.op not in _SKIP_OPS else None
        if lm is not None and lm.get("via") == "between" and "log_module" not in n.meta:
            n.meta["log_module"] = dict(lm, via="between", joint=True)
