"""Strict export's Dynamo frame: the guards Dynamo built for the program and the graph break that stopped it.

Invariant: the one hook (on ``GraphCaptureOutput.build_guards``) is installed through :class:`Patches` for one
``tracer.export(strict=True)`` run and removed after it, also on error; it calls the real method unchanged and
reads the GuardsSet torch builds its guard manager from. A break is read from the exception Dynamo raised,
never guessed. See Note [Strict export's Dynamo frame].
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from tracer._torch.breaks import _user_frames, format_stack
from tracer._torch.guards import guards_from_set
from tracer._torch.patching import Patches
from tracer._torch.releases import hook_point, install_or_note
from tracer._torch.since_2_13 import strict_export_guards_unread
from tracer.model import GraphBreak, Guard

__all__ = ["DynamoRecord", "recording_dynamo", "stopping_break"]

# Note [Strict export's Dynamo frame]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``torch.export.export(..., strict=True)`` traces the module with Dynamo: ``_export_to_torch_ir``
# (torch/export/_trace.py) calls ``_dynamo_graph_capture_for_export`` (torch/_dynamo/functional_export.py),
# which runs ``fullgraph_capture`` (torch/_dynamo/convert_frame.py) with ``one_graph=True`` and no backend
# of ours: ``guard_export_fn`` and ``torch.compile``'s cache entries are never involved. The guards are
# built once, by ``GraphCaptureOutput.build_guards(code)`` (a ``CheckFunctionManager`` over the OutputGraph's
# GuardsSet; it is where the ``dynamo_cpp_guards_str`` artifact of a TORCH_TRACE log comes from), when export
# checks the dynamic_shapes constraints. Wrapping that method gives the same GuardsSet ``guard_export_fn`` would
# give a capture, read by the same ``guards_from_set``; they go on the exported program's frame ("0/0").
#
# A graph break cannot be recovered from under ``one_graph``: Dynamo raises ``Unsupported`` (never calling
# ``log_graph_break``), with the reason as ``exc.msg`` and the user frames as ``exc.real_stack``, the
# same two things ``log_graph_break`` reads for a capture's break. Such a break is one ``GraphBreak`` of
# compile "0/0" (the export failed, so the frame is "failed" and has no guards: Dynamo built none).


@dataclass
class DynamoRecord:
    """What one strict export's Dynamo trace said; ``guards`` is None until Dynamo built them."""

    guards: Optional[list[Guard]] = None
    problems: list[str] = field(default_factory=list)
    not_read: bool = False  # this torch's guards are not read at all (a problem already says why)

    def take(self, guards: Any) -> None:
        try:
            self.guards = guards_from_set(guards)
        except Exception as e:  # except: records a problem (the guards stay unknown)
            self.problems.append(f"strict export's Dynamo guards not read: {type(e).__name__}: {e}"[:500])


def _tap_guards(patches: Patches, rec: DynamoRecord) -> None:
    cls, real = hook_point("torch._dynamo.convert_frame", "GraphCaptureOutput.build_guards")

    def build_guards(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return real(self, *args, **kwargs)
        finally:  # a ConstraintViolationError from the real method still leaves the guards Dynamo had
            rec.take(self.output_graph.guards)

    build_guards.__wrapped__ = real  # type: ignore[attr-defined]
    patches.set(cls, "build_guards", build_guards)


@contextlib.contextmanager
def recording_dynamo(problems: list[str]) -> Iterator[DynamoRecord]:
    """Record strict export's Dynamo guards for the ``with`` body; a hook point this torch lacks is a problem."""
    rec = DynamoRecord()
    unread = strict_export_guards_unread()
    if unread is not None:  # See Note [Strict export's guards before torch 2.13]
        problems.append(unread)
        rec.not_read = True
        yield rec
        return
    with Patches() as patches:
        install_or_note(problems, "strict export's Dynamo guards", _tap_guards, patches, rec)
        yield rec
    problems.extend(rec.problems)


def stopping_break(e: BaseException) -> Optional[GraphBreak]:
    """The graph break (Dynamo's ``Unsupported``, anywhere in the cause chain) a strict export stopped at, or None."""
    x: Optional[BaseException] = e
    for _ in range(16):
        if x is None:
            return None
        if "Unsupported" in {c.__name__ for c in type(x).__mro__}:
            break
        x = x.__cause__ or x.__context__
    else:
        return None
    user = _user_frames(getattr(x, "real_stack", None))  # as for a capture's break (breaks.py)
    location = code_line = ""
    if user:
        location = f"{os.path.basename(user[-1].filename)}:{user[-1].lineno}"
        code_line = (user[-1].line or "").strip()
    return GraphBreak(reason=str(getattr(x, "msg", x)), location=location, user_stack=format_stack(user),
                      compile_id="0/0", code_line=code_line)

