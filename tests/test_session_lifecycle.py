"""tracer.trace / Session: how a session ends — abort, pause timeout, an error in traced code, two
sessions, garbage collection, KeyboardInterrupt, interpreter exit — and what it leaves behind (no
thread, no hook, Dynamo's step restored, no torch import for the API alone)."""

from __future__ import annotations

import gc
import os
import threading

import pytest
import torch
from session_cases import (
    failing_fn,
    finish,
    no_leftovers,  # noqa: F401 (the autouse fixture every session test runs under)
    root_fn,
    unmarked_fn,
)

import tracer
from tracer.active_session import raise_if_tracing
from tracer.session import TraceAborted

pytestmark = pytest.mark.timeout(600)


def test_abort_ends_the_session_with_a_clear_error():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3)).start()
    st = s.wait(timeout=120)
    assert st is not None
    s.abort()
    assert s.status == "finished"
    with pytest.raises(TraceAborted, match="aborted"):
        s.wait(timeout=120)
    assert isinstance(s.error, TraceAborted) and s.capture is None
    with pytest.raises(RuntimeError, match="needs a paused session"):
        s.resume()


def test_pause_timeout_aborts_the_trace():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3), pause_timeout=0.2).start()
    try:
        first = s.wait(timeout=120)
    except TraceAborted:  # it may already have timed out
        first = None
    assert first is None or first.label == "after sin"
    s._worker.join(120)  # nobody resumes it: the pause times out
    with pytest.raises(TraceAborted, match="pause_timeout"):
        s.wait(timeout=120)


def test_exception_in_traced_code_is_reraised_by_wait():
    s = tracer.trace(failing_fn, torch.randn(3)).start()
    with pytest.raises(ValueError, match="boom from traced code"):
        s.wait(timeout=120)
    assert isinstance(s.error, ValueError)
    with pytest.raises(ValueError):  # every wait() re-raises it
        s.wait(timeout=1)


def test_two_sessions():
    s1 = tracer.trace(root_fn, torch.randn(3), torch.randn(3)).start()
    assert s1.wait(timeout=120) is not None
    s2 = tracer.trace(unmarked_fn, torch.randn(3))
    with pytest.raises(RuntimeError, match=s1.name.replace("#", "\\#")) as info:
        s2.start()
    assert "paused at" in str(info.value) and "abort()" in str(info.value)
    with pytest.raises(RuntimeError, match="compile lock"):
        raise_if_tracing()
    with pytest.raises(RuntimeError, match=s1.name.replace("#", "\\#")):
        tracer.capture(unmarked_fn, torch.randn(3))
    assert s2.status == "new"
    finish(s1)
    s2.start()
    assert s2.wait(timeout=120) is None and s2.capture is not None


def test_garbage_collected_session_leaves_no_thread():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3)).start()
    assert s.wait(timeout=120) is not None
    worker = s._worker
    del s
    gc.collect()
    worker.join(60)
    assert worker.status == "finished" and isinstance(worker.error, TraceAborted)
    assert "garbage-collected" in str(worker.error)


def test_keyboard_interrupt_in_wait_aborts(monkeypatch):
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3))
    original = s._worker.cond.wait

    def interrupted(timeout=None):
        if threading.current_thread() is not threading.main_thread():
            return original(timeout)  # the worker's own pause wait is not the one interrupted
        monkeypatch.setattr(s._worker.cond, "wait", original)
        raise KeyboardInterrupt

    monkeypatch.setattr(s._worker.cond, "wait", interrupted)
    s.start()
    with pytest.raises(KeyboardInterrupt):
        # The main thread's wait must find the trace running: if it paused first, step (running again).
        while s.wait(timeout=120) is not None:
            s.step()
    s._worker.join(60)
    with pytest.raises(TraceAborted, match="KeyboardInterrupt"):
        s.wait(timeout=120)


def test_bad_input_gets_clear_errors():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3))
    with pytest.raises(ValueError, match="'file.py:LINE'"):
        s.break_at("model.py")
    with pytest.raises(ValueError, match="HOP name"):
        s.break_on_hop("")
    with pytest.raises(RuntimeError, match="start\\(\\) first"):
        s.wait(timeout=1)
    with pytest.raises(RuntimeError, match="start\\(\\) first"):
        s.step()
    with pytest.raises(ValueError, match="pause_timeout"):
        tracer.trace(root_fn, pause_timeout=0)
    with pytest.raises(TypeError, match="function or nn.Module"):
        tracer.trace(42)
    s.abort()  # never started: just marked finished
    assert s.status == "finished"


def test_abort_while_running_stops_at_the_next_instruction():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3)).start()
    s.abort()  # most likely while Dynamo is still tracing; the marker guarantees it never finishes alone
    assert s.status == "finished"
    with pytest.raises(TraceAborted, match="abort\\(\\) was called"):
        s.wait(timeout=120)


_EXIT_SCRIPT = """
import atexit, sys
sys.path.insert(0, {tests!r})
SESSION = None

def report():  # registered before tracer's own handler, so it runs after it (atexit is LIFO)
    w = SESSION._worker
    print("at exit:", w.status, type(w.error).__name__, "alive" if w.thread.is_alive() else "ended", flush=True)

atexit.register(report)
import torch, tracer
from session_cases import root_fn
from session_cases import no_leftovers  # noqa: F401 (the autouse fixture every session test runs under)
SESSION = tracer.trace(root_fn, torch.randn(3), torch.randn(3)).start()
assert SESSION.wait(timeout=120) is not None
print("paused", flush=True)
"""


def test_interpreter_exit_while_paused_leaves_no_blocked_thread():
    import subprocess
    import sys

    script = _EXIT_SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "paused" in done.stdout
    assert "at exit: finished TraceAborted ended" in done.stdout


def test_dynamo_step_is_restored_after_every_ending():
    from torch._dynamo.symbolic_convert import InstructionTranslatorBase

    original = vars(InstructionTranslatorBase)["step"]
    for end in ("finish", "abort", "error", "timeout"):
        fn, args = (failing_fn, (torch.randn(3),)) if end == "error" else (root_fn, (torch.randn(3), torch.randn(3)))
        s = tracer.trace(fn, *args, pause_timeout=0.1 if end == "timeout" else 600).start()
        st = None
        try:
            st = s.wait(timeout=120)
            assert vars(InstructionTranslatorBase)["step"] is not original  # hooked while tracing
            if end == "abort":
                s.abort()
            elif end == "finish":
                s.resume()
            s._worker.join(120)
            s.wait(timeout=120)
        except (ValueError, TraceAborted):
            assert end in ("error", "timeout", "abort"), (end, st)
        assert s.status == "finished"
        assert vars(InstructionTranslatorBase)["step"] is original, end


def test_importing_the_session_api_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, tracer, viz.session_panel; print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"  # see Note [Lazy torch import]
