"""Plain-text renderings of the model: the tree ``print(cap)`` shows.

Deterministic except for compile times (no addresses, no Dynamo-global ids): a frame's header
ends with ``compile 0.174 s``, torch's own measurement, which notebooks/sanitize.cfg masks for
nbval; :func:`times_table` (``cap.times()``) has every phase.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracer.model import Capture, Frame, Subgraph

__all__ = ["capture_tree", "frame_lines", "headline", "human_bytes", "plural", "seconds", "times_table"]

def headline(reason: str, width: int = 100) -> str:
    """The informative first line of a Dynamo reason: a graph break's type, not the generic
    "Encountered graph break when attempting to trace ..." preamble (:mod:`tracer.model.break_reason`);
    ``"?"`` for an empty reason."""
    from tracer.model.break_reason import parse_break_reason

    line = parse_break_reason(reason).gb_type or (reason or "").strip().partition("\n")[0] or "?"
    return line if len(line) <= width else line[: width - 3] + "..."


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


def plural(n: int, noun: str, nouns: str = "") -> str:
    """A count and its noun, singular for exactly one (``nouns`` when adding "s" is wrong).

    >>> plural(1, "compile attempt"), plural(0, "graph break"), plural(2, "op"), plural(2, "body", "bodies")
    ('1 compile attempt', '0 graph breaks', '2 ops', '2 bodies')
    """
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"


def human_bytes(n: int) -> str:
    """Bytes in binary units: ``human_bytes(304369152) == '290.3 MiB'``.

    >>> human_bytes(512), human_bytes(2048), human_bytes(304369152)
    ('512 B', '2.0 KiB', '290.3 MiB')
    """
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def seconds(value: float) -> str:
    """A duration the way every view shows it: three significant digits, never in e-notation.

    >>> seconds(0.17412), seconds(12.34), seconds(0.0000123)
    ('0.174 s', '12.3 s', '0.0000123 s')
    """
    if value >= 10:
        return f"{value:.1f} s"
    text = f"{value:.3g}"
    if "e" in text:
        text = f"{value:.7f}".rstrip("0").rstrip(".") or "0"
    return f"{text} s"


def frame_lines(f: Frame) -> list[str]:
    """One frame: header, its subgraph tree (with inputs), failed speculations, AOT summary."""
    if f.status != "compiled":
        lines = [f"frame {f.compile_id}  {f.code}  [{f.status}] {headline(f.status_reason)}"]
        for s in f.speculations:
            if not s.ok:
                lines.append(f"  ! speculation {s.hop}/{s.description} failed: {headline(s.reason.split(': ', 1)[-1])}")
        lines.extend(f"  ? {p}" for p in f.problems)
        return lines
    ops = sum(1 for n in f.graph.nodes if n.op not in ("placeholder", "output"))
    counts = [plural(ops, "op")]
    if f.subgraphs:
        counts.append(plural(len(f.subgraphs), "subgraph"))
    if f.speculations:
        counts.append(plural(len(f.speculations), "speculation"))
    counts.append(plural(len(f.guards), "guard"))
    took = f"  compile {seconds(f.times['total'])}" if "total" in f.times else ""
    lines = [f"frame {f.compile_id}  {f.code}  ({', '.join(counts)}){took}"]

    def walk(parent: str, indent: str) -> None:
        for sg in f.children(parent):
            short = sg.name.rsplit(".", 1)[-1]
            lines.append(f"{indent}{short}  [{sg.hop}]  called by {sg.call_node}{_inputs(sg)}")
            walk(sg.name, indent + "  ")

    walk("", "  ")
    for s in f.speculations:
        if not s.ok:
            lines.append(f"  ! speculation {s.hop}/{s.description} failed: {headline(s.reason.split(': ', 1)[-1])}")
    for p in f.passes:
        lines.append(f"  pass {p.name}: {p.nodes_before} -> {p.nodes_after} nodes")
    if f.aot is not None:
        a = f.aot
        if a.mode == "training" and not a.saved_known:
            lines.append("  aot: training, saved values not known (not in a log: cap.limits)")
        elif a.mode == "training":
            inputs = sum(s.nbytes for s in a.saved if s.origin == "input")
            unknown = sum(1 for s in a.saved if s.origin == "unknown")
            lines.append(f"  aot: training, {len(a.saved)} saved ({human_bytes(a.saved_bytes)}: "
                         f"{human_bytes(a.activation_bytes)} activations, {human_bytes(a.param_bytes)} parameters/buffers, "
                         f"{human_bytes(inputs)} inputs" + (f", {unknown} unknown" if unknown else "") + ")")
        else:
            lines.append(f"  aot: {a.mode}")
    lines.extend(f"  ? {p}" for p in f.problems)
    return lines


def capture_tree(cap: Capture) -> str:
    """``print(cap)``: frames -> subgraphs (with lifted inputs) -> counts of guards and breaks."""
    lines = [f"Capture of {cap.fn or '?'}: {len(cap.frames)} frame(s), {len(cap.graph_breaks)} graph break(s), "
             f"{len(cap.recompiles)} recompile(s)"]
    for f in cap.frames:
        lines.extend(frame_lines(f))
    for g in cap.grouped_breaks():
        where = f" in {', '.join(g.compile_ids)}" if g.compile_ids else ""
        count = f" (x{g.count})" if g.count > 1 else ""
        lines.append(f"graph break{count}{where} at {g.location}: {headline(g.gb_type or g.reason)}")
    for r in cap.recompiles:
        more = f" (and the guards of {len(r.failed) - 1} older cache entries)" if len(r.failed) > 1 else ""
        lines.append(f"recompile {r.compile_id}: {headline(r.reason)}{more}")
    if cap.export is not None:
        lines.extend(export_lines(cap))
    lines.extend(f"problem: {p}" for p in cap.problems)
    if cap.limits:  # Note [Limits of the source]: one quiet line, not problems
        lines.append(f"limits of the source: {len(cap.limits)} (what it cannot contain; see cap.limits)")
    return "\n".join(lines)


def export_lines(cap: Capture) -> list[str]:
    """A torch.export record: why it failed and what draft_export worked around, each with its user line."""
    run = cap.export
    if run is None:
        return []
    lines = []
    if run.failure is not None:
        lines.append(f"export failed ({'strict' if run.strict else 'non-strict'}): {run.failure}")
    lines.extend(f"draft_export: {d}" + (f" -> {d.workaround}" if d.workaround else "") for d in run.draft)
    for f in cap.frames:
        if f.export is not None:
            kinds = [i.kind for i in f.export.inputs]
            roles = ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds))
            mutated = f", mutates {sorted(set(f.export.mutated().values()))}" if f.export.mutated() else ""
            lines.append(f"program {f.compile_id} ({f.export.stage}): inputs {roles}; "
                         f"{plural(len(f.export.outputs), 'output')}{mutated}")
    return lines


def times_table(cap: Capture) -> str:
    """Compile time per attempt and phase, in seconds ("?" where torch did not report one)."""
    from tracer.model.kinds import TIME_PHASES

    head = f"{'frame':<10} {'status':<10}" + "".join(f" {p:>14}" for p in TIME_PHASES)
    rows = [head]
    for f in cap.frames:
        cells = "".join(f" {f.times[p]:>14.3f}" if p in f.times else f" {'?':>14}" for p in TIME_PHASES)
        rows.append(f"{f.compile_id:<10} {f.status:<10}{cells}")
    return "\n".join(rows)
