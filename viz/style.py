"""How each node role looks (fill, stroke, shape) and how big its box is: shared by DOT, SVG and HTML.

Invariant: one table (:data:`ROLE_STYLE`) covers every role in ``tracer.model.NODE_ROLES`` plus the
``"group"`` role of a collapsed module box, and box sizes depend only on label lengths, so the
``dot`` and the linear layout agree on sizes and output is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracer.model import NODE_ROLES, Node, format_meta

__all__ = [
    "BOX_H",
    "CHAR_W",
    "GROUP_ROLE",
    "ROLE_STYLE",
    "RoleStyle",
    "box_size",
    "css",
    "node_labels",
    "role_style",
    "shorten",
]

GROUP_ROLE = "group"
BACKWARD_FILL = "#ffe4e6"  # joint graphs: backward boxes are tinted, forward ones keep their role colour


@dataclass(frozen=True)
class RoleStyle:
    """Colours of one role."""

    fill: str
    stroke: str
    title: str  # human name, for legends


ROLE_STYLE: dict[str, RoleStyle] = {
    "operand": RoleStyle("#dbeafe", "#2563eb", "operand input"),
    "lifted_freevar": RoleStyle("#fef3c7", "#d97706", "lifted free variable"),
    "lifted_symbol": RoleStyle("#fce7f3", "#db2777", "lifted symbol"),
    "hop_supplied": RoleStyle("#ccfbf1", "#0d9488", "input the HOP supplies"),
    "param": RoleStyle("#e5e7eb", "#4b5563", "parameter / buffer"),
    "hop": RoleStyle("#ede9fe", "#7c3aed", "higher-order op call"),
    "output": RoleStyle("#dcfce7", "#16a34a", "output"),
    "op": RoleStyle("#ffffff", "#6b7280", "op"),
    "unknown": RoleStyle("#ffffff", "#9ca3af", "input of unknown kind (loaded log)"),
    GROUP_ROLE: RoleStyle("#f1f5f9", "#334155", "module group (collapsed)"),
}
assert set(NODE_ROLES) <= set(ROLE_STYLE), "every node role needs a style"


def role_style(role: str) -> RoleStyle:
    """The style of ``role``; an unknown role is drawn like "op" (the model's validate() reports it)."""
    return ROLE_STYLE.get(role, ROLE_STYLE["op"])


# Note [Box sizes from label lengths]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Labels are drawn in a 12px monospace font whose advance is 0.6em = 7.2px per character, so a
# box's width is a pure function of its longest line. Both layouts use these sizes (``dot`` gets them
# as fixedsize width/height), which keeps the SVG identical in shape whichever engine ran.
CHAR_W = 7.2
FONT_PX = 12
# Note [Readable first view]: labels are FONT_PX at scale 1; the canvas's "fit" (viz/view.js) never
# scales them below READABLE_PX. A graph too big for that starts at its top, centred or left-aligned,
# and the minimap shows where the view is.
READABLE_PX = 10
PAD_X = 10.0
BOX_H = 36.0
GROUP_H = 44.0
MIN_W = 56.0


def shorten(text: str, max_len: int) -> str:
    """``text`` on one line, cut to ``max_len`` characters with a trailing ellipsis."""
    text = " ".join(text.split())
    if max_len > 0 and len(text) > max_len:
        return text[: max(1, max_len - 1)] + "\u2026"
    return text


def _short_target(node: Node) -> str:
    t = node.target
    for prefix in ("torch.ops.higher_order.", "torch.ops.aten.", "aten.", "torch.", "operator.", "_operator."):
        if t.startswith(prefix) and len(t) > len(prefix):
            t = t[len(prefix):]
            break
    return t.removesuffix(".default")


def node_labels(node: Node, max_label: int = 40) -> tuple[str, str]:
    """(label, sublabel) of a node box: its name, then what it is (op/target and ``format_meta``).

    >>> from tracer.model import Node
    >>> node_labels(Node("mm", "call_function", "aten.mm.default", meta={"kind": "tensor", "dtype": "float32", "shape": ["s0", 3]}))
    ('mm', 'mm \u00b7 f32[s0, 3]')
    """
    meta = format_meta(node.meta)
    if node.op == "placeholder":
        what = node.role.replace("_", " ") if node.role != "operand" else "input"
    elif node.op == "output":
        what = "return " + ", ".join(node.inputs) if node.inputs else "return"
    elif node.op == "get_attr":
        what = f"get_attr {node.target}"
    elif node.role == "hop" and node.calls:
        what = f"{_short_target(node)}({', '.join(c.rsplit('.', 1)[-1] for c in node.calls)})"
    elif node.op == "call_method":
        what = f".{node.target}()"
    else:
        what = _short_target(node)
    sub = f"{what} \u00b7 {meta}" if meta else what
    return shorten(node.name, max_label), shorten(sub, max_label)


def box_size(label: str, sublabel: str, *, group: bool = False) -> tuple[float, float]:
    """(w, h) in px of a box holding these two lines. See Note [Box sizes from label lengths]."""
    w = max(len(label), len(sublabel)) * CHAR_W + 2 * PAD_X
    return round(max(MIN_W, w), 1), (GROUP_H if group else BOX_H)


def css(scope: str = ".ds-graph") -> str:
    """CSS for the SVG classes (``node``, ``role-*``, ``edge``, ``selected``, ``highlight``)."""
    rules = [
        f"{scope} text {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; "
        f"font-size: {FONT_PX}px; fill: #111827; }}",
        f"{scope} text.sub {{ fill: #4b5563; font-size: {FONT_PX - 1}px; }}",
        f"{scope} .edge path {{ fill: none; stroke: #94a3b8; stroke-width: 1.2; }}",
        f"{scope} .edge.highlight path {{ stroke: #f97316; stroke-width: 2; }}",
        f"{scope} .edge.saved path {{ stroke: #a78bfa; stroke-dasharray: 5 3; }}",
        f"{scope} .node rect, {scope} .group rect {{ stroke-width: 1.3; }}",
        f"{scope} .node.selected rect, {scope} .group.selected rect {{ stroke: #dc2626; stroke-width: 3; }}",
        f"{scope} .node.highlight rect, {scope} .group.highlight rect {{ stroke: #f97316; stroke-width: 2.5; }}",
        f"{scope} .group rect {{ stroke-dasharray: 5 3; }}",
    ]
    for role, st in ROLE_STYLE.items():
        rules.append(f"{scope} .role-{role} rect {{ fill: {st.fill}; stroke: {st.stroke}; }}")
    rules.append(f"{scope} .partition-backward rect {{ fill: {BACKWARD_FILL}; }}")
    return "\n".join(rules)
