"""Strict export records its Dynamo frame: the guards Dynamo built for the program, checked against the guard
tree torch itself logs (the ``dynamo_cpp_guards_str`` artifact of a TORCH_TRACE log, taken from torch's
structured-trace logger in process), and the graph break a strict export stops at, with its user line.
Real exports only; nothing stays patched, also when the export fails."""

from __future__ import annotations

import logging
import os
import re

import pytest
import torch

import tracer
from tests.export_models import Breaks, CondLoop
from tracer._torch.patching import ACTIVE
from tracer._torch.since_2_13 import strict_export_guards_unread


class _Artifacts(logging.Handler):
    """torch's structured-trace records (what TORCH_TRACE writes), kept in memory for one export."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def payloads(self, name: str) -> list[str]:
        return [r.payload for r in self.records if name in getattr(r, "metadata", {})]


def _torch_trace(run):
    from torch._logging._internal import trace_log

    handler, level = _Artifacts(), trace_log.level
    trace_log.addHandler(handler)
    trace_log.setLevel(logging.DEBUG)
    try:
        return run(), handler
    finally:
        trace_log.removeHandler(handler)
        trace_log.setLevel(level)


# A leaf of torch's guard tree (torch/_dynamo/guards.py GuardManagerWrapper.__str__): "+- KIND: check", then
# the verbose part torch adds ("  # user line  # file:LINE in fn", " (HINT: ...)").
_LEAF = re.compile(r"^[| ]*\+- ([A-Z_]+): (.*)$")


def _tree_checks(tree: str) -> dict[str, set[str]]:
    """check text -> the "file.py:LINE in fn" torch printed beside it, each time it is in the tree ("" for none)."""
    out: dict[str, set[str]] = {}
    for line in tree.splitlines():
        m = _LEAF.match(line)
        if m is None:
            continue
        text = re.sub(r" \(HINT: .*$", "", m.group(2))  # torch's hint ends the line (it may hold parentheses)
        check, *notes = [p.strip() for p in text.split("  # ")]
        where = notes[-1] if notes and re.search(r":\d+ in ", notes[-1]) else ""
        out.setdefault(check, set()).add(os.path.basename(where))
    return out


def test_strict_export_records_the_guards_torch_builds_its_guard_manager_from():
    x = torch.randn(2, 4)
    cap, log = _torch_trace(lambda: tracer.export(CondLoop(), (x,), strict=True))
    unread = strict_export_guards_unread()
    if unread is not None:  # torch 2.11/2.12: Note [Strict export's guards before torch 2.13]
        assert cap.export.status == "exported" and cap.problems == [unread] and ACTIVE == []
        assert cap.frames[0].guards == [] and "2.13" in unread
        return
    assert cap.export.status == "exported" and not cap.problems and ACTIVE == []
    (tree,) = log.payloads("dynamo_cpp_guards_str")  # torch built one guard manager for the export
    torch_checks = _tree_checks(tree)
    guards = cap.frames[0].guards
    ours = {c for g in guards for c in g.code}
    # every check recorded is one torch's guard manager runs; a TYPE_MATCH on a dict is the type check of the
    # DictGuardManager torch makes for that source (torch/_dynamo/guards.py), no leaf of its own
    dict_managers = set(re.findall(r"DictGuardManager: source=(.*?), accessed_by", tree))
    missing = {c for g in guards for c in g.code if c not in torch_checks
               and not (g.kind == "TYPE_MATCH" and g.source in dict_managers)}
    assert ours and not missing, sorted(missing)
    # what the guard manager has beyond the GuardsSet, each added by CheckFunctionManager itself: the ambient
    # global state and torch-function mode stack checks, and the code-object ID_MATCH of each function Dynamo
    # inlined (torch/_dynamo/guards.py: a FUNCTION_MATCH / CLOSURE_MATCH guard becomes a check on ``.__code__``),
    # and the dict check of each NOT_PRESENT_IN_GENERIC_DICT guard we recorded (which has no Python code part)
    not_present = {g.source for g in guards if g.kind == "NOT_PRESENT_IN_GENERIC_DICT"}

    def added_by_torch(c: str) -> bool:
        m = re.fullmatch(r"not ___dict_contains\('\w+', (.*)\.__dict__\)", c)
        return (c.startswith(("___check_global_state()", "___check_torch_function_mode_stack()"))
                or re.fullmatch(r"___check_obj_id\(.*\.__code__, \d+\), type=<class 'code'>", c) is not None
                or (m is not None and m.group(1) in not_present))

    extra = [c for c in set(torch_checks) - ours if not added_by_torch(c)]
    assert not extra, sorted(extra)
    # torch prints the innermost frame of a guard's user stack outside Dynamo's own files (guards.py
    # get_verbose_code_part): that frame is in the user stack we recorded for the guard (checked where one
    # guard alone has the check: the tree holds a check made by several guards once)
    once = [c for g in guards for c in set(g.code)]
    for g in guards:
        for c in g.code:
            if g.user_stack and c in torch_checks and once.count(c) == 1:
                assert torch_checks[c] & set(g.user_stack), (g, c, torch_checks[c])
    # the input tensor and the Linear's weight are guarded, the weight from the user's forward line
    assert {"TENSOR_MATCH"} <= {g.kind for g in guards if g.source == "L['flat_args'][0]"}
    lin = [g for g in guards if g.source.endswith("_modules['lin']")]
    line = CondLoop.forward.__code__.co_firstlineno + 11  # return self.lin(y)
    assert any(g.user_stack[-1:] == [f"export_models.py:{line} in forward"] for g in lin)
    assert tracer.Capture.from_json(cap.to_json()) == cap
    tracer.validate(cap)


def test_non_strict_export_has_no_dynamo_frame():
    cap = tracer.export(CondLoop(), (torch.randn(2, 4),))
    assert cap.frames[0].guards == [] and cap.graph_breaks == []


def test_a_strict_export_that_breaks_records_the_break_at_its_user_line():
    with pytest.raises(Exception) as torch_error:  # what torch itself raises for this module
        torch.export.export(Breaks(), (torch.ones(2),), strict=True)
    cap = tracer.export(Breaks(), (torch.ones(2),), strict=True, draft=False)
    assert ACTIVE == []
    (b,) = cap.graph_breaks
    first = Breaks.forward.__code__.co_firstlineno
    assert b.compile_id == "0/0" and b.location == f"export_models.py:{first + 1}"
    assert b.code_line.startswith("torch._dynamo.graph_break()")
    assert b.user_stack[-1] == f"export_models.py:{first + 1} in forward"
    assert b.reason == torch_error.value.msg  # Dynamo's own reason text, as log_graph_break gets it for a capture
    assert cap.frames[0].status == "failed" and cap.frames[0].guards == []  # Dynamo stopped before building any
    assert cap.export.failure.user_line.line == first + 1
    tracer.validate(cap)
    assert tracer.Capture.from_json(cap.to_json()) == cap


def test_the_hook_is_removed_when_the_export_raises():
    with pytest.raises(Exception) as err:
        tracer.export(Breaks(), (torch.ones(2),), strict=True, raise_on_failure=True)
    assert ACTIVE == [] and err.value.capture.graph_breaks
    from torch._dynamo.convert_frame import GraphCaptureOutput

    assert not hasattr(GraphCaptureOutput.build_guards, "__wrapped__")
