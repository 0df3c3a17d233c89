"""tracer.model.attempts on hand-made compilation metrics: ids, codes, times, statuses, restart reasons, recompiles.

The metric field names and values are the ones torch 2.13's ``compilation_metrics`` record carries
(torch/_dynamo/utils.py ``CompilationMetrics``): seconds in ``*_time_s``, microseconds in ``*_us``, null
for a phase that did not run.
"""

from __future__ import annotations

import math

import pytest

from tracer.model import Frame, Graph, Node
from tracer.model.attempts import (
    AttemptInfo,
    FrameCodes,
    format_id,
    local_ids,
    location,
    metric_times,
    recompile,
    restart_by_elimination,
    settle_status,
)


def test_format_id_is_torchs_compile_id():
    assert [format_id(0, 0, 0), format_id(3, 1, 0), format_id(3, 1, 2)] == ["0/0", "3/1", "3/1_2"]


def test_local_ids_number_frames_and_compiles_by_first_appearance():
    order = [(5, 0, 0), (5, 0, 1), (9, 4, 0), (5, 1, 0), (9, 6, 0), (7, 2, 3), (5, 2, 0)]
    assert local_ids(order) == {(5, 0, 0): "0/0", (5, 0, 1): "0/0_1", (9, 4, 0): "1/0", (5, 1, 0): "0/1",
                                (9, 6, 0): "1/1", (7, 2, 3): "2/0_3", (5, 2, 0): "0/2"}


def test_location_from_metric_fields():
    assert location("/a/b/model.py", 12, "fwd") == "model.py:12 in fwd"
    assert location("model.py", 0, "f") == "model.py:0 in f"  # line 0 is a line, not "unknown"
    assert location("", None, "") == "?:? in ?"
    assert location(None, None, None) == "?:? in ?"


def _frame(code: str = "", **meta) -> Frame:
    return Frame(compile_id="0/0", code=code, meta=dict(meta))


def test_frame_codes_takes_a_refused_compiles_code_from_its_frame_id():
    """Note [Code object from the frame id]."""
    codes = FrameCodes()
    first = _frame("f.py:3 in f", filename="/x/f.py")
    codes.settle(first, (4, 0, 0))
    other = _frame("g.py:1 in g")  # another frame id, no file name
    codes.settle(other, (6, 0, 0))
    again = _frame("f.py:9 in h", filename="/y/h.py")  # a later name for frame 4 does not replace the first
    codes.settle(again, (4, 1, 0))
    refused = _frame("")
    codes.settle(refused, (4, 2, 0))
    assert (refused.code, refused.meta, refused.problems) == ("f.py:3 in f", {"filename": "/x/f.py"}, [])
    unknown_named = _frame("unknown", filename="/z.py")  # "unknown" is no name: taken from the frame id
    codes.settle(unknown_named, (6, 1, 0))
    assert (unknown_named.code, unknown_named.meta, unknown_named.problems) == ("g.py:1 in g", {"filename": "/z.py"}, [])
    no_file = _frame("")  # frame 6's first name came without a file name: none is made up
    codes.settle(no_file, (6, 2, 0))
    assert (no_file.code, no_file.meta) == ("g.py:1 in g", {})
    none = _frame("")
    codes.settle(none, (8, 0, 0))
    assert (none.code, none.problems) == ("unknown", ["torch did not say which code object this compile was for"])
    later = _frame("")  # the unknown attempt did not name frame 8
    codes.settle(later, (8, 1, 0))
    assert later.code == "unknown"


METRICS = {"entire_frame_compile_time_s": 0.157057, "backend_compile_time_s": 0.070123,
           "aot_autograd_cumulative_compile_time_us": 70123, "dynamo_time_before_restart_s": 0.04976487159729004}


