"""Export overhead: ``tracer.export`` vs a plain ``torch.export.export`` of the same model.

Invariant: both sides export the same seeded model on the same input from a fresh Dynamo state, in
alternating order (drift from a noisy neighbour hits both alike); a ratio is the median of the
per-round ratios. Not wired into ``python -m bench`` yet: ``python -m bench.export_overhead [--quick]``.
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


def measure(name: str, *, repeat: int = 5, size: str = "full") -> dict[str, Any]:
    """Median seconds of both sides and the median per-round ratio record / plain export."""
    model, args = models.make(name, size)
    sides = {"export": lambda: torch.export.export(model, args), "record": lambda: tracer.export(model, args)}
    wall: dict[str, list[float]] = {s: [] for s in sides}
    for r in range(repeat):
        for side in (("export", "record") if r % 2 == 0 else ("record", "export")):
            fresh()
            wall[side].append(timed(sides[side]).wall)
    fresh()
    return {"ratio": median([a / b for a, b in zip(wall["record"], wall["export"], strict=True)]),
            "seconds": {s: median(v) for s, v in wall.items()}}


def run(names: tuple[str, ...] = NAMES, *, repeat: int = 5, size: str = "full") -> dict[str, Any]:
    """``{"export_overhead": {name: ratio}, "export_seconds": {name: plain export seconds}}``."""
    for name in names:  # pay imports and lazy initialisation once
        model, args = models.make(name, "tiny")
        tracer.export(model, args)
        torch.export.export(model, args)
    per = {name: measure(name, repeat=repeat, size=size) for name in names}
    return {"export_overhead": {n: round(p["ratio"], 3) for n, p in per.items()},
            "export_seconds": {n: round(p["seconds"]["export"], 3) for n, p in per.items()},
            "export_record_seconds": {n: round(p["seconds"]["record"], 3) for n, p in per.items()}}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="tiny models, 3 rounds")
    a = p.parse_args()
    print(json.dumps(run(repeat=3, size="tiny") if a.quick else run()))
