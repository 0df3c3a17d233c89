"""``viz.text_tree``: the plain-text tree of a Capture (the ``text/plain`` of its mimebundle).

Invariant: identical to ``str(cap)`` (deterministic: no addresses, no timings).
"""

from __future__ import annotations

from tracer.model import Capture

__all__ = ["text_tree"]


def text_tree(cap: Capture) -> str:
    """``str(cap)``: frames, subgraphs with their lifted inputs, failed speculations, breaks, recompiles."""
    return str(cap)
