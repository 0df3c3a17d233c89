"""trace() / Session / pause(): the comptime-style pause, the public side (the thread is in session_worker).

Invariant: a Session holds its worker, never the reverse, so dropping a Session (even paused) lets it
be collected and its worker aborted; see ``tracer.session_worker`` for the threading invariants. The
Session's methods are the only way to control a trace (a PausedState is a snapshot, and the panel in
``viz.session_panel`` uses these same methods).

>>> import torch, tracer
>>> def f(x):
...     y = x.sin()
...     tracer.pause("after sin")
...     return y.cos()
>>> s = tracer.trace(f, torch.randn(3))
>>> st = s.start().wait(timeout=60)
>>> st.label, [n.target for n in st.graph.find(op="call_method")]
('after sin', ['sin'])
>>> s.resume(); s.wait(timeout=60) is None
True
"""

from __future__ import annotations

import inspect
import itertools
import types
import uuid
import weakref
from typing import Any, Callable, Optional, Union

from tracer import display
from tracer.model import Capture
from tracer.options import CaptureOptions, split_options
from tracer.paused import LocalVar, Location, PausedState, TracerState
from tracer.session_worker import DEFAULT_PAUSE_TIMEOUT, TraceAborted, Worker

__all__ = ["LocalVar", "Location", "PausedState", "Session", "TraceAborted", "TracerState", "pause", "trace"]

_numbers = itertools.count(1)
_sessions: weakref.WeakValueDictionary[str, Session] = weakref.WeakValueDictionary()  # by session_key

# Note [Lazy torch import]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# ``import tracer`` (and so ``import viz``) must not import torch: the torch side of a session
# (``tracer._torch.pause``) is imported when the first Session starts, which also installs the
# comptime marker that ``pause()`` calls. Before that no session can be tracing, so ``pause()``
# has nothing to do, exactly as in eager.
_comptime_pause: Optional[Callable[[str], None]] = None


def _line_in(fn: Any, line: Union[int, str, None]) -> tuple[str, int]:
    """(file, line) of ``line`` (a number or a unique piece of text) in the source of ``fn``."""
    if not hasattr(fn, "__code__") and callable(getattr(fn, "forward", None)):
        fn = fn.forward  # an nn.Module: its forward
    code = getattr(getattr(fn, "__func__", fn), "__code__", fn)
    if not isinstance(code, types.CodeType):
        raise TypeError(f"break_at expects 'file.py:LINE' or (function, line), got {type(fn).__name__}")
    if isinstance(line, int) and not isinstance(line, bool):
        return (code.co_filename, line)
    if not isinstance(line, str) or not line.strip():
        raise ValueError(f"break_at({code.co_name}, line) needs a line number or a piece of its source text, "
                         f"got {line!r}")
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError) as e:
        raise ValueError(f"break_at: no source for {code.co_name} ({e}); pass a line number instead") from None
    hits = [start + i for i, text in enumerate(lines) if line in text]
    if len(hits) != 1:
        shown = [f"{start + i}: {t.strip()}" for i, t in enumerate(lines) if t.strip()][:30]
        raise ValueError(f"break_at: {line!r} is on {len(hits)} lines of {code.co_name} (must be exactly one); "
                         f"its lines are {shown}")
    return (code.co_filename, hits[0])


