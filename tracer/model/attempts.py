"""Every compile attempt as a Frame: ids, status, reason and torch's phase times, from the fields
torch's ``compilation_metrics`` carries (no torch import: live captures and loaded TORCH_TRACE logs
derive them with the same code).

Invariant: one Frame per (frame_id, frame_compile_id, attempt) that torch's structured trace or a
recording hook saw, in the order the attempts ran; ``compile_id`` is unique within the capture
and formatted as torch formats it ("F/C", "F/C_A"), see Note [Compile ids and attempts] in
tracer/model/frame.py. A status or time torch did not report is left unknown and listed in
``Frame.problems``, never guessed.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from tracer.model.frame import Frame
from tracer.model.guards import Recompile

__all__ = ["AttemptInfo", "FrameCodes", "local_ids", "restart_by_elimination", "settle_status", "format_id", "metric_times", "location", "recompile"]

Key = tuple[int, int]
AttemptKey = tuple[int, int, int]


def format_id(frame: int, compile: int, attempt: int) -> str:
    """"F/C", or "F/C_A" for attempt A > 0: as torch's CompileId and tlparse print it."""
    return f"{frame}/{compile}" + (f"_{attempt}" if attempt else "")


def local_ids(order: list[AttemptKey]) -> dict[AttemptKey, str]:
    """Capture-local ids: frames and compiles numbered by first appearance, attempts kept."""
    frames: dict[int, int] = {}
    compiles: dict[Key, int] = {}
    per_frame: dict[int, int] = {}
    out: dict[AttemptKey, str] = {}
    for fid, cid, attempt in order:
        if fid not in frames:
            frames[fid] = len(frames)
            per_frame[fid] = 0
        if (fid, cid) not in compiles:
            compiles[(fid, cid)] = per_frame[fid]
            per_frame[fid] += 1
        out[(fid, cid, attempt)] = format_id(frames[fid], compiles[(fid, cid)], attempt)
    return out


def location(filename: str, firstlineno: Any, name: str) -> str:
    """"file.py:LINE in fn", the same form as isolation.code_location, from metric fields."""
    return f"{os.path.basename(filename or '?')}:{firstlineno if firstlineno is not None else '?'} in {name or '?'}"


# Note [Code object from the frame id]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Torch numbers frames per code object: ``get_compile_id`` (torch/_dynamo/convert_frame.py) keeps the
# frame id in the code object's ``code_context`` state, taken from a counter that only grows, so every
# compile of one code object has the same frame id and no other code object ever gets it. A compile
# refused by ``recompile_limit`` logs compilation_metrics with no ``co_name``/``co_filename``, and no
# hook sees its code; its code object is the one an earlier attempt with its frame id named. Only an
# earlier attempt's name is used (attempts are settled in the order they ran); with none, the code
# stays "unknown" with a problem.
class FrameCodes:
    """Fills ``Frame.code`` of attempts torch named no code for (Note [Code object from the frame id])."""

    def __init__(self) -> None:
        self._by_frame_id: dict[int, tuple[str, str]] = {}  # frame id -> (code location, file name)

    def settle(self, frame: Frame, akey: AttemptKey) -> None:
        """Record ``frame.code`` for its frame id, or take it from an earlier attempt, else "unknown"."""
        if frame.code and frame.code != "unknown":
            self._by_frame_id.setdefault(akey[0], (frame.code, str(frame.meta.get("filename") or "")))
            return
        known = self._by_frame_id.get(akey[0])
        if known is None:
            frame.code = "unknown"
            frame.problems.append("torch did not say which code object this compile was for")
            return
        frame.code = known[0]
        if known[1]:
            frame.meta.setdefault("filename", known[1])


@dataclass
class AttemptInfo:
    """What is known of one compile (all its attempts) when the capture ends."""

    metrics: Optional[dict[str, Any]] = None  # torch's compilation_metrics, METRIC_FIELDS only
    final_attempt: Optional[int] = None  # the attempt compilation_metrics was logged under
    skip_reason: str = ""  # Note [Why a frame has no graph]
    break_reasons: dict[int, list[str]] = field(default_factory=dict)  # attempt -> graph breaks in it


