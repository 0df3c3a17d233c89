"""Diff speed: ``tracer.diff`` of a 12-layer transformer's compile and its recompile after a
sequence-length change (static -> dynamic), joint graphs included. Target: <= 0.2 s per diff.

Invariant: both frames come from one real ``tracer.capture`` (the second call changes the shape,
Dynamo recompiles); the timed call is exactly what ``Recompile.diff`` runs; medians of ``repeat``.
"""

from __future__ import annotations

from typing import Any

import torch

import tracer
from bench import models
from bench.timing import fresh, median, timed
from tracer.diffing import align

__all__ = ["run"]


def run(*, repeat: int = 5, size: str = "full") -> dict[str, Any]:
    """Capture transformer12 twice-called with another sequence length; time diffs of its two frames."""
    model, (x,) = models.make("transformer12", size)
    longer = torch.randn(x.shape[0], x.shape[1] + 8, x.shape[2], requires_grad=x.requires_grad)
    fresh()
    cap = tracer.capture(model, x, more_calls=[(longer,)])
    compiled = [f for f in cap.frames if f.status == "compiled"]
    if len(compiled) != 2 or not cap.recompiles:
        raise RuntimeError(f"expected one recompile of transformer12, got {cap!r}")
    a, b = compiled
    frame_s = median([timed(lambda: tracer.diff(a, b)).wall for _ in range(repeat)])
    out: dict[str, Any] = {"diff_seconds_transformer12": frame_s}
    d = tracer.diff(a, b)
    root = d.graph("")
    out["diff_root_nodes"] = [len(a.graph.nodes), len(b.graph.nodes)]
    out["diff_root_changed_added_removed"] = [len(root.changed), len(root.added), len(root.removed)]
    if a.aot is not None and b.aot is not None and a.aot.joint is not None and b.aot.joint is not None:
        ja, jb = a.aot.joint, b.aot.joint
        out["diff_joint_seconds_transformer12"] = median([timed(lambda: align(ja, jb)).wall for _ in range(repeat)])
        out["diff_joint_nodes"] = [len(ja.nodes), len(jb.nodes)]
        jd = align(ja, jb)
        out["diff_joint_changed_added_removed"] = [len(jd.changed), len(jd.added), len(jd.removed)]
    out["diff_summary"] = d.summary
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=1))
