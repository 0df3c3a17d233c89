"""What torch 2.12 brought that dynascope reads, and how torch 2.11 tells the same facts.

Invariant: one function per difference, each with the PyTorch PR that made it; the branch for 2.11
is the one marked ``# before 2.12``, so dropping 2.11 is deleting those lines (and the ``_symbols.py``
entries listed for 2.11 only).
"""

from __future__ import annotations

from typing import Any, Callable

from tracer._torch.releases import MissingHookPoint, lookup

__all__ = ["optimization_hint"]

_SHAPES = "torch.fx.experimental.symbolic_shapes"


# Note [Size hints before torch 2.12]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch 2.12 split the hint of a symbolic size into ``guarding_hint_or_throw`` and
# ``optimization_hint`` (pytorch/pytorch#175497, relanded as #177570) and dropped the module-level
# ``size_hint``. Both read the hint without adding a guard and take a fallback for an unbacked
# symbol, which is all ``aot_meta._hint`` asks (Note [Unbacked sizes in saved bytes]); 2.12 also
# hints unbacked symbols from user-provided hints first, which a capture never sets.
def optimization_hint() -> Callable[..., Any]:
    """``fn(symint, fallback=...)``: the int hint of a symbolic size, adding no guard."""
    try:
        return lookup(f"{_SHAPES}:optimization_hint")
    except MissingHookPoint:  # before 2.12
        return lookup(f"{_SHAPES}:size_hint")
