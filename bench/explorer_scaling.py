"""Explorer scaling: build time of ``viz.Explorer`` on synthetic FX graphs and on a real transformer,
and our layout of the transformer's joint graph against plain ``dot -Tsvg`` on the same DOT.

Invariant: every build starts with an empty ``dot`` layout cache, so repeated runs measure the work,
not the cache; ``dot`` runs under a hard cap (its process is killed) and a hit cap is reported as such.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from typing import Any, Optional

import viz
from bench.timing import fresh, median, timed
from tracer.model import Capture, Frame, Graph
from viz import layout_dot
from viz.synthetic import chain_graph

__all__ = ["DOT_CAP_SECONDS", "build_seconds", "dot_svg_seconds", "explorer_build", "joint_vs_dot", "run",
           "synthetic_capture"]

DOT_CAP_SECONDS = 120.0
UNGROUPED = 10**9  # a grouping threshold no graph reaches: every node is its own box


def synthetic_capture(n: int) -> Capture:
    """A one-frame Capture around ``viz.synthetic.chain_graph(n)`` (12 layers, like a transformer)."""
    return Capture(frames=[Frame(compile_id="0/0", code="synthetic.py:1 in forward", graph=chain_graph(n))],
                   fn="synthetic")


def explorer_build(cap: Capture) -> viz.Explorer:
    """What a cell showing ``cap`` builds: the explorer (DOT/layout/SVG of the first view, widget state)."""
    layout_dot.cache_clear()
    return viz.Explorer(cap)


def build_seconds(cap: Capture, repeat: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of ``repeat`` explorer builds of ``cap``, after one warm-up build."""
    explorer_build(cap)
    runs = [timed(lambda: explorer_build(cap)) for _ in range(repeat)]
    return median([t.wall for t in runs]), median([t.cpu for t in runs])


def first_view(cap: Capture) -> dict[str, Any]:
    """How many boxes the explorer's first view lays out, against the graph's node count; then the
    seconds (and boxes) of opening the biggest collapsed module box, as a user's first click would."""
    ex = explorer_build(cap)
    graph = ex.graph
    lay = viz.layout(graph, expanded=ex.expanded)
    out = {"nodes": len(graph.nodes), "boxes": len(lay.boxes), "grouped": lay.grouped, "engine": lay.engine}
    groups = [b for b in lay.boxes if b.group]
    if groups:
        biggest = max(groups, key=lambda b: b.count).group
        t = timed(lambda: ex.expand(biggest))
        after = viz.layout(graph, expanded=ex.expanded)
        out.update(expand_seconds=round(t.wall, 4), expanded_boxes=len(after.boxes), expanded_engine=after.engine)
    return out


def dot_svg_seconds(dot_text: str, cap: float) -> tuple[float, bool]:
    """Seconds plain ``dot -Tsvg`` takes on ``dot_text``; ``(cap, True)`` when it was killed at ``cap``."""
    with tempfile.NamedTemporaryFile("w", suffix=".dot", delete=False) as f:
        f.write(dot_text)
        path = f.name
    try:
        t = timed(lambda: _run_dot(path, cap))
        return (cap, True) if t.result is None else (t.wall, False)
    finally:
        os.unlink(path)


def _run_dot(path: str, cap: float) -> Optional[int]:
    try:
        return subprocess.run(["dot", "-Tsvg", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=cap).returncode
    except subprocess.TimeoutExpired:
        return None


def joint_vs_dot(joint: Graph, *, repeat: int = 5, cap: float = DOT_CAP_SECONDS) -> dict[str, Any]:
    """Our layout + SVG of every node of ``joint`` vs ``dot -Tsvg`` on ``viz.to_dot`` of every node."""

    def ours() -> str:
        layout_dot.cache_clear()
        return viz.to_svg(viz.layout(joint, threshold=UNGROUPED))

    def ours_first_view() -> str:
        layout_dot.cache_clear()
        return viz.to_svg(viz.layout(joint))

    ours()
    full = median([timed(ours).wall for _ in range(repeat)])
    grouped = median([timed(ours_first_view).wall for _ in range(repeat)])
    lay = viz.layout(joint, threshold=UNGROUPED)
    dot_s, hit = dot_svg_seconds(viz.to_dot(joint, threshold=UNGROUPED), cap)
    return {
        "joint_nodes": len(joint.nodes),
        "joint_layout_seconds": round(full, 4),
        "joint_layout_engine": lay.engine,
        "joint_first_view_seconds": round(grouped, 4),
        "joint_dot_seconds_capped": round(dot_s, 3),
        "joint_dot_cap_hit": hit,
        "joint_dot_cap_seconds": cap,
        "joint_dot_over_ours": round(dot_s / full, 1),
    }


def run(sizes: tuple[int, ...] = (1000, 4000, 16000), *, repeat: int = 5, transformer: Optional[Capture] = None,
        transformer_capture_seconds: Optional[float] = None, dot_cap: float = DOT_CAP_SECONDS) -> dict[str, Any]:
    """Explorer build times by graph size, the 16k/4k ratio, and (given a transformer Capture and its
    capture time) explorer build ÷ capture and the joint-graph layout against ``dot``."""
    out: dict[str, Any] = {"explorer_seconds": {}, "explorer_cpu_seconds": {}}

    def record(key: str, cap: Capture, n: int) -> None:
        wall, cpu = build_seconds(cap, n)
        out["explorer_seconds"][key], out["explorer_cpu_seconds"][key] = round(wall, 4), round(cpu, 4)

    for n in sizes:  # cheap builds: more repeats, the median is steadier
        record(str(n), synthetic_capture(n), 2 * repeat + 1)
    if len(sizes) >= 2:
        big, small = str(sizes[-1]), str(sizes[-2])
        # Note [Scaling in CPU time]: the ratio is of CPU seconds (ours plus dot's); wall seconds of a
        # 0.1 s build swing 5x when other jobs share the cores, CPU seconds do not.
        cpu = out["explorer_cpu_seconds"]
        key = f"explorer_scaling_{_k(sizes[-1])}_over_{_k(sizes[-2])}"
        out[key] = round(cpu[big] / cpu[small], 3)
        out[key + "_wall"] = round(out["explorer_seconds"][big] / out["explorer_seconds"][small], 3)
        out["first_view_largest"] = first_view(synthetic_capture(sizes[-1]))
    if transformer is not None:
        record("transformer12", transformer, repeat)
        out["first_view_transformer12"] = first_view(transformer)
        if transformer_capture_seconds:
            out["explorer_over_capture_transformer12"] = round(
                out["explorer_seconds"]["transformer12"] / transformer_capture_seconds, 4)
        joint = next((f.aot.joint for f in transformer.frames if f.aot is not None and f.aot.joint), None)
        if joint is not None:
            out.update(joint_vs_dot(joint, repeat=repeat, cap=dot_cap))
    fresh()
    return out


def _k(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)
