"""Graph breaks by cause on a real capture: one logging line reached with three arguments is one
row (the unit tests of the parser are in tests/test_break_reason.py)."""

from __future__ import annotations

import logging

import torch

import tracer

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
    assert group.location.endswith(f"test_break_reason_capture.py:{_note.__code__.co_firstlineno + 1}")
    assert group.gb_type.startswith("logging.Logger method not supported")
    assert any("ignore_logging_functions" in h for h in group.hints)
    text = str(cap)
    assert "graph break (x3) in 0/0, 1/0, 2/0 at" in text and "Encountered graph break" not in text
