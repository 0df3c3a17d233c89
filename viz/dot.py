"""``viz.to_dot``: a ``tracer.model`` Graph as Graphviz DOT text, a pure function of the model.

Invariant: same graph and options give the same text; every user string (node names, targets,
module paths, meta) goes through graphviz's own ``escape`` + ``quote`` (never treated as an HTML
label), so hostile names stay text. Boxes, labels and grouping are the ones ``viz.layout`` draws
(:func:`viz.graph_layout.visible_boxes`): the same arguments give the same boxes.
"""

from __future__ import annotations

from typing import Iterable, Optional

from graphviz import escape, nohtml
from graphviz.quoting import quote

from tracer.model import Graph
from viz.graph_layout import visible_boxes
from viz.style import role_style

__all__ = ["RANKDIRS", "to_dot"]

RANKDIRS = ("TB", "LR", "BT", "RL")


def _id(text: str) -> str:
    return quote(escape(text))


def _label(*lines: str) -> str:
    # Note [DOT labels]: each line is escaped (backslashes doubled, so a user's "\l" is not a graphviz
    # escape); we then join with our own "\n" line breaks and mark the result as not-HTML before quoting.
    return quote(nohtml("\\n".join(escape(line) for line in lines if line)))


def to_dot(graph: Graph, *, rankdir: str = "TB", expanded: Iterable[str] = (), max_label: int = 40,
           threshold: Optional[int] = None) -> str:
    """DOT text for ``graph``: one box per visible node or collapsed module group, styled by role.

    Nodes fold into ``nn_module_stack`` groups exactly as :func:`viz.layout` folds them for the
    explorer and the report (:mod:`viz.grouping`): ``expanded`` names the opened module paths (the
    explorer's first view is ``viz.grouping.first_expanded(graph)``), ``threshold`` the node count
    above which a graph without module stacks groups (default :func:`viz.grouping.threshold_for`:
    a graph whose nodes carry module stacks groups at any size). Labels are the node name, then op/target and
    ``format_meta``, or a module box's path, type and node count.

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
    boxes, vis = visible_boxes(graph, expanded=expanded, threshold=threshold, max_label=max_label)
    lines = [
        f"digraph {_id(graph.name or 'root')} {{",
        f"\tgraph [fontname=monospace rankdir={rankdir}]",
        '\tnode [fontname=monospace fontsize=10 shape=box style="rounded,filled"]',
    ]
    for b in boxes:
        st = role_style(b.role)
        extra = ' style="rounded,filled,dashed"' if b.group is not None else ""
        lines.append(f"\t{_id(b.id)} [label={_label(b.label, b.sublabel)} class={_id('role-' + b.role)} "
                     f'color="{st.stroke}" fillcolor="{st.fill}"{extra}]')
    ranks = set(vis.ranking)  # a backward graph ranks along the gradient: Note [Saved edges do not rank]
    for (s, d), kind in zip(vis.edges, vis.kinds, strict=True):  # a saved value: Note [Saved values as their own edge kind]
        attrs = (["style=dashed"] if kind else []) + ([] if (s, d) in ranks else ["constraint=false"])
        lines.append(f"\t{_id(s)} -> {_id(d)}" + (f" [{' '.join(attrs)}]" if attrs else ""))
    drawn = set(vis.edges)
    lines.extend(f"\t{_id(s)} -> {_id(d)} [style=invis]" for s, d in vis.ranking if (s, d) not in drawn)
    lines.append("}")
    return "\n".join(lines) + "\n"
