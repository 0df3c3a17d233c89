"""HTML fragments for the explorer's panels: overview, speculations, lifted inputs, guards, partition, code.

Invariant: pure functions from ``tracer.model`` data to HTML text, and every string that came from
user code (names, reasons, source lines, reprs) goes through :func:`esc` before it is placed in markup.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from tracer.model import Aot, Capture, Frame, Graph, Guard, format_meta

__all__ = [
    "code_html",
    "esc",
    "guards_html",
    "lifted_html",
    "overview_html",
    "saved_html",
    "aot_tables_html",
    "speculations_html",
    "table",
]

# Pygments highlighting is linear but not free: a 16k-node graph's code is ~50k lines.
# Above this many lines the code view shows the plain (escaped) text instead.
MAX_HIGHLIGHT_LINES = 3000

_STYLE = (
    "<style>.ds-panel table{border-collapse:collapse;font:12px monospace;margin:2px 0 8px}"
    ".ds-panel th,.ds-panel td{border:1px solid #d0d7de;padding:2px 6px;text-align:left;vertical-align:top}"
    ".ds-panel th{background:#f6f8fa}.ds-panel h4{margin:8px 0 4px;font:bold 13px sans-serif}"
    ".ds-panel .ds-muted{color:#57606a}.ds-panel .ds-bad{color:#cf222e}"
    ".ds-panel tr.ds-saved td{background:#fff8c5}.ds-panel summary{cursor:pointer;font:bold 12px sans-serif}"
    ".ds-panel pre{margin:0;white-space:pre-wrap;word-break:break-word}"
    ".ds-panel table.ds-inspector td{word-break:break-word;max-width:360px}</style>"
)


def esc(value: Any) -> str:
    """HTML-escape ``str(value)``, quotes included (safe in text and in attribute values)."""
    return html.escape(str(value), quote=True)


def panel(body: str) -> str:
    """Wrap a fragment in the panel container with the shared styles."""
    return f'{_STYLE}<div class="ds-panel">{body}</div>'


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, row_class: Sequence[str] | None = None) -> str:
    """An HTML table; every cell is escaped, a multi-line cell keeps its lines."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{esc(row_class[i])}"' if row_class and row_class[i] else ""
        cells = "".join(f"<td>{esc(c).replace(chr(10), '<br>')}</td>" for c in row)
        body.append(f"<tr{cls}>{cells}</tr>")
    if not body:
        return '<div class="ds-muted">(none)</div>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def _ops(g: Graph) -> int:
    return sum(1 for n in g.nodes if n.op not in ("placeholder", "output"))


def overview_html(cap: Capture) -> str:
    """Frames with compile ids and source locations, graph breaks, recompiles, and the counts."""
    subgraphs = sum(len(f.subgraphs) for f in cap.frames)
    failed = sum(1 for f in cap.frames for s in f.speculations if not s.ok)
    guards = sum(len(f.guards) for f in cap.frames)
    counts = (
        f"<b>{esc(cap.fn or '?')}</b>: {len(cap.frames)} frame(s), {subgraphs} HOP subgraph(s), "
        f"{failed} failed speculation(s), {len(cap.graph_breaks)} graph break(s), "
        f"{len(cap.recompiles)} recompile(s), {guards} guard(s)"
    )
    frames = table(
        ["compile id", "code", "ops", "subgraphs", "speculations", "guards", "aot"],
        [
            [f.compile_id, f.code, _ops(f.graph), len(f.subgraphs), len(f.speculations), len(f.guards),
             repr(f.aot) if f.aot is not None else ""]
            for f in cap.frames
        ],
    )
    breaks = table(
        ["compile id", "location", "reason", "code line", "user stack"],
        [[b.compile_id, b.location, b.reason, b.code_line.strip(), "\n".join(b.user_stack)] for b in cap.graph_breaks],
    )
    recompiles = table(["compile id", "failed guard"], [[r.compile_id, r.reason] for r in cap.recompiles])
    return panel(
        f"<div>{counts}</div><h4>Frames</h4>{frames}<h4>Graph breaks</h4>{breaks}"
        f"<h4>Recompiles</h4>{recompiles}"
    )


def speculations_html(frame: Frame, *, compact: bool = False) -> str:
    """The frame's SubgraphTracer runs in start order; failed ones in red with their reason.

    ``compact``: one column (for a narrow sidebar): "ok wrap/wrap -> wrap_body_0 (lifted: y)".
    """
    rows, classes = [], []
    for s in frame.speculations:
        status = "ok" if s.ok else f"failed: {s.reason}"
        indent = "  " * (s.depth - 1)
        if compact:
            body = f" -> {s.subgraph}" if s.subgraph else ""
            lifted = f" (lifted: {', '.join(s.lifted)})" if s.lifted else ""
            rows.append([f"{indent}{'ok' if s.ok else 'FAILED'} {s.hop}/{s.description}{body}{lifted}"
                         + ("" if s.ok else f"\n{indent}  {s.reason}")])
        else:
            rows.append([f"{indent}{s.hop}/{s.description}", s.subgraph or "", ", ".join(s.lifted), status])
        classes.append("" if s.ok else "ds-bad")
    headers = ["speculation"] if compact else ["hop/description", "body", "lifted", "status"]
    return panel("<h4>Speculations</h4>" + table(headers, rows, row_class=classes))


