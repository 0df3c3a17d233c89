"""Inductor's own per-kernel profiler markers for a profiled capture, and each profiler event's kernel.

Owns the one switch (``torch._inductor.config.cpp.enable_kernel_profile``, patched for one profiled
capture, whose compiles run with the compile caches off: Note [No compile caches during an Inductor
capture]) and the reading of a ``torch.profiler`` run back onto the capture's recorded kernels
(Note [Profiler time per Inductor kernel]).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

__all__ = ["KernelKey", "kernel_profiling", "kernel_times"]

# (id(frame), graph kind, "kernel:handle") — kind "forward", "backward" or "inference"
KernelKey = tuple[int, str, str]

# Note [Profiler time per Inductor kernel]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What the profiler sees of an Inductor graph on CPU (Python wrapper, torch.compile's default):
#   * each call of the compiled graph runs inside ``## Call CompiledFxGraph <cache key> ##``
#     (torch/_inductor/output_code.py, ``CompiledFxGraph.__call__``), under ``Torch-Compiled Region:
#     <compile id>`` (torch/_dynamo/convert_frame.py) for a forward or inference graph, under
#     ``CompiledFunctionBackward`` (autograd's node for AOTAutograd's function) for a backward graph
#     (torch's compile id in this process: ``Frame.dynamo_id``, not the capture-local ``compile_id``);
#   * with ``cpp.enable_kernel_profile`` each generated C++ kernel opens a record function named
#     ``graph_<graph id>_<kernel name>`` (torch/_inductor/codegen/cpp.py ``codegen_group``), so its
#     time is exact by name; the graph id is shared by a frame's forward and backward compile;
#   * an extern kernel (``extern_kernels.mm``, a fallback ``aten.*`` op) carries no marker: it is the
#     aten op it dispatches (``aten::mm``), a direct child of the Call event.
# The wrapper calls its kernels in the order of its code, which is the order of Inductor's
# provenance debug handles (``[Provenance debug handles] kernel:handle`` comments, one counter per
# compile). So the unmarked direct children of one Call, in time order, are matched to the graph's
# extern kernels in handle order, and the match is accepted only when the op names agree one for
# one (``extern_kernels.mm`` -> ``aten::mm``); otherwise every unmarked op of that call stays
# unattributed and a problem says so. An event's time goes to the kernel its top-level ancestor
# under the Call is (``aten::resolve_conj`` inside ``aten::mm`` goes to that mm). Everything outside
# a kernel — the Call's own Python, AOTAutograd's wrappers, autograd's gradient accumulation — stays
# unattributed by event name, as does any Call whose graph the capture does not hold.

_CALL = "## Call CompiledFxGraph"
_REGION = "Torch-Compiled Region: "
_BACKWARD = "CompiledFunctionBackward"


@contextlib.contextmanager
def kernel_profiling() -> Iterator[None]:
    """Inductor's per-kernel record functions on for the graphs compiled meanwhile, then off."""
    import torch._inductor.config as config

    with config.patch({"cpp.enable_kernel_profile": True}):
        yield


def kernel_times(events: Any, frames: list[Any], problems: list[str]
                 ) -> tuple[dict[KernelKey, dict[str, float]], dict[str, float], float]:
    """(per kernel: {op name: self µs}, unattributed {event name: self µs}, total self µs) from
    ``torch.profiler``'s FunctionEvents and the capture's Frames (Note [Profiler time per Inductor kernel])."""
    owner: dict[int, Optional[KernelKey]] = {}  # id(direct child of a Call) -> its kernel, None: unmatched
    gids: dict[str, Any] = {}  # graph id -> frame, learned from forward calls
    calls = [e for e in events if e.name.startswith(_CALL)]
    for call in sorted(calls, key=lambda c: _kind(c) == "backward"):  # forward calls first: they name graph ids
        _match_call(call, frames, gids, owner, problems)
    per: dict[KernelKey, dict[str, float]] = {}
    other: dict[str, float] = {}
    total = 0.0
    for e in events:
        us = float(e.self_cpu_time_total)
        total += us
        key = _owner(e, owner)
        if key is None:
            other[e.name] = other.get(e.name, 0.0) + us
        else:
            ops = per.setdefault(key, {})
            name = "(kernel)" if e.name.startswith("graph_") else e.name
            ops[name] = ops.get(name, 0.0) + us
    return per, other, total


