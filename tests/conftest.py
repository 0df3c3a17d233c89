"""Shared fixtures: one capture per example case per test session (compiling is the slow part)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # so tests can `import cases`

from cases import CASES  # noqa: E402


@pytest.fixture(scope="session")
def captured():
    """``captured(name)`` -> the Capture of ``CASES[name]`` (made once per session)."""
    import tracer

    done: dict[str, object] = {}

    def get(name: str):
        if name not in done:
            fn, args, kwargs = CASES[name]()
            done[name] = tracer.capture(fn, *args, **kwargs)
        return done[name]

    return get


@pytest.fixture(scope="session")
def ddp_job_dir(tmp_path_factory):
    """The output directory of one real 2-rank ``torchrun`` DDP job (tests/ranks/ddp_job.py): rank0.json,
    rank1.json and TORCH_TRACE logs under trace/; run once per session (it takes ~10-60 s). Read it, do not write."""
    from torchrun_job import run_job

    out = tmp_path_factory.mktemp("ddp_job")
    done = run_job(out)
    assert done.returncode == 0, done.stdout[-4000:]
    return out


@pytest.fixture(scope="session", params=["ddp", "fsdp2"])
def transformer_job(request, tmp_path_factory):
    """One real 8-rank ``torchrun`` job of a small transformer under torch.compile (tests/ranks/transformer_job.py),
    wrapped in DDP or FSDP2, with rank 5 breaking the graph and rank 2's TORCH_TRACE log cut in half
    afterwards (torchrun_job.RealJob); run once per session and wrap (~30-60 s each). Read it, do not write."""
    from torchrun_job import run_transformer_job

    return run_transformer_job(tmp_path_factory.mktemp(f"transformer_{request.param}"), request.param)


@pytest.fixture(scope="session")
def child_trace_dir(tmp_path_factory):
    """The TORCH_TRACE directory of one real run of tests/trace_log_child.py (one ``*.log``: a wrap body, a
    graph break, a recompile, ...), written by torch in a child process once per session. Read it, do not write."""
    import subprocess

    out = tmp_path_factory.mktemp("child_trace") / "trace"
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([sys.executable, os.path.join(here, "trace_log_child.py")], check=True, timeout=300,
                   capture_output=True, env=dict(os.environ, TORCH_TRACE=str(out)))
    return out


# Note [No capture has problems]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A supported case must be recorded exactly, so every capture any test makes (tracer.capture,
# tracer.trace sessions, the notebook helpers) is checked for problems: Recorder.finish is where
# every capture is completed, whichever entry point started it. A test that provokes problems on
# purpose says so with @pytest.mark.problems_expected.
@pytest.fixture(autouse=True)
def _no_capture_problems(request):
    from tracer._torch import backend

    finished = []
    real = backend.Recorder.finish

    def finish(self, cap):
        out = real(self, cap)
        finished.append(out)
        return out

    backend.Recorder.finish = finish
    try:
        yield
    finally:
        backend.Recorder.finish = real
    if request.node.get_closest_marker("problems_expected") is None:
        bad = [(cap.fn, cap.all_problems()) for cap in finished if cap.all_problems()]
        assert bad == [], f"captures recorded problems: {bad}"


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (tests/chromium.py) for one test module; each test opens its own page (context)."""
    from chromium import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            yield b
        finally:
            b.close()
