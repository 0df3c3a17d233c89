"""Why a ``torch.export`` failed, as data: the kind of failure (from the exception's classes), torch's
own message, the user line torch pointed at; and ``draft_export``'s report of what it worked around.

Invariant: the kind is read from exception class names (the exception and its ``__cause__`` /
``__context__`` chain), never from message wording; the user line is one torch stated (a
``File "...", line N`` frame of the message, as Dynamo's "from user code:" gives) or the innermost
user frame of the traceback; None when neither has one. See Note [Where an export failure points].
"""

from __future__ import annotations

import traceback
from typing import Any, Optional

from tracer._torch.fx_graph import _library_file, source_of
from tracer._torch.unknowns import unknown
from tracer.model import ExportFailure, SourceLine

__all__ = ["draft_failures", "failure_of"]

# Exception classes (by name, anywhere in the MRO of any exception in the chain) -> failure kind, first match wins.
# torch/fx/experimental/symbolic_shapes.py GuardOnDataDependentSymNode, ConstraintViolationError;
# torch/_subclasses/fake_tensor.py DataDependentOutputException, DynamicOutputShapeException,
# UnsupportedOperatorException; torch/_dynamo/exc.py Unsupported (a graph break, in strict export).
_KIND_BY_CLASS = (
    ("GuardOnDataDependentSymNode", "data_dependent"),
    ("DataDependentOutputException", "data_dependent"),
    ("PendingUnbackedSymbolNotFound", "data_dependent"),
    ("ConstraintViolationError", "constraint_violation"),
    ("UnsupportedOperatorException", "unsupported"),
    ("DynamicOutputShapeException", "unsupported"),
    ("Unsupported", "graph_break"),
)

# draft_export's FailureType names (torch/export/_draft_export.py) -> failure kind.
_DRAFT_KINDS = {"DATA_DEPENDENT_ERROR": "data_dependent", "GUARD_ADDED": "guard_added",
                "MISSING_FAKE_KERNEL": "missing_fake_kernel", "MISMATCHED_FAKE_KERNEL": "mismatched_fake_kernel"}


def _chain(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    x: Optional[BaseException] = e
    while x is not None and x not in out and len(out) < 16:
        out.append(x)
        x = x.__cause__ or x.__context__
    return out


def _kind(chain: list[BaseException], strict: bool) -> str:
    names = {c.__name__ for x in chain for c in type(x).__mro__}
    for cls, kind in _KIND_BY_CLASS:
        if cls in names:
            return "unsupported" if kind == "graph_break" and not strict else kind
    return "other"


def _line(d: Optional[dict[str, Any]]) -> Optional[SourceLine]:
    if not d:
        return None
    return SourceLine(file=str(d["file"]), line=int(d["line"]), fn=str(d["fn"]), code=str(d.get("code", "")))


def _user_file(path: str) -> bool:
    return not (_library_file(path) or path.startswith("<"))


# Note [Where an export failure points]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Strict export traces with Dynamo, so the user's forward never runs as Python: the traceback holds
# only torch's frames, and the user line is the one Dynamo's message names ("from user code:" then
# ``File "...", line N, in fn``). Non-strict export runs forward in Python under fake tensors, so
# the user frame is in the traceback itself (the message's "Caused by: (...)" may be a shortened
# path). So: a user frame the message names first, else the innermost user frame of the traceback
# of any exception in the chain; frames of torch, of dynascope and of generated code ("<string>",
# "<eval_with_key>.N") are never the user's line.
def _user_line(chain: list[BaseException]) -> Optional[SourceLine]:
    for x in chain:
        src = source_of(str(x))
        if src is not None and _user_file(src["file"]):
            return _line(src)
    for x in chain:
        frames = [f for f in traceback.extract_tb(x.__traceback__) if _user_file(f.filename)]
        if frames:
            f = frames[-1]
            return SourceLine(file=f.filename, line=int(f.lineno or 0), fn=f.name, code=(f.line or "").strip())
    return None


def failure_of(e: BaseException, *, strict: bool) -> ExportFailure:
    """The failure record of the exception ``torch.export.export`` raised."""
    chain = _chain(e)
    return ExportFailure(kind=_kind(chain, strict), message=str(e), error_type=type(e).__name__,
                         user_line=_user_line(chain), partial_graph=_partial_graph(chain))


def _partial_graph(chain: list[BaseException]) -> str:
    """The graph traced so far, as torch attached it to the exception (``partial_fx_graph``: fx's
    ``Tracer.trace`` and Dynamo's ``InstructionTranslator`` set it, torch/export/_trace.py prints it); ""."""
    for x in chain:
        text = getattr(x, "partial_fx_graph", None)
        if isinstance(text, str) and text.strip():
            return text
    return ""


def _report_of(ep: Any) -> Any:
    """draft_export's report: the program's one attribute holding a DraftExportReport (None if none)."""
    from torch.export._draft_export import DraftExportReport

    return next((v for v in vars(ep).values() if isinstance(v, DraftExportReport)), None)


# Note [File names draft_export did not see]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# draft_export's stacks name files by number (torch/_logging/structured.py intern_string), and its
# report maps only the numbers whose file was interned *during* that draft_export (the log lines it
# captured). A file interned earlier in the process (an earlier export, a TORCH_TRACE run) keeps its
# number but is missing from the report's map, so torch's own text leaves the line out. The
# process-wide INTERN_TABLE (name -> number) is the same numbering: the report's map first, then it.
def _file_names(report: Any) -> dict[Any, str]:
    from torch._logging.structured import INTERN_TABLE

    return {**{number: name for name, number in INTERN_TABLE.items()}, **dict(report.str_to_filename)}


def _draft_line(stack: Any, files: dict[Any, str]) -> Optional[SourceLine]:
    for fr in reversed(stack if isinstance(stack, list) else []):
        path = files.get(fr.get("filename"), "")
        if path and _user_file(path):
            return SourceLine(file=path, line=int(fr.get("line", 0)), fn=str(fr.get("name", "")),
                              code=str(fr.get("loc", "")).strip())
    return None


def _workaround(kind: str, data: dict[str, Any]) -> str:
    if kind == "data_dependent":
        return f"assumed {data.get('expr')} is {data.get('result')} and asserted it in the graph"
    if kind == "guard_added":
        return f"added guard {data.get('expr')}; dynamic_shapes = {data.get('new_dynamic_shapes')}"
    return ""


def draft_failures(ep: Any, problems: list[str]) -> list[ExportFailure]:
    """Each failure of ``draft_export``'s report, with its user line and what draft_export did instead."""
    report = _report_of(ep)
    if report is None:
        problems.append("draft_export returned a program without its report: its failures are unknown")
        return []
    files = _file_names(report)
    out = []
    for f in report.failures:
        name = str(getattr(f.failure_type, "name", f.failure_type))
        kind = _DRAFT_KINDS.get(name, "other")
        try:
            message = f.print(files)
        except Exception as e:  # except: records a problem (the message is the failure's type only)
            unknown(f"draft_export's text of a {name} failure", e)
            message = name
        data = f.data if isinstance(f.data, dict) else {}
        out.append(ExportFailure(kind=kind, message=message, error_type=name,
                                 user_line=_draft_line(data.get("user_stack"), files),
                                 workaround=_workaround(kind, data)))
    return out