def test_metric_times_as_torch_logs_them():
    times = metric_times(METRICS)
    assert times == {"total": 0.157057, "backend": 0.070123, "dynamo": pytest.approx(0.157057 - 0.070123),
                     "aot_autograd": 0.070123, "before_restart": 0.04976487159729004}
    assert all(type(v) is float for v in metric_times({"entire_frame_compile_time_s": 2, "backend_compile_time_s": 1,
                                                         "dynamo_time_before_restart_s": 1}).values())
    assert metric_times({"entire_frame_compile_time_s": 2, "backend_compile_time_s": 0}) == \
        {"total": 2.0, "backend": 0.0, "dynamo": 2.0}


def test_metric_times_leave_absent_phases_unknown():
    assert metric_times({}) == {}
    assert metric_times(dict.fromkeys(METRICS)) == {}
    assert metric_times({"backend_compile_time_s": 0.5}) == {"backend": 0.5}  # no total: no dynamo part
    assert metric_times({"entire_frame_compile_time_s": 0.5}) == {"total": 0.5}


def test_metric_times_clamp_the_rounding_of_dynamos_part_at_zero():
    assert metric_times({"entire_frame_compile_time_s": 0.25, "backend_compile_time_s": 0.5}) == \
        {"total": 0.25, "backend": 0.5, "dynamo": 0.0}


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, -0.5, True, "0.1", [1]])
def test_a_damaged_time_is_unknown_and_said(bad):
    problems: list[str] = []
    times = metric_times({**METRICS, "backend_compile_time_s": bad}, problems)
    assert times == {"total": 0.157057, "aot_autograd": 0.070123, "before_restart": 0.04976487159729004}
    assert problems == [f"compilation metric backend_compile_time_s is {bad!r}, not a duration: that time is unknown"]
    assert metric_times({"entire_frame_compile_time_s": bad}) == {}  # without a list: still not taken


def test_metric_times_each_field_checked():
    problems: list[str] = []
    assert metric_times(dict.fromkeys(METRICS, -1), problems) == {}
    assert [p.split(" is ")[0] for p in problems] == [f"compilation metric {k}" for k in
                                                      ["entire_frame_compile_time_s", "backend_compile_time_s",
                                                       "aot_autograd_cumulative_compile_time_us",
                                                       "dynamo_time_before_restart_s"]]


def _graph_frame() -> Frame:
    f = _frame("f.py:1 in f")
    f.graph = Graph(nodes=[Node("x", "placeholder", "x"), Node("output", "output", "output")])
    return f


def _settle(frame: Frame, attempt: int, info: AttemptInfo, restarted: int = 0, interrupted: str = "") -> tuple:
    settle_status(frame, attempt, info, restarted, interrupted)
    return frame.status, frame.status_reason, frame.times, frame.problems


def test_a_restarted_attempt_takes_its_graph_break_reasons_once_each():
    info = AttemptInfo(metrics={**METRICS, "restart_reasons": ["other"]}, final_attempt=1,
                       break_reasons={0: ["b1", "b2", "b1"]})
    assert _settle(_frame(), 0, info, restarted=1) == \
        ("restarted", "b1\nb2", {"total": 0.04976487159729004, "dynamo": 0.04976487159729004}, [])


def test_one_restart_without_a_break_takes_torchs_restart_reasons():
    info = AttemptInfo(metrics={"restart_reasons": ["r", "r2"], "dynamo_time_before_restart_s": None},
                       final_attempt=1)
    assert _settle(_frame(), 0, info, restarted=1) == ("restarted", "r\nr2", {}, [])


def test_a_restart_whose_reason_is_not_provable_is_unknown():
    info = AttemptInfo(metrics={"restart_reasons": ["r"], "dynamo_time_before_restart_s": 1.0}, final_attempt=2)
    # two restarts share one time before restart: not split, not guessed
    assert _settle(_frame(), 1, info, restarted=2) == \
        ("restarted", "unknown", {}, ["torch did not say why this attempt restarted"])
    for m in (None, {}, {"restart_reasons": []}, {"restart_reasons": "ab"}):  # a damaged log's string is no list of reasons
        assert _settle(_frame(), 0, AttemptInfo(metrics=m, final_attempt=1), restarted=1)[:2] == ("restarted", "unknown")


