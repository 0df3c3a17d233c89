"""What a capture records beyond the front half (issue #18): Inductor's graphs and code, Dynamo's
rewritten bytecode, ShapeEnv's symbols and specializations; one object the Recorder holds.

Invariant: ``hooks()`` installs everything for one capture (a structured-trace handler, the
bytecode hooks, Inductor's provenance config when the backend is Inductor) and removes all of it
on exit, also on error; ``fill()`` only reads what was recorded and drops it.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

from tracer._torch.bytecode import BytecodeRecorder
from tracer._torch.inductor import compile_inductor, provenance_tracking
from tracer._torch.inductor_backward import BackwardOrigins
from tracer._torch.patching import Patches
from tracer._torch.trace_events import TraceEvents, interned_strings
from tracer.inductor_events import inductor_graphs
from tracer.model import Frame
from tracer.shape_events import shape_records

__all__ = ["BACKENDS", "Beyond"]

BACKENDS = ("aot_eager", "inductor")  # CaptureOptions.backend; "aot_eager" records the AOT graphs (Frame.aot)

AttemptKey = tuple[int, int, int]


class Beyond:
    """The issue-#18 part of one capture's Recorder."""

    def __init__(self, backend: str = "aot_eager", mode: Optional[str] = None, dynamic: Optional[bool] = None) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r} (must be one of {list(BACKENDS)})")
        self.inductor = backend == "inductor"
        self.mode, self.dynamic = mode, dynamic  # torch.compile's mode and dynamic, for Inductor's mode options
        self.events = TraceEvents()
        self.bytecode = BytecodeRecorder()
        self.backward = BackwardOrigins()  # Inductor only: Note [Backward kernels and their Dynamo nodes]
        self._strings: dict[int, str] = {}

    @contextlib.contextmanager
    def hooks(self, patches: Patches) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            stack.enter_context(self.events)
            self.bytecode.install(patches)
            stack.callback(self.bytecode.remove)
            if self.inductor:
                stack.enter_context(provenance_tracking())
                self.backward.install(patches)
            yield

    def compile(self, gm: Any, example_inputs: list[Any], frame: Frame) -> Any:
        """backend="inductor": Inductor compiles the graph. AOTAutograd runs inside compile_fx, so
        ``frame.aot`` stays None by design (the option says so); Inductor's graphs go to ``frame.inductor``."""
        self.backward.dynamo_graph_ids.add(id(gm.graph))
        return compile_inductor(gm, example_inputs, self.mode, self.dynamic)

    def fill(self, frame: Frame, akey: AttemptKey) -> None:
        """Set frame.inductor / bytecode / symbols / shape_guards / specializations from this attempt's records."""
        if not self._strings:
            self._strings = interned_strings()
        events = self.events.of(akey)
        if self.inductor:
            frame.inductor = inductor_graphs(events, frame.problems, self.backward.backward.get(akey, []))
        frame.symbols, frame.shape_guards, frame.specializations = shape_records(events, self._strings)
        guard_fn = next((p for n, _m, p in reversed(events) if n == "dynamo_cpp_guards_str" and isinstance(p, str)), "")
        frame.bytecode = self.bytecode.record(akey, guard_fn.strip())

    def finish(self) -> list[str]:
        """Drop what was recorded; the problems of the handler and hooks."""
        self.events.events.clear()
        self.bytecode.clear()
        self.backward.clear()
        return [*self.events.errors, *self.bytecode.problems]
