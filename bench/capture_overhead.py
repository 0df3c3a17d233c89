"""Capture overhead: ``tracer.capture`` vs a plain ``torch.compile(backend="aot_eager")`` first call.

Invariant: both sides compile the same seeded model on the same input from a fresh Dynamo state, in
rotating order (so drift from a noisy neighbour hits every side alike); a ratio is the median of the
per-round ratios.
"""

from __future__ import annotations

import tempfile
from typing import Any, Callable

import torch

import tracer
from bench import models
from bench.timing import fresh, median, timed
from tracer._torch.bench_support import structured_trace_to

__all__ = ["SIDES", "measure", "run", "warm_up"]

SIDES = ("compile", "capture", "trace_file")


def _sides(model: torch.nn.Module, args: tuple, trace_dir: str) -> dict[str, Callable[[], Any]]:
    def compile_() -> Any:
        return torch.compile(model, backend="aot_eager")(*args)

    def capture() -> Any:
        return tracer.capture(model, *args)

    def trace_file() -> Any:  # what a tlparse user pays: TORCH_TRACE=dir, then the same compile
        with structured_trace_to(trace_dir):
            return torch.compile(model, backend="aot_eager")(*args)

    return {"compile": compile_, "capture": capture, "trace_file": trace_file}


def measure(name: str, *, repeat: int = 5, size: str = "full") -> dict[str, Any]:
    """Time the three sides for one model; returns medians (seconds) and median ratios to ``compile``."""
    model, args = models.make(name, size)
    with tempfile.TemporaryDirectory(prefix="dynascope-bench-trace-") as trace_dir:
        sides = _sides(model, args, trace_dir)
        wall: dict[str, list[float]] = {s: [] for s in SIDES}
        cpu: dict[str, list[float]] = {s: [] for s in SIDES}
        for r in range(repeat):
            order = SIDES[r % 3:] + SIDES[:r % 3]
            for side in order:
                fresh()
                t = timed(sides[side])
                wall[side].append(t.wall)
                cpu[side].append(t.cpu)
        fresh()

    def rounds(d: dict[str, list[float]], side: str) -> list[float]:
        return [a / b for a, b in zip(d[side], d["compile"], strict=True)]

    def ratio(d: dict[str, list[float]], side: str) -> float:
        return median(rounds(d, side))

    return {
        "capture_rounds": [round(r, 3) for r in rounds(wall, "capture")],
        # the least-disturbed run of each side: noise from neighbours only ever adds time
        "capture_ratio_min": min(wall["capture"]) / min(wall["compile"]),
        "capture_ratio_min_cpu": min(cpu["capture"]) / min(cpu["compile"]),
        "capture_ratio": ratio(wall, "capture"),
        "trace_file_ratio": ratio(wall, "trace_file"),
        "capture_ratio_cpu": ratio(cpu, "capture"),
        "trace_file_ratio_cpu": ratio(cpu, "trace_file"),
        "seconds": {s: median(wall[s]) for s in SIDES},
    }


def warm_up(names: tuple[str, ...]) -> None:
    """Pay imports and lazy initialisation once, on tiny versions of the models."""
    with tempfile.TemporaryDirectory(prefix="dynascope-bench-trace-") as trace_dir:
        for name in names:
            model, args = models.make(name, "tiny")
            for fn in _sides(model, args, trace_dir).values():
                fresh()
                fn()
    fresh()


def run(names: tuple[str, ...] = tuple(models.MODELS), *, repeat: int = 5, size: str = "full") -> dict[str, Any]:
    """Capture overhead for every model: ``{"capture_overhead": {name: ratio}, "trace_file_overhead": ...}``."""
    warm_up(names)
    per = {name: measure(name, repeat=repeat, size=size) for name in names}
    return {
        "capture_overhead": {n: round(p["capture_ratio"], 3) for n, p in per.items()},
        "trace_file_overhead": {n: round(p["trace_file_ratio"], 3) for n, p in per.items()},
        "capture_overhead_cpu": {n: round(p["capture_ratio_cpu"], 3) for n, p in per.items()},
        "trace_file_overhead_cpu": {n: round(p["trace_file_ratio_cpu"], 3) for n, p in per.items()},
        "capture_seconds": {n: round(p["seconds"]["capture"], 3) for n, p in per.items()},
        "capture_overhead_rounds": {n: p["capture_rounds"] for n, p in per.items()},
        "capture_overhead_min": {n: round(p["capture_ratio_min"], 3) for n, p in per.items()},
        "capture_overhead_min_cpu": {n: round(p["capture_ratio_min_cpu"], 3) for n, p in per.items()},
        "compile_seconds": {n: round(p["seconds"]["compile"], 3) for n, p in per.items()},
    }