class Session:
    """One capture traced in a worker thread that can pause mid-trace; see :func:`trace`.

    Display it in a notebook to get the panel (paused source, tracer stack, partial graph, locals,
    Resume / Step / Abort buttons).
    """

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, options: Optional[CaptureOptions] = None,
                 pause_timeout: float = DEFAULT_PAUSE_TIMEOUT) -> None:
        if options is None:
            options = CaptureOptions()
        if not isinstance(options, CaptureOptions):
            raise TypeError(f"options must be a tracer.CaptureOptions, got {type(options).__name__}")
        if not callable(fn):
            raise TypeError(f"trace() needs a function or nn.Module to trace, got {type(fn).__name__}")
        if not (isinstance(pause_timeout, (int, float)) and pause_timeout > 0):
            raise ValueError(f"pause_timeout must be a positive number of seconds, got {pause_timeout!r}")
        fn_name = getattr(fn, "__qualname__", None) or type(fn).__name__
        self.name = f"Session #{next(_numbers)} of {fn_name}"
        key = uuid.uuid4().hex
        self._worker = Worker(self.name, key, fn, args, kwargs, options, float(pause_timeout))
        _sessions[key] = self
        # A collected Session must not leave its thread paused: abort it (Note [comptime callbacks] in tracer/session_worker.py).
        self._finalizer = weakref.finalize(self, self._worker.abort, "the Session was garbage-collected", 5.0)

    # -- breakpoints ---------------------------------------------------------------------------
    def break_at(self, location: Any, line: Union[int, str, None] = None) -> Session:
        """Pause before Dynamo traces a source line (any frame: root, inlined, or a HOP body).

        ``location`` is ``"file.py:LINE"`` (``file`` matches by path suffix, or exactly when
        absolute), or a function (or method, nn.Module for its forward, or code object) with ``line``: an absolute
        line number, or text that appears on exactly one line of its source. The second form suits
        functions defined in notebook cells, whose file names are generated:
        ``s.break_at(f, "return b * y")``.
        """
        if isinstance(location, str) and line is None:
            file, sep, num = location.rpartition(":")
            if not sep or not file or not num.strip().isdigit() or int(num) <= 0:
                raise ValueError(f"break_at expects 'file.py:LINE' (e.g. 'model.py:42') or (function, line), "
                                 f"got {location!r}")
            where = (file, int(num))
        else:
            where = _line_in(location, line)
        worker = self._worker
        with worker.cond:
            worker.breaks = (*worker.breaks, where)
        return self

    def break_on_hop(self, hop: str) -> Session:
        """Pause when a body speculation of HOP ``hop`` starts ("cond", "wrap", ...; "*" for any HOP)."""
        if not isinstance(hop, str) or not hop:
            raise ValueError(f"break_on_hop expects a HOP name such as 'cond', 'wrap', 'map_impl' or '*', got {hop!r}")
        worker = self._worker
        with worker.cond:
            worker.hops = worker.hops | {hop}
        return self

    # -- running -------------------------------------------------------------------------------
    def start(self) -> Session:
        """Start tracing in a worker thread and return at once; then call :meth:`wait`."""
        global _comptime_pause
        if _comptime_pause is None:  # Note [Lazy torch import]
            from tracer._torch.pause import comptime_pause

            _comptime_pause = comptime_pause
        self._worker.start()
        return self

    def wait(self, timeout: Optional[float] = None) -> Optional[PausedState]:
        """Block until the trace pauses (return the PausedState) or finishes (return None).

        Re-raises the trace's exception if it failed; ``TimeoutError`` if still running after
        ``timeout`` seconds. A KeyboardInterrupt here aborts the session.
        """
        return self._worker.wait(timeout)

    def step(self) -> None:
        """Resume until Dynamo reaches the next user source line, then pause again (see :meth:`wait`)."""
        self._worker.command_paused("step")

    def resume(self) -> None:
        """Resume to the next breakpoint or pause marker, or to the end (see :meth:`wait`)."""
        self._worker.command_paused("resume")

    def abort(self) -> None:
        """Stop tracing; the session ends with a TraceAborted error and its thread ends."""
        self._worker.abort("abort() was called")

    # -- results -------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """"new", "running", "paused" or "finished"."""
        return self._worker.status

    @property
    def state(self) -> Optional[PausedState]:
        """The current PausedState while paused, else None."""
        worker = self._worker
        with worker.cond:
            return worker.state if worker.status == "paused" else None

    @property
    def description(self) -> str:
        """One line: "Session #1 of f is paused at t.py:3 in f" (or running, new, finished)."""
        return self._worker.describe()

    @property
    def options(self) -> CaptureOptions:
        """The capture options this session traces with."""
        return self._worker.options

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` at every pause and when the trace ends (a bound method is held weakly).

        It runs in the session's thread, without any lock held: it may read the Session but must
        not ``wait()`` on it. Its errors never reach the trace; ``str(session)`` lists them.
        See Note [Panel updates] in tracer/session_worker.py.
        """
        self._worker.add_listener(callback)

    @classmethod
    def of(cls, state: PausedState) -> Optional[Session]:
        """The live Session in this process that paused with ``state``, else None (e.g. loaded from JSON)."""
        return _sessions.get(state.session_key) if state.session_key else None

    @property
    def capture(self) -> Optional[Capture]:
        """The final Capture once the trace finished without error (as ``tracer.capture`` gives)."""
        return self._worker.capture

    @property
    def error(self) -> Optional[BaseException]:
        """The exception that ended the trace (TraceAborted when aborted), else None."""
        return self._worker.error

    @property
    def pauses(self) -> int:
        """How many times the trace has paused so far."""
        return self._worker.pauses

    def __repr__(self) -> str:
        return f"<{self._worker.describe()}>"

    def __str__(self) -> str:
        worker = self._worker
        lines = [worker.describe()]
        if worker.breaks:
            lines.append("  break_at: " + ", ".join(f"{f}:{n}" for f, n in worker.breaks))
        if worker.hops:
            lines.append("  break_on_hop: " + ", ".join(sorted(worker.hops)))
        if worker.status == "finished":
            if worker.error is not None:
                lines.append(f"  error: {type(worker.error).__name__}: {worker.error}")
            elif worker.capture is not None:
                lines.append(f"  capture: {worker.capture!r}")
        lines.extend(f"  on_change callback failed: {e}" for e in worker.listener_errors)
        return "\n".join(lines)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return display.mimebundle(self, include=include, exclude=exclude)  # Note [Display through a registry]


def trace(fn: Callable, *args: Any, pause_timeout: float = DEFAULT_PAUSE_TIMEOUT,
          options: Optional[CaptureOptions] = None, **kwargs: Any) -> Session:
    """A Session that will trace ``fn(*args)`` like ``tracer.capture`` does; nothing runs until ``start()``.

    ``kwargs`` are split like ``tracer.capture``'s: its keyword options (``fullgraph``, ``dynamic``,
    ``backend="inductor"``, ...; or all of them as ``options=CaptureOptions(...)``) configure the
    capture, the rest are passed to ``fn``. A pause lasting more than ``pause_timeout`` seconds aborts the trace.
    """
    capture_options, fn_kwargs = split_options(kwargs, options)
    return Session(fn, args, fn_kwargs, capture_options, pause_timeout=pause_timeout)


def pause(label: str = "") -> None:
    """Pause the Session tracing this code here (comptime-style); a no-op in eager and in plain compiles.

    See Note [comptime callbacks] in tracer/session_worker.py.
    """
    marker = _comptime_pause
    if marker is not None:  # Note [Lazy torch import]
        marker(label)