def test_a_restart_by_elimination_inside_settle_status():
    info = AttemptInfo(metrics={"restart_reasons": ["Call to graph_break()", "<class 'Tensorify'>"]}, final_attempt=2,
                       break_reasons={0: ["Encountered graph break: Call to graph_break()"]})
    assert _settle(_frame(), 1, info, restarted=2) == ("restarted", "<class 'Tensorify'>", {}, [])


def test_a_damaged_time_before_restart_is_said():
    info = AttemptInfo(metrics={"dynamo_time_before_restart_s": math.inf}, final_attempt=1, break_reasons={0: ["b"]})
    assert _settle(_frame(), 0, info, restarted=1) == \
        ("restarted", "b", {}, ["compilation metric dynamo_time_before_restart_s is inf, not a duration: that time is unknown"])


def test_the_final_attempt_is_not_restarted():
    info = AttemptInfo(metrics={"graph_op_count": 3}, final_attempt=1, break_reasons={1: ["later break"]})
    assert _settle(_graph_frame(), 1, info, restarted=1) == ("compiled", "", {}, [])
    assert _settle(_graph_frame(), 2, info)[0] == "compiled"


def test_without_metrics_the_status_is_from_the_hooks():
    said = "torch logged no compilation metrics for this compile: status from our hooks, times unknown"
    assert _settle(_graph_frame(), 0, AttemptInfo()) == ("compiled", "", {}, [said])
    assert _settle(_frame(), 0, AttemptInfo()) == \
        ("failed", "unknown: the compile did not finish (torch logged no compilation metrics)", {}, [said])


def test_a_failed_compile_says_torchs_failure():
    info = AttemptInfo(metrics={"fail_type": "Unsupported", "fail_reason": "dynamic control flow ",
                                "entire_frame_compile_time_s": 1.5})
    assert _settle(_graph_frame(), 0, info) == ("failed", "Unsupported: dynamic control flow", {"total": 1.5}, [])
    assert _settle(_frame(), 0, AttemptInfo(metrics={"fail_type": "X", "fail_reason": None}))[:2] == ("failed", "X:")


def test_an_interrupted_attempt_without_a_graph_fails_with_the_interruption():
    """Note [Interrupted compiles]."""
    m = AttemptInfo(metrics={})
    assert _settle(_frame(), 0, m, interrupted="KeyboardInterrupt") == \
        ("failed", "interrupted: KeyboardInterrupt", {}, [])
    assert _settle(_graph_frame(), 0, m, interrupted="KeyboardInterrupt")[:2] == ("compiled", "")
    skipped = AttemptInfo(metrics={}, skip_reason="skipped: torch.* file")
    assert _settle(_frame(), 0, skipped, interrupted="KeyboardInterrupt")[:2] == ("no_graph", "skipped: torch.* file")


def test_a_damaged_time_of_a_final_attempt_is_said_in_its_frame():
    f = _graph_frame()
    settle_status(f, 0, AttemptInfo(metrics={"entire_frame_compile_time_s": -1.0}), 0)  # no exception ended it
    assert (f.status, f.times, f.problems) == \
        ("compiled", {}, ["compilation metric entire_frame_compile_time_s is -1.0, not a duration: that time is unknown"])
    nothing = _frame()
    settle_status(nothing, 0, AttemptInfo(metrics={"graph_op_count": 0}), 0)
    assert (nothing.status, nothing.status_reason.startswith("the traced graph has no ops")) == ("no_graph", True)


def test_no_graph_reasons():
    assert _settle(_frame(), 0, AttemptInfo(metrics={"graph_op_count": 0}))[:2] == \
        ("no_graph", "the traced graph has no ops: Dynamo emitted bytecode without calling the backend")
    assert _settle(_frame(), 0, AttemptInfo(metrics={"graph_op_count": 2})) == \
        ("no_graph", "unknown", {}, ["the compile produced no graph and torch did not say why"])
    assert _settle(_frame(), 0, AttemptInfo(metrics={}))[1] == "unknown"


