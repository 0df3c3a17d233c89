"""Saved-for-backward bytes of the training benchmark models, split by origin (not a timing).

Invariant: every number is read from one ``tracer.capture`` of the seeded model (``Aot.saved_bytes``,
``activation_bytes``, ``param_bytes``; Note [Origin of a saved value] in tracer/_torch/aot_meta.py)
and compared with the model's own ``parameters()``/``buffers()`` sizes.
"""

from __future__ import annotations

from typing import Any

import tracer
from bench import models
from bench.timing import fresh

__all__ = ["TRAINING_MODELS", "measure", "run"]

TRAINING_MODELS = ("mlp", "transformer12", "gpt2", "cnn")  # flex_attention has no CPU backward


def measure(name: str, size: str = "full") -> dict[str, Any]:
    """Saved bytes of every AOT graph of one capture of ``name``, summed over its frames."""
    model, args = models.make(name, size)
    fresh()
    cap = tracer.capture(model, *args)
    aots = [f.aot for f in cap.frames if f.aot is not None and f.aot.mode == "training"]
    saved = sum(a.saved_bytes for a in aots)
    out = {
        "saved_bytes": saved,
        "activation_bytes": sum(a.activation_bytes for a in aots),
        "param_bytes": sum(a.param_bytes for a in aots),
        "input_bytes": sum(s.nbytes for a in aots for s in a.saved if s.origin == "input"),
        "unknown": sum(1 for a in aots for s in a.saved if s.origin == "unknown"),
        "model_param_bytes": sum(p.nbytes for p in model.parameters()) + sum(b.nbytes for b in model.buffers()),
    }
    fresh()
    return out


def run(names: tuple[str, ...] = TRAINING_MODELS, size: str = "full") -> dict[str, Any]:
    """``{"saved_split": {name: {...}}}`` for the training models."""
    return {"saved_split": {name: measure(name, size) for name in names}}
