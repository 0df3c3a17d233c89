"""Export overhead: ``tracer.export`` vs a plain ``torch.export.export`` of the same model.

Invariant: both sides export the same seeded model on the same input from a fresh Dynamo state, in
alternating order (drift from a noisy neighbour hits both alike); a ratio is the median of the
per-round ratios, of wall time (the target) and of this process's CPU time (what a loaded machine
perturbs least: waiting for a core is not counted). ``python -m bench`` runs it (11 rounds); alone:
``python -m bench.export_overhead [--quick] [--repeat N]``.

Note [Samples long enough to compare]: the mlp exports in about 30 ms, and on a shared 2-core machine
one export's wall time varies by more than the record costs (measured: min 27 ms, median 61 ms over 15
plain exports), so a ratio of single exports is mostly noise. Each sample is therefore ``calls``
exports of one side, each from a fresh Dynamo state (the reset not timed), ``calls`` chosen from one
timed plain export so that a sample's exports last at least ``MIN_SAMPLE_S``; seconds are per export.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import torch

import tracer
from bench import models
from bench.timing import fresh, median, timed

__all__ = ["NAMES", "measure", "run"]

NAMES = ("mlp", "transformer12", "gpt2")  # models torch.export exports as they are
MIN_SAMPLE_S = 0.5  # See Note [Samples long enough to compare]


def _calls(fn: Any) -> int:
    """How many calls of ``fn`` last at least MIN_SAMPLE_S together (from one timed call)."""
    fresh()
    once = max(timed(fn).wall, 1e-4)
    return max(1, min(50, round(MIN_SAMPLE_S / once + 0.5)))


def _sample(fn: Any, calls: int) -> tuple[float, float]:
    """(wall, CPU) seconds per call of ``fn`` over ``calls`` calls, each from a fresh Dynamo state (not timed)."""
    wall = cpu = 0.0
    for _ in range(calls):
        fresh()
        t = timed(fn)
        wall, cpu = wall + t.wall, cpu + t.cpu
    return wall / calls, cpu / calls


def measure(name: str, *, repeat: int = 5, size: str = "full") -> dict[str, Any]:
    """Median seconds of both sides and the median per-round ratio record / plain export."""
    model, args = models.make(name, size)
    sides = {"export": lambda: torch.export.export(model, args), "record": lambda: tracer.export(model, args)}
    calls = _calls(sides["export"])
    wall: dict[str, list[float]] = {s: [] for s in sides}
    cpu: dict[str, list[float]] = {s: [] for s in sides}
    for r in range(repeat):
        for side in (("export", "record") if r % 2 == 0 else ("record", "export")):
            w, c = _sample(sides[side], calls)
            wall[side].append(w)
            cpu[side].append(c)
    fresh()
    ratios = [a / b for a, b in zip(wall["record"], wall["export"], strict=True)]
    cpu_ratios = [a / b for a, b in zip(cpu["record"], cpu["export"], strict=True)]
    return {"ratio": median(ratios), "ratios": ratios, "cpu_ratio": median(cpu_ratios), "cpu_ratios": cpu_ratios,
            "seconds": {s: median(v) for s, v in wall.items()}, "calls": calls}


def run(names: tuple[str, ...] = NAMES, *, repeat: int = 5, size: str = "full") -> dict[str, Any]:
    """``{"export_overhead": {name: ratio}, "export_seconds": {name: plain export seconds}}``."""
    for name in names:  # pay imports and lazy initialisation once
        model, args = models.make(name, "tiny")
        tracer.export(model, args)
        torch.export.export(model, args)
    per = {name: measure(name, repeat=repeat, size=size) for name in names}
    return {"export_overhead": {n: round(p["ratio"], 3) for n, p in per.items()},
            "export_seconds": {n: round(p["seconds"]["export"], 3) for n, p in per.items()},
            "export_record_seconds": {n: round(p["seconds"]["record"], 3) for n, p in per.items()},
            "export_calls_per_sample": {n: p["calls"] for n, p in per.items()},
            "export_ratio_rounds": {n: [round(r, 3) for r in p["ratios"]] for n, p in per.items()},
            "export_overhead_cpu": {n: round(p["cpu_ratio"], 3) for n, p in per.items()},
            "export_cpu_ratio_rounds": {n: [round(r, 3) for r in p["cpu_ratios"]] for n, p in per.items()}}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="tiny models, 3 rounds")
    p.add_argument("--repeat", type=int, default=5, help="alternating rounds per model (default 5)")
    a = p.parse_args()
    print(json.dumps(run(repeat=3, size="tiny") if a.quick else run(repeat=a.repeat)))