def lifted_html(frame: Frame, graph_name: str) -> str:
    """The placeholders of the selected graph: for a HOP body, each input's kind and its source in the parent."""
    if graph_name == "":
        rows = [[n.name, n.role, n.target, format_meta(n.meta)] for n in frame.graph.placeholders]
        return panel("<h4>Root graph inputs</h4>" + table(["name", "role", "target", "value"], rows))
    sg = frame.subgraphs[graph_name]
    rows = [[i.name, i.kind, i.source or "?", format_meta(i.meta)] for i in sg.inputs]
    title = f"Inputs of {esc(sg.name)} [{esc(sg.hop)}], called by {esc(sg.call_node)} in {esc(sg.parent or 'root')}"
    return panel(
        f"<h4>{title}</h4><div class='ds-muted'>{len(sg.lifted)} lifted of {len(sg.inputs)}</div>"
        + table(["name", "kind", f"source in {sg.parent or 'root'}", "shape/dtype"], rows)
    )


def filter_guards(guards: Sequence[Guard], text: str) -> list[Guard]:
    """Guards whose kind, source, code or user stack contains ``text`` (case-insensitive)."""
    needle = text.strip().lower()
    if not needle:
        return list(guards)
    return [g for g in guards if needle in " ".join([g.kind, g.source, *g.code, *g.user_stack]).lower()]


def guards_html(guards: Sequence[Guard], text: str = "") -> str:
    """Guards grouped by kind (kinds in first-seen order), filtered by ``text``."""
    shown = filter_guards(guards, text)
    groups: dict[str, list[Guard]] = {}
    for g in shown:
        groups.setdefault(g.kind, []).append(g)
    parts = [f"<div class='ds-muted'>{len(shown)} of {len(guards)} guard(s)</div>"]
    for kind, gs in groups.items():
        rows = [[g.source, "\n".join(g.code), "\n".join(g.user_stack)] for g in gs]
        parts.append(
            f"<details open><summary>{esc(kind)} ({len(gs)})</summary>{table(['source', 'code', 'user stack'], rows)}</details>"
        )
    return panel("".join(parts))


def saved_html(aot: Aot) -> str:
    """Saved values (forward to backward) with sizes and the total."""
    rows = [[s.name, s.kind, format_meta({"kind": "tensor", "shape": s.shape, "dtype": s.dtype}) if s.kind == "tensor"
             else s.kind, s.nbytes] for s in aot.saved]
    return (
        f"<h4>Saved for backward: {len(aot.saved)} value(s), {aot.saved_bytes} bytes</h4>"
        + table(["name", "kind", "value", "bytes"], rows, row_class=["ds-saved"] * len(rows))
    )


def aot_tables_html(aot: Aot) -> str:
    """Mode, saved values, input mutations, output aliasing, synthetic bases, effect tokens, hooks."""
    head = (
        f"<div><b>AOTAutograd</b> {esc(aot.mode)}, partitioner {esc(aot.partitioner)}, "
        f"backward {'compiled' if aot.backward_ran else 'not run'}, effect tokens {aot.effect_tokens}</div>"
    )
    inputs = table(
        ["input", "mutates data", "mutates metadata", "mutation in graph", "requires grad", "parameter"],
        [[i.name, i.mutates_data, i.mutates_metadata, i.mutation_in_graph, i.requires_grad, i.is_parameter]
         for i in aot.inputs],
        row_class=["ds-bad" if (i.mutates_data or i.mutates_metadata) else "" for i in aot.inputs],
    )
    outputs = table(
        ["output", "alias", "base index"],
        [[o.name, o.alias, "" if o.base_index is None else o.base_index] for o in aot.outputs],
        row_class=["" if o.alias == "none" else "ds-bad" for o in aot.outputs],
    )
    bases = table(["synthetic base", "input indices"], [[i, ", ".join(map(str, b))] for i, b in enumerate(aot.synthetic_bases)])
    parts = [head, saved_html(aot), "<h4>Input mutations</h4>", inputs, "<h4>Output aliasing</h4>", outputs,
             "<h4>Synthetic bases</h4>", bases]
    hooks = aot.saved_tensor_hooks
    if hooks is not None:
        parts.append(f"<h4>Saved-tensor hooks</h4><div>applied to: {esc(', '.join(hooks.applied_to) or '(none)')}</div>")
        for label, g in (("pack", hooks.pack), ("unpack", hooks.unpack)):
            if g is not None:
                parts.append(f"<div><b>{label} hook graph</b> ({len(g.nodes)} nodes)</div>{code_html(g)}")
    return panel("".join(parts))


def code_html(graph: Graph, *, highlight: str = "") -> str:
    """``Graph.code`` highlighted with Pygments (escaped by its formatter); the line defining ``highlight`` marked."""
    text = graph.code or str(graph)
    lines = text.splitlines()
    if len(lines) > MAX_HIGHLIGHT_LINES:
        return panel(f"<div class='ds-muted'>{len(lines)} lines, shown without highlighting</div><pre>{esc(text)}</pre>")
    from pygments import highlight as pyg_highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    marked = []
    if highlight:
        prefixes = (f"{highlight} = ", f"{highlight}: ", f"{highlight} : ")
        marked = [i + 1 for i, line in enumerate(lines) if line.lstrip().startswith(prefixes)]
    fmt = HtmlFormatter(noclasses=True, nowrap=False, hl_lines=marked, style="default")
    return panel(f"<div style='overflow:auto;max-height:560px;font-size:12px'>{pyg_highlight(text, PythonLexer(), fmt)}</div>")
