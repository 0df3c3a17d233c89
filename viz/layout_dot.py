"""Running graphviz ``dot`` as a thin, bounded step: layout DOT text in, box centers and splines out.

Invariant: never blocks longer than its deadline (the ``dot`` process is killed), never raises for a
slow or missing ``dot`` (returns None), and caches results by the hash of the DOT text.
"""

from __future__ import annotations

import collections
import hashlib
import json
import shutil
import subprocess
from typing import TYPE_CHECKING, Optional

from graphviz import escape
from graphviz.quoting import quote

if TYPE_CHECKING:
    from viz.layout import Box

__all__ = ["DotResult", "cache_clear", "layout_source", "run_dot"]

# Note [dot limits]
# ~~~~~~~~~~~~~~~~~
# Measured on this machine (graphviz 2.43.0, 2 shared cores) with viz.synthetic graphs, laid out
# with -Gnslimit=1 -Gnslimit1=1 (network simplex capped):
#   chain_graph (short edges):  300 nodes 0.05 s, 1,000 0.33 s, 2,000 1.2 s, 4,000 ~5 s (issue: 13 s uncapped)
#   joint_like_graph (a forward chain, then a backward chain reading saved values in reverse):
#     100 nodes 0.08 s, 150 0.8 s, 200 0.9 s, 300 7.6 s, 600 > 30 s
# dot's cost follows the number of *virtual nodes* (one per row a long edge crosses), not the number
# of boxes: the 300-node joint graph has ~11k of them. So ``viz.layout`` sends a graph to dot only
# when both counts are small (DOT_MAX_BOXES, DOT_MAX_VIRTUAL in viz/layout.py), and still under a
# hard deadline; everything else gets the linear layout. NSLIMIT_FROM: below it full network
# simplex is cheap and draws nicer pictures.
NSLIMIT_FROM = 150
_CACHE_SIZE = 64
_cache: collections.OrderedDict[str, Optional["DotResult"]] = collections.OrderedDict()


class DotResult:
    """Box centers (y down), edge control points by (src, dst), and the drawing size, in points."""

    def __init__(self, centers: dict[str, tuple[float, float]], edges: dict[tuple[str, str], list[tuple[float, float]]],
                 width: float, height: float) -> None:
        self.centers = centers
        self.edges = edges
        self.width = width
        self.height = height


def _q(text: str) -> str:
    """A DOT ID for any string: graphviz's own escaping (backslashes, quotes) and quoting, never HTML."""
    return quote(escape(text))


def layout_source(boxes: list[Box], edges: list[tuple[str, str]], rankdir: str = "TB") -> str:
    """DOT text whose layout gives our boxes (fixed sizes, no labels) and edges."""
    lines = [
        "digraph layout {",
        f"\tgraph [rankdir={rankdir} nodesep=0.25 ranksep=0.45]",
        '\tnode [shape=box fixedsize=true label=""]',
    ]
    for b in boxes:
        lines.append(f"\t{_q(b.id)} [width={b.w / 72:.3f} height={b.h / 72:.3f}]")
    for s, d in edges:
        lines.append(f"\t{_q(s)} -> {_q(d)}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def cache_clear() -> None:
    _cache.clear()


def run_dot(source: str, deadline: float, *, capped: bool) -> Optional[DotResult]:
    """Lay out ``source`` with ``dot -Tjson`` within ``deadline`` seconds; None if dot is missing, fails or is slow."""
    key = hashlib.sha256(f"{capped}\n{source}".encode()).hexdigest()
    if key in _cache:
        _cache.move_to_end(key)
        return _cache[key]
    exe = shutil.which("dot")
    if exe is None:
        return None
    cmd = [exe, "-Tjson"] + (["-Gnslimit=1", "-Gnslimit1=1"] if capped else [])
    try:
        proc = subprocess.run(cmd, input=source.encode(), capture_output=True, timeout=deadline, check=False)
    except subprocess.TimeoutExpired:  # subprocess.run kills the child before raising
        result = None
    else:
        result = _parse(proc.stdout) if proc.returncode == 0 else None
    _cache[key] = result
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return result


def _points(pos: str) -> list[tuple[float, float]]:
    return [tuple(float(v) for v in p.split(",")[:2]) for p in pos.split()]  # type: ignore[misc]


def _parse(raw: bytes) -> Optional[DotResult]:
    try:
        data = json.loads(raw)
        x0, y0, x1, y1 = (float(v) for v in data["bb"].split(","))
    except (ValueError, KeyError):
        return None
    height = y1 - y0

    def flip(p: tuple[float, float]) -> tuple[float, float]:
        return (round(p[0] - x0, 1), round(height - (p[1] - y0), 1))

    objects = data.get("objects", [])
    names = {o["_gvid"]: o["name"] for o in objects}
    centers = {o["name"]: flip(_points(o["pos"])[0]) for o in objects if "pos" in o}
    edges: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for e in data.get("edges", []):
        pos = e.get("pos", "")
        start = end = None
        parts = []
        for tok in pos.split():
            if tok.startswith("e,"):
                end = flip(_points(tok[2:])[0])
            elif tok.startswith("s,"):
                start = flip(_points(tok[2:])[0])
            else:
                parts.append(flip(_points(tok)[0]))
        if not parts:
            continue
        if start is not None:
            parts = [start, start, parts[0], parts[0]] + parts[1:]
        if end is not None:
            parts = parts + [parts[-1], end, end]
        edges[(names[e["tail"]], names[e["head"]])] = parts
    return DotResult(centers, edges, round(x1 - x0, 1), round(height, 1))
