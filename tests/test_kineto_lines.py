"""tracer.profile keeps kineto's progress lines off the process's real stderr (fd 2), and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tracer._kineto_lines import is_kineto_progress

ROOT = Path(__file__).resolve().parent.parent


def _stderr_of(code: str) -> str:
    """fd 2 of a fresh interpreter running ``code`` (what a Jupyter kernel would put in the cell)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KINETO_LOG_LEVEL", None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300, check=True)
    return done.stderr


def test_recognises_kineto_progress_lines_only():
    assert is_kineto_progress(b"USDT:2026-11-26 05:00:06 12085:12085 SyncActivityProfilerHandler.cpp:52] profiler_start\n")
    assert is_kineto_progress(b"STAGE:2026-11-26 05:00:22 12211:12211 SyncActivityProfilerHandler.cpp:51] Completed Stage: Warm Up\n")
    # a CUDA build's GPU probe on a machine without a GPU: not about a CPU profile (Note [Kineto's progress lines])
    assert is_kineto_progress(b"ERROR:2026-11-26 05:00:52 12418:12418 DeviceProperties.cpp:56] gpuGetDeviceCount failed with code 35\n")
    assert not is_kineto_progress(b"ERROR:2026-11-26 05:00:52 12418:12418 DeviceProperties.cpp:56] other failure\n")
    assert not is_kineto_progress(b"ERROR:2026-11-26 05:00:52 12418:12418 Foo.cpp:56] profiler_start\n")
    assert not is_kineto_progress(b"WARNING:2026-11-26 05:00:52 1:1 Foo.cpp:1] something\n")
    assert not is_kineto_progress(b"USDT: my own line\n")


def test_profile_writes_no_kineto_progress_line_to_fd2():
    plain = _stderr_of("""
        import torch
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            torch.randn(8, 8) @ torch.randn(8, 8)
    """)
    if not any(is_kineto_progress(ln.encode()) for ln in plain.splitlines(keepends=True)):
        pytest.skip("this torch's profiler writes no kineto progress line: nothing to keep out")
    profiled = _stderr_of("""
        import torch, tracer
        prof = tracer.profile(lambda x: torch.sin(x) @ x, torch.randn(64, 64), steps=2)
        assert prof.nodes
    """)
    assert not [ln for ln in profiled.splitlines(keepends=True) if is_kineto_progress(ln.encode())]


def test_other_lines_come_back_in_order_and_fd2_is_restored_also_on_error():
    err = _stderr_of("""
        import os, sys
        from tracer._kineto_lines import kineto_progress_kept_out
        os.write(2, b"before\\n")
        with kineto_progress_kept_out():
            os.write(2, b"USDT:2026-11-26 05:00:06 1:1 SyncActivityProfilerHandler.cpp:52] profiler_start\\n")
            os.write(2, b"ERROR:2026-11-26 05:00:06 1:1 DeviceProperties.cpp:56] kept\\n")
            sys.stderr.write("from python\\n")
        try:
            with kineto_progress_kept_out():
                os.write(2, b"inside a failing call\\n")
                raise KeyError("boom")
        except KeyError:
            pass
        os.write(2, b"after\\n")
    """)
    assert err.splitlines() == ["before", "ERROR:2026-11-26 05:00:06 1:1 DeviceProperties.cpp:56] kept",
                                "from python", "inside a failing call", "after"]
