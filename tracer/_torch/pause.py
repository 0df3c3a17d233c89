"""Dynamo-side hooks of a Session: per-line stepping in the InstructionTranslator, HOP body starts, comptime.

Invariant: ``pause_hooks(worker)`` patches ``InstructionTranslatorBase.step`` only between its enter and
exit (also when the trace raises), and the patched step acts only in the session's worker thread; every
other thread (and every other time) sees Dynamo unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Callable, Iterator, Optional, Protocol

from torch._dynamo.comptime import comptime
from torch._dynamo.symbolic_convert import InstructionTranslatorBase

from tracer._torch.patching import ACTIVE, Patches
from tracer._torch.pause_snapshot import hop_name, is_dynascope_file, is_user_file, snapshot

__all__ = ["Worker", "comptime_pause", "hooks_installed", "pause_hooks"]


class Worker(Protocol):
    """What the hooks need from a session's worker (implemented by ``tracer.session_worker.Worker``)."""

    thread_id: Optional[int]

    def check_abort(self) -> None: ...  # raises when the session was aborted

    def wants(self, file: str, line: Optional[int], is_user: bool, new_hop: Optional[str]
              ) -> Optional[tuple[str, str]]: ...  # (reason, label) to pause here, or None

    def pause(self, reason: str, label: str, take_snapshot: Callable[[], dict[str, Any]]) -> None: ...


# The worker whose hooks are installed; one session traces at a time (tracer.active_session enforces it).
_worker: Optional[Worker] = None


# Note [HOP body starts]
# ~~~~~~~~~~~~~~~~~~~~~~~
# ``break_on_hop`` needs "a HOP body speculation starts". Rather than patching ``speculate_subgraph``
# a second time (the capture core already wraps it; two layers of patches would have to unwind in
# order across threads), the step hook notices a SubgraphTracer it has not seen on top of
# ``OutputGraph.tracers``: ``OutputGraph.subtracer`` pushed it and the body function's first
# instruction is about to be traced (torch/_dynamo/symbolic_convert.py
# InstructionTranslatorBase.step). Seen tracers are held weakly.


@contextlib.contextmanager
def pause_hooks(worker: Worker) -> Iterator[None]:
    """Patch ``InstructionTranslatorBase.step`` for one trace so ``worker`` sees every new line and body."""
    global _worker
    if _worker is not None:
        raise RuntimeError("dynascope pause hooks are already installed for another session")
    original = InstructionTranslatorBase.__dict__["step"]
    seen_tracers: weakref.WeakSet[Any] = weakref.WeakSet()

    def step(self: InstructionTranslatorBase) -> bool:
        if threading.get_ident() == worker.thread_id:
            _before_step(self, worker, seen_tracers)
        return original(self)

    step.__wrapped__ = original  # type: ignore[attr-defined]
    with Patches() as patches:
        patches.set(InstructionTranslatorBase, "step", step)
        _worker = worker
        try:
            yield
        finally:
            _worker = None


def hooks_installed() -> bool:
    """True while some session's hooks patch Dynamo (tests check it is False after every session)."""
    return (_worker is not None or "__wrapped__" in vars(InstructionTranslatorBase.__dict__["step"])
            or (InstructionTranslatorBase, "step") in ACTIVE)


def _before_step(tx: InstructionTranslatorBase, worker: Worker, seen_tracers: weakref.WeakSet[Any]) -> None:
    worker.check_abort()
    ip = tx.instruction_pointer
    if ip is None or ip >= len(tx.instructions):
        return
    inst = tx.instructions[ip]
    # See Note [HOP body starts].
    new_hop = None
    current = tx.output.current_tracer
    if current.parent is not None and current not in seen_tracers:
        seen_tracers.add(current)
        new_hop = hop_name(current)
    line = inst.starts_line if inst.starts_line and inst.starts_line != tx.lineno else None
    if line is None and new_hop is None:
        return
    file = tx.f_code.co_filename
    hit = worker.wants(file, line, is_user_file(file), new_hop)
    if hit is not None:
        reason, label = hit
        worker.pause(reason, label, lambda: snapshot(tx, inst, line or tx.lineno))


# -- the comptime-style marker ------------------------------------------------------------------


def comptime_pause(label: str) -> None:
    """Body of ``tracer.pause``: under Dynamo, call ``_on_comptime`` at trace time; a no-op in eager."""
    comptime(_on_comptime)


def _on_comptime(ctx: Any) -> None:
    # Runs inside Dynamo, in the thread that traces: see Note [comptime callbacks] in tracer/session_worker.py.
    worker = _worker
    if worker is None or threading.get_ident() != worker.thread_id:
        return
    tx = ctx._i_will_not_complain_if_bc_breaks_InstructionTranslator()
    label, problems = "", []
    vt = tx.symbolic_locals.get("label")
    try:
        if vt is not None and vt.is_python_constant():
            label = str(vt.as_python_constant())
    except Exception as e:  # except: records a problem (the pause still happens; its label is unknown)
        problems.append(f"the pause label: {type(e).__name__}: {e}"[:300])
    user_tx = tx
    while getattr(user_tx, "parent", None) is not None and is_dynascope_file(user_tx.f_code.co_filename):
        user_tx = user_tx.parent
    inst = user_tx.current_instruction
    worker.check_abort()
    def take_snapshot() -> dict[str, Any]:
        parts = snapshot(user_tx, inst, user_tx.lineno)
        parts["problems"] = problems + parts["problems"]
        return parts

    worker.pause("pause", label, take_snapshot)

