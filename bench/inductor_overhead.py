"""Inductor capture overhead: ``tracer.capture(..., backend="inductor")`` vs a plain
``torch.compile(backend="inductor")`` first call.

Invariant: both sides compile the same seeded model on the same input from a fresh Dynamo state, in
alternating order, and both cold: the capture turns Inductor's compile caches off (Note [No compile
caches during an Inductor capture] in tracer/_torch/inductor.py), so the plain side compiles with
the same two caches off; a ratio is the median of the per-round ratios, with the spread (min, max)
of those ratios beside it. The ratio against a plain compile *with* its caches (warm after the first
round) is reported beside it, for honesty; so is the ratio of CPU seconds (this process and the C++
compiler children it waited for), which moves less than wall time when neighbours load the machine.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

import tracer
from bench import models
from bench.timing import fresh, median, timed

__all__ = ["NAMES", "measure", "run"]

NAMES = ("mlp", "cnn", "transformer12")  # CPU models Inductor compiles in seconds (flex/hops: HOP paths)
SIDES = ("compile", "capture", "compile_cached")


def _sides(model: torch.nn.Module, args: tuple) -> dict[str, Callable[[], Any]]:
    from tracer._torch.inductor import compile_caches_off

    def compile_() -> Any:  # the caches the capture turns off, off
        with compile_caches_off():
            return torch.compile(model, backend="inductor")(*args)

    def capture() -> Any:
        return tracer.capture(model, *args, backend="inductor")

    def compile_cached() -> Any:
        return torch.compile(model, backend="inductor")(*args)

    return {"compile": compile_, "capture": capture, "compile_cached": compile_cached}


def measure(name: str, *, repeat: int = 3, size: str = "full") -> dict[str, Any]:
    """Median wall seconds per side and median per-round ratios of the capture to each plain side."""
    model, args = models.make(name, size)
    sides = _sides(model, args)
    wall: dict[str, list[float]] = {s: [] for s in SIDES}
    cpu: dict[str, list[float]] = {s: [] for s in SIDES}
    for r in range(repeat):
        for side in SIDES[r % 3:] + SIDES[:r % 3]:
            fresh()
            t = timed(sides[side])
            wall[side].append(t.wall)
            cpu[side].append(t.cpu)
    fresh()
    ratios = [a / b for a, b in zip(wall["capture"], wall["compile"], strict=True)]
    return {
        "ratio": median(ratios),
        "spread": (min(ratios), max(ratios)),
        "ratio_cpu": median([a / b for a, b in zip(cpu["capture"], cpu["compile"], strict=True)]),
        "ratio_vs_cached": median([a / b for a, b in zip(wall["capture"], wall["compile_cached"], strict=True)]),
        "seconds": {s: median(wall[s]) for s in SIDES},
    }


def run(names: tuple[str, ...] = NAMES, *, repeat: int = 3, size: str = "full") -> dict[str, Any]:
    """``{"inductor_overhead": {name: ratio}, ...}`` for every model (tiny warm-up first: imports, C++ toolchain)."""
    for name in names[:1]:
        model, args = models.make(name, "tiny")
        for fn in _sides(model, args).values():
            fresh()
            fn()
    per = {name: measure(name, repeat=repeat, size=size) for name in names}
    return {
        "inductor_overhead": {n: round(p["ratio"], 3) for n, p in per.items()},
        "inductor_overhead_spread": {n: [round(x, 3) for x in p["spread"]] for n, p in per.items()},
        "inductor_overhead_cpu": {n: round(p["ratio_cpu"], 3) for n, p in per.items()},
        "inductor_overhead_vs_cached": {n: round(p["ratio_vs_cached"], 3) for n, p in per.items()},
        "inductor_seconds": {n: {s: round(v, 3) for s, v in p["seconds"].items()} for n, p in per.items()},
    }


if __name__ == "__main__":
    import json
    import sys

    quick = "--quick" in sys.argv
    print(json.dumps(run(("mlp", "cnn") if quick else NAMES, repeat=3, size="tiny" if quick else "full")))
