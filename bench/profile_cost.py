"""What ``tracer.profile``'s attribution costs next to the profiled run it reads (target: at most 10 %).

Invariant: both are wall times of the same ``tracer.profile`` call: the *profiled run* is torch's part,
from entering ``torch.profiler.profile`` to its events being read (the steps and the profiler's own
processing); the *attribution* is dynascope's part, turning those events into node or kernel times
and the Profile (``fx_marks.node_times`` / ``kernel_marks.kernel_times`` and ``profiling._profile``;
for ``backend="eager"``, ``tracer.profile(..., eager=True)``, ``eager_profiling._attribute``, and the
line markers' own self time as a share of the profiler's total, ``markers_share``: the Python run
between ops inside the markers, eager's own and the trace function's, Note [Eager time per user line]).
The timers wrap those functions for the measured call only and are removed after it, also on error.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator

import tracer
from bench import models
from bench.timing import fresh

__all__ = ["NAMES", "measure", "run"]

NAMES = ("mlp", "transformer12")


@contextlib.contextmanager
def _timed(owner: Any, name: str, spent: list[float]) -> Iterator[None]:
    original: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - t0)

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


def measure(name: str, size: str = "full", backend: str = "aot_eager", steps: int = 5) -> dict[str, Any]:
    """Seconds of the profiled run and of the attribution for one ``tracer.profile`` of ``name``."""
    import torch.profiler

    import tracer._torch.fx_marks as fx_marks
    import tracer._torch.kernel_marks as kernel_marks
    import tracer.eager_profiling as eager_profiling
    import tracer.profiling as profiling

    model, args = models.make(name, size)
    fresh()
    attribution: list[float] = []
    run_s: list[float] = []
    with contextlib.ExitStack() as stack:
        for owner, fn in ((fx_marks, "node_times"), (kernel_marks, "kernel_times"), (profiling, "_profile"),
                          (eager_profiling, "_attribute")):
            stack.enter_context(_timed(owner, fn, attribution))
        started: list[float] = []
        enter, leave = torch.profiler.profile.__enter__, torch.profiler.profile.events

        def entered(self: Any) -> Any:
            started.append(time.perf_counter())
            return enter(self)

        def events(self: Any) -> Any:
            out = leave(self)
            if started:
                run_s.append(time.perf_counter() - started.pop())
            return out

        stack.enter_context(_patched(torch.profiler.profile, "__enter__", entered))
        stack.enter_context(_patched(torch.profiler.profile, "events", events))
        how: dict[str, Any] = {"eager": True} if backend == "eager" else {"backend": backend}
        prof = tracer.profile(model, *args, steps=steps, **how)
    fresh()
    spent, ran = sum(attribution), sum(run_s)
    markers = prof.unattributed.get(eager_profiling.MARKERS, 0.0)
    return {"markers_share": round(markers / prof.total_us, 4) if backend == "eager" and prof.total_us else None,
            "profiled_run_s": round(ran, 4), "attribution_s": round(spent, 4),
            "attribution_share": round(spent / ran, 4) if ran else None, "nodes": len(prof.nodes),
            "attributed_share": round(prof.attributed_us / prof.total_us, 4) if prof.total_us else None}


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    own = name in owner.__dict__  # else inherited: removing ours restores it
    original = owner.__dict__.get(name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)


def _median(name: str, size: str, backend: str, repeat: int) -> dict[str, Any]:
    """The run with the median attribution share of ``repeat`` (on this shared 2-core VM a single
    attribution of a few ms is sometimes preempted for as long again: 0.8 ms or 8.9 ms for the same events)."""
    runs = sorted((measure(name, size, backend) for _ in range(repeat)), key=lambda r: r["attribution_share"] or 0.0)
    return runs[len(runs) // 2] | {"repeat": repeat}


def run(names: tuple[str, ...] = NAMES, size: str = "full", backends: tuple[str, ...] = ("aot_eager", "inductor", "eager"),
        repeat: int = 3) -> dict[str, Any]:
    """``{"profile_cost": {"<model> <backend>": {...}}, "profile_cost_max_share": worst attribution share}``,
    each model's the median of ``repeat`` profiles."""
    res = {f"{n} {b}": _median(n, size, b, repeat) for n in names for b in backends}
    shares = [r["attribution_share"] for r in res.values() if r["attribution_share"] is not None]
    return {"profile_cost": res, "profile_cost_max_share": max(shares, default=None)}
