"""``tracer.profile``: run a captured function's own compiled code under ``torch.profiler`` and put the time on its nodes.

One capture (as ``tracer.capture`` makes it, with FX's profiler markers generated into the AOT
graphs' code), then ``warmup`` more calls, then ``steps`` calls under ``torch.profiler``, all of the
same compiled function inside the capture, each with its backward when the capture runs one. Every
profiler event's self time goes to the AOT node it ran in (Note [Profiler time per FX node] in
tracer/_torch/fx_marks.py), and each node to its Dynamo node and user line through the recorded
provenance (``meta["from"]``, Note [AOT provenance]); the rest stays unattributed, by event name.
With ``backend="inductor"`` the capture's graphs are compiled with Inductor's per-kernel profiler
markers, and every event's self time goes to the kernel it ran in (Note [Profiler time per Inductor
kernel] in tracer/_torch/kernel_marks.py), each kernel to the Dynamo nodes and user lines Inductor's
provenance records for it (``frame.inductor``); a fused kernel's time is shown on each of its lines
as shared, not split (see ``tracer.model.profile``).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

from tracer._kineto_lines import kineto_progress_kept_out
from tracer.model import Capture, Frame
from tracer.model.profile import NodeTime, Profile
from tracer.model.shapes import SourceLine
from tracer.options import CaptureOptions, split_options

__all__ = ["profile"]


def profile(fn: Callable[..., Any], *args: Any, steps: int = 5, warmup: int = 1, trace_file: Optional[str] = None,
            options: Optional[CaptureOptions] = None, eager: bool = False, **kwargs: Any) -> Profile:
    """Capture ``fn(*args, **kwargs)`` and profile ``steps`` more calls of the same compiled code.

    Keyword options are ``tracer.capture``'s (``backward``, ``dynamic``, ``dynamo_config``, ...;
    the rest go to ``fn``); ``backend`` is ``"aot_eager"`` (time per AOT node) or ``"inductor"``
    (time per kernel, CPU; a fused kernel's time is shown on every line it computes, as shared).
    ``trace_file``: also write the profiler's Chrome trace there (open it in Perfetto or
    chrome://tracing). Returns a :class:`tracer.Profile`: ``by_line()``, ``by_module()``, ``by_node()``,
    ``table()``, the unattributed time by event name, and ``capture``.

    ``eager=True``: no compile; ``fn`` itself runs (``backend`` "eager", no capture), each op's self
    time on the innermost user line running it and the modules it ran in, backward ops on their
    forward op's (Note [Eager time per user line] in tracer/eager_profiling.py); the only option that
    applies is ``backward``. ``tracer.diff(eager, compiled)`` compares two profiles per line and module.

    >>> import torch, tracer
    >>> prof = tracer.profile(lambda x: torch.sin(x) @ x, torch.randn(64, 64), steps=2)
    >>> prof.steps, prof.backend, prof.by_line()[0].forward_us > 0
    (2, 'aot_eager', True)
    """
    opts, fn_kwargs = split_options(kwargs, options)
    if opts.mode not in (None, "default"):
        raise ValueError(f"tracer.profile profiles Inductor's default mode, got mode={opts.mode!r}")
    if opts.more_calls:
        raise ValueError("tracer.profile calls the function with the same arguments: pass no more_calls")
    for name, value in (("steps", steps), ("warmup", warmup)):
        if not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "steps" else 0):
            raise ValueError(f"{name} must be an int >= {1 if name == 'steps' else 0}, got {value!r}")
    if eager:
        if opts != CaptureOptions(backward=opts.backward):
            raise ValueError("eager=True runs fn without torch.compile: of tracer.capture's options only backward applies")
        from tracer.eager_profiling import profile_eager

        return profile_eager(fn, args, fn_kwargs, steps=steps, warmup=warmup, trace_file=trace_file or "",
                             backward=opts.backward)
    from tracer._torch.fx_marks import marking, node_times
    from tracer._torch.kernel_marks import kernel_profiling, kernel_times
    from tracer.capturing import _run_capture

    held: dict[str, Any] = {}
    inductor = opts.backend == "inductor"

    @contextlib.contextmanager
    def markers() -> Iterator[None]:
        if inductor:
            with kernel_profiling():
                yield
            return
        with marking() as marks:
            held["marks"] = marks
            yield

    def run(step: Callable[[], None]) -> None:
        import torch

        for _ in range(warmup):
            step()
        p = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        with kineto_progress_kept_out():  # Note [Kineto's progress lines] in tracer/_kineto_lines.py
            p.__enter__()
        try:
            for _ in range(steps):
                step()
        finally:
            with kineto_progress_kept_out():
                p.__exit__(None, None, None)  # torch.profiler.profile.__exit__ stops it whatever the exception
        if trace_file:
            p.export_chrome_trace(trace_file)
        if inductor:
            held["events"] = p.events()  # read against the capture's kernels once it is complete
        else:
            held["times"] = node_times(p.events(), held["marks"].files())

    cap = _run_capture(fn, args, fn_kwargs, opts, extra_hooks=[markers], then=run)
    problems: list[str] = []
    if inductor:
        held["times"] = kernel_times(held["events"], cap.frames, problems)
    prof = _profile(cap, steps, held["times"], trace_file or "", opts.backend)
    prof.problems.extend(problems)
    return prof


def _profile(cap: Capture, steps: int, times: Any, trace_file: str, backend: str) -> Profile:
    per_node, other, total = times
    frames = {id(f): f for f in cap.frames}
    prof = Profile(fn=cap.fn, backend=backend, steps=steps, total_us=total, unattributed=dict(other),
                   capture=cap, trace_file=trace_file)
    for (fid, kind, node), ops in per_node.items():
        f = frames.get(fid)
        if f is None:  # a frame the capture did not keep: its time stays unattributed, said
            prof.unattributed[f"(a graph of no recorded frame) {kind}.{node}"] = sum(ops.values())
            prof.problems.append(f"time in {kind}.{node} of a frame the capture does not hold: left unattributed")
            continue
        prof.nodes.append(_kernel_time(f, kind, node, ops) if backend == "inductor" else _node_time(f, kind, node, ops))
    prof.nodes.sort(key=lambda n: -n.self_us)
    return prof


def _kernel_time(f: Frame, kind: str, key: str, ops: dict[str, float]) -> NodeTime:
    """A kernel's time with its Dynamo nodes' user lines (their ``meta["source"]``), else the lines of
    Inductor's kernel stack traces; several lines: the first, and the rest in ``also`` (shown as shared)."""
    t = NodeTime(f.compile_id, kind, key, sum(ops.values()), dict(sorted(ops.items(), key=lambda kv: -kv[1])))
    name, _, handle = key.rpartition(":")
    graph = next((g for g in f.inductor if g.aot_id.endswith("_" + kind)), None)
    k = next((k for k in graph.kernels if k.name == name and str(k.handle) == handle), None) if graph else None
    if k is None:
        return t
    t.dynamo_nodes = list(k.dynamo_nodes)
    t.dynamo_node = t.dynamo_nodes[0] if t.dynamo_nodes else ""
    lines: list[SourceLine] = []
    for d in k.dynamo_nodes:
        src = _source(f, {"node": d})
        if src.get("line") and all((s.file, s.line) != (src.get("file", ""), int(src["line"])) for s in lines):
            lines.append(SourceLine(src.get("file", ""), int(src["line"]), src.get("fn", ""), src.get("code", "")))
    for s in k.source_lines if not lines else ():
        if all((x.file, x.line) != (s.file, s.line) for x in lines):
            lines.append(s)
    if lines:
        t.file, t.line, t.code = lines[0].file, lines[0].line, lines[0].code
        t.also = lines[1:]
    return t


def _node_time(f: Frame, kind: str, node: str, ops: dict[str, float]) -> NodeTime:
    t = NodeTime(f.compile_id, kind, node, sum(ops.values()), dict(sorted(ops.items(), key=lambda kv: -kv[1])))
    graph = getattr(f.aot, kind, None) if f.aot is not None else None
    n = _find(graph, node)
    origin = n.meta.get("from") if n is not None else None
    if isinstance(origin, dict) and origin.get("node"):
        t.dynamo_node = origin["node"]
        t.dynamo_nodes = [origin["node"]]
        src = origin if origin.get("line") else _source(f, origin)
        if src.get("line"):
            t.file, t.line, t.code = src.get("file", ""), int(src["line"]), src.get("code", "")
    return t


def _source(f: Frame, origin: dict[str, Any]) -> dict[str, Any]:
    sg = f.subgraphs.get(origin["graph"]) if origin.get("graph") else None
    n = _find(f.graph if not origin.get("graph") else (sg.graph if sg is not None else None), origin["node"])
    src = n.meta.get("source") if n is not None else None
    return src if isinstance(src, dict) else {}


def _find(graph: Any, name: str) -> Any:
    return next((n for n in graph.nodes if n.name == name), None) if graph is not None else None
