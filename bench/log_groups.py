"""First view of a TORCH_TRACE log's report graphs, with and without the module groups a log proves.

Invariant: every number comes from a real run: a training step of bench.models' resnet18 and of a
4-layer GPT-2 (``transformers``' config) compiled with ``torch.compile(backend="aot_eager")`` in a
fresh process with ``TORCH_TRACE`` set (dynascope is not imported there), loaded with
``tracer.load_trace``; each graph of the largest frame laid out as the report lays it out (linear
engine, :func:`viz.grouping.first_expanded`), and the fit of viz/view.js at a 1,400 x 520 canvas
(never under 10 px labels) says which boxes the first view shows. "Without" removes every
``meta["log_module"]`` first: what the report drew before logs were grouped.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

__all__ = ["first_view", "run", "training_log"]

VIEW_W, VIEW_H = 1400, 520  # a report graph's canvas at a 1,440 px window

_PROGRAMS = {
    "resnet18": """
from bench import models
model, (x,) = models.resnet18("full")
torch.compile(model, backend="aot_eager")(x).sum().backward()
""",
    "gpt2": """
import transformers
torch.manual_seed(0)
cfg = transformers.GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=1000, n_positions=128)
model = transformers.GPT2LMHeadModel(cfg)
ids = torch.randint(0, 1000, (2, 64))
torch.compile(lambda ids: model(ids, labels=ids).loss, backend="aot_eager")(ids).backward()
""",
}


def training_log(name: str, out_dir: str) -> str:
    """Path of the TORCH_TRACE log of one training step of ``name`` (a fresh process)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TORCH_TRACE=out_dir, PYTHONPATH=here)
    subprocess.run([sys.executable, "-c", "import torch\n" + _PROGRAMS[name]], env=env, check=True,
                   timeout=900, capture_output=True)
    (path,) = glob.glob(os.path.join(out_dir, "*.log"))
    return path


def first_view(graph: Any) -> dict[str, int]:
    """Layout size of ``graph``'s first view and the boxes (module groups, ops) the fitted canvas shows."""
    from viz.graph_layout import layout
    from viz.grouping import first_expanded
    from viz.style import FONT_PX, READABLE_PX

    lay = layout(graph, expanded=first_expanded(graph), engine="linear")
    w = max(b.x + b.w for b in lay.boxes)
    h = max(b.y + b.h for b in lay.boxes)
    k = min(1.5, (VIEW_W - 16) / w, (VIEW_H - 16) / h)  # viz/view.js fit()
    if k < READABLE_PX / FONT_PX:
        k = max(READABLE_PX / FONT_PX, min(1, (VIEW_W - 16) / w))
    x0 = 8 if w * k > VIEW_W else max(8, (VIEW_W - w * k) / 2)
    seen = [b for b in lay.boxes if x0 + b.x * k < VIEW_W and x0 + (b.x + b.w) * k > 0 and 8 + b.y * k < VIEW_H]
    return {"width_px": round(w), "height_px": round(h), "boxes": len(lay.boxes),
            "groups": sum(b.group is not None for b in lay.boxes),
            "groups_in_view": sum(b.group is not None for b in seen),
            "ops_in_view": sum(b.group is None for b in seen)}


def _views(path: str, strip: bool) -> dict[str, Any]:
    from tracer.trace_log import load_trace

    cap = load_trace(path)
    frame = max((f for f in cap.frames if f.graph is not None), key=lambda f: len(f.graph.nodes))
    graphs = {"root": frame.graph}
    if frame.aot is not None:
        graphs.update({k: g for k in ("forward", "backward", "joint") if (g := getattr(frame.aot, k)) is not None})
    out: dict[str, Any] = {"frame": frame.compile_id}
    for k, g in graphs.items():
        if strip:
            for n in g.nodes:
                n.meta.pop("log_module", None)
        out[k] = {"nodes": len(g.nodes), **first_view(g)}
    return out


def run(names: tuple[str, ...] = tuple(_PROGRAMS)) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        with tempfile.TemporaryDirectory() as d:
            path = training_log(name, d)
            out[name] = {"with": _views(path, strip=False), "without": _views(path, strip=True)}
        print(name, json.dumps(out[name]), flush=True)
    return out


if __name__ == "__main__":
    run(tuple(sys.argv[1:]) or tuple(_PROGRAMS))
