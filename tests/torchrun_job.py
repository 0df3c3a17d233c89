"""Running a rank script of tests/ranks/ under a real ``torchrun`` (gloo, CPU) for the tests that need a
real multi-process job; conftest.py's ``ddp_job_dir`` (ddp_job.py, 2 ranks) and ``transformer_jobs``
(transformer_job.py, 8 ranks) run them once per session."""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
JOB = REPO / "tests" / "ranks" / "ddp_job.py"
TIMEOUT = 180  # seconds for the 2-rank job; it takes ~10-15 s on 2 free cores


def run_job(out: pathlib.Path, script: pathlib.Path = JOB, args: Sequence[str] = (), nproc: int = 2,
            timeout: float = TIMEOUT, python: str = sys.executable) -> subprocess.CompletedProcess:
    """Run ``script <out> *args`` under torchrun (``nproc`` ranks, loopback rendezvous on a free port,
    one OpenMP thread each) with TORCH_TRACE=<out>/trace, by ``python``; the whole process group is
    killed after ``timeout`` seconds (a test failure)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "TORCH_TRACE": str(out / "trace"), "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    cmd = [python, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "--nnodes=1",
           f"--rdzv_endpoint=127.0.0.1:{port}", "--rdzv_backend=c10d", str(script), str(out), *args]
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"torchrun job {script.name} {' '.join(args)} did not finish in {timeout} s")
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, "")


def forward_frames(cap, status=None):
    """The frames of the job's ``MLP.forward`` (and its resume function), optionally of one status."""
    return [f for f in cap.frames if f.code.startswith("ddp_job.py:") and " in forward" in f.code
            and (status is None or f.status == status)]
