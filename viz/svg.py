"""``viz.to_svg``: a Layout drawn as one self-contained SVG string.

Invariant: pure and deterministic (same Layout, same bytes: no ids from ``id()``, no timestamps, fixed
number formatting), and every string from user code passes through ``html.escape`` before it is
written, so a node named ``<script>`` is text. Element ids are never built from user strings; boxes
are found by their ``data-node`` / ``data-group`` attributes.

This is the one renderer of a Layout as SVG text; ``viz/svg_draw.js`` is the one in the browser. Two
remain because they serve places the other cannot: this one writes markup for pages where no script
runs (the diff view, the pause panel, a notebook's HTML read outside Jupyter, ``to_svg`` for the
user), and the canvas builds its SVG from layout data with DOM calls (a tenth of the bytes to send,
and user strings never parsed as markup). They draw the same elements from the same numbers:
:data:`SHAPES` is sent to the browser as ``constants.js`` (viz/browser_code.py), and a browser test
compares both renderings of one layout element by element.
"""

from __future__ import annotations

import re
from html import escape
from typing import Iterable, Mapping, Optional

from viz.graph_layout import Box, Edge, Layout
from viz.style import css

__all__ = ["SHAPES", "to_svg"]

# What both renderers draw besides the layout's numbers (viz/svg_draw.js reads it from constants.js).
SHAPES = {
    "arrow_id": "ds-arrow",  # the one fixed element id; identical in every SVG, so inlining many is harmless
    "marker": {"viewBox": "0 0 10 10", "refX": 10, "refY": 5, "markerWidth": 7, "markerHeight": 7,
               "orient": "auto-start-reverse"},
    "arrow_path": "M0,0 L10,5 L0,10 z",
    "arrow_fill": "#94a3b8",
    "node_rx": 4,  # corner radius of a node box
    "group_rx": 8,  # and of a collapsed module box
    "label_dy_two_lines": -3,  # first line's baseline below the box's centre, with a second line
    "label_dy_one_line": 4,  # and without
    "sub_dy": 14,  # second line's baseline below the first's
}
_ARROW = SHAPES["arrow_id"]
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")  # a class name or data-* key given by a caller: one plain token


