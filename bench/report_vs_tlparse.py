"""``dynascope report`` vs ``tlparse`` on the same TORCH_TRACE log, and load throughput / memory on a big log.

Invariant: both tools run as whole processes (start-up included) on the very same file, best of
``repeat`` wall times; the log is written by a real training compile of bench.models' transformer12
in a child process with TORCH_TRACE set. The synthetic big log is that log repeated with frame ids
shifted, so every copy is a distinct compile (nothing is merged away).
"""

from __future__ import annotations

import glob
import importlib.metadata
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Any, Optional

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


# The measured command runs as the only child of a small Python process, which reports the child's
# wall time and its peak resident set (``RUSAGE_CHILDREN``: the largest child's maxrss).
_MEASURED = ("import resource, subprocess, sys, time; t0 = time.perf_counter(); "
             "subprocess.run(sys.argv[1:], check=True, capture_output=True, timeout=1200); "
             "print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def _measured(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of one run of ``cmd`` as a whole process."""
    r = subprocess.run([sys.executable, "-c", _MEASURED, *cmd], check=True, capture_output=True, text=True,
                       env=env, timeout=1300)
    wall, kb = r.stdout.split()
    return float(wall), int(kb) * 1024


def _side_by_side(cmds: dict[str, list[str]], repeat: int, env: dict[str, str]) -> dict[str, tuple[float, int]]:
    """Per name: best wall and largest peak RSS of ``repeat`` runs, the commands alternating each round."""
    best: dict[str, tuple[float, int]] = {k: (float("inf"), 0) for k in cmds}
    for _ in range(repeat):
        for k, cmd in cmds.items():
            wall, rss = _measured(cmd, env)
            best[k] = (min(best[k][0], wall), max(best[k][1], rss))
    return best


_PAINT = """async (key) => {
  const nav = performance.getEntriesByType('navigation')[0];
  let fcp = null;
  for (let i = 0; i < 400 && fcp === null; i++) {
    const e = performance.getEntriesByName('first-contentful-paint')[0];
    if (e) fcp = e.startTime; else await new Promise((r) => setTimeout(r, 5));
  }
  const t0 = performance.now();
  location.hash = 'ds-frame-' + key;
  for (let i = 0; i < 6000; i++) {
    if (document.querySelector(`#ds-frame-${key} .ds-graphbox svg [data-node]`)) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const drawn = document.querySelector(`#ds-frame-${key} .ds-graphbox svg [data-node]`) !== null;
  return {fcp, load: nav.loadEventStart, dcl: nav.domContentLoadedEventEnd, frame: drawn ? performance.now() - t0 : null,
          height: document.documentElement.scrollHeight};
}"""


def first_paint(path: str, key: str) -> dict[str, Any]:
    """In headless Chromium (1,440 x 900): the report's first contentful paint, DOMContentLoaded and load
    event (ms from navigation), then the ms from asking for frame ``key`` (its address) to its first
    graph drawn, and the page's height at that moment."""
    from playwright.sync_api import sync_playwright

    from bench.report_size import CHROMIUM

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], timeout=60_000)
        try:
            page = b.new_page(viewport={"width": 1440, "height": 900})
            page.goto("file://" + os.path.abspath(path), wait_until="load", timeout=120_000)
            got = page.evaluate(_PAINT, key)
        finally:
            b.close()
    return {k: (round(v, 1) if isinstance(v, float) else v) for k, v in got.items()}


def _best_wall(cmd: list[str], repeat: int, env: dict[str, str]) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=1200)
        best = min(best, time.perf_counter() - t0)
    return best