def test_restart_by_elimination_only_when_provable():
    """Note [Restart reasons by elimination]: each condition broken once."""
    brk = {0: ["Encountered graph break: Call to graph_break()"]}
    reasons = ["<class 'T'>", "Call to graph_break()"]
    assert restart_by_elimination(1, AttemptInfo(final_attempt=2, break_reasons=brk), reasons) == ["<class 'T'>"]
    assert restart_by_elimination(1, AttemptInfo(final_attempt=None, break_reasons=brk), reasons) == []
    assert restart_by_elimination(1, AttemptInfo(final_attempt=3, break_reasons=brk), reasons) == []  # 2 reasons, 3 restarts
    assert restart_by_elimination(1, AttemptInfo(final_attempt=2, break_reasons=brk), ["a", "a"]) == []
    assert restart_by_elimination(1, AttemptInfo(final_attempt=2, break_reasons={}), reasons) == []  # two unexplained
    assert restart_by_elimination(0, AttemptInfo(final_attempt=2, break_reasons=brk), reasons) == []  # not this one
    assert restart_by_elimination(1, AttemptInfo(final_attempt=2, break_reasons={0: ["other"]}), reasons) == []
    # both reasons quoted by the one break: none is free
    both = {0: ["<class 'T'> and Call to graph_break()"]}
    assert restart_by_elimination(1, AttemptInfo(final_attempt=2, break_reasons=both), reasons) == []
    # three attempts: two breaks, each quoting its reason; the third reason is the free one
    three = {0: ["x: first"], 1: ["y: ", "second"]}
    assert restart_by_elimination(2, AttemptInfo(final_attempt=3, break_reasons=three), ["first", "second", "third"]) == ["third"]
    assert restart_by_elimination(2, AttemptInfo(final_attempt=3, break_reasons=three), ["first", "second", "irst"]) == []
    two = {0: ["x: first"], 1: ["x: first"]}  # two reasons in no break's text: which is whose is not provable
    assert restart_by_elimination(2, AttemptInfo(final_attempt=3, break_reasons=two), ["first", "second", "third"]) == []
    # a reason repeated (torch logs a set: a damaged log) is not one of three distinct reasons
    assert restart_by_elimination(2, AttemptInfo(final_attempt=3, break_reasons=two), ["first", "first", "third"]) == []
    # a break quoting no reason at all proves nothing, even if another break quotes two
    mixed = {0: ["first second"], 1: ["zzz"]}
    assert restart_by_elimination(2, AttemptInfo(final_attempt=3, break_reasons=mixed), ["first", "second", "third"]) == []
    # each break text is searched as it is: the join of an attempt's breaks adds no text
    assert restart_by_elimination(1, AttemptInfo(final_attempt=2, break_reasons={0: ["p", "q"]}), ["XX", "Y"]) == []


def test_recompile_rewrites_entry_ids_and_drops_column_padding():
    """Note [One record per recompile]."""
    local = {(2, 0, 0): "0/0", (2, 1, 0): "0/1"}
    r = recompile("0/2", ["2/1: s == 'bb'           # f.py:3 in f", "2/0: tensor 'x' size mismatch at index 0. expected 3, actual 5",
                          "9/0: not ours", "x == 1   \n  2/0: y == 2      # g.py:1   "], local)
    assert (r.compile_id, r.reason, r.failed) == ("0/2", "0/1: s == 'bb'  # f.py:3 in f", [
        "0/1: s == 'bb'  # f.py:3 in f", "0/0: tensor 'x' size mismatch at index 0. expected 3, actual 5",
        "9/0: not ours", "x == 1\n  2/0: y == 2  # g.py:1"])
    assert recompile("0/1", [], local).reason == ""
    assert recompile("0/1", ["20/0: a  b"], {(20, 0, 0): "3/0"}).failed == ["3/0: a  b"]  # two blanks not before '# '
