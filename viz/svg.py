"""``viz.to_svg``: a Layout drawn as one self-contained SVG string.

Invariant: pure and deterministic (same Layout, same bytes: no ids from ``id()``, no timestamps, fixed
number formatting), and every string from user code passes through ``html.escape`` before it is
written, so a node named ``<script>`` is text. Element ids are never built from user strings; boxes
are found by their ``data-node`` / ``data-group`` attributes.
"""

from __future__ import annotations

from html import escape
from typing import Iterable, Optional

from viz.graph_layout import Box, Edge, Layout
from viz.style import css

__all__ = ["to_svg"]

_ARROW = "ds-arrow"  # the one fixed element id; identical in every SVG, so inlining many is harmless


# Note [Attribute whitespace]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``html.escape`` covers & < > " ' but an XML parser (a standalone .svg file) turns a raw newline or
# tab inside an attribute value into a space, so ``data-node`` would no longer name the node. Those
# three characters are written as character references too.
_WS = str.maketrans({"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _attr(text: str) -> str:
    """``text`` escaped for a double-quoted attribute value, exactly round-tripping. See Note [Attribute whitespace]."""
    return escape(text).translate(_WS)


def _f(v: float) -> str:
    """Fixed, short number formatting (deterministic across runs)."""
    s = f"{v:.1f}"
    return s[:-2] if s.endswith(".0") else s


def _path(points: list[tuple[float, float]]) -> str:
    if not points:
        return ""
    parts = [f"M{_f(points[0][0])},{_f(points[0][1])}"]
    rest = points[1:]
    for k in range(0, len(rest) - len(rest) % 3, 3):
        (ax, ay), (bx, by), (cx, cy) = rest[k:k + 3]
        parts.append(f"C{_f(ax)},{_f(ay)} {_f(bx)},{_f(by)} {_f(cx)},{_f(cy)}")
    for x, y in rest[len(rest) - len(rest) % 3:]:  # a stray tail (not 3k points) is drawn straight
        parts.append(f"L{_f(x)},{_f(y)}")
    return " ".join(parts)


def _edge(e: Edge, hi: bool) -> str:
    cls = "edge highlight" if hi else "edge"
    return (f'<g class="{cls}" data-src="{_attr(e.src)}" data-dst="{_attr(e.dst)}">'
            f'<path d="{_path(e.points)}" marker-end="url(#{_ARROW})"/></g>')


def _box(b: Box, selected: bool, hi: bool) -> str:
    classes = ["group" if b.group is not None else "node", f"role-{_attr(b.role)}"]
    if b.partition:
        classes.append(f"partition-{_attr(b.partition)}")
    if selected:
        classes.append("selected")
    if hi:
        classes.append("highlight")
    attr = f'data-group="{_attr(b.group)}"' if b.group is not None else f'data-node="{_attr(b.id)}"'
    tooltip = b.label if not b.sublabel else f"{b.label}\n{b.sublabel}"
    if b.group is not None:
        tooltip = f"{b.group}\n{b.sublabel}\n(click to expand)"
    cx = b.x + b.w / 2
    line1 = b.y + b.h / 2 - 3 if b.sublabel else b.y + b.h / 2 + 4
    text = [f'<text x="{_f(cx)}" y="{_f(line1)}" text-anchor="middle">{escape(b.label)}</text>']
    if b.sublabel:
        text.append(f'<text class="sub" x="{_f(cx)}" y="{_f(line1 + 14)}" text-anchor="middle">{escape(b.sublabel)}</text>')
    rx = "8" if b.group is not None else "4"
    return (f'<g class="{" ".join(classes)}" {attr}><title>{escape(tooltip)}</title>'
            f'<rect x="{_f(b.x)}" y="{_f(b.y)}" width="{_f(b.w)}" height="{_f(b.h)}" rx="{rx}"/>'
            + "".join(text) + "</g>")


def to_svg(layout: Layout, *, selected: Optional[str] = None, highlight: Iterable[str] = ()) -> str:
    """Draw ``layout`` as a standalone SVG document (styles and arrow marker inside).

    Node boxes are ``<g class="node role-<role>" data-node="<id>">``; collapsed module groups are
    ``<g class="group role-group" data-group="<module path>">``; edges are
    ``<g class="edge" data-src=… data-dst=…>``. ``selected`` (a box id) gets class ``selected``;
    boxes in ``highlight`` and edges between two highlighted boxes get class ``highlight``; boxes of a
    joint graph get ``partition-forward`` / ``partition-backward`` (backward ones are tinted).

    >>> from viz.synthetic import chain_graph
    >>> from viz.graph_layout import layout
    >>> svg = to_svg(layout(chain_graph(5, layers=1), engine="linear"), selected="output")
    >>> svg.startswith("<svg") and 'class="node role-output selected" data-node="output"' in svg
    True
    """
    hi = set(highlight)
    w, h = max(layout.width, 1.0), max(layout.height, 1.0)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ds-graph" width="{_f(w)}" height="{_f(h)}" '
        f'viewBox="0 0 {_f(w)} {_f(h)}" data-engine="{_attr(layout.engine)}">',
        f"<style>{css('.ds-graph')}</style>",
        f'<defs><marker id="{_ARROW}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#94a3b8"/></marker></defs>',
        '<g class="edges">',
        *(_edge(e, e.src in hi and e.dst in hi) for e in layout.edges),
        "</g>",
        '<g class="boxes">',
        *(_box(b, b.id == selected, b.id in hi) for b in layout.boxes),
        "</g>",
        "</svg>",
    ]
    return "\n".join(out)