def _owner(e: Any, owner: dict[int, Optional[KernelKey]]) -> Optional[KernelKey]:
    q = e
    while q is not None:
        if id(q) in owner:
            return owner[id(q)]
        q = q.cpu_parent
    return None


def _kind(call: Any) -> str:
    q = call.cpu_parent
    while q is not None:
        if q.name == _BACKWARD:
            return "backward"
        if q.name.startswith(_REGION):
            return "forward"
        q = q.cpu_parent
    return "forward"


def _region(call: Any) -> str:
    q = call.cpu_parent
    while q is not None:
        if q.name.startswith(_REGION):
            return q.name[len(_REGION):]
        q = q.cpu_parent
    return ""


def _marked(name: str) -> tuple[str, str]:
    """``graph_3_cpp_fused_add_0`` -> ("3", "cpp_fused_add_0"); ("", "") for an unmarked event."""
    if not name.startswith("graph_"):
        return "", ""
    gid, _, kernel = name[len("graph_"):].partition("_")
    return (gid, kernel) if gid.isdigit() and kernel else ("", "")


def _extern_op(kernel: str) -> str:
    """The profiler name of an extern kernel: ``extern_kernels.mm`` / ``aten.mm.default`` -> ``aten::mm``."""
    for prefix in ("extern_kernels.", "torch.ops.aten.", "aten."):
        if kernel.startswith(prefix):
            return "aten::" + kernel[len(prefix):].split(".")[0]
    return ""


def _match_call(call: Any, frames: list[Any], gids: dict[str, Any], owner: dict[int, Optional[KernelKey]],
                problems: list[str]) -> None:
    children = sorted(call.cpu_children, key=lambda c: c.time_range.start)
    marked = [(c, *_marked(c.name)) for c in children]
    kind = _kind(call)
    gid = next((g for _, g, _ in marked if g), "")
    frame = _frame(call, kind, gid, frames, gids)
    graph = _graph(frame, kind) if frame is not None else None
    for c in children:
        owner[id(c)] = None  # every op under a Call belongs to a kernel or stays unattributed
    if graph is None:
        return
    fid, gkind = id(frame), graph.aot_id.rpartition("_")[2] or kind
    by_name = {k.name: k for k in graph.kernels}
    for c, _, name in marked:
        k = by_name.get(name) if name else None
        if k is not None:
            owner[id(c)] = (fid, gkind, f"{k.name}:{k.handle}")
        elif name:
            _note(problems, f"{frame.compile_id} {gkind}: the profiler ran kernel {name!r}, which the capture does not record")
    externs = [k for k in graph.kernels if _extern_op(k.name)]
    unmarked = [c for c, g, _ in marked if not g]
    if [c.name for c in unmarked] == [_extern_op(k.name) for k in externs]:
        for c, k in zip(unmarked, externs, strict=True):
            owner[id(c)] = (fid, gkind, f"{k.name}:{k.handle}")
    elif unmarked or externs:
        _note(problems, f"{frame.compile_id} {gkind}: the ops the wrapper ran outside generated kernels "
                        f"({[c.name for c in unmarked]}) are not its extern kernels one for one "
                        f"({[k.name for k in externs]}): their time is left unattributed")


def _frame(call: Any, kind: str, gid: str, frames: list[Any], gids: dict[str, Any]) -> Any:
    if kind == "forward":
        cid = _region(call)  # torch's own compile id in this process: the Frame's dynamo_id, less its attempt
        found = [f for f in frames if (f.dynamo_id or f.compile_id).partition("_")[0] == cid and f.inductor]
        frame = found[0] if len(found) == 1 else None
        if frame is not None and gid:
            gids.setdefault(gid, frame)
        return frame
    if gid in gids:
        return gids[gid]
    with_backward = [f for f in frames if _graph(f, "backward") is not None]
    return with_backward[0] if len(with_backward) == 1 else None  # else unattributed: no guess between frames


def _graph(frame: Any, kind: str) -> Any:
    graphs = list(getattr(frame, "inductor", None) or [])
    wanted = ("_backward",) if kind == "backward" else ("_forward", "_inference")
    found = [g for g in graphs if g.aot_id.endswith(wanted)]
    return found[0] if len(found) == 1 else None


def _note(problems: list[str], text: str) -> None:
    if text not in problems:
        problems.append(text)
