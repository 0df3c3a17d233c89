"""The ``dynascope`` command, run for real in subprocesses on a real TORCH_TRACE log."""

from __future__ import annotations

import glob
import gzip
import os
import shutil
import subprocess
import sys

import pytest

from viz.report_file import expand

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ENV = dict(os.environ, PYTHONPATH=ROOT)


@pytest.fixture(scope="module")
def trace_dir(child_trace_dir) -> str:
    return str(child_trace_dir)


def _run(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "viz.cli", *args], capture_output=True, text=True, timeout=120,
                          env=env or ENV, cwd=ROOT)


def test_report_writes_one_self_contained_html(trace_dir, tmp_path):
    (log,) = glob.glob(os.path.join(trace_dir, "*.log"))
    out = tmp_path / "r.html"
    r = _run("report", log, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out)
    assert "loading" in r.stderr and "wrote" in r.stderr  # progress on stderr
    html = expand(out.read_text())  # every frame's payload decoded (viz/report_file.py)
    assert html.startswith("<!DOCTYPE html>") or "<html" in html
    assert "<script src=" not in html and "<svg" in html  # drawn graphs, nothing fetched
    assert "hop_and_break" in html and "wrap_body_0" in html


def test_report_of_a_directory_has_every_rank(trace_dir, tmp_path):
    (log,) = glob.glob(os.path.join(trace_dir, "*.log"))
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    shutil.copy(log, ranks / "rank_0.log")
    shutil.copy(log, ranks / "rank_1.log")
    r = _run("report", str(ranks), "-o", str(tmp_path / "job.html"))
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "job.html").read_text()
    assert "rank_0.log" in html and "rank_1.log" in html


def test_a_directory_is_read_by_workers_with_the_serial_result(ddp_job_dir, tmp_path):
    """The real torchrun job's two rank logs: read by two worker processes or in the command's own
    process, the report is the same file; each rank read is a progress line."""
    trace = str(ddp_job_dir / "trace")
    one = _run("report", trace, "-o", str(tmp_path / "one.html"), "--workers", "1")
    two = _run("report", trace, "-o", str(tmp_path / "two.html"), "-j", "2")
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert (tmp_path / "one.html").read_text() == (tmp_path / "two.html").read_text()
    assert "with 2 workers" in two.stderr and "with 1 worker\n" in one.stderr
    assert [line.split(" (")[0] for line in two.stderr.splitlines() if line.startswith("dynascope:   log ")] == \
        ["dynascope:   log 0", "dynascope:   log 1"]
    bad = _run("report", trace, "-o", str(tmp_path / "x.html"), "--workers", "0")
    assert bad.returncode == 2 and "workers must be a positive int" in bad.stderr


