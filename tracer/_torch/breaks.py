"""Hook on Dynamo's graph-break logging: one record per graph break, with reason and user stack.

Invariant: the wrapper calls the real ``log_graph_break`` unchanged and is installed for one
capture only; it reads the same reason text and user stack Dynamo logs.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from tracer._torch.patching import Patches
from tracer._torch.subtracer import compile_key

__all__ = ["BreakRecord", "install_graph_break_hook", "format_stack"]

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
    key: Optional[tuple[int, int]]
    reason: str
    user_stack: list[str] = field(default_factory=list)
    location: str = ""
    code_line: str = ""


def format_stack(stack: Any) -> list[str]:
    """"file.py:LINE in fn" per frame (basename), outermost first."""
    out = []
    for fs in stack or []:
        try:
            out.append(f"{os.path.basename(fs.filename)}:{fs.lineno} in {fs.name}")
        except Exception:
            out.append(str(fs))
    return out


def _user_frames(stack: Any) -> list[Any]:
    frames = list(stack or [])
    user = [f for f in frames if not _is_torch_file(getattr(f, "filename", ""))]
    return user or frames


def _is_torch_file(path: str) -> bool:
    return f"{os.sep}torch{os.sep}" in path and "site-packages" in path or path.startswith("<eval_with_key>")


def install_graph_break_hook(patches: Patches, sink: Callable[[BreakRecord], None]) -> None:
    mod = importlib.import_module("torch._dynamo.symbolic_convert")
    cls = mod.InstructionTranslatorBase
    real = cls.log_graph_break

    def log_graph_break(self: Any, code_options: Any, reason: str, exc: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            if not getattr(exc, "logged", False):
                stack = getattr(exc, "real_stack", None)
                if stack is None:
                    from torch._guards import TracingContext

                    stack = TracingContext.extract_stack()
                frames = _user_frames(stack)
                last = frames[-1] if frames else None
                location = f"{os.path.basename(last.filename)}:{last.lineno}" if last is not None else ""
                code_line = (getattr(last, "line", "") or "").strip() if last is not None else ""
                sink(BreakRecord(compile_key()[0], str(reason), format_stack(frames), location, code_line))
        except Exception:
            pass
        return real(self, code_options, reason, exc, *args, **kwargs)

    log_graph_break.__wrapped__ = real  # type: ignore[attr-defined]
    patches.set(cls, "log_graph_break", log_graph_break)

