"""The report's caches warmed by a forked helper (viz/report_warm.py): the page is the unwarmed one byte
for byte, the helper's drawings, facts and guard texts are what the first frame uses, and a helper that
fails or does not answer in time only means nothing is warmed. The log's head (``load_head``) is the
whole load's first frame."""

from __future__ import annotations

import glob
import os
import time

import pytest

from tracer.trace_log import load_head, load_trace
from tracer.trace_log.deferred import read_only_graphs
from viz import report_warm
from viz.report_file import expand, write_report
from viz.report_graphs import DrawingCache, frame_graphs

needs_cores = pytest.mark.skipif(report_warm._cores() < 2 or not hasattr(os, "fork"),
                                 reason="the helper is forked only with a second core")


@pytest.fixture(scope="module")
def log(child_trace_dir) -> str:
    (path,) = glob.glob(os.path.join(str(child_trace_dir), "*.log"))
    return path


def _page(log: str, out, warm=None) -> tuple[str, int]:
    with read_only_graphs():
        cap = load_trace(log)
    stats = write_report(out, [cap], title=cap.fn or "capture", release=True, warm=warm)
    return out.read_text(), stats.layouts_reused


def test_the_head_of_a_log_holds_its_first_frame_with_a_graph(log):
    with read_only_graphs():
        whole = load_trace(log)
    head = load_head(log)
    first = next(i for i, f in enumerate(whole.frames) if f.has_graph)
    assert len(head.frames) == first + 2 < len(whole.frames)  # up to the attempt after it, not the rest
    a, b = head.frames[first], whole.frames[first]
    assert a.compile_id == b.compile_id
    assert [(k, t, g.code, g.nodes) for k, t, g, _ in frame_graphs(a)] == \
           [(k, t, g.code, g.nodes) for k, t, g, _ in frame_graphs(b)]
    assert a.guards == b.guards


@needs_cores
def test_a_warmed_report_is_the_page_written_without_the_helper(log, tmp_path):
    cold, cold_reused = _page(log, tmp_path / "cold.html")
    warming = report_warm._fork(log)
    assert warming is not None
    warm, warm_reused = _page(log, tmp_path / "warm.html", warming)
    assert warming.entries > 0 and warming.fd < 0 and warming.error == ""
    assert warm == cold  # byte for byte
    assert "hop_and_break" in expand(warm)
    with read_only_graphs():
        first = next(f for f in load_trace(log).frames if f.has_graph)
    distinct = {DrawingCache.key(g, hi) for _, _, g, hi in frame_graphs(first)}  # an equal graph's second drawing is a reuse anyway
    assert warm_reused == cold_reused + len(distinct)  # the first frame drawn from the helper's layouts


@needs_cores
def test_a_helper_that_fails_or_is_late_warms_nothing(log, tmp_path, monkeypatch):
    cold, _ = _page(log, tmp_path / "cold.html")

    def fails(path: str) -> bytes:
        raise RuntimeError("the helper fails")

    def late(path: str) -> bytes:
        time.sleep(60)
        return b""

    for helper in (fails, late):
        monkeypatch.setattr(report_warm, "_warm", helper)  # the forked helper runs it
        warming = report_warm._fork(log)
        cache, facts = DrawingCache(stable=True), {}
        warming(cache, facts)  # waits at most as long again as since the fork (1 s here), then kills it
        assert warming.entries == 0 and not facts and cache.get(b"x") is None
        assert warming.error == ("RuntimeError: the helper fails" if helper is fails else "the helper did not answer in time")
        with pytest.raises(ChildProcessError):
            os.waitpid(warming.pid, os.WNOHANG)  # reaped
        page, _ = _page(log, tmp_path / "page.html", report_warm._fork(log))
        assert page == cold


@needs_cores
def test_a_helper_whose_answer_is_not_read_is_ended(log):
    warming = report_warm._fork(log)
    warming.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(warming.pid, os.WNOHANG)
    warming(DrawingCache(stable=True), {})  # nothing left to read
    assert warming.entries == 0


def test_no_helper_without_a_free_core_or_for_a_small_log(log, monkeypatch):
    monkeypatch.setattr(report_warm, "_cores", lambda: 2)
    monkeypatch.setattr(report_warm, "_core_free", lambda cores: True)
    assert os.path.getsize(log) < report_warm._MIN_BYTES and report_warm.start(log) is None  # its scan is short
    monkeypatch.setattr(report_warm, "_MIN_BYTES", 0)
    warming = report_warm.start(log)
    assert warming is not None
    warming.close()
    monkeypatch.setattr(report_warm, "_core_free", lambda cores: False)
    assert report_warm.start(log) is None
    monkeypatch.setattr(report_warm, "_cores", lambda: 1)
    monkeypatch.setattr(report_warm, "_core_free", lambda cores: True)
    assert report_warm.start(log) is None
    monkeypatch.setenv("DYNASCOPE_REPORT_HELPER", "always")
    warming = report_warm.start(log)
    assert warming is not None
    warming.close()
    monkeypatch.setenv("DYNASCOPE_REPORT_HELPER", "never")
    monkeypatch.setattr(report_warm, "_cores", lambda: 2)
    assert report_warm.start(log) is None
    monkeypatch.setenv("DYNASCOPE_REPORT_HELPER", "sometimes")
    with pytest.raises(ValueError, match="must be one of 'auto', 'always', 'never'"):
        report_warm.start(log)
