"""Plain-text renderings of the model: the tree ``print(cap)`` shows.

Deterministic by construction (no addresses, no timings), so notebooks can compare it byte for byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracer.model import Capture, Frame


def _frame_lines(f: Frame) -> list[str]:
    ops = sum(1 for n in f.graph.nodes if n.op not in ("placeholder", "output"))
    lines = [f"frame {f.compile_id}  {f.code}  ({ops} ops, {len(f.guards)} guards)"]

    def walk(parent: str, indent: str) -> None:
        for sg in f.children(parent):
            short = sg.name.rsplit(".", 1)[-1]
            lifted = ", ".join(f"{i.name}<-{i.source or '?'}" for i in sg.inputs if i.kind.startswith("lifted"))
            lines.append(f"{indent}{short}  [{sg.hop}]  called by {sg.call_node}" + (f"  lifted: {lifted}" if lifted else ""))
            walk(sg.name, indent + "  ")

    walk("", "  ")
    failed = [s for s in f.speculations if not s.ok]
    for s in failed:
        lines.append(f"  ! speculation {s.hop}/{s.description} failed: {s.reason.splitlines()[0] if s.reason else '?'}")
    if f.aot is not None:
        a = f.aot
        lines.append(f"  aot: {a.mode}, {len(a.saved)} saved ({a.saved_bytes} bytes)")
    return lines


def capture_tree(cap: Capture) -> str:
    """``print(cap)``: frames -> subgraphs (with lifted inputs) -> counts of guards and breaks."""
    lines = [f"Capture of {cap.fn or '?'}: {len(cap.frames)} frame(s), {len(cap.graph_breaks)} graph break(s), "
             f"{len(cap.recompiles)} recompile(s)"]
    for f in cap.frames:
        lines.extend(_frame_lines(f))
    for b in cap.graph_breaks:
        lines.append(f"graph break at {b.location}: {b.reason.splitlines()[0] if b.reason else '?'}")
    for r in cap.recompiles:
        lines.append(f"recompile {r.compile_id}: {r.reason.splitlines()[0] if r.reason else '?'}")
    return "\n".join(lines)
