"""100 seeded random start/step/resume/abort sequences: never a hang, never a thread or hook left behind."""

from __future__ import annotations

import random
import threading

import pytest
import torch
from session_cases import FILE, line_of, nested_cond_fn, root_fn, unmarked_fn, wrap_fn

import tracer
from tracer._torch.pause import hooks_installed
from tracer.session import TraceAborted

pytestmark = [pytest.mark.timeout(1200), pytest.mark.slow]

WAIT = 120  # seconds any single wait may take; see the pytest timeout above for the whole test


def make_session(rng: random.Random) -> tuple[tracer.Session, object]:
    x, y = torch.randn(3), torch.randn(3)
    kind = rng.choice(["root", "unmarked", "wrap", "cond"])
    if kind == "root":
        return tracer.trace(root_fn, x, y), root_fn(x, y)
    if kind == "unmarked":
        line = line_of(unmarked_fn, rng.choice(["LINE-NEG", "a = x.exp()", "return b.relu()"]))
        return tracer.trace(unmarked_fn, x).break_at(f"{FILE}:{line}"), unmarked_fn(x)
    if kind == "wrap":
        s = tracer.trace(wrap_fn, x, y)
        return (s.break_on_hop("wrap") if rng.random() < 0.5 else s), wrap_fn(x, y)
    s = tracer.trace(nested_cond_fn, x, y)
    return (s.break_on_hop("cond") if rng.random() < 0.5 else s), nested_cond_fn(x, y)


def run_sequence(rng: random.Random) -> None:
    s, expected = make_session(rng)
    s.start()
    aborted = False
    for _ in range(rng.randint(1, 12)):
        op = rng.choice(["step", "step", "resume", "abort", "wait", "second"])
        try:
            st = s.wait(timeout=WAIT)
        except TraceAborted:
            assert aborted
            break
        if st is None:
            break
        assert st.tracers and st.location.line > 0
        if op == "step":
            s.step()
        elif op == "resume":
            s.resume()
        elif op == "abort":
            s.abort()
            aborted = True
        elif op == "second":
            with pytest.raises(RuntimeError, match="one session traces at a time"):
                tracer.trace(unmarked_fn, torch.randn(2)).start()
    if s.status != "finished":
        if rng.random() < 0.5:
            s.abort()
            aborted = True
        else:
            while (st := s.wait(timeout=WAIT)) is not None:
                s.resume()
    s._worker.join(WAIT)
    assert s.status == "finished"
    if aborted:
        assert isinstance(s.error, TraceAborted)
    else:
        assert s.error is None, s.error
        torch.testing.assert_close(s.capture.result, expected)


def test_random_sequences_never_hang_or_leak():
    rng = random.Random(20261122)
    for _ in range(100):
        run_sequence(rng)
        assert [t for t in threading.enumerate() if t.name.startswith("dynascope ")] == []
        assert not hooks_installed()
    assert tracer.active_session.tracing() is None