def metric_times(m: dict[str, Any], problems: Optional[list[str]] = None) -> dict[str, float]:
    """TIME_PHASES from torch's compilation metrics; a phase torch left empty stays absent (unknown), and
    so does a value that is no duration (a damaged log: negative, infinite, not a number), said in ``problems``."""
    out: dict[str, float] = {}
    total = _seconds(m, "entire_frame_compile_time_s", problems)
    backend = _seconds(m, "backend_compile_time_s", problems)
    if total is not None:
        out["total"] = total
    if backend is not None:
        out["backend"] = backend
        if total is not None:  # torch's total includes the backend: a negative rest is rounding, so 0
            out["dynamo"] = max(0.0, total - backend)
    aot = _seconds(m, "aot_autograd_cumulative_compile_time_us", problems)
    if aot is not None:
        out["aot_autograd"] = aot / 1e6
    before = _seconds(m, "dynamo_time_before_restart_s", problems)
    if before is not None:
        out["before_restart"] = before
    return out


def _seconds(m: dict[str, Any], key: str, problems: Optional[list[str]]) -> Optional[float]:
    """``m[key]`` as a duration: a finite number >= 0; None when absent or null, or (said) not a duration."""
    v = m.get(key)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
        return float(v)
    if v is not None and problems is not None:
        problems.append(f"compilation metric {key} is {v!r}, not a duration: that time is unknown")
    return None


# Note [Interrupted compiles]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``_compile`` records fail_type/fail_reason only for an ``Exception``; a ``BaseException`` that
# unwinds through Dynamo (KeyboardInterrupt, a paused session being aborted) still logs
# compilation_metrics, with no failure and no graph. The capture knows what unwound it, so the
# attempt that was running (the last one) is "failed" with that exception as its reason. An
# ``Exception`` is never such a cut: through ``_compile`` it would have set fail_type, so one torch
# logged no failure for was raised after the attempt finished — by the user's own code, run after
# Dynamo gave up on the frame or produced no graph. The attempt keeps the status its metrics give,
# and the exception is the call's error (``Capture.meta["error"]``, as for every call that raised).
def settle_status(frame: Frame, attempt: int, info: AttemptInfo, restarted_attempts: int, interrupted: str = "") -> None:
    """Set ``frame.status``/``status_reason``/``times`` for attempt ``attempt`` of its compile.

    ``restarted_attempts`` is how many attempts of the compile restarted (for the time split);
    ``interrupted`` describes the exception that ended the capture when this was the attempt
    running then (Note [Interrupted compiles]).
    """
    m = info.metrics
    has_graph = frame.has_graph
    if info.final_attempt is not None and attempt < info.final_attempt:
        frame.status = "restarted"
        reasons = info.break_reasons.get(attempt) or []
        if not reasons and m and isinstance(m.get("restart_reasons"), list):
            logged = [str(r) for r in m["restart_reasons"]]
            reasons = logged if restarted_attempts == 1 else restart_by_elimination(attempt, info, logged)
        frame.status_reason = "\n".join(dict.fromkeys(reasons))
        if not frame.status_reason:
            frame.status_reason = "unknown"
            frame.problems.append("torch did not say why this attempt restarted")
        before = _seconds(m, "dynamo_time_before_restart_s", frame.problems) if m else None
        if restarted_attempts == 1 and before is not None:
            frame.times = {"total": before, "dynamo": before}
        return
    if m is None:
        frame.status = "compiled" if has_graph else "failed"
        if not has_graph:
            frame.status_reason = "unknown: the compile did not finish (torch logged no compilation metrics)"
        frame.problems.append("torch logged no compilation metrics for this compile: status from our hooks, times unknown")
        return
    frame.times = metric_times(m, frame.problems)
    if m.get("fail_type"):
        frame.status = "failed"
        frame.status_reason = f"{m['fail_type']}: {m.get('fail_reason') or ''}".strip()
    elif interrupted and not has_graph and not info.skip_reason:
        frame.status = "failed"
        frame.status_reason = f"interrupted: {interrupted}"
    elif has_graph:
        frame.status = "compiled"
    else:
        frame.status = "no_graph"
        if info.skip_reason:
            frame.status_reason = info.skip_reason
        elif m.get("graph_op_count") == 0:
            frame.status_reason = "the traced graph has no ops: Dynamo emitted bytecode without calling the backend"
        else:
            frame.status_reason = "unknown"
            frame.problems.append("the compile produced no graph and torch did not say why")


