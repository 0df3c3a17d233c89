"""``tracer.export()`` and ``tracer.load_export()``: torch.export's exported programs as Captures.

Invariant: the program is what the real ``torch.export.export`` (or ``torch.export.load``) returned,
converted once by tracer/_torch/export_program.py; a failed export is a record (status "failed",
torch's own message and the user line) and raises only when asked (``raise_on_failure=True``). See
Note [Exported programs as frames] in tracer/model/export.py.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Optional

from tracer.model import Capture, Export, Frame

__all__ = ["export", "load_export"]


def _where(mod: Any) -> str:
    """"file.py:LINE in Class.forward" for the module being exported; its class's name otherwise."""
    fn = getattr(type(mod), "forward", None)
    try:
        code = fn.__code__  # type: ignore[union-attr]
        return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno} in {fn.__qualname__}"  # type: ignore[union-attr]
    except AttributeError:  # a forward without Python code (a C function): name the class
        return type(mod).__qualname__


def _failed_frame(code: str, exc: BaseException) -> Frame:
    return Frame(compile_id="0/0", code=code, status="failed", status_reason=f"{type(exc).__name__}: {exc}")


def export(mod: Any, args: tuple[Any, ...], kwargs: Optional[dict[str, Any]] = None, *,
           dynamic_shapes: Any = None, strict: bool = False, decompose: bool = False, draft: bool = True,
           raise_on_failure: bool = False) -> Capture:
    """Run ``torch.export.export(mod, args, kwargs, dynamic_shapes=..., strict=...)`` and record the
    exported program as a :class:`Capture` the explorer, the report, JSON and :func:`tracer.diff` read
    like a compile: frame "0/0" is the program (graph, HOP bodies, ``frame.export`` its graph
    signature, range constraints and module call signatures; ``frame.shape_guards`` and
    ``frame.specializations`` with the user line torch logged for each), ``cap.export`` what the run did.
    With ``strict=True`` torch traces with Dynamo: ``frame.guards`` are the guards Dynamo built for the
    program, and a graph break (an error under strict export) is in ``cap.graph_breaks`` with its user line.

    ``decompose=True`` adds frame "0/1", ``ep.run_decompositions()`` of it, and ``cap.export.decomposition``
    is ``tracer.diff(cap.frames[0], cap.frames[1])``: what became functional, which mutations became
    outputs (the explorer's "Decompositions" tab and the report draw the two graphs side by side). When the export fails, ``cap.export.failure`` says why
    (torch's message, the user line) and, with ``draft=True``, ``torch.export.draft_export`` runs once
    more: ``cap.export.draft`` lists what it worked around and frame "0/1" is its program (stage
    "draft"). ``raise_on_failure=True`` re-raises torch's exception instead, the record on ``err.capture``.

    A call that cannot be an export raises before anything runs (Note [Bad input or failed export] in
    tracer/_torch/export_inputs.py): ``TypeError`` when ``mod`` is not a ``torch.nn.Module``, ``args`` not a
    tuple, ``kwargs`` not a dict, a flag not a bool, or the inputs do not bind to ``forward``;
    ``ValueError`` with torch's own message when torch.export's check rejects ``dynamic_shapes``.

    >>> import torch, tracer
    >>> cap = tracer.export(torch.nn.Linear(3, 2), (torch.randn(4, 3),))
    >>> [(i.name, i.kind, i.target) for i in cap.frames[0].export.inputs]
    [('p_weight', 'parameter', 'weight'), ('p_bias', 'parameter', 'bias'), ('input', 'user_input', '')]
    """
    import torch

    from tracer._torch.export_failure import draft_failures, failure_of
    from tracer._torch.export_inputs import check_export_inputs
    from tracer.active_session import raise_if_tracing
    from tracer.diffing import diff

    check_export_inputs(mod, args, kwargs, dynamic_shapes, {"strict": strict, "decompose": decompose, "draft": draft,
                                                            "raise_on_failure": raise_on_failure})
    raise_if_tracing("tracer.export()")  # Dynamo's compile lock is held by a paused trace: fail fast, never hang
    from tracer._torch.export_dynamo import recording_dynamo
    from tracer._torch.export_program import EXPORT_LIMIT, frame_of_program
    from tracer._torch.export_shapes import fill_shapes, recording_shapes

    kwargs = dict(kwargs or {})
    code = _where(mod)
    run = Export(status="exported", strict=strict, source="torch.export.export",
                 dynamic_shapes="" if dynamic_shapes is None else repr(dynamic_shapes))
    cap = Capture(fn=type(mod).__qualname__,
                  limits=[EXPORT_LIMIT], meta={"torch": torch.__version__}, export=run)
    error: Optional[Exception] = None
    with contextlib.ExitStack() as stack:
        shapes = stack.enter_context(recording_shapes(cap.problems))
        dynamo = stack.enter_context(recording_dynamo(cap.problems)) if strict else None  # Note [Strict export's Dynamo frame]
        try:
            ep = torch.export.export(mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)
        except Exception as e:  # except: records a problem (kept as error: the failure is the record)
            error = e
    if error is not None:
        run.status, run.failure = "failed", failure_of(error, strict=strict)
        cap.frames.append(_failed_frame(code, error))
        fill_shapes(cap.frames[0], shapes)  # the guards that led to it, e.g. a constraint violation's
        if dynamo is not None:
            _fill_dynamo(cap, dynamo, error)
        if raise_on_failure:
            error.capture = cap  # type: ignore[attr-defined]
            raise error
        if draft:
            _draft(cap, mod, args, kwargs, dynamic_shapes, strict, code, draft_failures, frame_of_program)
        return cap
    cap.frames.append(frame_of_program(ep, compile_id="0/0", code=code, stage="exported"))
    fill_shapes(cap.frames[0], shapes)
    if dynamo is not None:
        _fill_dynamo(cap, dynamo, None)
    if decompose:
        try:
            decomposed = ep.run_decompositions()
        except Exception as e:  # except: records a problem (and a failed frame "0/1" saying why)
            why = f"run_decompositions: {type(e).__name__}: {e}"
            cap.problems.append(why[:500])
            cap.frames.append(Frame(compile_id="0/1", code=code, status="failed", status_reason=why))
        else:
            cap.frames.append(frame_of_program(decomposed, compile_id="0/1", code=code, stage="decomposed"))
            run.decomposition = diff(cap.frames[0], cap.frames[1])
    return cap


