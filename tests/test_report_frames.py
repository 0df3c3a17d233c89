"""``dynascope report LOG -j N``: one log's frames rendered in N worker processes forked after the load
give the in-process report's page, byte for byte, and a worker that fails or dies is one clear error
line and exit status 2, never a hang (viz/report_frames.py)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from viz.report_file import expand
from viz.report_frames import frame_runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT)


@pytest.fixture(scope="module")
def log(child_trace_dir) -> str:
    (path,) = glob.glob(os.path.join(str(child_trace_dir), "*.log"))
    return path


def _report(*args: str, code: str = "") -> subprocess.CompletedProcess:
    """The CLI run in a child process; ``code`` runs first in its ``__main__`` (a worker forked from it
    runs the same module: how a worker's failure is made real below)."""
    main = f"{code}\nimport sys, viz.cli\nsys.exit(viz.cli.main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", main], capture_output=True, text=True, timeout=300, env=ENV, cwd=ROOT)


def test_frames_rendered_by_workers_give_the_serial_page(log, tmp_path):
    """The real log (a wrap body, a graph break, a recompile and its diff): -j 1, 2 and 3 write the same
    file; with workers, each run of frames is a progress line."""
    pages = {}
    for j in (1, 2, 3):
        r = _report("report", log, "-o", str(tmp_path / f"j{j}.html"), "-j", str(j))
        assert r.returncode == 0, r.stderr
        pages[j] = (tmp_path / f"j{j}.html").read_text()
        runs = [line for line in r.stderr.splitlines() if line.startswith("dynascope:   frames ")]
        if j == 1:
            assert " workers" not in r.stderr and not runs
        else:
            assert f"in {j} processes" in r.stderr and len(runs) == j, r.stderr  # frames 1.. in j runs, the last here
            assert "frame 0 rendered here" in r.stderr
    assert pages[1] == pages[2] == pages[3]
    html = expand(pages[2])
    assert "hop_and_break" in html and "wrap_body_0" in html  # every frame, decoded


def test_frame_runs_cover_every_frame_once_in_order():
    for frames in range(0, 9):
        for n in range(1, 5):
            runs = frame_runs(frames, n)
            assert [i for r in runs for i in r] == list(range(frames))
            assert len(runs) == min(n, frames) and all(len(r) for r in runs)
            assert max(map(len, runs), default=0) - min(map(len, runs), default=0) <= 1


_DIE = """
import os, signal, viz.report_frames as rf
def _render_run(path, start, stop, recompiles):
    os.kill(os.getpid(), signal.SIGKILL)
rf._render_run = _render_run
"""

_DIFF = """
import os, viz.report_diffs as rd
parent, real = os.getpid(), rd.diff_html
def diff_html(*args):
    if os.getpid() != parent:
        raise RuntimeError("made to fail in a diff")
    return real(*args)
rd.diff_html = diff_html
"""

_RAISE = """
import viz.report_frames as rf
def _render_run(path, start, stop, recompiles):
    raise RuntimeError("made to fail in frames %d-%d" % (start, stop - 1))
rf._render_run = _render_run
"""


@pytest.mark.parametrize("code,j,says", [(_DIE, 2, "its worker process died"),
                                         (_RAISE, 2, "its worker failed: RuntimeError: made to fail in frames 1-"),
                                         (_DIFF, 3, "frames 3-4 of ")])
def test_a_failed_worker_is_one_error_line_and_no_report(log, tmp_path, code, j, says):
    """A worker killed (as the OOM killer would) or raising, in its frames or in a recompile's diff (the
    log's one diff, of frames 3 and 4, is the second worker's with -j 3): the command ends (no hang) with
    exit status 2 and one ``error:`` line naming the frames and the cause, no traceback, and writes no report."""
    out = tmp_path / "r.html"
    r = _report("report", log, "-o", str(out), "-j", str(j), code=code)
    assert r.returncode == 2, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if "error:" in x]
    assert line.startswith("dynascope: error: frames ") and "could not be rendered" in line and says in line, line
    if code is _DIFF:
        assert "its worker failed: RuntimeError: made to fail in a diff" in line, line
    assert "Traceback" not in r.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


