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

if TYPE_CHECKING:
    from viz.graph_layout import Box

__all__ = ["DotResult", "cache_clear", "layout_source", "run_dot"]

# Note [dot limits]
# ~~~~~~~~~~~~~~~~~
# Measured on this machine (graphviz 2.43.0, 2 cores shared with other jobs) on viz.synthetic graphs,
# with our box sizes and -Gnslimit=1 -Gnslimit1=1 (network simplex capped), seconds for `dot -Tjson`:
#   chain_graph (short edges: a chain with residuals)
#     boxes:    300    600   1,000   1,500   2,000
#     virtual:  217    437     726   1,097   1,463
#     seconds:  0.2    0.7     2.2     5.0     9.5
#   joint_like_graph (a forward chain, then a backward chain reading saved values in reverse)
#     boxes:      100     150     200      250      300
#     virtual:  2,401   5,476   9,801   15,376   22,201
#     seconds:    0.1*    1.4     1.6      3.8     21.0      (* capped; uncapped it took 3.2 s)
# "virtual" counts the virtual nodes dot adds (one per row a long edge crosses): the joint graph's
# cost explodes with them, not with its boxes. So ``viz.layout`` sends a graph to dot only under
# DOT_MAX_BOXES and DOT_MAX_VIRTUAL (viz/graph_layout.py; about 1 s here) and still under a hard deadline;
# everything else gets the linear layout. Full network simplex is used only for tiny graphs
# (boxes + virtual < NSLIMIT_FROM): it draws nicer pictures but already took 3.2 s at 100 joint nodes.
NSLIMIT_FROM = 200

# Note [Layout DOT has no user strings]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The DOT we lay out names boxes by position (n0, n1, ...) and has no labels: sizes are given, so
# the text dot reads contains nothing from user code, nothing to escape, and names map back exactly.
# (graphviz keeps backslashes in quoted IDs, so escaped user names would not round-trip.) The DOT a
# user sees, ``viz.to_dot``, does carry names and labels, escaped; see viz/dot.py.
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


def layout_source(boxes: list[Box], edges: list[tuple[str, str]], rankdir: str = "TB",
                  ranking: Optional[list[tuple[str, str]]] = None) -> str:
    """DOT text whose layout gives our boxes (fixed sizes, no labels) and edges.

    Boxes are named ``n0, n1, ...`` by position (Note [Layout DOT has no user strings]). With ``ranking``
    (box id pairs; Note [Saved edges do not rank] in viz/backward_groups.py) an edge not in it carries
    ``constraint=false``, and a ranking edge not drawn is added ``style=invis``.
    """
    index = {b.id: f"n{i}" for i, b in enumerate(boxes)}
    lines = [
        "digraph layout {",
        f"\tgraph [rankdir={rankdir} nodesep=0.25 ranksep=0.45]",
        '\tnode [shape=box fixedsize=true label=""]',
    ]
    for b in boxes:
        lines.append(f"\t{index[b.id]} [width={b.w / 72:.3f} height={b.h / 72:.3f}]")
    ranks = set(edges if ranking is None else ranking)
    for s, d in edges:
        lines.append(f"\t{index[s]} -> {index[d]}" + ("" if (s, d) in ranks else " [constraint=false]"))
    drawn = set(edges)
    for s, d in ranking or ():
        if (s, d) not in drawn:
            lines.append(f"\t{index[s]} -> {index[d]} [style=invis]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def cache_clear() -> None:
    _cache.clear()


def run_dot(source: str, deadline: float, *, capped: bool) -> Optional[DotResult]:
    """Lay out ``source`` with ``dot -Tjson`` within ``deadline`` seconds; None if dot is missing, fails or is slow.

    Failures are cached like results, so a graph too slow for dot costs its deadline once per session.
    """
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
