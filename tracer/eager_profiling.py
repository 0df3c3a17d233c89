"""``tracer.profile(fn, ..., eager=True)``: the same function run eagerly under ``torch.profiler``, time per user line and module.

Invariant: only public torch (``torch.profiler``, ``record_function``, the global module hooks of
``torch.nn.modules.module``); every hook and the trace function are installed for the profiled steps
and removed after, also on error; every event's self time lands on one user line (and the modules it
ran in) or, by name, in ``unattributed`` (Note [Eager time per user line]), so attributed +
unattributed is the profiler's total.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
import sysconfig
from typing import Any, Callable, Iterator, Optional

from tracer.model.profile import NodeTime, Profile

__all__ = ["MARKERS", "profile_eager"]

# Note [Eager time per user line]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``torch.profiler`` run eagerly knows each aten op's time and, with ``with_stack``, the Python
# *functions* around it ("model.py(6): forward" names the ``def`` line, not the statement), so it
# cannot tell two lines of one function apart. So, for the profiled steps only, dynascope opens a
# ``record_function`` marker for each user line as it runs (``sys.settrace`` line events, in frames
# of files outside torch, dynascope and the standard library; the next line or the frame's return
# closes it) and one around each module call (``register_module_forward_pre_hook`` / ``..._hook``
# with ``always_call``), the way FX's own ``## <index> ##`` markers do for graph nodes (Note
# [Profiler time per FX node] in tracer/_torch/fx_marks.py). Markers nest as the calls do, so an
# op's nearest line marker above it in the profiler's own event tree is the innermost user line
# running it, and the module markers above it are the modules it ran in: exact, never by name or
# order. The backward has no Python lines: autograd runs each backward node inside
# ``autograd::engine::evaluate_function: <Node>``, whose sequence number is the one the profiler
# recorded on the forward op that made the node (``FunctionEvent.sequence_nr`` on the forward
# thread, ``fwd_thread``), so a backward op gets that forward op's line and modules. What has
# neither (gradient accumulation, the ``.sum().backward()`` dynascope adds, the markers' own
# time, Python outside a line) stays unattributed by event name. Modules are named as Dynamo's
# ``nn_module_stack`` names them (``L['self'].layers.0``, a global ``G['net']``), so a compiled
# profile's modules compare with these; the profiled module itself is the top level, as there.
# A marker's own self time is the Python that ran inside it between ops: the eager interpreter's
# work (which compiling removes) and the trace function's, which cannot be told apart; it stays
# unattributed as ``MARKERS`` and makes an eager total larger than a plain profile's (whose Python
# between ops is in no event): compare lines and modules, whose op times it does not touch.
# ``sys.settrace`` is per thread: ops a user thread runs stay unattributed; a trace function already
# set (a debugger, coverage) is suspended for the profiled steps and put back after.

MARKERS = "## dynascope markers ##"  # the unattributed name of the markers' own self time
_LINE, _MOD, _EVAL = "## dynascope line ", "## dynascope module ", "autograd::engine::evaluate_function: "


def profile_eager(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any], *, steps: int, warmup: int,
                  trace_file: str, backward: Optional[bool]) -> Profile:
    """``steps`` eager calls of ``fn`` (with ``.sum().backward()`` as ``tracer.capture`` runs it) under the profiler."""
    import torch

    from tracer._kineto_lines import kineto_progress_kept_out
    from tracer._torch.isolation import describe_callable
    from tracer.capturing import _maybe_backward

    def step() -> None:
        _maybe_backward(fn(*args, **kwargs), backward, (args, kwargs))

    for _ in range(warmup):
        step()
    marks = _Markers(_module_names(fn))
    p = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    with kineto_progress_kept_out():  # Note [Kineto's progress lines] in tracer/_kineto_lines.py
        p.__enter__()
    try:
        with marks.installed():
            for _ in range(steps):
                step()
    finally:
        with kineto_progress_kept_out():
            p.__exit__(None, None, None)
    if trace_file:
        p.export_chrome_trace(trace_file)
    prof = Profile(fn=describe_callable(fn), backend="eager", steps=steps, total_us=0.0, trace_file=trace_file)
    _attribute(p.events(), marks, prof)
    return prof


def _module_names(fn: Any) -> dict[int, str]:
    """id(module) -> its name as Dynamo's nn_module_stack writes it; the profiled module itself: ""."""
    import torch

    roots: list[tuple[str, Any]] = []
    if isinstance(fn, torch.nn.Module):
        roots.append(("L['self']", fn))
    code, glob = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    for name in getattr(code, "co_names", ()):
        if isinstance(glob.get(name), torch.nn.Module):
            roots.append((f"G[{name!r}]", glob[name]))
    out: dict[int, str] = {}
    for prefix, root in roots:
        for qual, m in root.named_modules():
            out.setdefault(id(m), f"{prefix}.{qual}" if qual else prefix)
    if isinstance(fn, torch.nn.Module):
        out[id(fn)] = ""  # the top level, as in the compiled profile (Note [Eager time per user line])
    return out


