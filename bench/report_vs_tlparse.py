"""``dynascope report`` vs ``tlparse`` on the same TORCH_TRACE log, and load throughput / memory on a big log.

Invariant: both tools run as whole processes (start-up included) on the very same file, best of
``repeat`` wall times; the log is written by a real training compile of bench.models' transformer12
in a child process with TORCH_TRACE set. The synthetic big log is that log repeated with frame ids
shifted, so every copy is a distinct compile (nothing is merged away).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Any

__all__ = ["run", "training_log", "synthetic_log"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CHILD = """
import torch, sys
sys.path.insert(0, {root!r})
from bench import models
model, args = models.make("transformer12", {size!r})
out = torch.compile(model, backend="aot_eager")(*args)
out.sum().backward()
"""


def training_log(out_dir: str, size: str = "full") -> str:
    """Path of the TORCH_TRACE log of one transformer12 training step (forward + backward compile)."""
    trace = os.path.join(out_dir, "trace")
    subprocess.run([sys.executable, "-c", _CHILD.format(root=ROOT, size=size)], check=True, timeout=1200,
                   env=dict(os.environ, TORCH_TRACE=trace), capture_output=True)
    (path,) = glob.glob(os.path.join(trace, "*.log"))
    return path


def synthetic_log(src: str, dst: str, target_bytes: int) -> int:
    """Repeat ``src`` into ``dst`` until ``target_bytes``, frame ids shifted per copy; returns the size."""
    with open(src, encoding="utf-8") as fh:
        lines = fh.readlines()
    copy = 0
    with open(dst, "w", encoding="utf-8") as out:
        while out.tell() < target_bytes:
            for line in lines:
                if copy and not line.startswith("\t") and '"frame_id": ' in line:
                    head, sep, body = line.partition("] {")
                    meta = json.loads("{" + body)
                    meta["frame_id"] += copy * 10_000
                    line = f"{head}] {json.dumps(meta)}\n"
                out.write(line)
            copy += 1
    return os.path.getsize(dst)


def _best_wall(cmd: list[str], repeat: int, env: dict[str, str]) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=1200)
        best = min(best, time.perf_counter() - t0)
    return best


def _tlparse() -> str:
    exe = shutil.which("tlparse") or os.path.join(os.path.dirname(sys.executable), "tlparse")
    if not os.path.exists(exe):
        raise RuntimeError("tlparse is not installed (pip install 'dynascope[bench]')")
    return exe


def _read_everything(cap: Any) -> None:
    """What a viewer of every frame would read: each graph's nodes, the guards, all problems."""
    for f in cap.frames:
        for g in [f.graph, *(s.graph for s in f.subgraphs.values())]:
            g.nodes  # noqa: B018 (the first read parses; Note [Graphs parsed on first access])
        if f.aot is not None:
            for g in [f.aot.joint, f.aot.forward, f.aot.backward, f.aot.inference, *f.aot.subgraphs.values()]:
                if g is not None:
                    g.nodes  # noqa: B018
        f.guards  # noqa: B018
    cap.all_problems()


def run(repeat: int = 3, size: str = "full", big_bytes: int = 100 * 2**20) -> dict[str, Any]:
    """All three targets in one run. Keys: report_over_tlparse (target <= 1.0) with the walls behind
    it (python start-up and ``import viz.cli`` alone, for where the time goes); on the synthetic log
    of ``big_bytes``: load_mb_per_s (>= 50) and capture_bytes_over_log (<= 2) as ``load_trace``
    returns it, and the same two once every graph, guard and problem has been read
    (``*_all_read``: what the lazy load defers, not what it saves)."""
    from tracer.trace_log import load_trace

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory(prefix="dynascope-bench-") as tmp:
        log = training_log(tmp, size)
        ours = _best_wall([sys.executable, "-m", "viz.cli", "report", log, "-o", os.path.join(tmp, "r.html")],
                          repeat, env)
        theirs = _best_wall([_tlparse(), log, "-o", os.path.join(tmp, "tl_out"), "--overwrite", "--no-browser"],
                            repeat, env)
        bare = _best_wall([sys.executable, "-c", "pass"], repeat, env)
        imports = _best_wall([sys.executable, "-c", "import viz.cli"], repeat, env)
        big = os.path.join(tmp, "big.log")
        nbytes = synthetic_log(log, big, big_bytes)
        load_s = read_s = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            cap = load_trace(big)
            t1 = time.perf_counter()
            _read_everything(cap)
            load_s, read_s = min(load_s, t1 - t0), min(read_s, time.perf_counter() - t0)
            del cap
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        cap = load_trace(big)
        held = tracemalloc.get_traced_memory()[0] - before
        _read_everything(cap)
        held_all = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        frames = len(cap.frames)
        del cap
        return {
            "report_log_bytes": os.path.getsize(log),
            "report_seconds": round(ours, 3),
            "tlparse_seconds": round(theirs, 3),
            "report_over_tlparse": round(ours / theirs, 3),
            "python_start_seconds": round(bare, 3),
            "import_viz_cli_seconds": round(imports, 3),
            "load_log_bytes": nbytes,
            "load_frames": frames,
            "load_mb_per_s": round(nbytes / 2**20 / load_s, 1),
            "load_mb_per_s_all_read": round(nbytes / 2**20 / read_s, 1),
            "capture_bytes_over_log": round(held / nbytes, 3),
            "capture_bytes_over_log_all_read": round(held_all / nbytes, 3),
        }


if __name__ == "__main__":
    print(json.dumps(run(repeat=int(sys.argv[1]) if len(sys.argv) > 1 else 3), indent=1))