# Note [Attribute whitespace]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``html.escape`` covers & < > " ' but an XML parser (a standalone .svg file) turns a raw newline or
# tab inside an attribute value into a space, so ``data-node`` would no longer name the node. Those
# three characters are written as character references too.
_WS = str.maketrans({"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _attr(text: str) -> str:
    """``text`` escaped for a double-quoted attribute value, exactly round-tripping. See Note [Attribute whitespace]."""
    return escape(text).translate(_WS)


_WRITTEN: dict[float, str] = {}  # number -> its text, for the coordinates drawings repeat (at most _WRITTEN_MAX)
_WRITTEN_MAX = 4096


def _f(v: float) -> str:
    """Fixed, short number formatting (deterministic across runs)."""
    s = _WRITTEN.get(v)
    if s is None:
        s = f"{v:.1f}"
        s = s[:-2] if s.endswith(".0") else s
        if v:  # 0.0 == -0.0, but they are written "0" and "-0": never kept
            if len(_WRITTEN) >= _WRITTEN_MAX:
                _WRITTEN.clear()
            _WRITTEN[v] = s
    return s


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
    cls = ("edge highlight" if hi else "edge") + (f" {_attr(e.kind)}" if e.kind else "")
    return (f'<g class="{cls}" data-src="{_attr(e.src)}" data-dst="{_attr(e.dst)}">'
            f'<path d="{_path(e.points)}" marker-end="url(#{_ARROW})"/></g>')


def _box(b: Box, selected: bool, hi: bool, extra: Iterable[str] = (), data: Mapping[str, str] = {}) -> str:
    classes = ["group" if b.group is not None else "node", f"role-{_attr(b.role)}"]
    if b.partition:
        classes.append(f"partition-{_attr(b.partition)}")
    if selected:
        classes.append("selected")
    if hi:
        classes.append("highlight")
    classes.extend(extra)
    attr = f'data-group="{_attr(b.group)}"' if b.group is not None else f'data-node="{_attr(b.id)}"'
    attr += "".join(f' data-{k}="{_attr(v)}"' for k, v in data.items())
    tooltip = b.label if not b.sublabel else f"{b.label}\n{b.sublabel}"
    if b.group is not None:
        tooltip = f"{b.group}\n{b.sublabel}\n(click to expand)"
    cx = b.x + b.w / 2
    line1 = b.y + b.h / 2 + SHAPES["label_dy_two_lines" if b.sublabel else "label_dy_one_line"]
    text = [f'<text x="{_f(cx)}" y="{_f(line1)}" text-anchor="middle">{escape(b.label)}</text>']
    if b.sublabel:
        text.append(f'<text class="sub" x="{_f(cx)}" y="{_f(line1 + SHAPES["sub_dy"])}" '
                    f'text-anchor="middle">{escape(b.sublabel)}</text>')
    rx = SHAPES["group_rx" if b.group is not None else "node_rx"]
    return (f'<g class="{" ".join(classes)}" {attr}><title>{escape(tooltip)}</title>'
            f'<rect x="{_f(b.x)}" y="{_f(b.y)}" width="{_f(b.w)}" height="{_f(b.h)}" rx="{rx}"/>'
            + "".join(text) + "</g>")


def _tokens(what: str, values: Iterable[str], checked: set[str]) -> list[str]:
    """``values`` as a list, each checked to be a plain token once per ``checked`` (a diff names the same
    class or data key on most of its boxes)."""
    out = list(values)
    for v in out:
        if isinstance(v, str) and v in checked:
            continue
        if not isinstance(v, str) or not _TOKEN.fullmatch(v):
            raise ValueError(f"{what} must be plain tokens (letters, digits, '_', '-'), got {v!r}")
        checked.add(v)
    return out


def to_svg(layout: Layout, *, selected: Optional[str] = None, highlight: Iterable[str] = (),
           classes: Optional[Mapping[str, Iterable[str]]] = None, data: Optional[Mapping[str, Mapping[str, str]]] = None,
           style: str = "") -> str:
    """Draw ``layout`` as a standalone SVG document (styles and arrow marker inside).

    Node boxes are ``<g class="node role-<role>" data-node="<id>">``; collapsed module groups are
    ``<g class="group role-group" data-group="<module path>">``; edges are
    ``<g class="edge" data-src=… data-dst=…>``. ``selected`` (a box id) gets class ``selected``;
    boxes in ``highlight`` and edges between two highlighted boxes get class ``highlight``; boxes of a
    joint graph get ``partition-forward`` / ``partition-backward`` (backward ones are tinted).
    ``classes`` adds classes to boxes (box id -> class names), ``data`` adds ``data-*`` attributes
    (box id -> {name: value}, values escaped like every attribute); class and attribute names must
    be plain tokens (``ValueError`` otherwise). ``style`` is CSS appended to the SVG's own.

    >>> from viz.synthetic import chain_graph
    >>> from viz.graph_layout import layout
    >>> svg = to_svg(layout(chain_graph(5, layers=1), engine="linear"), selected="output", classes={"output": ["mine"]})
    >>> svg.startswith("<svg") and 'class="node role-output selected mine" data-node="output"' in svg
    True
    """
    hi = set(highlight)
    names: set[str] = set()  # class names, then data attribute names, found plain tokens
    extra = {k: _tokens("classes", v, names) for k, v in (classes or {}).items()}
    names = set()
    attrs = {k: dict(zip(_tokens("data attribute names", v, names), v.values(), strict=True)) for k, v in (data or {}).items()}
    if "<" in style:
        raise ValueError("style must be CSS without '<' (it is written inside the SVG's <style>)")
    w, h = max(layout.width, 1.0), max(layout.height, 1.0)
    marker = " ".join(f'{k}="{v}"' for k, v in SHAPES["marker"].items())
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ds-graph" width="{_f(w)}" height="{_f(h)}" '
        f'viewBox="0 0 {_f(w)} {_f(h)}" data-engine="{_attr(layout.engine)}">',
        f"<style>{css('.ds-graph')}{style}</style>",
        f'<defs><marker id="{_ARROW}" {marker}><path d="{SHAPES["arrow_path"]}" fill="{SHAPES["arrow_fill"]}"/>'
        "</marker></defs>",
        '<g class="edges">',
        *(_edge(e, e.src in hi and e.dst in hi) for e in layout.edges),
        "</g>",
        '<g class="boxes">',
        *(_box(b, b.id == selected, b.id in hi, extra.get(b.id, ()), attrs.get(b.id, {})) for b in layout.boxes),
        "</g>",
        "</svg>",
    ]
    return "\n".join(out)
