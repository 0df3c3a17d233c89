"""The parts of a Dynamo graph-break reason: what broke, why, torch's hints, and the call details.

Dynamo writes every graph break it knows (``unimplemented`` in ``torch/_dynamo/exc.py``, one entry
per type in its graph-break registry) with ``format_graph_break_message``::

    Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

    logging.Logger method not supported for non-export cases
      Explanation: logging.Logger methods are not supported for non-export cases.
      Hint: Add the logging method to `torch._dynamo.config.ignore_logging_functions`.

      Developer debug context: method: <Logger x (WARNING)>.warning, args: [...], kwargs: {}

     For more details about this graph break, please visit: https://.../gb0291.html

The first paragraph (the opcode being traced) is the same for every break of that opcode; the
*developer debug context* holds the call's arguments, so it differs between calls of one logging
line. The **cause** of a break is its type and explanation: breaks at one user line with one cause
are one row in every list (``Capture.grouped_breaks``), whatever their arguments.

A break inside a higher-order operator's body is logged with one more line under its type
(``Higher Order Operator: torch.ops.higher_order.wrap``, added while Dynamo speculates the body): it
is kept in ``notes`` and is not part of the cause, so the break groups with the same break outside
a body.

Text without that shape (older messages, a restart reason) keeps its first informative line as the
type and has no explanation. Plain text in, plain data out: the live capture and a TORCH_TRACE log
read the same text, so both group alike.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BreakReason", "parse_break_reason"]

_GENERIC = ("Encountered graph break", "Graph break in user code", "Graph break")
_FIELDS = {"Explanation:": "explanation", "Hint:": "hints", "Developer debug context:": "context"}
_DOC = "For more details about this graph break, please visit:"


@dataclass(frozen=True)
class BreakReason:
    """A graph-break reason split into its parts (see the module docstring)."""

    gb_type: str  # what broke: the registry's graph-break type, or the first informative line
    explanation: str = ""  # Dynamo's explanation ("" when the text has none)
    hints: tuple[str, ...] = ()  # torch's hints, in order
    context: str = ""  # the developer debug context: this call's details
    doc: str = ""  # the graph-break documentation link
    preamble: str = ""  # the generic first paragraph ("Encountered graph break when attempting to trace CALL: ...")
    notes: tuple[str, ...] = ()  # lines between the type and its explanation ("Higher Order Operator: ...")

    @property
    def cause(self) -> tuple[str, str]:
        """(type, explanation): what makes two breaks the same kind of break."""
        return self.gb_type, self.explanation


def parse_break_reason(reason: str) -> BreakReason:
    """Split a graph-break reason into its parts.

    >>> r = parse_break_reason("Encountered graph break when tracing CALL:\\n\\nlogging not supported\\n"
    ...                        "  Explanation: no logging.\\n  Hint: ignore it.\\n\\n  Developer debug context: args: [1]\\n")
    >>> r.gb_type, r.explanation, r.hints, r.context
    ('logging not supported', 'no logging.', ('ignore it.',), 'args: [1]')
    >>> parse_break_reason("Encountered graph break when tracing X:\\n\\ndata-dependent branch").gb_type
    'data-dependent branch'
    """
    lines = (reason or "").splitlines()
    explained = next((i for i, ln in enumerate(lines) if ln.strip().startswith("Explanation:")), None)
    start = explained
    while start is not None and start > 0 and lines[start - 1].startswith(" ") and lines[start - 1].strip():
        start -= 1  # indented lines torch puts between the type and its explanation
    if start is None or start == 0:
        return _unstructured(lines)
    start -= 1  # the type: the unindented line that heads the explained paragraph
    notes = tuple(ln.strip() for ln in lines[start + 1:explained])
    parts: dict[str, list[list[str]]] = {"explanation": [], "hints": [], "context": []}
    doc = ""
    current: list[str] | None = None
    for line in lines[explained:]:
        text = line.strip()
        if text.startswith(_DOC):
            doc, current = text[len(_DOC):].strip(), None
            continue
        prefix = next((p for p in _FIELDS if text.startswith(p)), None)
        if prefix is not None:
            current = [text[len(prefix):].strip()]
            parts[_FIELDS[prefix]].append(current)
        elif current is not None and line.startswith("    ") and text:
            current.append(text)  # a continuation line (torch indents them by four)
        else:
            current = None  # a blank line or text after the message (a traceback) ends a field
    joined = {k: ["\n".join(chunk) for chunk in v] for k, v in parts.items()}
    preamble = "\n".join(ln.strip() for ln in lines[:start] if ln.strip()).rstrip(":")
    return BreakReason(
        gb_type=lines[start].strip(),
        explanation="\n".join(joined["explanation"]),
        hints=tuple(joined["hints"]),
        context="\n".join(joined["context"]),
        doc=doc,
        preamble=preamble,
        notes=notes,
    )


def _unstructured(lines: list[str]) -> BreakReason:
    text = [ln.strip() for ln in lines if ln.strip()]
    hints = tuple(ln[len("Hint:"):].strip() for ln in text if ln.startswith("Hint:"))
    body = [ln for ln in text if not ln.startswith(("Hint:", _DOC))]
    first = body[0] if body else ""
    if len(body) > 1 and first.startswith(_GENERIC):
        return BreakReason(gb_type=body[1], hints=hints, preamble=first.rstrip(":"))
    return BreakReason(gb_type=first, hints=hints)
