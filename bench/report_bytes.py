"""Report bytes of every zoo model: the one-file report (viz/report_file.py) of a live capture and of
the same training step's TORCH_TRACE log, against the 1 MB target.

Invariant: every size comes from a real run. Live: ``tracer.capture`` of the model (a training step:
its parameters want gradients, so AOTAutograd's joint, forward and backward graphs are drawn), then
``viz.export_html``. Log: the same model compiled with ``torch.compile(backend="aot_eager")`` and
stepped backward in a child process with ``TORCH_TRACE`` set, then ``dynascope report`` (the CLI, a
whole process) on its log. Sizes are deterministic for a given torch, model and dynascope.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

__all__ = ["LIMIT", "ZOO", "run"]

LIMIT = 1_000_000  # bytes: a report must stay small enough to attach to a bug or drop in a chat
# (name in bench.models, what it is); gpt2_hf needs transformers
ZOO = [("gpt2_hf", "transformers GPT-2, 4 layers, d 256"), ("resnet18", "ResNet-18 layout, width 64"),
       ("transformer12", "12 x TransformerEncoderLayer, d 256"), ("cnn", "3 x conv/bn/relu/pool")]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = """
import sys, torch
sys.path.insert(0, {root!r})
from bench import models
model, args = models.make({name!r}, {size!r})
out = torch.compile(model, backend="aot_eager")(*args)
out.sum().backward()
"""


def _log(name: str, size: str, out_dir: str) -> str:
    trace = os.path.join(out_dir, f"trace-{name}")
    env = dict(os.environ, TORCH_TRACE=trace)
    subprocess.run([sys.executable, "-c", _CHILD.format(root=ROOT, name=name, size=size)], check=True,
                   timeout=1800, env=env, capture_output=True)
    (path,) = glob.glob(os.path.join(trace, "*.log"))
    return path


def measure(name: str, size: str = "full", log: bool = True) -> dict[str, Any]:
    """{"live": bytes of export_html, "log": bytes of `dynascope report` on the log, "log_input": the
    log's bytes, "frames", "nodes": of the live capture} for one zoo model."""
    import tracer
    import viz
    from bench import models
    from bench.timing import fresh

    model, args = models.make(name, size)
    fresh()
    cap = tracer.capture(model, *args)
    out: dict[str, Any] = {"frames": len(cap.frames), "nodes": sum(len(g.nodes) for f in cap.frames
                                                                   for g in _graphs(f))}
    with tempfile.TemporaryDirectory(prefix="dynascope-bytes-") as tmp:
        out["live"] = os.path.getsize(viz.export_html(cap, os.path.join(tmp, "live.html")))
        if log:
            path = _log(name, size, tmp)
            html = os.path.join(tmp, "log.html")
            env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
            subprocess.run([sys.executable, "-m", "viz.cli", "report", path, "-o", html], check=True, timeout=1800,
                           env=env, capture_output=True)
            out["log"] = os.path.getsize(html)
            out["log_input"] = os.path.getsize(path)
    return out


def _graphs(frame: Any) -> list[Any]:
    from viz.report_graphs import frame_graphs

    return [g for _, _, g, _ in frame_graphs(frame)] if frame.has_graph else []


def run(size: str = "full", log: bool = True, names: list[str] | None = None) -> dict[str, Any]:
    """Per zoo model its sizes (:func:`measure`; a model whose package is missing is named under
    "skipped"), and ``report_bytes_max``: the largest report of all (target <= LIMIT)."""
    out: dict[str, Any] = {"models": {}, "skipped": []}
    for name, _ in ZOO:
        if names is not None and name not in names:
            continue
        try:
            out["models"][name] = measure(name, size, log)
        except ModuleNotFoundError as e:  # except: a model needing an optional package is skipped, and named
            out["skipped"].append(f"{name}: {e}")
    sizes = [v for m in out["models"].values() for k, v in m.items() if k in ("live", "log")]
    out["report_bytes_max"] = max(sizes, default=0)
    return out


if __name__ == "__main__":
    print(json.dumps(run(size=sys.argv[1] if len(sys.argv) > 1 else "full"), indent=1))