# Note [Restart reasons by elimination]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Torch keeps the reasons a compile restarted in a set, not per attempt: every ``RestartAnalysis``
# that ends an attempt adds ``e.restart_reason or str(type(e))`` (torch/_dynamo/convert_frame.py,
# ``_compile``'s ``compile_inner``), and compilation_metrics logs the set as ``restart_reasons`` in no
# particular order; so a restart with no logged graph break (``TensorifyScalarRestartAnalysis``, which
# carries no reason and shows as its type) has no reason of its own in the log. Which one is its
# reason is provable only by elimination, when all of this holds:
# - it is the one restarted attempt of the compile with no logged graph break;
# - the set has as many reasons as the compile had restarted attempts (final attempt A: attempts
#   0..A-1), so each attempt added a reason no other attempt added;
# - each attempt with a logged break contains (in its break's text, which quotes the reason the
#   break restarted with) a reason of the set, and exactly one reason of the set is in no break's text.
# Then that one reason is this attempt's. Otherwise the reason stays "unknown" with a problem.
def restart_by_elimination(attempt: int, info: AttemptInfo, restart_reasons: list[str]) -> list[str]:
    """The reason of restarted attempt ``attempt``, when provable (Note [Restart reasons by elimination]).

    >>> info = AttemptInfo(final_attempt=2, break_reasons={0: ["Encountered graph break: Call to graph_break()"]})
    >>> restart_by_elimination(1, info, ["<class 'TensorifyScalarRestartAnalysis'>", "Call to graph_break()"])
    ["<class 'TensorifyScalarRestartAnalysis'>"]
    >>> restart_by_elimination(1, info, ["Call to graph_break()"])  # a reason repeated: not provable
    []
    """
    final = info.final_attempt
    if final is None or len(set(restart_reasons)) != final or len(restart_reasons) != final:
        return []
    unexplained = [a for a in range(final) if not info.break_reasons.get(a)]
    if unexplained != [attempt]:
        return []
    texts = {a: "\n".join(info.break_reasons[a]) for a in range(final) if a != attempt}
    if not all(any(r in t for r in restart_reasons) for t in texts.values()):
        return []
    free = [r for r in restart_reasons if not any(r in t for t in texts.values())]
    return free if len(free) == 1 else []


# Note [One record per recompile]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Before compiling a frame again, Dynamo checks every cache entry of the code object and logs one
# ``recompile_reasons`` artifact with the failed guard of each (torch/_dynamo/guards.py
# ``get_and_maybe_log_recompilation_reasons``, newest entry first; TORCH_LOGS=recompiles prints the
# same list under one "Recompiling function" line). So a function recompiled three times is three
# recompiles, the third carrying three failed guards: one Recompile per artifact, ``failed`` holding
# every entry's guard, ``reason`` the first. Each guard keeps Dynamo's "F/C: " prefix, rewritten to the
# capture-local id, and loses the column padding torch puts between a check and its comment
# ("n == 1.0          # ..." -> "n == 1.0  # ...", trailing blanks dropped).
_ENTRY_PREFIX = re.compile(r"^(?P<frame>\d+)/(?P<compile>\d+): ")
_PADDING = re.compile(r" {2,}(?=# )")


def recompile(new_id: str, reasons: list[str], local: dict[AttemptKey, str]) -> Recompile:
    """The Recompile of compile ``new_id`` from one ``recompile_reasons`` list (Note [One record per recompile]).

    >>> r = recompile("0/2", ["1/1: s == 'bb'      # f.py:3", "1/0: s == 'a'    "], {(1, 0, 0): "0/0", (1, 1, 0): "0/1"})
    >>> r.reason, r.failed
    ("0/1: s == 'bb'  # f.py:3", ["0/1: s == 'bb'  # f.py:3", "0/0: s == 'a'"])
    """
    failed = ["\n".join(_PADDING.sub("  ", line).rstrip() for line in _local_reason(r, local).split("\n"))
              for r in reasons]
    return Recompile(compile_id=new_id, reason=failed[0] if failed else "", failed=failed)


def _local_reason(reason: str, local: dict[AttemptKey, str]) -> str:
    """Dynamo prefixes a failed guard with the compile id of the cache entry it belongs to
    ("2/0: tensor 'x' size mismatch ..."); rewrite that id to the capture-local one."""
    m = _ENTRY_PREFIX.match(reason)
    if m is None:
        return reason
    key = (int(m.group("frame")), int(m.group("compile")), 0)
    return f"{local[key]}: {reason[m.end():]}" if key in local else reason