def _tlparse() -> str:
    """tlparse's executable: on PATH, beside this Python, or where the installed ``tlparse`` distribution put
    its script (a venv that sees another venv's packages through a ``.pth``, as the fresh-clone test's does,
    is told tlparse is installed while the binary is in the other venv's ``bin``)."""
    exe = shutil.which("tlparse") or os.path.join(os.path.dirname(sys.executable), "tlparse")
    if os.path.exists(exe):
        return exe
    try:
        files = importlib.metadata.distribution("tlparse").files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for f in files:
        if f.name == "tlparse" and "bin" in f.parts and os.access(f.locate(), os.X_OK):
            return os.path.normpath(str(f.locate()))
    raise RuntimeError("tlparse is not installed (pip install 'dynascope[bench]')")


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
    """All targets in one run. Keys: report_over_tlparse (target <= 1.0) with the walls behind
    it (python start-up and ``import viz.cli`` alone, for where the time goes) and both tools' peak
    RSS and output bytes; the same on the synthetic log of ``big_bytes`` (``big_*``: report time and
    memory <= tlparse's), the report's first paint in Chromium (``*_first_paint``: FCP, load event,
    a deep frame's graph drawn after it is asked for, ms), where the report's CPU time goes
    (``big_report_split_cpu_seconds``); then load_mb_per_s (>= 50) and capture_bytes_over_log (<= 2)
    as ``load_trace`` returns it, and the same two once every graph, guard and problem has been read
    (``*_all_read``: what the lazy load defers, not what it saves), and once more as ``dynascope report``
    reads it, equal graphs sharing their nodes (``*_all_read_shared``, :func:`_read_only_read`)."""
    from tracer.trace_log import load_trace

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory(prefix="dynascope-bench-") as tmp:
        log = training_log(tmp, size)
        report, tl = os.path.join(tmp, "r.html"), os.path.join(tmp, "tl_out")
        small = _side_by_side({"ours": [sys.executable, "-m", "viz.cli", "report", log, "-o", report],
                               "theirs": [_tlparse(), log, "-o", tl, "--overwrite", "--no-browser"]}, repeat, env)
        ours, theirs = small["ours"][0], small["theirs"][0]
        small_bytes, small_tl_bytes = os.path.getsize(report), _dir_bytes(tl)
        bare = _best_wall([sys.executable, "-c", "pass"], repeat, env)
        imports = _best_wall([sys.executable, "-c", "import viz.cli"], repeat, env)
        big = os.path.join(tmp, "big.log")
        nbytes = synthetic_log(log, big, big_bytes)
        big_report, big_tl = os.path.join(tmp, "big.html"), os.path.join(tmp, "big_tl")
        large = _side_by_side({"ours": [sys.executable, "-m", "viz.cli", "report", big, "-o", big_report],
                               "theirs": [_tlparse(), big, "-o", big_tl, "--overwrite", "--no-browser"]},
                              max(1, repeat // 2), env)
        big_sizes = (os.path.getsize(big_report), _dir_bytes(big_tl))
        shutil.rmtree(big_tl)
        split = report_split(big)
        try:
            paint = first_paint(big_report, str(split["frames"] - 2))
            small_paint = first_paint(report, "0")
        except Exception as e:  # except: a browser that cannot start is said in the results, the rest stands
            paint = small_paint = {"error": f"{type(e).__name__}: {e}"}
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
        shared_s, shared_held = _read_only_read(big, repeat)
        mb = 2**20
        return {
            "report_log_bytes": os.path.getsize(log),
            "report_seconds": round(ours, 3),
            "tlparse_seconds": round(theirs, 3),
            "report_over_tlparse": round(ours / theirs, 3),
            "report_peak_rss_mb": round(small["ours"][1] / mb, 1),
            "tlparse_peak_rss_mb": round(small["theirs"][1] / mb, 1),
            "report_file_bytes": small_bytes,
            "tlparse_output_bytes": small_tl_bytes,
            "report_first_paint": small_paint,
            "big_log_bytes": nbytes,
            "big_report_seconds": round(large["ours"][0], 3),
            "big_tlparse_seconds": round(large["theirs"][0], 3),
            "big_report_over_tlparse": round(large["ours"][0] / large["theirs"][0], 3),
            "big_report_peak_rss_mb": round(large["ours"][1] / mb, 1),
            "big_tlparse_peak_rss_mb": round(large["theirs"][1] / mb, 1),
            "big_report_file_bytes": big_sizes[0],
            "big_tlparse_output_bytes": big_sizes[1],
            "big_report_rss_over_tlparse": round(large["ours"][1] / large["theirs"][1], 3),
            "big_report_first_paint": paint,
            "big_report_first_paint_ms": paint.get("fcp"),
            "big_report_load_ms": paint.get("load"),
            "big_report_frame_ms": paint.get("frame"),
            "big_report_split_cpu_seconds": split,
            "python_start_seconds": round(bare, 3),
            "import_viz_cli_seconds": round(imports, 3),
            "load_log_bytes": nbytes,
            "load_frames": frames,
            "load_mb_per_s": round(nbytes / 2**20 / load_s, 1),
            "load_mb_per_s_all_read": round(nbytes / 2**20 / read_s, 1),
            "capture_bytes_over_log": round(held / nbytes, 3),
            "capture_bytes_over_log_all_read": round(held_all / nbytes, 3),
            "load_mb_per_s_all_read_shared": round(nbytes / 2**20 / shared_s, 1),
            "capture_bytes_over_log_all_read_shared": round(shared_held / nbytes, 3),
        }


def _read_only_read(log: str, repeat: int) -> tuple[float, int]:
    """The fully read load as ``dynascope report`` reads it (Note [Read-only graphs] in
    tracer/trace_log/deferred.py: equal graphs share one node list): best CPU seconds of ``repeat``
    loads and reads, then the bytes held after one (``tracemalloc``)."""
    from tracer.trace_log import deferred, load_trace

    best = float("inf")
    with deferred.read_only_graphs():
        for _ in range(repeat):
            deferred._shared.clear()  # each round parses as a fresh process would
            t0 = time.process_time()
            _read_everything(load_trace(log))
            best = min(best, time.process_time() - t0)
        deferred._shared.clear()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        cap = load_trace(log)
        _read_everything(cap)
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
    del cap
    return best, held


def _dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def report_split(log: str) -> dict[str, Any]:
    """Where a report of ``log`` spends its CPU seconds, in this process: the lazy load, parsing every
    graph (what the overview's problems need), the guards, then each frame's payload HTML (layout,
    tables, code) and its compression (each frame's head, each distinct part once, as the report file
    stores them); plus one frame's payload without the equal-graph cache (the cost
    of a frame whose graphs were not seen before)."""
    from tracer.trace_log.deferred import read_only_graphs

    with read_only_graphs():  # as the CLI reads a log (viz/cli.py)
        return _report_split(log)


def _report_split(log: str) -> dict[str, Any]:
    from tracer.trace_log import load_trace
    from viz.report_file import ReportStats, _frame_pieces, _Parts, encode_payload, frame_payload
    from viz.report_graphs import DrawingCache

    t = [time.process_time()]
    cap = load_trace(log)
    t.append(time.process_time())
    cap.all_problems()
    t.append(time.process_time())
    for f in cap.frames:
        f.guards  # noqa: B018 (the first read parses)
    t.append(time.process_time())
    cache, facts = DrawingCache(stable=True), {}  # as write_report makes them
    pieces = [_frame_pieces(cap, f, cache, facts, None) for f in cap.frames]
    t.append(time.process_time())
    parts, blocks, stats = _Parts(), [], ReportStats(pathlib.Path(log))  # as write_report compresses them
    for head, data, rest in pieces:
        encode_payload(head)
        parts.add((data,), blocks, stats)
        parts.add(rest, blocks, stats)
    t.append(time.process_time())
    frame_payload(cap, cap.frames[-1])
    t.append(time.process_time())
    d = [round(t[i + 1] - t[i], 3) for i in range(len(t) - 1)]
    return {"frames": len(cap.frames), "load": d[0], "parse_graphs": d[1], "guards": d[2], "payload_html": d[3],
            "compress": d[4], "one_frame_uncached": d[5], "layouts_reused": cache.hits, "parts_stored": len(parts.known)}


# One measured run: wall, CPU (user + system) and peak RSS of the command as the only child of a small
# Python process (``RUSAGE_CHILDREN``), and the load average when it started.
_ROUND = ("import os, resource, subprocess, sys, time; load = os.getloadavg()[0]; t0 = time.perf_counter(); "
          "subprocess.run(sys.argv[1:], check=True, capture_output=True, timeout=1200); "
          "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
          "print(time.perf_counter() - t0, r.ru_utime + r.ru_stime, r.ru_maxrss, load)")


def alternating(cmds: dict[str, tuple[list[str], str]], rounds: int,
                envs: Optional[dict[str, dict[str, Optional[str]]]] = None) -> list[dict[str, Any]]:
    """Per round, per name: wall s, CPU s, peak RSS MB and the load average at its start, the commands
    (each run in its own checkout: ``python -m`` imports from the working directory first) one after the
    other in each round; ``envs[name]``: variables set (None: removed) for that command."""
    out = []
    for _ in range(rounds):
        row: dict[str, Any] = {}
        for name, (cmd, root) in cmds.items():
            env = dict(os.environ, PYTHONPATH=root)
            for k, v in (envs or {}).get(name, {}).items():
                if v is None:
                    env.pop(k, None)
                else:
                    env[k] = v
            r = subprocess.run([sys.executable, "-c", _ROUND, *cmd], check=True, capture_output=True, text=True,
                               env=env, cwd=root, timeout=1300)
            wall, cpu, kb, load = r.stdout.split()
            row[name] = {"wall": round(float(wall), 2), "cpu": round(float(cpu), 2),
                         "rss_mb": round(int(kb) / 1024, 1), "load": float(load)}
        out.append(row)
    return out


def _rounds_main(argv: list[str]) -> None:
    """``python -m bench.report_vs_tlparse rounds LOG N [BASE_CHECKOUT] [--installed]``: N alternating
    rounds of ``dynascope report`` (this checkout, and BASE_CHECKOUT's when given) and tlparse on LOG,
    one JSON line per round. ``--installed``: also this checkout as an installed package runs it
    ("ours_installed"): Python's bytecode (kept apart) and the kept templates (Note [Compiled templates
    kept] in viz/template_cache.py) written by one run before the rounds, PYTHONDONTWRITEBYTECODE unset.
    ``--helper=always|never|auto``: $DYNASCOPE_REPORT_HELPER for this checkout's runs (viz/report_warm.py)."""
    installed = "--installed" in argv
    helper = next((a.split("=", 1)[1] for a in argv if a.startswith("--helper=")), None)
    argv = [a for a in argv if a != "--installed" and not a.startswith("--helper=")]
    log, n = argv[0], int(argv[1])
    tmp = tempfile.mkdtemp(prefix="dynascope-rounds-")
    try:
        cmds = {}
        for name, root in [("ours", ROOT)] + ([("base", os.path.abspath(argv[2]))] if len(argv) > 2 else []):
            cmds[name] = ([sys.executable, "-m", "viz.cli", "report", os.path.abspath(log), "-o",
                           os.path.join(tmp, f"{name}.html")], root)
        envs: dict[str, dict[str, Optional[str]]] = {}
        if installed:
            cmds["ours_installed"] = ([sys.executable, "-m", "viz.cli", "report", os.path.abspath(log), "-o",
                                       os.path.join(tmp, "installed.html")], ROOT)
            # its bytecode apart (PYTHONPYCACHEPREFIX), so that "ours" still compiles every module as here
            envs["ours_installed"] = {"PYTHONDONTWRITEBYTECODE": None, "PYTHONPYCACHEPREFIX": os.path.join(tmp, "pyc")}
        if helper is not None:  # viz/report_warm.py's helper: "always" forks it whatever the load (measuring)
            for name in ("ours", "ours_installed"):
                envs.setdefault(name, {})["DYNASCOPE_REPORT_HELPER"] = helper
            alternating({"ours_installed": cmds["ours_installed"]}, 1, envs)  # writes both caches
        cmds["tlparse"] = ([_tlparse(), os.path.abspath(log), "-o", os.path.join(tmp, "tl"), "--overwrite",
                            "--no-browser"], ROOT)
        for row in alternating(cmds, n, envs):
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    if sys.argv[1:2] == ["rounds"]:
        _rounds_main(sys.argv[2:])
    elif sys.argv[1:2] == ["workers"]:  # -j 1 / -j 2 / tlparse, process trees measured: bench/report_workers.py
        from bench.report_workers import workers_main

        workers_main(sys.argv[2:])
    else:
        print(json.dumps(run(repeat=int(sys.argv[1]) if len(sys.argv) > 1 else 3), indent=1))
