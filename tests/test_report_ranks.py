"""``dynascope report <dir> -j N``: each worker renders its log and sends back its section and payloads,
never its capture, and the page is the in-process report's, byte for byte (viz/report_ranks.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from viz.report_file import _BLOCK, _PART, payloads
from viz.report_ranks import _render_in_worker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT)


def _report(src: str, out: str, workers: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "viz.cli", "report", src, "-o", out, "-j", str(workers)],
                          capture_output=True, text=True, timeout=300, env=ENV, cwd=ROOT)


def test_a_worker_answers_with_its_rendered_section_not_its_capture(ddp_job_dir):
    """The answer is the section (strings and counts) and compressed blocks; no graph node, guard or
    capture field crosses; the payloads decode to the frames' HTML."""
    log = sorted((ddp_job_dir / "trace").glob("*rank_0*.log"))[0]
    ok, text = _render_in_worker(str(log), "3-")
    assert ok, text
    got = json.loads(text)
    assert set(got) == {"fn", "frames", "not_read", "section", "blocks", "keys", "html_bytes", "counted", "reused"}
    assert set(got["section"]) == {"heading", "recompiles", "decomposition", "frames", "overview"}
    assert got["frames"] == got["counted"] == len(got["section"]["frames"]) > 0
    assert all(e["key"].startswith("3-") for e in got["section"]["frames"])
    assert '"nodes": [' not in text and '"guards": [' not in text  # no Graph or Frame of the model
    page = "".join(got["blocks"])
    decoded = payloads(page)  # every payload names parts the worker sent with it
    assert set(decoded) >= {e["key"] for e in got["section"]["frames"]} and all("ds-report" in h for h in decoded.values())
    assert len(got["keys"]) == page.count('class="ds-part"')
    bad = ddp_job_dir / "trace_not_here.log"
    ok, err = _render_in_worker(str(bad), "0-")
    assert not ok and "trace_not_here.log" in err


def test_workers_write_the_serial_page_with_a_damaged_and_repeated_log(ddp_job_dir, tmp_path):
    """Rank logs: the job's two, a copy of rank 0 (its parts are already on the page: stored once) and an
    unreadable log before it (the logs after it get their place again): -j 1, 2 and 3 write one file,
    byte for byte, and each warns once about the damaged log."""
    src = sorted((ddp_job_dir / "trace").glob("*.log"))
    d = tmp_path / "ranks"
    d.mkdir()
    shutil.copy(src[0], d / "rank_0.log")
    (d / "rank_1.log").write_text("not a trace\n")
    shutil.copy(src[0], d / "rank_2.log")
    shutil.copy(src[1], d / "rank_3.log")
    pages = []
    for j in (1, 2, 3):
        r = _report(str(d), str(tmp_path / f"j{j}.html"), j)
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("warning: ") == 1 and "rank_1.log" in r.stderr
        pages.append((tmp_path / f"j{j}.html").read_bytes())
    assert pages[0] == pages[1] == pages[2]
    text = pages[0].decode()
    keys = set(payloads(text))
    assert {k.split("-")[0] for k in keys} == {"0", "1", "2"}  # three logs read, keyed by their place
    # rank 0 and its copy ("1-": the second log read) have equal frames: they name the same parts, each written once
    named = {m.group(1): m.group(2) for m in _BLOCK.finditer(text)}
    assert named["0-0"] and named["0-0"] == named["1-0"]
    parts = [m.group(2) for m in _PART.finditer(text)]
    assert len(parts) == len(set(parts))

def test_no_readable_log_is_one_error(tmp_path):
    for r in range(2):
        (tmp_path / f"rank_{r}.log").write_text("nothing\n")
    r = _report(str(tmp_path), str(tmp_path / "x.html"), 2)
    assert r.returncode == 2 and "none of the 2 logs could be read" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.html").exists()