class _Markers:
    """The line and module markers of one eager profile, and what each marker name stands for."""

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names
        self.lines: list[tuple[str, int, str]] = []  # marker index -> (file, line, code)
        self.modules: list[tuple[str, str]] = []  # marker index -> (path, type)
        self._line_ids: dict[tuple[str, int], int] = {}
        self._mod_ids: dict[int, int] = {}
        self._open: dict[int, Any] = {}  # id(frame) -> its open line marker
        self._mods: list[Any] = []  # open module markers, innermost last
        import torch

        self._skip = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (torch, sys.modules["tracer"]))
        self._skip += tuple({sysconfig.get_paths()[k] + os.sep for k in ("stdlib", "platstdlib")})
        self._user: dict[str, bool] = {}

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        import torch.nn.modules.module as mm

        pre = mm.register_module_forward_pre_hook(self._enter_module)
        post = mm.register_module_forward_hook(self._exit_module, always_call=True)
        before = sys.gettrace()
        sys.settrace(self._call)
        try:
            yield
        finally:
            sys.settrace(before)
            pre.remove()
            post.remove()
            for rf in [*self._open.values(), *reversed(self._mods)]:  # left open only by an error
                rf.__exit__(None, None, None)
            self._open.clear()
            self._mods.clear()

    def _is_user(self, file: str) -> bool:
        hit = self._user.get(file)
        if hit is None:
            path = os.path.abspath(file)
            hit = self._user[file] = not file.startswith("<frozen") and not path.startswith(self._skip)
        return hit

    def _call(self, frame: Any, event: str, arg: Any) -> Any:
        return self._local if event == "call" and self._is_user(frame.f_code.co_filename) else None

    def _local(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            self._close(frame)
            key = (frame.f_code.co_filename, frame.f_lineno)
            idx = self._line_ids.get(key)
            if idx is None:
                idx = self._line_ids[key] = len(self.lines)
                self.lines.append((key[0], key[1], linecache.getline(key[0], key[1]).strip()))
            self._open[id(frame)] = _enter(f"{_LINE}{idx} ##")
        elif event == "return":
            self._close(frame)
        return self._local

    def _close(self, frame: Any) -> None:
        rf = self._open.pop(id(frame), None)
        if rf is not None:
            rf.__exit__(None, None, None)

    def _enter_module(self, module: Any, inputs: Any) -> None:
        idx = self._mod_ids.get(id(module))
        if idx is None:
            t = type(module)
            path = self.names.get(id(module), f"<{t.__name__}>")
            idx = self._mod_ids[id(module)] = len(self.modules)
            self.modules.append((path, f"{t.__module__}.{t.__qualname__}"))
        self._mods.append(_enter(f"{_MOD}{idx} ##"))

    def _exit_module(self, module: Any, inputs: Any, output: Any) -> None:
        if self._mods:
            self._mods.pop().__exit__(None, None, None)


def _enter(name: str) -> Any:
    import torch

    rf = torch.profiler.record_function(name)
    rf.__enter__()
    return rf


def _marker(name: str, prefix: str) -> int:
    return int(name[len(prefix):-3]) if name.startswith(prefix) and name.endswith(" ##") else -1


def _where(e: Any) -> tuple[int, list[int], Any]:
    """(nearest line marker index or -1, module marker indices outermost first, evaluate_function ancestor)."""
    line, mods, node = -1, [], None
    q = e.cpu_parent
    while q is not None:
        if line < 0 and (i := _marker(q.name, _LINE)) >= 0:
            line = i
        if (i := _marker(q.name, _MOD)) >= 0:
            mods.append(i)
        if node is None and q.name.startswith(_EVAL):
            node = q
        q = q.cpu_parent
    return line, mods[::-1], node


def _attribute(events: Any, marks: _Markers, prof: Profile) -> None:
    """Every event's self time onto a (graph, line, modules) NodeTime, or by name into ``unattributed``."""
    where: dict[int, tuple[int, list[int], Any]] = {}
    forward: dict[tuple[int, int], tuple[int, tuple[int, ...]]] = {}  # (thread, sequence_nr) -> line, modules
    for e in events:
        where[id(e)] = w = _where(e)
        if w[0] >= 0 and e.sequence_nr >= 0:
            forward.setdefault((e.thread, e.sequence_nr), (w[0], tuple(w[1])))
    rows: dict[tuple[str, int, tuple[int, ...]], NodeTime] = {}
    for e in events:
        us = float(e.self_cpu_time_total)
        prof.total_us += us
        if _marker(e.name, _LINE) >= 0 or _marker(e.name, _MOD) >= 0:
            prof.unattributed[MARKERS] = prof.unattributed.get(MARKERS, 0.0) + us
            continue
        line, mods, node = where[id(e)]
        graph = "forward"
        if line < 0:
            start = node if node is not None else (e if e.name.startswith(_EVAL) else None)
            hit = forward.get((start.fwd_thread, start.sequence_nr)) if start is not None else None
            if hit is None:
                prof.unattributed[e.name] = prof.unattributed.get(e.name, 0.0) + us
                continue
            graph, (line, mods) = "backward", (hit[0], list(hit[1]))
        key = (graph, line, tuple(mods))
        t = rows.get(key)
        if t is None:
            file, ln, code = marks.lines[line]
            paths = [list(marks.modules[i]) for i in mods if marks.modules[i][0]]
            t = rows[key] = NodeTime("", graph, f"{os.path.basename(file)}:{ln}" + "".join(f" {p}" for p, _ in paths[-1:]),
                                     0.0, file=file, line=ln, code=code, modules=paths)
        t.self_us += us
        t.ops[e.name] = t.ops.get(e.name, 0.0) + us
    for t in rows.values():
        t.ops = dict(sorted(t.ops.items(), key=lambda kv: -kv[1]))
    prof.nodes = sorted(rows.values(), key=lambda n: -n.self_us)
