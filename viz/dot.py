"""``viz.to_dot``: a ``tracer.model`` Graph as Graphviz DOT text, a pure function of the model.

Invariant: same graph and options give the same text; every user string (node names, targets,
module paths, meta) goes through graphviz's own ``escape`` + ``quote`` (never treated as an HTML
label), so hostile names stay text. Boxes and grouping are the ones ``viz.layout`` draws.
"""

from __future__ import annotations

from typing import Iterable

from graphviz import escape, nohtml
from graphviz.quoting import quote

from tracer.model import Graph
from viz.grouping import GROUP_THRESHOLD, visible
from viz.style import GROUP_ROLE, node_labels, role_style, shorten

__all__ = ["RANKDIRS", "to_dot"]

RANKDIRS = ("TB", "LR", "BT", "RL")


def _id(text: str) -> str:
    return quote(escape(text))


def _label(*lines: str) -> str:
    # Note [DOT labels]: each line is escaped (backslashes doubled, so a user's "\l" is not a graphviz
    # escape); we then join with our own "\n" line breaks and mark the result as not-HTML before quoting.
    return quote(nohtml("\\n".join(escape(line) for line in lines if line)))


def to_dot(graph: Graph, *, rankdir: str = "TB", expanded: Iterable[str] = (), max_label: int = 40,
           threshold: int = GROUP_THRESHOLD) -> str:
    """DOT text for ``graph``: one box per visible node or collapsed module group, styled by role.

    Above ``threshold`` nodes, nodes fold into ``nn_module_stack`` groups (``expanded`` opens some;
    see :mod:`viz.grouping`). Labels are the node name, then op/target and ``format_meta``.

    >>> from tracer.model import Graph, Node
    >>> g = Graph([Node("x", "placeholder", "x", role="operand", users=["output"]),
    ...            Node("output", "output", "output", args=["x"], inputs=["x"], role="output")])
    >>> print(to_dot(g))  # doctest: +NORMALIZE_WHITESPACE
    digraph root {
        graph [fontname=monospace rankdir=TB]
        node [fontname=monospace fontsize=10 shape=box style="rounded,filled"]
        x [label="x\\ninput" class="role-operand" color="#2563eb" fillcolor="#dbeafe"]
        output [label="output\\nreturn x" class="role-output" color="#16a34a" fillcolor="#dcfce7"]
        x -> output
    }
    <BLANKLINE>
    """
    if rankdir not in RANKDIRS:
        raise ValueError(f"unknown rankdir {rankdir!r} (must be one of {list(RANKDIRS)})")
    vis = visible(graph, expanded, threshold)
    lines = [
        f"digraph {_id(graph.name or 'root')} {{",
        f"\tgraph [fontname=monospace rankdir={rankdir}]",
        '\tnode [fontname=monospace fontsize=10 shape=box style="rounded,filled"]',
    ]
    for it in vis.items:
        if it.node is not None:
            label, sub = node_labels(it.node, max_label)
            role = it.node.role
            extra = ""
        else:
            path = it.group or ""
            label = path if len(path) <= max_label else "\u2026" + path[-(max_label - 1):]
            typ = it.module_type.rsplit(".", 1)[-1]
            sub = f"{typ} \u00b7 {it.count} nodes" if typ else f"{it.count} nodes"
            sub = shorten(f"{it.partition} \u00b7 {sub}" if it.partition else sub, max_label)
            role = GROUP_ROLE
            extra = ' style="rounded,filled,dashed"'
        st = role_style(role)
        lines.append(f"\t{_id(it.id)} [label={_label(label, sub)} class={_id('role-' + role)} "
                     f'color="{st.stroke}" fillcolor="{st.fill}"{extra}]')
    for s, d in vis.edges:
        lines.append(f"\t{_id(s)} -> {_id(d)}")
    lines.append("}")
    return "\n".join(lines) + "\n"
