"""Static HTML of a Capture: the report shown without a widget frontend, and each frame's section.

Invariant: self-contained (inline CSS, one inline script, no kernel, no network) and deterministic (no
``id()``, no timestamps, the pure-Python linear layout rather than ``dot``, whose output varies by
version), so notebooks can compare it byte for byte; rendered by autoescaping templates
(:mod:`viz.markup`), so every user string is escaped; Pygments escapes code. Every graph (root, HOP
bodies, AOT joint / forward / backward / inference) is sent as layout data and drawn by the explorer's
own drawing code (:mod:`viz.report_graphs`). Tables come from :mod:`viz.panels`, shared with the
explorer. Every compile attempt is shown, the ones that did not compile greyed. ``viz.export_html``
(:mod:`viz.report_file`) writes the one-file report, whose frame sections are :func:`frame_html`'s.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional

from tracer.model import TIME_PHASES, Aot, Capture, Frame, Graph
from viz import panels
from viz.code_view import frame_code_html, kernel_nodes
from viz.diff_view import decomposition_html, recompiles_html
from viz.export_view import signature_html
from viz.graph_layout import layout
from viz.grouping import first_expanded
from viz.markup import fragment, render
from viz.module_view import module_html
from viz.node_facts import node_facts_html
from viz.report_graphs import DrawingCache, canvas_css, report_data, report_script
from viz.style import ROLE_STYLE
from viz.svg import to_svg

__all__ = ["capture_html", "frame_html", "graph_svg", "subgraph_tree_html"]


def graph_svg(graph: Graph) -> str:
    """The SVG of ``graph`` for static output: linear layout (deterministic), grouped as the report's first view."""
    return to_svg(layout(graph, expanded=first_expanded(graph), engine="linear"))


def subgraph_tree_html(frame: Frame) -> str:
    """Root graph -> HOP bodies nested as Dynamo built them, each with its HOP, caller, lifted count
    and the inputs the HOP supplies."""
    return render("tree.html.j2", frame=frame)


_OP = operator.attrgetter("op")


def _partition_html(aot: Aot) -> str:
    rows = []
    for name in ("joint", "forward", "backward", "inference"):
        g = getattr(aot, name)
        if g is not None:
            kinds = list(map(_OP, g.nodes))  # counted at C speed: a training step's graphs are thousands of nodes
            inputs = kinds.count("placeholder")
            rows.append([name, len(kinds), len(kinds) - inputs - kinds.count("output"), inputs])
    return render("partition.html.j2", rows=rows, tables=fragment(panels.aot_tables_html(aot)))


def frame_html(frame: Frame, graphs: list[tuple[str, str, int, int]] = (), code: str = "", facts: str = "",
               cache: Optional[DrawingCache] = None) -> str:
    """One compile attempt: status (and why, if it did not compile), compile times, problems; with
    a graph also the subgraph tree, speculations, a box per graph of ``graphs`` (kind, title, index
    into the report's drawings, nodes; see :func:`viz.report_graphs.report_data`), module tree, lifted
    inputs, guards, partition, code, and above the root graph a chooser of its Inductor kernels (Note
    [One kernel chooser] in viz/report.js); ``code`` is the Code tab's HTML (:func:`viz.code_view.frame_code_html`),
    ``facts`` every node's inspector rows (:func:`viz.node_facts.node_facts_html`), shown under the graphs;
    ``cache``: the report's, whose ``text`` keeps the tables of shared node lists (Note [Tables of shared
    node lists] in viz/report_graphs.py)."""
    guards = fragment(panels.guards_html(frame.guards, report=True))
    code_tab = fragment(code) if code else None
    if not frame.has_graph:
        return render("frame.html.j2", frame=frame, phases=TIME_PHASES, guards=guards, code_tab=code_tab)
    root = next((i for kind, _, i, _ in graphs if kind == "root"), None)
    return render(
        "frame.html.j2", frame=frame, phases=TIME_PHASES,
        tree=fragment(subgraph_tree_html(frame)),
        signature=fragment(signature_html(frame)) if frame.export is not None else None,
        speculations=fragment(panels.speculations_html(frame)),
        legend=list(ROLE_STYLE.values()),
        graphs=list(graphs), facts=fragment(facts) if facts else None, kernels=kernel_nodes(frame),
        modules=fragment(_modules(frame, root, cache)),
        lifted=[fragment(_lifted(frame, name, cache)) for name in ["", *frame.subgraphs]],
        guards=guards,
        partition=fragment(_partition_html(frame.aot)) if frame.aot is not None else None,
        codes=[(name, fragment(panels.code_html(g, plain=True, link=_drawn(graphs, name)))) for name, g in frame.graphs().items()],
        code_tab=code_tab,
    )