def _waiting(f) -> int:
    """How many of frame ``f``'s graphs wait for their parse (Note [Graphs parsed on first access])."""
    aot = [] if f.aot is None else [f.aot.joint, f.aot.forward, f.aot.backward, f.aot.inference]
    return len({id(g) for g in [f.graph, *aot, *(p.graph for p in f.pieces)] if g is not None and not g.parsed})


def test_the_parent_parses_only_what_it_renders(log, tmp_path):
    """With workers, this process parses the graphs of what it renders itself (frame 0, the last run and
    the diffs of the recompiles whose later frame is in it) and no other frame's: the log's one diff
    (frames 3 and 4) is the second worker's with -j 3, and the problems a worker sends are set on the
    frame, not appended to it, since reading ``problems`` would run the frame's waiting parses here
    (Note [Problems of deferred parses])."""
    import cProfile
    import pstats

    from tracer.trace_log import load_trace
    from viz.report_frames import frame_runs, write_log_in_workers

    cap = load_trace(log, read_only=True)
    assert [r.compile_id for r in cap.recompiles] == ["2/1"] and [f.compile_id for f in cap.frames[3:5]] == ["2/0", "2/1"]
    last = frame_runs(len(cap.frames) - 1, 3)[-1]  # -j 3: two workers, the last run rendered here
    assert [i + 1 for i in last] == [5]
    mine = [cap.frames[0], *(cap.frames[i + 1] for i in last)]
    here = {id(f): f for f in mine if f is not None}
    first = sum(map(_waiting, here.values()))
    rest = sum(_waiting(f) for f in cap.frames if id(f) not in here)
    assert rest > 0
    prof = cProfile.Profile()
    prof.enable()
    try:
        write_log_in_workers(str(tmp_path / "r.html"), cap, log, 3, title="t", progress=lambda line: None)
    finally:
        prof.disable()
    fills = sum(s[0] for (file, _, fn), s in pstats.Stats(prof).stats.items()  # type: ignore[attr-defined]
                if file.endswith("deferred.py") and fn == "fill")
    assert fills <= first, (fills, first, rest)


def test_a_diff_that_fails_in_a_worker_gives_the_serial_page(log, tmp_path, monkeypatch):
    """The log's one recompile diff (frames 3 and 4) is computed in the second worker with -j 3, not here;
    when it fails there, its problem reaches this process's overview and the recompile is left out, as on
    the serial page (tracer/diffing.py ``_fill_diff``: a failed diff is a problem of the capture)."""
    import multiprocessing

    import tracer.diffing as diffing
    import tracer.rank_pool as rank_pool
    from tracer.trace_log import load_trace
    from viz.report_file import write_report
    from viz.report_frames import write_log_in_workers

    parent, here = os.getpid(), []

    def broken(a, b, *, reason=""):
        if os.getpid() == parent:
            here.append(b.compile_id)
        raise RuntimeError("made to fail")

    monkeypatch.setattr(diffing, "diff", broken)  # forked workers inherit it: forked even beside another test's thread
    monkeypatch.setattr(rank_pool, "_context", lambda: multiprocessing.get_context("fork"))
    write_report(tmp_path / "one.html", [load_trace(log, read_only=True)], title="t", release=True)
    assert here == ["2/1"]
    here.clear()
    write_log_in_workers(str(tmp_path / "three.html"), load_trace(log, read_only=True), log, 3, title="t",
                         progress=lambda line: None)
    assert here == []
    page = (tmp_path / "three.html").read_text()
    assert "recompile 2/1: diff failed: RuntimeError: made to fail" in page and 'data-frame="recompile-0"' not in page
    assert page == (tmp_path / "one.html").read_text()


_THREAD = """
import threading
threading.Thread(target=threading.Event().wait, daemon=True).start()  # a second thread: workers from a forkserver
"""