def test_not_a_trace_is_a_clear_error(tmp_path):
    bad = tmp_path / "notes.log"
    bad.write_text("hello\n")
    r = _run("report", str(bad), "-o", str(tmp_path / "x.html"))
    assert r.returncode == 2 and "not a TORCH_TRACE structured log" in r.stderr
    r = _run("report", str(tmp_path / "missing"), "-o", str(tmp_path / "x.html"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_show_opens_the_report(trace_dir, tmp_path):
    marker = tmp_path / "opened"
    env = dict(ENV, BROWSER=f"{sys.executable} -c \"import sys; open({str(marker)!r}, 'w').write(sys.argv[1])\" %s")
    r = _run("show", trace_dir, env=env)
    assert r.returncode == 0, r.stderr
    path = r.stdout.strip()
    assert os.path.exists(path) and path.endswith(".html")
    assert marker.read_text().endswith(os.path.basename(path))
    os.unlink(path)


def test_a_report_imports_no_widget_stack_and_no_torch(trace_dir, tmp_path):
    """Note [Lazy public names]: writing a static report needs neither the widgets nor graphviz."""
    log = glob.glob(os.path.join(trace_dir, "*.log"))[0]
    code = ("import sys, viz.cli; viz.cli.main(['report', sys.argv[1], '-o', sys.argv[2]]); "
            "print(sorted(m for m in ('torch', 'ipywidgets', 'anywidget', 'IPython', 'graphviz') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code, log, str(tmp_path / "r.html")], capture_output=True, text=True,
                       timeout=120, env=ENV, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[]"
    assert (tmp_path / "r.html").stat().st_size > 0



def test_a_report_of_one_log_imports_no_capture_job_pool_or_browser(trace_dir, tmp_path):
    """Note [The report command imports what it uses]: one log, one process: none of the live capture,
    the session, jobs, process pools or the browser is imported."""
    log = glob.glob(os.path.join(trace_dir, "*.log"))[0]
    unused = ("tracer.capturing", "tracer.options", "tracer.session", "tracer.paused", "tracer._torch.releases",
              "tracer.job", "multiprocessing", "concurrent.futures.process", "viz.report_frames", "viz.report_ranks",
              "webbrowser")
    code = ("import sys, viz.cli; viz.cli.main(['report', sys.argv[1], '-o', sys.argv[2]]); "
            f"print(sorted(m for m in {unused!r} if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code, log, str(tmp_path / "r.html")], capture_output=True, text=True,
                       timeout=120, env=ENV, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[]"

def test_a_damaged_log_is_reported_with_one_warning_line(trace_dir, tmp_path):
    """A log cut off mid-stream (as a job killed while writing leaves it): the report of what was read,
    one warning line on stderr naming the file, where it broke and what was kept, exit status 0."""
    from tracer.trace_log import load_trace

    (log,) = glob.glob(os.path.join(trace_dir, "*.log"))
    with open(log, "rb") as fh:
        gz = gzip.compress(fh.read(), mtime=0)
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gz[:len(gz) // 2])
    want = load_trace(str(cut)).meta["not_read"]
    assert want.startswith("cut.log.gz: the gzip data breaks in line ")
    r = _run("report", str(cut), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    assert [ln for ln in r.stderr.splitlines() if "warning" in ln] == [f"dynascope: warning: {want}"]
    assert "Traceback" not in r.stderr and r.stdout.strip() == str(tmp_path / "r.html")
    assert want in (tmp_path / "r.html").read_text()  # and in the report's problems


def test_nothing_readable_is_one_error_line_and_exit_2(trace_dir, tmp_path):
    (log,) = glob.glob(os.path.join(trace_dir, "*.log"))
    head = tmp_path / "head.log.gz"
    with open(log, "rb") as fh:
        head.write_bytes(gzip.compress(fh.read(), mtime=0)[:20])
    r = _run("report", str(head), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stdout == ""
    assert r.stderr.splitlines()[-1] == (f"dynascope: error: {head}: the gzip data breaks before any text (Compressed "
                                         "file ended before the end-of-stream marker was reached); nothing could be "
                                         "read before it")
    assert not (tmp_path / "r.html").exists()
    # in a directory, an unreadable log is a warning while another one can be read
    d = tmp_path / "ranks"
    d.mkdir()
    shutil.copy(log, d / "rank_0.log")
    shutil.copy(head, d / "rank_1.log.gz")
    r = _run("report", str(d), "-o", str(tmp_path / "job.html"))
    assert r.returncode == 0, r.stderr
    assert [ln for ln in r.stderr.splitlines() if "warning" in ln] == [
        f"dynascope: warning: {d / 'rank_1.log.gz'}: the gzip data breaks before any text (Compressed file ended "
        "before the end-of-stream marker was reached); nothing could be read before it"]
    shutil.copy(head, d / "rank_0.log.gz")
    os.unlink(d / "rank_0.log")
    r = _run("report", str(d), "-o", str(tmp_path / "job.html"))
    assert r.returncode == 2 and r.stderr.splitlines()[-1].startswith("dynascope: error: none of the 2 logs could be read: ")


def test_show_without_a_browser_says_so_and_where_the_report_is(trace_dir, tmp_path):
    env = {k: v for k, v in ENV.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["BROWSER"] = "false"  # a browser command that fails, as where no browser can run
    r = _run("show", trace_dir, env=env)
    assert r.returncode == 1, r.stderr
    path = r.stdout.strip()
    assert os.path.exists(path) and path.endswith(".html") and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[-1] == (
        f"dynascope: no browser could be opened (no display, or $BROWSER failed); the report is {path}: open that "
        f"file in a browser, or write it where you want with 'dynascope report {trace_dir} -o report.html'")
    os.unlink(path)
