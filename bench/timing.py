"""Timing helpers for the benchmarks: a fresh compile state, wall/CPU timers, medians.

Invariant: ``fresh()`` is the only place that resets Dynamo, and only the benchmark process calls it.
"""

from __future__ import annotations

import gc
import resource
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Timed", "fresh", "median", "timed"]


@dataclass
class Timed:
    """One timed call: wall seconds, CPU seconds (this process's threads and the children it waited
    for, such as ``dot``), and the call's result. CPU time barely moves when neighbours load the machine."""

    wall: float
    cpu: float
    result: Any = None


def fresh() -> None:
    """Forget every compiled frame and collect garbage, so the next compile starts cold."""
    import torch

    torch.compiler.reset()
    gc.collect()


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(fn: Callable[[], Any]) -> Timed:
    """Run ``fn()`` once and time it."""
    c0, w0 = _cpu(), time.perf_counter()
    out = fn()
    w1, c1 = time.perf_counter(), _cpu()
    return Timed(w1 - w0, c1 - c0, out)


def median(xs: list[float]) -> float:
    """The median (the benchmarks' only summary statistic; robust to a noisy neighbour)."""
    if not xs:
        raise ValueError("median of no measurements")
    return float(statistics.median(xs))
