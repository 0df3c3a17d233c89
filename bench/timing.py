"""Timing helpers for the benchmarks: a fresh compile state, wall/CPU timers, medians, and what the
cyclic collector did meanwhile.

Invariant: ``fresh()`` is the only place that resets Dynamo, and only the benchmark process calls it.
"""

from __future__ import annotations

import contextlib
import gc
import resource
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

__all__ = ["Collections", "Timed", "collections", "fresh", "median", "timed"]


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


@dataclass
class Collections:
    """What the cyclic collector did inside a ``collections()`` block: collections per generation
    (0, 1, 2; 2 is a full collection) and the wall seconds they took."""

    counts: list[int] = field(default_factory=lambda: [0, 0, 0])
    seconds: float = 0.0


@contextlib.contextmanager
def collections() -> Iterator[Collections]:
    """Count the collector's collections and time them (``gc.callbacks``) while the block runs (Note
    [Collections counted per side] in bench/zoo.py)."""
    out = Collections()
    started: list[float] = []

    def on_collect(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            out.counts[info["generation"]] += 1
            out.seconds += time.perf_counter() - started.pop()

    gc.callbacks.append(on_collect)
    try:
        yield out
    finally:
        gc.callbacks.remove(on_collect)