def test_workers_not_forked_from_the_loader_give_the_serial_page(log, tmp_path):
    """Beside another thread the workers start from a forkserver (tracer/rank_pool.py ``_context``): each
    loads the log itself and starts with empty caches, and the page is still the serial one."""
    one = _report("report", log, "-o", str(tmp_path / "one.html"), "-j", "1")
    two = _report("report", log, "-o", str(tmp_path / "two.html"), "-j", "3", code=_THREAD)
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert "in 3 processes" in two.stderr
    assert (tmp_path / "one.html").read_text() == (tmp_path / "two.html").read_text()


def test_a_diff_that_fails_in_this_process_gives_the_serial_page(log, tmp_path, monkeypatch):
    """With -j 2 the log's one diff (frames 3 and 4) is rendered here, with the last run: its failure's
    problem is listed once, where the serial page lists it (viz/report_diffs.py takes it out of
    ``cap.problems`` and puts it back in its place)."""
    import tracer.diffing as diffing
    from tracer.trace_log import load_trace
    from viz.report_file import write_report
    from viz.report_frames import frame_runs, write_log_in_workers

    def broken(a, b, *, reason=""):
        raise RuntimeError("made to fail")

    monkeypatch.setattr(diffing, "diff", broken)
    cap = load_trace(log, read_only=True)
    assert 4 in [i + 1 for i in frame_runs(len(cap.frames) - 1, 2)[-1]]  # the later frame: this process's run
    write_report(tmp_path / "one.html", [load_trace(log, read_only=True)], title="t", release=True)
    write_log_in_workers(str(tmp_path / "two.html"), cap, log, 2, title="t", progress=lambda line: None)
    page = (tmp_path / "two.html").read_text()
    assert page.count("recompile 2/1: diff failed: RuntimeError: made to fail") == 1
    assert page == (tmp_path / "one.html").read_text()


def test_the_serial_report_lets_each_frame_go_after_its_last_use(log, tmp_path, monkeypatch):
    """Note [Diffs rendered beside their later frame]: the one diff (frames 3 and 4) is rendered once
    frame 4 is, both frames still whole; every frame no later diff reads was let go before it, and
    frames 3 and 4 right after it, so no more than the frames a coming diff reads are held at once; the
    diff itself is let go once rendered."""
    import viz.report_diffs as report_diffs
    from tracer.model.frame import Frame
    from tracer.trace_log import load_trace
    from viz.report_file import write_report

    cap = load_trace(log, read_only=True)
    events: list = []
    real_let_go, real_diff_html = Frame.let_go, report_diffs.diff_html

    def let_go(self):
        events.append(("let go", cap.frames.index(self)))
        real_let_go(self)

    def diff_html(d, a, b):
        events.append(("diff", cap.frames.index(a), cap.frames.index(b), bool(a.graph.nodes), bool(b.graph.nodes)))
        return real_diff_html(d, a, b)

    monkeypatch.setattr(Frame, "let_go", let_go)
    monkeypatch.setattr(report_diffs, "diff_html", diff_html)
    write_report(tmp_path / "r.html", [cap], title="t", release=True)
    at = next(i for i, e in enumerate(events) if e[0] == "diff")
    assert events[at] == ("diff", 3, 4, True, True)
    assert sorted(e[1] for e in events[:at]) == [0, 1, 2]
    assert sorted(e[1] for e in events[at + 1:at + 3]) == [3, 4]
    assert sorted(e[1] for e in events if e[0] == "let go") == list(range(len(cap.frames)))
    assert cap.recompiles[0].diff is None  # let go too, once rendered
    monkeypatch.undo()
    kept = load_trace(log, read_only=True)  # without ``release`` (export_html: the caller's capture) nothing is let go
    write_report(tmp_path / "kept.html", [kept], title="t")
    assert kept.recompiles[0].diff is not None and all(f.guards or not f.has_graph for f in kept.frames)