def _fill_dynamo(cap: Capture, dynamo: Any, error: Optional[Exception]) -> None:
    """Strict export's Dynamo frame: its guards on frame "0/0", the break it stopped at in ``cap.graph_breaks``."""
    from tracer._torch.export_dynamo import stopping_break

    frame = cap.frames[0]
    if dynamo.guards is not None:
        frame.guards = dynamo.guards
    elif error is None and not dynamo.not_read:  # an exported program always had its guards built: torch did not say which they were
        cap.problems.append("strict export's Dynamo guards are unknown: torch built them without the hook seeing it")
    brk = stopping_break(error) if error is not None else None
    if brk is not None:
        cap.graph_breaks.append(brk)


def _draft(cap: Capture, mod: Any, args: Any, kwargs: dict[str, Any], dynamic_shapes: Any, strict: bool, code: str,
           draft_failures: Any, frame_of_program: Any) -> None:
    """draft_export after a failed export: its report's failures and its program (frame "0/1")."""
    import torch

    try:
        ep = torch.export.draft_export(mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)
    except Exception as e:  # except: records a problem (draft_export failed too: no report)
        cap.problems.append(f"draft_export failed too, so there is no report: {type(e).__name__}: {e}"[:500])
        return
    assert cap.export is not None
    cap.export.draft = draft_failures(ep, cap.problems)
    cap.frames.append(frame_of_program(ep, compile_id="0/1", code=code, stage="draft"))


def load_export(path: str | os.PathLike[str]) -> Capture:
    """Open a ``torch.export.save`` archive (``.pt2``) as the same record :func:`export` returns, without
    the model's code: frame "0/0" is the saved program (stage "loaded").

    Nothing in the file is unpickled: an archive holding a pickled payload (a custom object, a weight
    saved with pickle) is refused (Note [No pickle in a loaded .pt2] in tracer/_torch/pt2_archive.py).
    A file that is not such an archive is one ``ValueError`` naming it.
    """
    import torch

    from tracer._torch.export_program import EXPORT_LIMIT, frame_of_program
    from tracer._torch.pt2_archive import archive_without_pickles

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"no such file: {path!r}")
    with archive_without_pickles(path) as copy:  # See Note [No pickle in a loaded .pt2]
        try:
            ep = torch.export.load(copy)
        except Exception as e:  # except: re-raises (as one ValueError naming the file)
            raise ValueError(f"not a torch.export archive: {path!r} ({type(e).__name__}: {str(e)[:300]})") from None
    name = os.path.basename(path)
    run = Export(status="exported", source=path)
    cap = Capture(fn=name, limits=[EXPORT_LIMIT], meta={"torch": torch.__version__}, export=run)
    cap.frames.append(frame_of_program(ep, compile_id="0/0", code=name, stage="loaded"))
    return cap
