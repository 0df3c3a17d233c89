"""The one Session allowed to trace at a time, and the check that refuses a capture while it does.

Invariant: ``claim`` and ``release`` are the only writers of the active slot, under one lock, so at
most one session traces in a process; both ``tracer.capturing`` and ``tracer.session_worker`` import
this module and it imports neither (no import circle). See Note [Dynamo's compile lock].
"""

from __future__ import annotations

import threading
from typing import Optional, Protocol

__all__ = ["claim", "raise_if_tracing", "release", "tracing"]

# Note [Dynamo's compile lock]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo compiles under one process-wide RLock (``convert_frame.compile_lock``). A paused session's
# worker holds it, so any other thread that starts a compile waits until the pause ends. That is why
# a second session, and ``tracer.capture`` (through ``raise_if_tracing``), refuse to start while a
# session is running or paused instead of waiting; a plain ``torch.compile`` call elsewhere waits at
# most the session's ``pause_timeout``.


class _Tracing(Protocol):
    """What this module reads of a session's worker."""

    status: str  # "new", "running", "paused" or "finished"

    def describe(self) -> str: ...  # "Session #1 of f is paused at t.py:3 in f"


_lock = threading.Lock()
_active: Optional[_Tracing] = None  # the worker started and not yet finished


def tracing() -> Optional[_Tracing]:
    """The worker of the session that is running or paused now, else None."""
    worker = _active
    return worker if worker is not None and worker.status in ("running", "paused") else None


def raise_if_tracing(what: str = "tracer.capture()") -> None:
    """Raise a clear error when a Session is tracing; see Note [Dynamo's compile lock]."""
    worker = tracing()
    if worker is not None:
        raise RuntimeError(
            f"{what} cannot run while {worker.describe()}: Dynamo's compile lock is held by its trace. "
            f"Call resume() until it finishes, or abort() it, first."
        )


def claim(worker: _Tracing, name: str) -> None:
    """Make ``worker`` the active one (its status is set to "running"), or raise naming the active one."""
    global _active
    with _lock:
        if worker.status != "new":
            raise RuntimeError(f"{name} was already started (it is {worker.status})")
        other = tracing()
        if other is not None:
            raise RuntimeError(
                f"cannot start {name}: {other.describe()}, and one session traces at a time. "
                f"Call resume() on it until it finishes, or abort() it, first."
            )
        _active = worker
        worker.status = "running"


def release(worker: _Tracing) -> None:
    """``worker`` finished: free the slot if it holds it."""
    global _active
    with _lock:
        if _active is worker:
            _active = None
