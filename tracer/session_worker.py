"""The worker of a Session: its thread and pause protocol (the ``Worker`` protocol of ``tracer._torch.pause``).

Invariant: at most one worker traces at a time in a process (``tracer.active_session``); a worker never blocks
forever (every pause times out; abort, interrupt, garbage collection of its Session and interpreter
exit all release it); it holds no reference to its Session, and its hooks are gone once it finished.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import traceback
import weakref
from typing import Any, Callable, Optional

from tracer import active_session
from tracer._torch.since_2_12 import prepare_worker_compile
from tracer.capturing import _run_capture
from tracer.model import Capture
from tracer.options import CaptureOptions
from tracer.paused import PausedState

__all__ = ["DEFAULT_PAUSE_TIMEOUT", "TraceAborted", "Worker"]

DEFAULT_PAUSE_TIMEOUT = 600.0  # seconds a pause may last before the trace is aborted

# Note [comptime callbacks]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# ``tracer.pause(label)`` is torch/_dynamo/comptime.py's ``comptime`` made notebook-native. Under Dynamo,
# ``torch._dynamo.comptime.comptime(cb)`` calls ``cb(ComptimeContext)`` while it traces the call (no
# graph break, nothing in the graph); in eager it calls only its no-op fallback. Our callback (and the
# per-line step hook) runs in the session's worker thread, snapshots Dynamo's state into plain data,
# then blocks on a Condition until the notebook says resume / step / abort. Abort raises
# ``_AbortTrace`` (a BaseException, so no ``except Exception`` in Dynamo swallows it) right there,
# and Dynamo unwinds through its own ``finally`` blocks; the hooks' context manager then restores
# ``InstructionTranslatorBase.step``. Only one session traces at a time: see Note [Dynamo's compile
# lock] in tracer/active_session.py.
#
# Note [Panel updates]
# ~~~~~~~~~~~~~~~~~~~~
# A displayed panel redraws at every pause and at the end (``Session.on_change``), also when a cell
# rather than a button moved the session. Redrawing may run ``dot`` for seconds, so listeners run in
# the worker thread *without* ``cond`` held: ``publish`` sets the new status, marks ``notifying``,
# releases the lock, calls the listeners, then retakes it and wakes the waiters. ``wait()`` also waits
# while ``notifying``, so a panel is redrawn by the time ``wait()`` returns, and a notebook thread
# reading ``status`` or ``state`` meanwhile never blocks on a redraw. A listener error never reaches
# the trace: it is kept in ``listener_errors`` (shown by ``str(session)``).


class TraceAborted(RuntimeError):
    """The session's trace was stopped before it finished (abort(), a pause timeout, an interrupt...)."""


class _AbortTrace(BaseException):
    """Raised inside Dynamo by the pause hooks to unwind the trace; never escapes the worker."""


_workers: weakref.WeakSet[Worker] = weakref.WeakSet()  # every worker not yet collected (aborted at exit)


