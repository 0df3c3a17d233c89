"""A real ``torchrun --nproc_per_node=2`` DDP job on CPU (gloo): tracer.capture in each rank,
load_job on its per-rank JSONs and on its TORCH_TRACE directory,
the divergence rank 1's graph break makes, and the job page in Chromium."""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys

import pytest

import tracer
import viz

REPO = pathlib.Path(__file__).resolve().parent.parent
JOB = REPO / "tests" / "ranks" / "ddp_job.py"
TIMEOUT = 180  # seconds for the whole job; it takes ~10 s on 2 free cores


def run_job(out: pathlib.Path) -> subprocess.CompletedProcess:
    """Run tests/ranks/ddp_job.py under torchrun (2 ranks, loopback rendezvous on a free port) with
    TORCH_TRACE=<out>/trace; the whole process group is killed on timeout."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "TORCH_TRACE": str(out / "trace"), "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--nnodes=1",
           f"--rdzv_endpoint=127.0.0.1:{port}", "--rdzv_backend=c10d", str(JOB), str(out)]
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        stdout, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"torchrun job did not finish in {TIMEOUT} s")
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, "")


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp_job")
    done = run_job(out)
    assert done.returncode == 0, done.stdout[-4000:]
    return out


def _forward(cap, status=None):
    return [f for f in cap.frames if f.code.startswith("ddp_job.py:") and " in forward" in f.code
            and (status is None or f.status == status)]


def test_each_rank_saves_its_capture_and_the_ddp_split(job_dir):
    caps = {r: tracer.Capture.load(str(job_dir / f"rank{r}.json")) for r in (0, 1)}
    for cap in caps.values():
        tracer.validate(cap)
        # The one thing not recorded exactly: a later piece's placeholder that the previous piece
        # produced (split_module's boundary value) has no Dynamo source, so the origin of a saved
        # value read from it is unknown (tracer/_torch/aot*: saved-value origins).
        assert [p for p in cap.all_problems() if not ("piece " in p and "has no source; origin unknown" in p)] == []
    (whole,) = _forward(caps[0], "compiled")
    # torch's own record of DDPOptimizer's split: one optimize_ddp_split_child entry per piece
    (log0,) = (job_dir / "trace").glob("*rank_0*.log")
    children = log0.read_text(encoding="utf-8").count('"optimize_ddp_split_child"')
    assert children == len(whole.pieces) == 2
    assert whole.graph == whole.pieces[0].graph and all(p.aot is not None for p in whole.pieces)
    # rank 1 broke the graph in forward: restarted, then two smaller graphs, none split
    assert [f.status for f in _forward(caps[1])] == ["restarted", "compiled"]


def test_load_job_reports_the_divergence_on_the_forward_frame(job_dir):
    job = tracer.load_job(str(job_dir))
    assert sorted(job.ranks) == [0, 1] and job.problems == []
    (whole,) = _forward(job.ranks[0], "compiled")
    (status,) = [d for d in job.divergence if d.kind == "status"]
    assert status.compile_ids == {0: whole.compile_id, 1: whole.compile_id} and status.ranks == [0, 1]
    assert "compiled on rank 0, restarted" in status.message and "graph_break" in status.message
    (frames,) = [d for d in job.divergence if d.kind == "frames"]
    assert frames.compile_ids[0] == "" and frames.compile_ids[1] in {f.compile_id for f in job.ranks[1].frames}
    assert any("no collectives in the graphs" in line for line in job.checked)
    assert tracer.Job.from_json(job.to_json()) == job


def test_load_job_on_the_torch_trace_directory(job_dir):
    """torch's own per-rank logs give the same findings as the captures the ranks saved."""
    from_logs = tracer.load_job(str(job_dir / "trace"))
    from_json = tracer.load_job(str(job_dir))
    assert from_logs.meta["loaded_from"] == "TORCH_TRACE" and sorted(from_logs.ranks) == [0, 1]
    assert [(d.kind, d.compile_ids) for d in from_logs.divergence] == [(d.kind, d.compile_ids) for d in from_json.divergence]


@pytest.mark.browser
def test_job_page_in_chromium(job_dir):
    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM, CHROMIUM_ARGS

    job = tracer.load_job(str(job_dir))
    (whole,) = _forward(job.ranks[0], "compiled")
    page_file = viz.export_job_html(job, job_dir / "job.html")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            page = b.new_page()
            page.goto(page_file.as_uri())
            cell = page.locator(f'td.ds-divergent[data-rank="1"][data-frame="{whole.compile_id}"]')
            assert cell.count() == 1
            assert cell.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 235, 233)"
            cell.locator("a").click()
            assert page.evaluate("location.hash") == f"#ds-rank-1-{whole.compile_id}"
            target = page.locator(f'[id="ds-rank-1-{whole.compile_id}"]')
            assert target.is_visible() and "restarted" in target.inner_text()
            page.locator('a.ds-rank[href="#ds-rank-0"]').click()
            assert page.locator("#ds-rank-0").is_visible()
            assert "2 pieces" in page.locator(f'td[data-rank="0"][data-frame="{whole.compile_id}"]').inner_text()
        finally:
            b.close()
