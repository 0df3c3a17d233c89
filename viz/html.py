"""Static HTML of a Capture: the report shown without a widget frontend, and ``export_html``.

Invariant: self-contained (inline CSS and SVG, no script, no kernel) and deterministic (no ``id()``,
no timestamps, the pure-Python linear layout rather than ``dot``, whose output varies by version), so
notebooks can compare it byte for byte; every user string is escaped (``viz.panels.esc`` /
``html.escape``, Pygments for code). Tables come from :mod:`viz.panels`, shared with the explorer.
"""

from __future__ import annotations

import pathlib
from typing import Union

from tracer.model import Aot, Capture, Frame, Graph
from viz import panels
from viz.graph_layout import layout
from viz.grouping import default_expanded
from viz.panels import esc
from viz.style import ROLE_STYLE
from viz.svg import to_svg

__all__ = ["capture_html", "export_html", "frame_html", "graph_svg", "subgraph_tree_html"]

_STYLE = (
    "<style>.ds-report{font:13px/1.4 system-ui,sans-serif;color:#111827}"
    ".ds-report h2{font-size:16px;margin:12px 0 4px}.ds-report h3{font-size:14px;margin:10px 0 4px}"
    ".ds-report .ds-svg{overflow:auto;max-height:640px;border:1px solid #d0d7de;background:#fff}"
    ".ds-report ul.ds-tree{margin:2px 0 8px;padding-left:18px;font:12px monospace}"
    ".ds-report .ds-legend span{display:inline-block;margin-right:8px;padding:0 4px;border:1px solid;"
    "font:11px monospace}.ds-report details>summary{cursor:pointer}</style>"
)


def graph_svg(graph: Graph) -> str:
    """The SVG of ``graph`` for static output: linear layout (deterministic), big graphs grouped."""
    return to_svg(layout(graph, expanded=default_expanded(graph), engine="linear"))


def _legend() -> str:
    spans = "".join(f'<span style="background:{st.fill};border-color:{st.stroke}">{esc(st.title)}</span>'
                    for st in ROLE_STYLE.values())
    return f'<div class="ds-legend">{spans}</div>'


def subgraph_tree_html(frame: Frame) -> str:
    """Root graph -> HOP bodies nested as Dynamo built them, each with its HOP, caller and lifted count."""
    def walk(parent: str) -> str:
        kids = frame.children(parent)
        if not kids:
            return ""
        items = []
        for sg in kids:
            short = sg.name.rsplit(".", 1)[-1]
            lifted = ", ".join(f"{i.name}\u2190{i.source or '?'}" for i in sg.inputs if i.kind.startswith("lifted"))
            items.append(
                f"<li><b>{esc(short)}</b> [{esc(sg.hop)}] called by {esc(sg.call_node)}, "
                f"{len(sg.graph.nodes)} nodes, {len(sg.lifted)} lifted"
                + (f" ({esc(lifted)})" if lifted else "") + walk(sg.name) + "</li>"
            )
        return f'<ul class="ds-tree">{"".join(items)}</ul>'

    return (f'<ul class="ds-tree"><li><b>root graph</b> {len(frame.graph.nodes)} nodes'
            f"{walk('')}</li></ul>")


def _partition_html(aot: Aot) -> str:
    rows = []
    for name in ("joint", "forward", "backward", "inference"):
        g = getattr(aot, name)
        if g is not None:
            ops = sum(1 for n in g.nodes if n.op not in ("placeholder", "output"))
            inputs = sum(1 for n in g.nodes if n.op == "placeholder")
            rows.append([name, len(g.nodes), ops, inputs])
    summary = panels.table(["graph", "nodes", "ops", "inputs"], rows)
    return f"<h3>Partition</h3>{summary}{panels.aot_tables_html(aot)}"


def frame_html(frame: Frame) -> str:
    """One frame: subgraph tree, speculations, root graph SVG, lifted inputs, guards, partition, code."""
    parts = [
        f"<h2>Frame {esc(frame.compile_id)} <small>{esc(frame.code)}</small></h2>",
        "<h3>Subgraphs</h3>", subgraph_tree_html(frame),
        panels.speculations_html(frame),
        f"<h3>Root graph</h3>{_legend()}<div class='ds-svg'>{graph_svg(frame.graph)}</div>",
        "<h3>Inputs and lifted inputs</h3>", panels.lifted_html(frame, ""),
        *(panels.lifted_html(frame, name) for name in frame.subgraphs),
        f"<h3>Guards ({len(frame.guards)})</h3>", panels.guards_html(frame.guards),
    ]
    if frame.aot is not None:
        parts.append(_partition_html(frame.aot))
    parts.append(f"<details><summary>Code of the root graph</summary>{panels.code_html(frame.graph)}</details>")
    for name, sg in frame.subgraphs.items():
        parts.append(f"<details><summary>Code of {esc(name)}</summary>{panels.code_html(sg.graph)}</details>")
    return "<section class='ds-frame'>" + "".join(parts) + "</section>"


def capture_html(cap: Capture) -> str:
    """Self-contained HTML of ``cap``: overview, then per frame its subgraph tree, root graph SVG and tables.

    Used for the ``text/html`` mimebundle entry and by :func:`export_html`; deterministic.
    """
    frames = "".join(frame_html(f) for f in cap.frames)
    return f'{_STYLE}<div class="ds-report">{panels.overview_html(cap)}{frames}</div>'


def export_html(cap: Capture, path: Union[str, pathlib.Path]) -> pathlib.Path:
    """Write ``cap`` as one standalone HTML file that opens in any browser, no kernel; return its path."""
    p = pathlib.Path(path)
    title = esc(f"dynascope: {cap.fn or 'capture'}")
    doc = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>\n'
           f"<body>\n{capture_html(cap)}\n</body></html>\n")
    p.write_text(doc, encoding="utf-8")
    return p
