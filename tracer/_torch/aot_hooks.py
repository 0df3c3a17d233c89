"""Saved-tensor hooks AOTAutograd inlined into the forward and backward graphs
(torch/_functorch/_aot_autograd/graph_compile.py, ``maybe_inline_graph_saved_tensors_hooks``).

Invariant: what is reported is read from the graphs before and after torch inlined the hooks,
never predicted from ``saved_tensors_hooks_filtering_mode``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.fx

from tracer._torch.aot_meta import forward_outputs
from tracer._torch.fx_graph import graph_from_fx
from tracer.model import Aot, Graph, SavedTensorHooks

__all__ = ["HookSnapshot", "mark_hook_nodes", "saved_tensor_hooks", "snapshot"]

_SKIP_OPS = ("placeholder", "output")


# Note [Recording inlined saved-tensor hooks]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# With ``torch.autograd.graph.saved_tensors_hooks(pack_gm, unpack_gm)`` around a compiled call and
# both hooks GraphModules, AOTAutograd (``maybe_inline_graph_saved_tensors_hooks``) retraces the
# pack hook after each selected saved value in the forward and the unpack hook at the top of
# the backward, *after* the partitioner ran and before the compilers see the graphs. Which saved
# values it selects depends on ``torch._functorch.config.saved_tensors_hooks_filtering_mode``.
# We read the result instead of predicting it: the partition function takes a snapshot of the
# saved values and node names it returned, so a saved value the final forward no longer returns
# was replaced by its packed form (``applied_to``), and a node absent before is a hook node
# (``meta["saved_tensor_hook"]`` = "pack" / "unpack").


@dataclass
class HookSnapshot:
    """Names in the partitioner's forward/backward, before any hook was inlined."""

    forward: set[str] = field(default_factory=set)
    backward: set[str] = field(default_factory=set)
    saved: list[str] = field(default_factory=list)  # the forward's saved outputs, in order


def snapshot(
    fw_module: torch.fx.GraphModule, bw_module: torch.fx.GraphModule, num_fwd_outputs: object
) -> HookSnapshot:
    """Taken in the partition function, right after the real partitioner returned."""
    snap = HookSnapshot(
        forward={n.name for n in fw_module.graph.nodes},
        backward={n.name for n in bw_module.graph.nodes},
    )
    if isinstance(num_fwd_outputs, int):
        outs = forward_outputs(fw_module)
        snap.saved = [o.name for o in outs[num_fwd_outputs:] if isinstance(o, torch.fx.Node)]
    return snap


def saved_tensor_hooks(aot: Aot, snap: Optional[HookSnapshot]) -> Optional[SavedTensorHooks]:
    """The GraphModule hook pair AOT inlined into ``aot``'s graphs, if any; marks the hook nodes."""
    from torch._functorch._aot_autograd.utils import (
        saved_tensors_hooks_are_inlineable,
        top_saved_tensors_hooks,
    )

    hooks = top_saved_tensors_hooks()  # what AOTAutograd itself reads, in this same compile
    if snap is None or not saved_tensors_hooks_are_inlineable(hooks):
        return None
    pack_gm, unpack_gm = hooks
    final = {s.name for s in aot.saved}
    if aot.forward is not None:
        mark_hook_nodes(aot.forward, snap.forward, "pack")
    if aot.backward is not None:
        mark_hook_nodes(aot.backward, snap.backward, "unpack")
    return SavedTensorHooks(
        pack=graph_from_fx(pack_gm, "saved_tensors_hooks_pack"),
        unpack=graph_from_fx(unpack_gm, "saved_tensors_hooks_unpack"),
        applied_to=[name for name in snap.saved if name not in final],
    )


def mark_hook_nodes(g: Graph, before: set[str], kind: str) -> None:
    """``meta["saved_tensor_hook"] = kind`` on the nodes of ``g`` that were not there ``before``.

    In the backward that includes the packed values' placeholders (the unpack hook's inputs).
    """
    if not before:
        return
    for n in g.nodes:
        if n.name in before or n.op == "output":
            continue
        if n.op not in _SKIP_OPS or kind == "unpack":
            n.meta["saved_tensor_hook"] = kind
