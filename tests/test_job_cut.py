"""tracer/job_cut.py on hand-built captures: a damaged rank is one problem naming it and its file; a
finding its cut log explains moves to ``Job.checked``; one the cut cannot explain stays. No torch
(tests/test_job_real.py cuts a real rank's log; tests/test_trace_log_load.py checks ``cut_in``)."""

from __future__ import annotations

from test_job_unit import _cap, _frame

from tracer.job import find_divergence
from tracer.job_cut import cut_frames, settle_cuts
from tracer.model import Job

_SAID = "r1.log: cut off: the file ends (byte 10) in the middle of line 3; kept 2 records (2 compile attempts)"


def _job(a, b) -> Job:
    job = Job.of({0: a, 1: b})
    job.divergence, job.checked = find_divergence({0: a, 1: b})
    settle_cuts(job)
    return job


def _cut(*frames, cut_in=(), said=_SAID):
    return _cap(*frames, meta={"not_read": said, "cut_in": list(cut_in)})


def test_a_cut_rank_is_a_problem_and_its_missing_later_frames_no_finding():
    whole = _cap(_frame("0/0"), _frame("1/0"), _frame("2/0"))
    job = _job(whole, _cut(_frame("0/0"), _frame("1/0")))
    assert job.problems == [f"rank 1: {_SAID}; its log ends inside no compile and what rank 1 compiled after the cut "
                            "is unknown: findings the cut explains are not counted"]
    assert job.divergence == []
    assert job.checked[-1] == ("not counted: [frames] rank 0 made 3 compile attempts, rank 1 2; only on rank 0: 2/0 "
                               "(rank 1's log is cut off after its 2 compile attempts; rank 0 went on)")


def test_the_frame_a_log_ends_inside_is_no_finding_but_a_frame_before_it_is():
    a = _cap(_frame("0/0", "torch.sin"), _frame("1/0", "torch.sin"))
    b = _cut(_frame("0/0", "torch.cos"), _frame("1/0", "torch.cos"), cut_in=["1/0"])
    job = _job(a, b)
    assert [(d.kind, d.compile_ids) for d in job.divergence] == [("graph", {0: "0/0", 1: "0/0"})]
    assert [line for line in job.checked if line.startswith("not counted")] == [
        f"not counted: [graph] {find_divergence({0: a, 1: b})[0][1].message} (rank 1's log ends inside frame 1/0)"]
    assert "its log ends inside frame(s) 1/0 and" in job.problems[0]


def test_frames_that_differ_before_the_cut_stay_a_finding_that_says_the_cut():
    a = _cap(_frame("0/0"), _frame("1/0"), _frame("2/0"))
    b = _cut(_frame("0/0"), _frame("5/0"))
    job = _job(a, b)
    (d,) = job.divergence
    assert d.kind == "frames" and d.compile_ids == {0: "1/0", 1: "5/0"}
    assert d.message.endswith("only on rank 1: 5/0 (rank 1's log is cut off: frames only on rank 0 may be ones "
                              "rank 1 compiled after the cut)")


def test_the_reference_rank_cut_too():
    caps = {0: _cut(_frame("0/0"), _frame("1/0", "torch.sin"), cut_in=["1/0"]),
            1: _cap(_frame("0/0"), _frame("1/0", "torch.cos"), _frame("2/0"))}
    job = Job.of(caps)
    job.divergence, job.checked = find_divergence(caps)
    settle_cuts(job)
    assert job.divergence == [] and len([line for line in job.checked if line.startswith("not counted")]) == 2


def test_a_damaged_rank_that_is_not_cut_is_named_and_its_findings_stand():
    said = "r1.log: 1 line not read (first: line 4: metadata is not JSON); kept 9 records (1 compile attempt)"
    b = _cap(_frame("0/0", "torch.cos"), meta={"not_read": said})
    job = _job(_cap(_frame("0/0", "torch.sin")), b)
    assert job.problems == [f"rank 1: {said}"] and cut_frames(job) == {}
    assert [d.kind for d in job.divergence] == ["graph"]


def test_no_damage_no_change():
    a, b = _cap(_frame("0/0")), _cap(_frame("0/0"), _frame("1/0"))
    job = _job(a, b)
    assert job.problems == [] and [d.kind for d in job.divergence] == ["frames"]
    assert not any(line.startswith("not counted") for line in job.checked)
