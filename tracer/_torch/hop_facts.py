"""What each HOP's Dynamo handler allows, read from torch 2.13's own classes, for the notebooks that
teach it (``tracer._torch.hop_facts.flags()``) — so a tutorial asserts torch's real values and the
private names live here, listed in ``_symbols.py``, not in the notebooks.

Invariant: every value comes from the installed torch; nothing here is a copy of torch's table.
"""

from __future__ import annotations

from typing import Optional

__all__ = ["HANDLERS", "flags", "scan"]

# HOP -> its VariableTracker class in torch/_dynamo/variables/higher_order_ops.py (invoke_subgraph's
# lives in torch/_dynamo/variables/invoke_subgraph.py).
HANDLERS = {
    "wrap": "WrapHigherOrderVariable",
    "checkpoint": "CheckpointHigherOrderVariable",
    "autograd.Function": "AutogradFunctionApplyVariable",
    "cond": "CondHigherOrderVariable",
    "while_loop": "WhileLoopHigherOrderVariable",
    "scan": "ScanHigherOrderVariable",
    "associative_scan": "AssociativeScanHigherOrderVariable",
    "map": "MapHigherOrderVariable",
    "hints_wrapper": "HintsWrapperHigherOrderVariable",
    "strict_mode": "StrictModeHigherOrderVariable",
    "invoke_subgraph": "InvokeSubgraphHigherOrderVariable",
}


def flags() -> dict[str, dict[str, Optional[bool]]]:
    """Per HOP: ``fallback_to_eager`` (``_ALLOW_FALLBACK_TO_EAGER``: a graph break in the body makes
    the HOP run eagerly behind a graph break, instead of raising UncapturedHigherOrderOpError) and
    ``allow_side_effects`` (the body may mutate state outside it; None where the handler does not
    speculate with that switch, e.g. autograd.Function's)."""
    from torch._dynamo.variables import higher_order_ops, invoke_subgraph

    out = {}
    for hop, name in HANDLERS.items():
        cls = getattr(invoke_subgraph if hop == "invoke_subgraph" else higher_order_ops, name)
        side = getattr(cls, "allow_side_effects", None)
        out[hop] = {"fallback_to_eager": bool(cls._ALLOW_FALLBACK_TO_EAGER),
                    "allow_side_effects": None if side is None else bool(side)}
    return out


def scan(combine_fn, init, xs, **kwargs):
    """``torch._higher_order_ops.scan.scan``: the user-facing scan (no public ``torch.scan`` in 2.13)."""
    from torch._higher_order_ops.scan import scan as real

    return real(combine_fn, init, xs, **kwargs)
