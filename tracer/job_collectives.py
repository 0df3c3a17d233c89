"""Collective nodes in a job's graphs, and their order compared across ranks (load_job's "collectives" finding).

Invariant: a collective is a ``call_function`` node of a rank's graphs (root, DDPOptimizer pieces,
HOP bodies) whose target names a c10d / functional collective, in compile and graph order; waits are
not collectives. Where no rank's graphs hold one, their order is not compared and the checked line
says so, never that the orders are equal.
"""

from __future__ import annotations

import re

from tracer.model import Capture, Divergence, Frame

__all__ = ["collectives", "compared_collectives", "frame_collectives"]

_COLLECTIVE = re.compile(r"c10d|torch\.distributed\.|all_reduce|all_gather|reduce_scatter|broadcast|all_to_all")


def collectives(cap: Capture) -> list[tuple[str, str]]:
    """(compile id, target) of every collective node in the capture's graphs, in compile and graph order
    (``_c10d_functional.wait_tensor`` waits for one: not counted)."""
    return [c for f in cap.frames for c in frame_collectives(f)]


def frame_collectives(f: Frame) -> list[tuple[str, str]]:
    """:func:`collectives` of one frame."""
    graphs = [p.graph for p in f.pieces] or [f.graph]
    graphs += [s.graph for s in f.subgraphs.values()]
    return [(f.compile_id, n.target) for g in graphs for n in g.nodes
            if n.op == "call_function" and _COLLECTIVE.search(n.target) and "wait_tensor" not in n.target]


def compared_collectives(seqs: dict[int, list[tuple[str, str]]]) -> tuple[list[Divergence], str]:
    """The "collectives" findings from each rank's sequence (:func:`collectives`), and the checked line."""
    if not any(seqs.values()):
        return [], ("collectives: no collectives in the graphs of any rank, so their order cannot be compared "
                    "(DDP's gradient allreduce runs in its reducer's autograd hooks, outside the compiled graphs)")
    ref = min(seqs)
    out = []
    for r in sorted(seqs):
        if r == ref or [t for _, t in seqs[r]] == [t for _, t in seqs[ref]]:
            continue
        a, b = seqs[ref], seqs[r]
        i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x[1] != y[1]), min(len(a), len(b)))
        ids = {ref: a[i][0] if i < len(a) else "", r: b[i][0] if i < len(b) else ""}
        out.append(Divergence("collectives", [ref, r], ids,
                              f"collective #{i} differs: rank {ref} {a[i][1] if i < len(a) else 'none'}, "
                              f"rank {r} {b[i][1] if i < len(b) else 'none'} ({len(a)} vs {len(b)} collectives)"))
    counts = ", ".join(f"rank {r}: {len(s)}" for r, s in sorted(seqs.items()))
    return out, f"collectives: order compared across ranks ({counts} collective nodes in the graphs)"
