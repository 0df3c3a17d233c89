"""Two ranks' frames compared (``rank_diff``, ``compare_frames``): ``tracer.diff`` with what is
process-specific masked, and the lines of a "graph" or "guards" finding read from its FrameDiff.

Invariant: a rank's frame is compared by ``tracer.diff`` itself on copies whose guard code has only
process-specific ids and names masked, so a finding and the diff shown for it never disagree, and
two ranks that ran the same code in different processes are no finding (Note [Comparing frames
across ranks]). Neither frame is changed.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from tracer.diffing import diff
from tracer.graph_align import align
from tracer.model import Frame, FrameDiff, GraphDiff
from tracer.model.guards import Guard

__all__ = ["compare_frames", "rank_diff"]


# Note [Comparing frames across ranks]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The frames of two ranks are compared by ``tracer.diff`` (tracer/diffing.py), the same frame diff
# a recompile carries, so a divergence and the diff view shown for it never disagree. Two ranks run
# the same code in different processes, so what is process-specific must not count as a
# difference. Node names are none: diff aligns graphs by structure (Note [Graph alignment] in
# tracer/graph_align.py). Object and type ids in guard code are: ID_MATCH / TYPE_MATCH guards check
# ``___check_obj_id(L['self'], 140234...)`` and ``___check_type_id(..., 9482...)`` against ``id()``
# of objects of *this* process (torch/_dynamo/guards.py), so the same guard reads differently on
# every rank. So are the names of globals Dynamo installs with ``OutputGraph.install_global``
# (``G['__builtins_dict___3']['len']`` in BUILTIN_MATCH guards): ``unique_id`` numbers them with one
# counter per process (torch/_dynamo/bytecode_transformation.py), so a rank that compiled one more
# frame before names the same global differently. ``rank_diff`` diffs copies of the frames whose
# guard sources and code have every integer of 7 or more digits masked as ``<id>`` (no shape,
# constant or dtype in guard code is that long in practice), every object address ``at 0x7f...`` (torch
# 2.11 and 2.12 log an ID_MATCH guard's object with its repr: ``type=<code object inner at 0x7f...>``)
# as ``at <address>``, and every ``G['__name_N']`` as
# ``G['__name_<n>']``; a real difference next to a masked one still shows as other text that differs.
# From the FrameDiff: its guards make a "guards" finding; its inputs, symbols, graphs (root, HOP
# bodies, AOT graphs), bodies and AOT saved values a "graph" finding; both carry the FrameDiff.
# diff compares the root graph, which for a DDPOptimizer split is piece 0 (Frame.pieces); the other
# pieces are aligned here with the same aligner (tracer.graph_align.align).
def rank_diff(a: Frame, b: Frame) -> FrameDiff:
    """``tracer.diff(a, b)`` with process-specific ids in guard code masked. See Note [Comparing frames across ranks]."""
    return diff(_masked(a), _masked(b))


def _masked(f: Frame) -> Frame:
    """``f``, its guards masked: plain Guards only compared (``replace`` of a read-only one freezes it again)."""
    return dataclasses.replace(f, guards=[Guard(g.kind, _mask(g.source), [_mask(c) for c in g.code], g.user_stack)
                                          for g in f.guards])


def compare_frames(a: Frame, b: Frame) -> tuple[list[str], FrameDiff]:
    """One line per way frames ``a`` and ``b`` of two ranks differ, each starting with its kind
    ("graph ..." / "guards ..."), and the FrameDiff they were read from. See Note [Comparing frames across ranks]."""
    d = rank_diff(a, b)
    out: list[str] = []
    if len(a.pieces) != len(b.pieces):
        out.append(f"graph split into {len(a.pieces) or 1} vs {len(b.pieces) or 1} pieces (DDPOptimizer buckets)")
    else:
        for i in range(1, len(a.pieces)):
            gd = align(a.pieces[i].graph, b.pieces[i].graph)
            if gd:
                out.append(f"graph piece {i} differs: {_graph_text(gd)}")
    parts = _graph_parts(d)
    if parts:
        out.insert(0, "graph differs: " + "; ".join(parts))
    if d.guards:
        shown = ", ".join(f"{g.change} {g.kind} {g.source}".strip() for g in d.guards[:3])
        out.append(f"guards differ: {len(d.guards)} ({shown}{', ...' if len(d.guards) > 3 else ''})")
    return out, d


def _graph_parts(d: FrameDiff) -> list[str]:
    """What a FrameDiff says about the graphs, one short part each (the "graph" kind of Note [Kinds of divergence])."""
    parts = [str(i) for i in d.inputs[:3]] + ([f"{len(d.inputs) - 3} more input changes"] if len(d.inputs) > 3 else [])
    if d.symbols_added or d.symbols_removed:
        parts.append("symbols " + ", ".join([*(f"+{s}" for s in d.symbols_added), *(f"-{s}" for s in d.symbols_removed)]))
    for g in d.graphs:
        if g:
            name = g.a or "root" if g.a == g.b else f"{g.a or 'root'} ↔ {g.b or 'root'}"
            parts.append(f"{name}: {_graph_text(g)}")
    parts += [f"HOP body {bc.change}: {bc.a or bc.b}" for bc in d.bodies if bc.change != "changed"]
    if d.aot is not None and d.aot.mode_a != d.aot.mode_b:
        parts.append(f"AOT {d.aot.mode_a or 'none'} vs {d.aot.mode_b or 'none'}")
    if d.aot is not None and d.aot.saved:
        parts.append(f"saved for backward {d.aot.saved_bytes_a} vs {d.aot.saved_bytes_b} bytes")
    return parts


def _graph_text(g: GraphDiff) -> str:
    text = f"{len(g.changed)} changed, {len(g.added)} added, {len(g.removed)} removed nodes"
    first = g.changed[0] if g.changed else None
    return text + (f" ({first.b}: {'; '.join(first.changes)})" if first is not None else "")


_LONG_INT = re.compile(r"\d{7,}")
_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]+")  # an object's repr in logged guard code (torch 2.11, 2.12)
_INSTALLED_GLOBAL = re.compile(r"G\['(__\w+?)_\d+'\]")


@functools.lru_cache(maxsize=1 << 14)  # a pure function of the text; a job's ranks repeat most guards' code
def _mask(text: str) -> str:
    """``text`` with process-specific ids and global names masked. See Note [Comparing frames across ranks]."""
    return _INSTALLED_GLOBAL.sub(r"G['\1_<n>']", _LONG_INT.sub("<id>", _ADDRESS.sub("at <address>", text)))
