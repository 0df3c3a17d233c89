"""The fully read load in both modes, editable (``load_trace(path)``) and read-only (``load_trace(path,
read_only=True)``): MB/s and bytes held, on the bench's 100 MB synthetic log and on the TORCH_TRACE logs
of a real 8-rank ``torchrun`` job; and ``load_job`` of that job in both modes.

Invariant: every figure is a fresh process (``_CHILD``) timing only its load and reads (imports
excluded), the two modes alternating round by round on the same files, with the load average
(``/proc/loadavg``, what ``uptime`` prints) read before each; "fully read" is
bench/report_vs_tlparse.py's ``_read_everything`` (every graph's nodes, the guards, all problems). Bytes
held are ``tracemalloc``'s traced bytes with the captures alive, in a process of their own (tracing
slows the load). The synthetic log is ``synthetic_log`` of the transformer12 training log; the job is
tests/ranks/transformer_job.py under DDP made by the tests' own ``run_transformer_job`` (rank 5 breaks
the graph, rank 2's log cut in half), its rank logs all loaded and kept together.

``python -m bench.load_modes [--log LOG] [--job TRACE_DIR] [--big-mb 100] [--rounds 3]``: one line per
round as it ends, then one JSON line. ``--parsers``: instead, the read-only fully read load with the graph
texts read by tracer/trace_log/fx_code.py (its reader, "fast") and by graph_text.py's ``ast`` reader
alone ("ast"), alternating round by round (Note [A hand-written reader of fx code]).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Optional

__all__ = ["MODES", "run"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("editable", "read_only")

_CHILD = """
import json, sys, time, tracemalloc
mode, what, *paths = sys.argv[1:]
ro = mode.startswith("read_only")
if mode.endswith(":ast"):  # the graph texts read by graph_text.py's ast reader alone (bench.load_modes --parsers)
    from tracer.trace_log import deferred, graph_text
    deferred.parse_readable = graph_text.parse_readable
from tracer import load_job
from tracer.trace_log import load_trace
from bench.report_vs_tlparse import _read_everything
if what == "held":
    tracemalloc.start()
t0, c0 = time.perf_counter(), time.process_time()
if what == "job":
    job = load_job(paths[0], read_only=ro)
    assert len(job.ranks) > 1, job.problems
    kept = [job]
else:
    kept = []
    for p in paths:
        cap = load_trace(p, read_only=ro)
        _read_everything(cap)
        kept.append(cap)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
held = tracemalloc.get_traced_memory()[0] if what == "held" else None
print(json.dumps({"wall": wall, "cpu": cpu, "held": held}))
"""


def _child(mode: str, what: str, paths: list[str]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _CHILD, mode, what, *paths], check=True, capture_output=True,
                       text=True, env=env, timeout=1800, cwd=ROOT)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _loadavg() -> str:
    with open("/proc/loadavg", encoding="ascii") as fh:
        return " ".join(fh.read().split()[:3])


def measure(name: str, paths: list[str], rounds: int, modes: tuple[str, ...] = MODES) -> dict[str, Any]:
    """Both modes on ``paths`` (loaded together, every one fully read): per round and mode wall and CPU
    seconds with the MB/s they give, and the load average before it; then the bytes held once per mode."""
    nbytes = sum(os.path.getsize(p) for p in paths)
    mb = nbytes / 2**20
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    for i in range(rounds):
        for mode in modes if i % 2 == 0 else modes[::-1]:
            load = _loadavg()
            got = _child(mode, "time", paths)
            runs[mode].append({"load": load, "wall": round(got["wall"], 3), "cpu": round(got["cpu"], 3),
                               "mb_per_s_wall": round(mb / got["wall"], 1), "mb_per_s_cpu": round(mb / got["cpu"], 1)})
            print(f"{name} round {i + 1} {mode} [load {load}]: {got['wall']:.2f} s wall ({mb / got['wall']:.1f} MB/s), "
                  f"{got['cpu']:.2f} s CPU ({mb / got['cpu']:.1f} MB/s)", flush=True)
    out: dict[str, Any] = {"bytes": nbytes, "files": len(paths)}
    for mode in modes:
        held = _child(mode, "held", paths)["held"]
        print(f"{name} {mode}: bytes held {held / nbytes:.3f}x the logs' {nbytes} bytes", flush=True)
        out[mode] = {"rounds": runs[mode], "held_over_log": round(held / nbytes, 3),
                     "median_mb_per_s_wall": round(statistics.median(r["mb_per_s_wall"] for r in runs[mode]), 1),
                     "median_mb_per_s_cpu": round(statistics.median(r["mb_per_s_cpu"] for r in runs[mode]), 1)}
    return out


def job_load(trace: str, rounds: int) -> dict[str, Any]:
    """``load_job(trace)`` in both modes (one worker), alternating: wall and CPU per round, load average before."""
    out: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    for i in range(rounds):
        for mode in MODES if i % 2 == 0 else MODES[::-1]:
            load = _loadavg()
            got = _child(mode, "job", [trace])
            out[mode].append({"load": load, "wall": round(got["wall"], 3), "cpu": round(got["cpu"], 3)})
            print(f"load_job round {i + 1} {mode} [load {load}]: {got['wall']:.2f} s wall, {got['cpu']:.2f} s CPU", flush=True)
    return out


PARSERS = ("read_only", "read_only:ast")  # fx_code.py's reader (ast where it hands over), ast alone


def run(log: Optional[str] = None, job: Optional[str] = None, big_bytes: int = 100 * 2**20, rounds: int = 3,
        out: Optional[str] = None, parsers: bool = False) -> dict[str, Any]:
    """Keys: ``synthetic`` and ``job_logs`` (:func:`measure`), ``load_job`` (:func:`job_load`), the load
    average at start and end. ``log``: the training log to grow (default: made now); ``job``: a TORCH_TRACE
    directory of the 8-rank job (default: run now under DDP)."""
    from bench.report_vs_tlparse import synthetic_log, training_log

    tmp = out or tempfile.mkdtemp(prefix="dynascope-bench-modes-")
    os.makedirs(tmp, exist_ok=True)
    result: dict[str, Any] = {"loadavg_start": _loadavg()}
    if log is None:
        log = training_log(tmp, "full")
    big = os.path.join(tmp, "big.log")
    synthetic_log(log, big, big_bytes)
    modes = PARSERS if parsers else MODES
    result["synthetic"] = measure("synthetic", [big], rounds, modes)
    os.remove(big)
    if job is None:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import pathlib

        from torchrun_job import run_transformer_job

        job = str(run_transformer_job(pathlib.Path(tmp) / "ddp", "ddp").trace)
    from tracer.trace_log import log_files

    result["job_logs"] = measure("job logs", log_files(job), rounds, modes)
    if not parsers:
        result["load_job"] = job_load(job, rounds)
    result["loadavg_end"] = _loadavg()
    return result


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.load_modes", description=__doc__.split("\n")[0])
    p.add_argument("--log", help="the TORCH_TRACE log to grow into the synthetic log (default: transformer12 training, made now)")
    p.add_argument("--job", help="a TORCH_TRACE directory of a multi-rank job (default: the 8-rank DDP job, run now)")
    p.add_argument("--big-mb", type=float, default=100, help="size of the synthetic log in MiB")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", help="directory for the logs made (default: a new temporary one)")
    p.add_argument("--parsers", action="store_true", help="read-only only: fx_code.py's reader against ast's alone")
    a = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(json.dumps(run(a.log, a.job, int(a.big_mb * 2**20), a.rounds, a.out, a.parsers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
