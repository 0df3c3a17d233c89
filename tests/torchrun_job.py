"""Running a rank script of tests/ranks/ under a real ``torchrun`` (gloo, CPU) for the tests that need a
real multi-process job; conftest.py's ``ddp_job_dir`` (ddp_job.py, 2 ranks) and ``transformer_jobs``
(transformer_job.py, 8 ranks) run them once per session."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
JOB = REPO / "tests" / "ranks" / "ddp_job.py"
TRANSFORMER_JOB = REPO / "tests" / "ranks" / "transformer_job.py"
TIMEOUT = 180  # seconds for the 2-rank job; it takes ~10-15 s on 2 free cores
RANKS, ODD_RANK, CUT_RANK = 8, 5, 2  # the transformer job: its ranks, the one that breaks the graph, the one whose log is cut


def run_job(out: pathlib.Path, script: pathlib.Path = JOB, args: Sequence[str] = (), nproc: int = 2,
            timeout: float = TIMEOUT, python: str = sys.executable) -> subprocess.CompletedProcess:
    """Run ``script <out> *args`` under torchrun (``nproc`` ranks, loopback rendezvous on a free port,
    one OpenMP thread each) with TORCH_TRACE=<out>/trace, by ``python``; the whole process group is
    killed after ``timeout`` seconds (a test failure). A job one of whose ranks torch's own C++ aborted
    (``std::terminate``: seen once in 8-rank gloo jobs on a loaded 2-core machine, in torch, before any of
    dynascope's code runs on the logs) is run once more from an empty ``out``, with a warning."""
    done = _run_once(out, script, args, nproc, timeout, python)
    if done.returncode != 0 and _ABORTED in done.stdout:
        warnings.warn(f"torchrun job {script.name}: a rank aborted in torch ({_ABORTED!r}); running it once more",
                      stacklevel=2)
        shutil.rmtree(out)
        out.mkdir()
        done = _run_once(out, script, args, nproc, timeout, python)
    return done


_ABORTED = "terminate called without an active exception"


def _run_once(out: pathlib.Path, script: pathlib.Path, args: Sequence[str], nproc: int, timeout: float,
              python: str) -> subprocess.CompletedProcess:
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


@dataclasses.dataclass
class RealJob:
    """One run of tests/ranks/transformer_job.py (8 ranks) with one rank's log cut in half afterwards."""

    trace: pathlib.Path  # the TORCH_TRACE directory: one log per rank, rank CUT_RANK's cut
    wrap: str  # "ddp" or "fsdp2"
    seconds: float  # the torchrun job's wall time
    cut: pathlib.Path  # the cut log (in ``trace``)
    uncut: pathlib.Path  # a copy of that log as torch wrote it, outside ``trace``


def run_transformer_job(out: pathlib.Path, wrap: str, python: str = sys.executable, timeout: float = 600) -> RealJob:
    """Run the 8-rank transformer job under torchrun, then cut rank CUT_RANK's log in half, in the middle
    of a line (a copy of the whole log is kept beside the directory)."""
    t0 = time.perf_counter()
    done = run_job(out, TRANSFORMER_JOB, ["--wrap", wrap, "--odd-rank", str(ODD_RANK)], nproc=RANKS,
                   timeout=timeout, python=python)
    seconds = time.perf_counter() - t0
    assert done.returncode == 0, done.stdout[-6000:]
    (log,) = (out / "trace").glob(f"*rank_{CUT_RANK}_*.log")
    uncut = out / f"uncut_{log.name}"
    data = log.read_bytes()
    uncut.write_bytes(data)
    n = cut_point(data)
    with open(log, "r+b") as fh:
        fh.truncate(n)
    return RealJob(out / "trace", wrap, seconds, log, uncut)


def cut_point(data: bytes) -> int:
    """The first byte offset from the middle of ``data`` that lies inside a line (no newline on either side)."""
    n = len(data) // 2
    while data[n - 1:n] == b"\n" or data[n:n + 1] == b"\n":
        n += 1
    return n
