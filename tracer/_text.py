"""Plain-text renderings of the model: the tree ``print(cap)`` shows.

Deterministic by construction (no addresses, no timings, no Dynamo-global ids), so notebooks
can compare it byte for byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracer.model import Capture, Frame, Subgraph

__all__ = ["capture_tree", "frame_lines", "headline"]

_GENERIC = ("Encountered graph break when attempting to trace",)


def headline(reason: str, width: int = 100) -> str:
    """The informative first line of a Dynamo reason (skipping its generic preamble)."""
    lines = [ln.strip() for ln in (reason or "").splitlines() if ln.strip()]
    for ln in lines:
        if not ln.startswith(_GENERIC):
            return ln if len(ln) <= width else ln[: width - 3] + "..."
    return lines[0][:width] if lines else "?"


def _inputs(sg: Subgraph) -> str:
    ops = [i.name for i in sg.inputs if i.kind == "operand"]
    lifted = [f"{i.name}<-{i.source or '?'}" + (" (symbol)" if i.kind == "lifted_symbol" else "") for i in sg.inputs
              if i.kind.startswith("lifted")]
    parts = []
    if ops:
        parts.append("operands: " + ", ".join(ops))
    if lifted:
        parts.append("lifted: " + ", ".join(lifted))
    return ("  " + "  ".join(parts)) if parts else ""


def frame_lines(f: Frame) -> list[str]:
    """One frame: header, its subgraph tree (with inputs), failed speculations, AOT summary."""
    ops = sum(1 for n in f.graph.nodes if n.op not in ("placeholder", "output"))
    counts = [f"{ops} ops"]
    if f.subgraphs:
        counts.append(f"{len(f.subgraphs)} subgraphs")
    if f.speculations:
        counts.append(f"{len(f.speculations)} speculations")
    counts.append(f"{len(f.guards)} guards")
    lines = [f"frame {f.compile_id}  {f.code}  ({', '.join(counts)})"]

    def walk(parent: str, indent: str) -> None:
        for sg in f.children(parent):
            short = sg.name.rsplit(".", 1)[-1]
            lines.append(f"{indent}{short}  [{sg.hop}]  called by {sg.call_node}{_inputs(sg)}")
            walk(sg.name, indent + "  ")

    walk("", "  ")
    for s in f.speculations:
        if not s.ok:
            lines.append(f"  ! speculation {s.hop}/{s.description} failed: {headline(s.reason.split(': ', 1)[-1])}")
    if f.aot is not None:
        a = f.aot
        lines.append(f"  aot: {a.mode}, {len(a.saved)} saved ({a.saved_bytes} bytes)")
    return lines


def capture_tree(cap: Capture) -> str:
    """``print(cap)``: frames -> subgraphs (with lifted inputs) -> counts of guards and breaks."""
    lines = [f"Capture of {cap.fn or '?'}: {len(cap.frames)} frame(s), {len(cap.graph_breaks)} graph break(s), "
             f"{len(cap.recompiles)} recompile(s)"]
    for f in cap.frames:
        lines.extend(frame_lines(f))
    for b in cap.graph_breaks:
        where = f" in {b.compile_id}" if b.compile_id else ""
        lines.append(f"graph break{where} at {b.location}: {headline(b.reason)}")
    for r in cap.recompiles:
        lines.append(f"recompile {r.compile_id}: {headline(r.reason)}")
    return "\n".join(lines)
