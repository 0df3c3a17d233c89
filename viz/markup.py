"""The one Jinja2 environment every HTML view of viz renders through, and its filters.

Invariant: autoescape is on for every template, so a value placed in markup is escaped unless it
is a :class:`markupsafe.Markup` made by :func:`fragment` from HTML that viz itself rendered (a
template's output, an SVG from :mod:`viz.svg`, Pygments' formatter output). See Note [Trusted fragments].

>>> render_string("<b>{{ name }}</b>", name="<script>&'\\"")
'<b>&lt;script&gt;&amp;&#39;&#34;</b>'
>>> human_bytes(12), human_bytes(3 * 1024 * 1024 + 1), seconds(None), seconds(0.01234)
('12 B', '3.0 MiB', '?', '0.0123 s')
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jinja2
from markupsafe import Markup, escape

from tracer import _text
from viz.template_cache import template_cache

__all__ = ["fragment", "human_bytes", "json_block", "render", "render_string", "script_json", "seconds", "user_line_text"]

# Note [Trusted fragments]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# Templates escape every value by default (Jinja2 ``autoescape=True``, markupsafe underneath).
# A view composed of other views receives them as ``fragment(html)``: that is the single place
# where text is declared to be markup, and it is only ever applied to output of viz's own
# renderers, never to a string from the model. Public view functions return plain ``str`` (not
# ``Markup``), so callers that concatenate strings keep Python's ordinary semantics.


def human_bytes(n: Optional[int]) -> str:
    """Bytes in binary units as ``print(cap)`` shows them ("12 B", "1.5 KiB"); "?" when unknown."""
    return "?" if n is None else _text.human_bytes(n)


def seconds(value: Optional[float]) -> str:
    """A duration from torch's compilation metrics as ``print(cap)`` shows it; "?" when torch did
    not report it (never 0)."""
    return "?" if value is None else _text.seconds(value)


def user_line_text(item: Any) -> str:
    """Where a shape guard or symbol came from (its ``user_line``), or why there is none: torch logged
    only its own frames, or no stack at all (Note [The user line of a shape guard] in tracer/shape_events.py).

    >>> from tracer.model import ShapeSymbol, SourceLine
    >>> torch_frame = SourceLine("/venv/torch/_higher_order_ops/cond.py", 242, "cond_op_dense")
    >>> user_line_text(ShapeSymbol("s0", "x.size()[0]", user_stack=[torch_frame]))
    'unknown (only torch frames)'
    """
    if item.user_line is not None:
        return str(item.user_line)
    return "unknown (only torch frames)" if item.user_stack else "not logged by torch"


def _lines(value: Any) -> Markup:
    """Escaped text whose line breaks become ``<br>`` (a table cell keeps its lines)."""
    text = escape(value)
    return Markup(text.replace("\n", Markup("<br>"))) if "\n" in text else text


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("viz", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    auto_reload=False,
    extensions=["jinja2.ext.do"],
    bytecode_cache=template_cache(),  # Note [Compiled templates kept] in viz/template_cache.py
)
_ENV.filters.update(user_line=user_line_text, bytes=human_bytes, seconds=seconds, lines=_lines, zip=zip, headline=_text.headline)


def json_block(value: Any, default: Optional[Callable[[Any], Any]] = None) -> str:
    """``value`` as JSON for a ``<script type="application/json">`` element: ``<``, ``>`` and ``&`` are
    written as ``\\u`` escapes, so no string in it can close the element or start markup; the page
    reads it with ``JSON.parse`` and puts strings in the DOM only as text. ``default``: as ``json.dumps``'s.

    >>> json_block({"n": "</script><b>&"})
    '{"n":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
    """
    import json

    return script_json(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=default))


def script_json(text: str) -> str:
    """JSON text as :func:`json_block` writes it into the page: ``<``, ``>`` and ``&`` as ``\\u`` escapes."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def fragment(html: str) -> Markup:
    """Declare HTML rendered by viz itself as markup for a template (Note [Trusted fragments])."""
    return Markup(html)


def render(name: str, /, **context: Any) -> str:
    """Render ``viz/templates/<name>`` with ``context``; every value escaped unless a fragment."""
    return str(_ENV.get_template(name).render(**context))


def render_string(source: str, /, **context: Any) -> str:
    """Render a template given as text (tests and doctests), with the same environment."""
    return str(_ENV.from_string(source).render(**context))