def _modules(frame: Frame, root: Optional[int], cache: Optional[DrawingCache]) -> str:
    """``module_html``: a function of the root's and the AOT forward's nodes, the saved values, ``root``."""
    if cache is None:
        return module_html(frame, graph_index=root)
    aot = frame.aot
    fwd = aot.forward.nodes if aot is not None and aot.forward is not None else None
    saved = tuple((s.name, s.nbytes) for s in aot.saved) if aot is not None else None
    return cache.text((frame.graph.nodes, fwd), ("modules", frame.graph.name, root, aot is not None, saved),
                      lambda: module_html(frame, graph_index=root))


def _lifted(frame: Frame, name: str, cache: Optional[DrawingCache]) -> str:
    """``panels.lifted_html``: the root's a function of its nodes (a body's reads the frame's subgraph too)."""
    if cache is None or name:
        return panels.lifted_html(frame, name)
    return cache.text((frame.graph.nodes,), ("lifted",), lambda: panels.lifted_html(frame, ""))


def _drawn(graphs: list[tuple[str, str, int, int]], name: str) -> str:
    """The index of the drawing of Dynamo graph ``name`` ("": the root) among ``graphs``, "" when it is
    not drawn: a code block links its lines there (Note [Code lines link to nodes] in viz/view.js)."""
    kind, title = ("root", "") if not name else ("body", f"HOP body {name} [")  # viz.report_graphs.frame_graphs
    return next((str(i) for k, t, i, _ in graphs if k == kind and t.startswith(title)), "")


def capture_html(cap: Capture, frame_block: Optional[Callable[[Frame, str], str]] = None, *,
                 code: bool = False, facts: bool = False,
                 extra: Optional[Callable[[Frame, str, str], dict[str, Any]]] = None) -> str:
    """Self-contained HTML of ``cap``: overview, then per frame its graphs (drawn from layout data by
    the one embedded script), module tree and tables. ``frame_block(frame, html)`` may wrap each
    frame's section (the job view anchors them per rank). ``code``: also each frame's Code tab
    (original vs transformed code, resume functions, guard function, shapes, Inductor's output code
    and kernels), as the static report shows it. ``facts``: also every node's inspector rows as plain
    tables, for a page whose script does not run (Note [Node facts without a script] in viz/node_facts.py);
    ``extra(frame, graph kind, node)`` adds to each node's facts there (a profile's time).

    Used for the ``text/html`` mimebundle entry (with the node facts, without the Code tab: Dynamo's generated names and
    the guard function's measured latency differ run to run, and notebooks store this HTML) and by
    :func:`export_html` (with it); deterministic for a given capture.
    """
    data, per_frame = report_data(cap.frames)
    blocks = [frame_html(f, g, frame_code_html(cap, f) if code else "", node_facts_html(f, extra) if facts else "")
              for f, g in zip(cap.frames, per_frame, strict=True)]
    if frame_block is not None:
        blocks = [frame_block(f, b) for f, b in zip(cap.frames, blocks, strict=True)]
    return render("report.html.j2", overview=fragment(panels.overview_html(cap)),
                  frames=[fragment(b) for b in blocks],
                  diffs=fragment(recompiles_html(cap) + decomposition_html(cap)), data=fragment(data),
                  script=fragment(report_script()), canvas_css=fragment(canvas_css()))
