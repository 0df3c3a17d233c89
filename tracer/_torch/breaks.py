"""Hook on Dynamo's graph-break logging: one record per graph break, with reason and user stack.

Invariant: the wrapper calls the real ``log_graph_break`` unchanged and is installed for one
capture only; it reads the same reason text and user stack Dynamo logs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from tracer._torch.patching import Patches
from tracer._torch.releases import MissingHookPoint, hook_point, lacking
from tracer._torch.since_2_13 import tap_skip_log
from tracer._torch.subtracer import compile_key

__all__ = ["BreakRecord", "SkipRecorder", "break_record", "format_stack", "install_graph_break_hook"]

# Note [Graph break hook point]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``InstructionTranslatorBase.log_graph_break(code_options, reason, exc)`` in
# torch/_dynamo/symbolic_convert.py is where Dynamo reports every graph break it recovers from
# (it also emits the "dynamo_graph_break_reason" structured-trace artifact there). Its
# arguments carry the reason and ``exc.real_stack`` (the user frames), so we wrap the method on
# the class and read them before calling through. A break Dynamo already logged (``exc.logged``)
# is not reported twice, as in Dynamo.


@dataclass
class BreakRecord:
    key: Optional[tuple[int, int]]  # (frame_id, frame_compile_id) of the compile that broke
    reason: str
    user_stack: list[str] = field(default_factory=list)
    location: str = ""
    code_line: str = ""
    attempt: int = 0  # the attempt that broke (Note [Compile ids and attempts] in tracer/model/frame.py)
    problem: str = ""  # set when the user stack could not be read


def format_stack(stack: Any, lines: Optional[dict[tuple[Any, Any, Any], str]] = None) -> list[str]:
    """"file.py:LINE in fn" per frame (basename), outermost first. ``lines``: a table shared by the
    calls for one record (a frame's guards), so a frame many stacks share is formatted, and held, once
    (a transformer's guards repeat the same few user frames over a thousand times)."""
    out = []
    for fs in stack or []:
        try:
            key = (fs.filename, fs.lineno, fs.name)
            text = lines.get(key) if lines is not None else None
            if text is None:
                text = f"{os.path.basename(fs.filename)}:{fs.lineno} in {fs.name}"
                if lines is not None:
                    lines[key] = text
        except Exception:  # except: display text only (a stack line as the frame's own text)
            text = str(fs)
        out.append(text)
    return out.copy()  # at its exact size: appends leave room for more (Note [Equal texts held once per conversion])


def _user_frames(stack: Any) -> list[Any]:
    frames = list(stack or [])
    user = [f for f in frames if not _is_torch_file(f.filename)]
    return user or frames


def _is_torch_file(path: str) -> bool:
    return f"{os.sep}torch{os.sep}" in path and "site-packages" in path or path.startswith("<eval_with_key>")


def break_record(reason: str, exc: Any) -> Optional[BreakRecord]:
    """The record of one graph break as ``log_graph_break`` receives it; None when Dynamo already
    logged ``exc`` (it reads ``exc.logged`` too). The user stack is ``exc.real_stack``, else the
    tracing context's, as Dynamo reads it. Never raises: what it cannot read is the record's ``problem``."""
    key, attempt = compile_key()
    try:
        if exc.logged:
            return None
        stack = getattr(exc, "real_stack", None)
        if stack is None:
            from torch._guards import TracingContext

            stack = TracingContext.extract_stack()
        frames = _user_frames(stack)
        location = code_line = ""
        if frames:
            last = frames[-1]
            location = f"{os.path.basename(last.filename)}:{last.lineno}"
            code_line = (last.line or "").strip()
        return BreakRecord(key, str(reason), format_stack(frames), location, code_line, attempt)
    except Exception as e:  # except: records a problem (never disturb Dynamo)
        return BreakRecord(key, str(reason), attempt=attempt, problem=f"graph break not fully read: {type(e).__name__}: {e}")


def install_graph_break_hook(patches: Patches, sink: Callable[[BreakRecord], None]) -> None:
    cls, real = hook_point("torch._dynamo.symbolic_convert", "InstructionTranslatorBase.log_graph_break")

    def log_graph_break(self: Any, code_options: Any, reason: str, exc: Any, *args: Any, **kwargs: Any) -> Any:
        rec = break_record(reason, exc)
        if rec is not None:
            sink(rec)
        return real(self, code_options, reason, exc, *args, **kwargs)

    log_graph_break.__wrapped__ = real  # type: ignore[attr-defined]
    patches.set(cls, "log_graph_break", log_graph_break)


# Note [Why a frame has no graph]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A compile that traced no ops ends with ``SkipFrame("No ops traced for the FX graph ...")``
# (symbolic_convert.py), which ``_compile`` turns into ``ConvertFrameReturn(skip_reason=...)``:
# no exception, so ``compilation_metrics`` has no fail_reason. The reason reaches
# ``CatchErrorsWrapper._handle_skip(result, frame)`` (convert_frame.py) right after the compile's
# metrics were logged, on the same thread, and is logged there at debug level only. We wrap that
# method and hand ``(code, reason)`` to the recorder, which gives it to the compile that just ended
# for the same code object.
class SkipRecorder:
    """Wraps ``CatchErrorsWrapper._handle_skip`` for one capture; calls ``sink(code, reason)``. Before
    torch 2.13 there is no such method: ``signal(compile key, reason)`` instead, from the compile's own
    debug log (Note [Skip reasons before torch 2.13] in since_2_13.py)."""

    def __init__(self, patches: Patches, sink: Callable[[Any, str], None],
                 signal: Callable[[Optional[tuple[int, int]], str], None]) -> None:
        try:
            cls, real = hook_point("torch._dynamo.convert_frame", "CatchErrorsWrapper._handle_skip")
        except MissingHookPoint:
            if "torch._dynamo.types:ConvertFrameReturn.skip_reason" not in lacking():  # not a release before 2.13
                raise
            tap_skip_log(patches, signal)  # before 2.13
            return

        def _handle_skip(self: Any, result: Any, frame: Any) -> Any:
            if result.skip_reason is not None and result.guarded_code is None:  # the test torch's own makes
                sink(frame.f_code, str(result.skip_reason))
            return real(self, result, frame)

        _handle_skip.__wrapped__ = real  # type: ignore[attr-defined]
        patches.set(cls, "_handle_skip", _handle_skip)
