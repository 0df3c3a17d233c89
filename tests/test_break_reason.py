"""Graph breaks by cause: a reason split into torch's parts, and breaks grouped by (line, cause).

The text format is torch's ``format_graph_break_message`` (torch/_dynamo/exc.py); the real capture
at the end checks the parser on text torch wrote, and tests/test_oracle.py checks every parsed
type against torch's graph-break registry.
"""

from __future__ import annotations

import logging

import torch

import tracer
from tracer._text import headline
from tracer.model import Capture, GraphBreak
from tracer.model.break_reason import BreakReason, parse_break_reason

PREAMBLE = "Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y)"


def _reason(gb_type: str, explanation: str, hints: list[str], context: str, doc: str = "") -> str:
    """The text torch's format_graph_break_message writes (its indentation included)."""
    hints_str = "\n".join("  Hint: " + h.replace("\n", "\n    ") for h in hints)
    msg = (f"{PREAMBLE}:\n\n{gb_type}\n  Explanation: {explanation.replace(chr(10), chr(10) + '    ')}\n"
           f"{hints_str}\n\n  Developer debug context: {context.replace(chr(10), chr(10) + '    ')}")
    return msg + (f"\n\n For more details about this graph break, please visit: {doc}" if doc else "")


def test_every_part_of_a_structured_reason():
    text = _reason("Unsupported method call", "Dynamo does not know method `warn`\nof class `Logger`",
                   ["First hint.", "Second hint,\nwrapped."], "args: [1]\nkwargs: {}", "https://x/gb0156.html")
    assert parse_break_reason(text) == BreakReason(
        gb_type="Unsupported method call",
        explanation="Dynamo does not know method `warn`\nof class `Logger`",
        hints=("First hint.", "Second hint,\nwrapped."),
        context="args: [1]\nkwargs: {}",
        doc="https://x/gb0156.html",
        preamble=PREAMBLE,
    )


def test_a_reason_without_hints_link_or_preamble():
    text = "Data-dependent branching\n  Explanation: a branch on a tensor.\n\n  Developer debug context: x > 0"
    r = parse_break_reason(text)
    assert (r.gb_type, r.explanation, r.hints, r.context, r.doc, r.preamble) == \
        ("Data-dependent branching", "a branch on a tensor.", (), "x > 0", "", "")
    assert r.cause == ("Data-dependent branching", "a branch on a tensor.")


def test_a_break_inside_a_hop_body_has_the_same_cause():
    """torch adds a line naming the HOP under the type while it speculates a body (TORCH_TRACE shows
    it; see tests/test_trace_log.py for the same break captured live and loaded)."""
    plain = _reason("Call to `torch._dynamo.graph_break()`", "User-inserted graph break.", ["Remove it."], "args `[]`")
    in_body = plain.replace("`\n  Explanation", "`\n  Higher Order Operator: torch.ops.higher_order.wrap\n  Explanation")
    assert in_body != plain
    a, b = parse_break_reason(plain), parse_break_reason(in_body)
    assert a.cause == b.cause and (a.hints, a.context) == (b.hints, b.context)
    assert (a.notes, b.notes) == ((), ("Higher Order Operator: torch.ops.higher_order.wrap",))


def test_text_after_the_message_is_not_part_of_its_last_field():
    text = _reason("T", "E", ["H"], "ctx") + "\n\nUser code traceback:\n  File \"f.py\", line 3, in f\n    g()"
    assert parse_break_reason(text).context == "ctx"


def test_unstructured_text_keeps_its_informative_line():
    assert parse_break_reason("call_function print\nmore") == BreakReason("call_function print")
    assert parse_break_reason(f"{PREAMBLE}:\n\nprint() is not supported\n  Hint: remove it") == \
        BreakReason("print() is not supported", hints=("remove it",), preamble=PREAMBLE)
    assert parse_break_reason(PREAMBLE) == BreakReason(PREAMBLE)  # nothing follows: the line is all there is
    assert parse_break_reason("") == BreakReason("")
    assert headline("") == "?" and headline(f"{PREAMBLE}:\n\nprint() is not supported") == "print() is not supported"
    assert headline("x" * 120, width=10) == "xxxxxxx..."


def _break(reason: str, location: str = "m.py:4", cid: str = "0/0") -> GraphBreak:
    return GraphBreak(reason, location, [f"{location} in f"], cid, "log.warning(msg)")


def test_breaks_group_by_line_and_cause_not_by_the_call_details():
    a = _reason("Logger method", "not supported.", ["Ignore it."], "args: ['one']")
    b = _reason("Logger method", "not supported.", ["Ignore it.", "Or remove it."], "args: ['two']")
    other = _reason("Logger method", "something else.", [], "args: []")
    cap = Capture(graph_breaks=[_break(a, cid="0/0"), _break(b, cid="1/0"), _break(a, "m.py:9", "1/0"),
                                _break(other, cid="2/0"), _break(b, cid="1/0")])
    got = [(g.location, g.gb_type, g.explanation, g.count, g.compile_ids, g.hints, g.reason)
           for g in cap.grouped_breaks()]
    assert got == [
        ("m.py:4", "Logger method", "not supported.", 3, ["0/0", "1/0"], ["Ignore it.", "Or remove it."], a),
        ("m.py:9", "Logger method", "not supported.", 1, ["1/0"], ["Ignore it."], a),
        ("m.py:4", "Logger method", "something else.", 1, ["2/0"], [], other),
    ]
    assert "x3, 'Logger method'" in repr(cap.grouped_breaks()[0])


_LOG = logging.getLogger("dynascope.test_break_reason")


def _note(msg: str) -> None:
    _LOG.debug(msg)  # Dynamo does not trace logging.Logger methods: a graph break here


def _three_notes(x):
    x = x + 1
    _note("one")
    x = x * 2
    _note("two")
    x = x - 1
    _note("three")
    return x.sin()


def test_one_logging_line_reached_with_three_arguments_is_one_row():
    cap = tracer.capture(_three_notes, torch.ones(3))
    assert len(cap.graph_breaks) == 3 and len({b.reason for b in cap.graph_breaks}) == 3  # the args differ
    (group,) = cap.grouped_breaks()
    assert group.count == 3 and group.compile_ids == ["0/0", "1/0", "2/0"]
    assert group.location.endswith(f"test_break_reason.py:{_note.__code__.co_firstlineno + 1}")
    assert group.gb_type.startswith("logging.Logger method not supported")
    assert any("ignore_logging_functions" in h for h in group.hints)
    text = str(cap)
    assert "graph break (x3) in 0/0, 1/0, 2/0 at" in text and "Encountered graph break" not in text
