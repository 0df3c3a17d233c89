"""The ``dynascope`` command, run for real in subprocesses on a real TORCH_TRACE log."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import pytest

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
    html = out.read_text()
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
