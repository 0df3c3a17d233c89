"""Running tests/ranks/ddp_job.py under a real ``torchrun --nproc_per_node=2`` (gloo, CPU) for the
tests that need a real multi-process job; conftest.py's ``ddp_job_dir`` runs it once per session."""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
JOB = REPO / "tests" / "ranks" / "ddp_job.py"
TIMEOUT = 180  # seconds for the whole job; it takes ~10-15 s on 2 free cores


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


def forward_frames(cap, status=None):
    """The frames of the job's ``MLP.forward`` (and its resume function), optionally of one status."""
    return [f for f in cap.frames if f.code.startswith("ddp_job.py:") and " in forward" in f.code
            and (status is None or f.status == status)]