class Worker:
    """The session's thread and its pause protocol (the ``Worker`` protocol of ``tracer._torch.pause``).

    Holds no reference to its Session, so a Session can be garbage-collected while paused.
    """

    def __init__(self, name: str, key: str, fn: Callable, args: tuple, kwargs: dict, options: CaptureOptions,
                 pause_timeout: float) -> None:
        self.name, self.key = name, key
        self.fn, self.args, self.kwargs, self.options = fn, args, kwargs, options
        self.pause_timeout = pause_timeout
        self.cond = threading.Condition()  # guards every field below
        self.status = "new"  # new -> running <-> paused -> finished
        self.command: Optional[str] = None  # "resume" or "step", set by the notebook while paused
        self.abort_reason: Optional[str] = None
        self.breaks: tuple[tuple[str, int], ...] = ()
        self.hops: frozenset[str] = frozenset()
        self.step_mode = False
        self.state: Optional[PausedState] = None
        self.pauses = 0
        self.capture: Optional[Capture] = None
        self.error: Optional[BaseException] = None
        self.thread: Optional[threading.Thread] = None
        self.thread_id: Optional[int] = None
        self.notifying = False  # listeners are running; see Note [Panel updates]
        self.listeners: list[Callable[[], Any]] = []  # weak references to redraw callbacks
        self.listener_errors: list[str] = []
        _workers.add(self)

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` at every pause and at the end (a bound method is held weakly)."""
        ref = weakref.WeakMethod(callback) if hasattr(callback, "__self__") else (lambda: callback)
        with self.cond:
            self.listeners.append(ref)

    def _publish(self) -> None:
        """Run the listeners without ``cond``, then wake the waiters; called with ``cond`` held.

        See Note [Panel updates].
        """
        self.notifying = True
        listeners = [cb for cb in (ref() for ref in self.listeners) if cb is not None]
        self.cond.release()
        try:
            for callback in listeners:
                try:
                    callback()
                except Exception as e:  # except: records a problem (a broken panel must not break the trace)
                    self.listener_errors.append("".join(traceback.format_exception_only(type(e), e)).strip()[:500])
        finally:
            self.cond.acquire()
            self.listeners = [ref for ref in self.listeners if ref() is not None]
            self.notifying = False
            self.cond.notify_all()

    def describe(self) -> str:
        if self.status == "paused" and self.state is not None:
            return f"{self.name} is paused at {self.state.location}"
        return f"{self.name} is {self.status}"

    # -- the pause protocol: called in the worker thread, from inside Dynamo -----------------------
    def check_abort(self) -> None:
        reason = self.abort_reason
        if reason is not None:
            raise _AbortTrace(reason)

    def wants(self, file: str, line: Optional[int], is_user: bool, new_hop: Optional[str]
              ) -> Optional[tuple[str, str]]:
        if new_hop is not None and (new_hop in self.hops or "*" in self.hops):
            return ("break_on_hop", new_hop)
        if line is None:
            return None
        for bfile, bline in self.breaks:
            if bline == line and _file_matches(file, bfile):
                return ("break_at", f"{bfile}:{bline}")
        if self.step_mode and is_user:
            return ("step", "")
        return None

    def pause(self, reason: str, label: str, take_snapshot: Callable[[], dict[str, Any]]) -> None:
        parts = take_snapshot()  # in this thread, before the notebook hears of the pause
        with self.cond:
            self.check_abort()
            self.pauses += 1
            self.state = PausedState(session=self.name, session_key=self.key, index=self.pauses, reason=reason,
                                     label=label, **parts)
            self.status, self.command, self.step_mode = "paused", None, False
            self._publish()
            deadline = time.monotonic() + self.pause_timeout
            while self.command is None and self.abort_reason is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.abort_reason = (
                        f"{self.name} was paused at {self.state.location} for more than "
                        f"{self.pause_timeout:g} s (pause_timeout); the trace was aborted"
                    )
                    break
                self.cond.wait(remaining)
            self.status = "running"  # set by resume()/step() already; not by an abort or a timeout
            self.check_abort()
            self.step_mode = self.command == "step"
            self.command = None

    # -- the thread ----------------------------------------------------------------------------
    def run(self) -> None:
        self.thread_id = threading.get_ident()
        error: Optional[BaseException] = None
        capture = None
        try:
            # Imported here, not at the top: see Note [Lazy torch import] in tracer/session.py.
            from tracer._torch.pause import pause_hooks as _pause_hooks

            capture = _run_capture(self.fn, self.args, self.kwargs, self.options,
                                   extra_hooks=(lambda: _pause_hooks(self),))
        except BaseException as e:  # noqa: B036 - except: records a problem (it ends in s.error, see Note [comptime callbacks])
            error = e
        aborted = _find_abort(error)
        if aborted is not None or (error is None and self.abort_reason is not None):
            error = TraceAborted(f"{self.name} was aborted: {self.abort_reason or aborted}")
        active_session.release(self)
        with self.cond:
            self.capture, self.error = (capture if error is None else None), error
            self.status, self.state = "finished", None
            self.fn = self.args = self.kwargs = None  # type: ignore[assignment]
            self._publish()

    # -- the notebook side ---------------------------------------------------------------------
    def start(self) -> None:
        with self.cond:
            active_session.claim(self, self.name)
        prepare_worker_compile()  # Note [A compile on a worker thread, before torch 2.12]
        self.thread = threading.Thread(target=self.run, name=f"dynascope {self.name}", daemon=True)
        self.thread.start()

    def command_paused(self, command: str) -> None:
        with self.cond:
            if self.status != "paused":
                hint = " (call start() first)" if self.status == "new" else ""
                raise RuntimeError(f"{command}() needs a paused session, but {self.describe()}{hint}")
            self.command, self.status = command, "running"
            self.cond.notify_all()

    def abort(self, reason: str = "abort() was called", join_timeout: float = 30.0) -> None:
        with self.cond:
            if self.status == "finished":
                return
            if self.status == "new":
                self.status, self.error = "finished", TraceAborted(f"{self.name} was aborted before it started")
                self.cond.notify_all()
                return
            if self.abort_reason is None:
                self.abort_reason = reason
            self.cond.notify_all()
        self.join(join_timeout)

    def join(self, timeout: float) -> None:
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def wait(self, timeout: Optional[float]) -> Optional[PausedState]:
        if threading.get_ident() == self.thread_id:
            raise RuntimeError(f"wait() called from {self.name}'s own thread (a panel listener?): it would never return")
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self.cond:
                if self.status == "new":
                    raise RuntimeError(f"{self.name} was not started: call start() first")
                while self.status == "running" or self.notifying:  # See Note [Panel updates]
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise TimeoutError(f"{self.name} still running after wait(timeout={timeout:g})")
                    self.cond.wait(remaining)
                status, state, error = self.status, self.state, self.error
        except KeyboardInterrupt:
            self.abort("interrupted (KeyboardInterrupt in wait())")
            raise
        if status == "paused":
            return state
        if error is not None:
            raise error
        return None


def _find_abort(error: Optional[BaseException]) -> Optional[str]:
    """The abort message if ``error`` is (or was caused by) our _AbortTrace, however Dynamo wrapped it."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, _AbortTrace):
            return str(error)
        error = error.__cause__ or error.__context__
    return None


def _file_matches(file: str, wanted: str) -> bool:
    f = file.replace("\\", "/")
    w = wanted.replace("\\", "/")
    if os.path.isabs(wanted):
        return os.path.realpath(file) == os.path.realpath(wanted)
    return f == w or f.endswith("/" + w)


@atexit.register
def _abort_all_at_exit() -> None:
    for worker in list(_workers):
        worker.abort("the interpreter is exiting", join_timeout=5.0)
