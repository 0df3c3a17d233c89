"""Structure of the AOT graphs: node roles, the HOP bodies they call, and the joint's partition.

Invariant: ``meta["partition"]`` says where the real partitioner put a joint node (read from the
forward/backward modules it returned), not where the joint's tags suggest it might go.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.fx

from tracer.model import Graph
from tracer.partition import tag_partition_by_names

__all__ = ["body_attrs", "fx_node", "roles", "tag_partition"]

_SKIP_OPS = ("placeholder", "output")


def tag_partition(joint: Graph, fw: torch.fx.GraphModule, bw: torch.fx.GraphModule) -> None:
    """``meta["partition"]`` on joint nodes: where the real partitioner put each one (tracer/partition.py)."""
    tag_partition_by_names(
        joint,
        fw_ops=(n.name for n in fw.graph.nodes if n.op not in _SKIP_OPS),
        bw_ops=(n.name for n in bw.graph.nodes if n.op not in _SKIP_OPS),
        fw_in=(n.name for n in fw.graph.nodes if n.op == "placeholder"),
        bw_in=(n.name for n in bw.graph.nodes if n.op == "placeholder"),
    )


def roles(gm: torch.fx.GraphModule) -> dict[str, str]:
    """Node roles for an AOT graph: params by descriptor, HOP calls as "hop"."""
    from torch._ops import HigherOrderOperator

    out: dict[str, str] = {}
    for n in gm.graph.nodes:
        if n.op == "placeholder" and type(n.meta.get("desc")).__name__ in ("ParamAOTInput", "BufferAOTInput"):
            out[n.name] = "param"
        elif n.op == "call_function" and isinstance(n.target, HigherOrderOperator):
            out[n.name] = "hop"
    return out


def fx_node(gm: torch.fx.GraphModule, name: str) -> Optional[torch.fx.Node]:
    return next((n for n in gm.graph.nodes if n.name == name), None)


def body_attrs(gm: torch.fx.GraphModule, node: Optional[torch.fx.Node]) -> list[str]:
    """The submodule names a HOP call reads (its bodies), in argument order."""
    if node is None:
        return []
    out: list[str] = []
    for a in node.all_input_nodes:
        if a.op == "get_attr" and isinstance(a.target, str):
            try:
                obj = gm.get_submodule(a.target)
            except AttributeError:  # not a submodule (a parameter, a constant): not a body
                continue
            if isinstance(obj, torch.fx.GraphModule) and a.target not in out:
                out.append(a.target)
    return out
