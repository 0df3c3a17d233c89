"""``dynascope report LOG -j 1`` and ``-j 2`` beside ``tlparse`` on the same log, whole process trees
measured in the same run (``python -m bench.report_vs_tlparse workers LOG ROUNDS``).

Invariant: each command runs as a whole process (start-up included) under a small Python process that
reports its wall, the CPU of it and every process it waited for (the report's workers), and the peak of
the RSS summed over its process tree; the commands alternate, their order rotating each round, and the
load average at each start is recorded, so figures compare within one run only (bench/RESULTS.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

from bench.report_vs_tlparse import ROOT, _tlparse

__all__ = ["tree_rounds", "workers_main"]


# One measured run of a command that may start processes of its own (``dynascope report -j N``): wall,
# CPU (user + system of the command and every process it waited for, ``RUSAGE_CHILDREN``), the peak of
# the RSS summed over the whole process tree (``/proc``'s VmRSS of the command and its descendants,
# sampled every 5 ms: pages a fork shares are counted once per process, the conservative sum), the
# largest single process's peak RSS, and the load average when it started. Linux only.
_TREE = """
import os, resource, subprocess, sys, threading, time
def tree(pid):
    out = [pid]
    for p in out:
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as fh:
                    out += [int(c) for c in fh.read().split()]
        except OSError:
            pass
    return out
def rss(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
load = os.getloadavg()[0]
t0 = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
peak, done = [0], threading.Event()
def sample():
    while not done.is_set():
        peak[0] = max(peak[0], sum(rss(p) for p in tree(child.pid)))
        time.sleep(0.005)
th = threading.Thread(target=sample, daemon=True)
th.start()
err = child.communicate(timeout=1200)[1]
wall = time.perf_counter() - t0
done.set(); th.join()
if child.returncode:
    sys.exit(err.decode(errors="replace")[-2000:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, r.ru_utime + r.ru_stime, peak[0], r.ru_maxrss, load)
"""


def tree_rounds(cmds: dict[str, list[str]], rounds: int) -> list[dict[str, Any]]:
    """Per round, per name (the commands one after the other in each round, their order rotating by one
    each round): wall s, CPU s, peak RSS MB summed over the process tree, the largest process's peak RSS
    MB, the load average at its start (see ``_TREE``)."""
    out, names = [], list(cmds)
    env = dict(os.environ, PYTHONPATH=ROOT)
    for i in range(rounds):
        row: dict[str, Any] = {}
        for name in names[i % len(names):] + names[:i % len(names)]:
            r = subprocess.run([sys.executable, "-c", _TREE, *cmds[name]], check=True, capture_output=True,
                               text=True, env=env, cwd=ROOT, timeout=1300)
            wall, cpu, tree_kb, max_kb, load = r.stdout.split()
            row[name] = {"wall": round(float(wall), 2), "cpu": round(float(cpu), 2),
                         "tree_rss_mb": round(int(tree_kb) / 1024, 1), "max_rss_mb": round(int(max_kb) / 1024, 1),
                         "load": float(load)}
        out.append(row)
    return out


def workers_main(argv: list[str]) -> None:
    """``python -m bench.report_vs_tlparse workers LOG N [J ...]``: N rounds of ``dynascope report LOG -j J``
    for each J (default 1 and 2) and tlparse, whole processes, alternating (:func:`tree_rounds`); one JSON
    line per round, then the medians (and per round ratios to tlparse) as one JSON line."""
    log, n, js = os.path.abspath(argv[0]), int(argv[1]), [int(j) for j in argv[2:]] or [1, 2]
    tmp = tempfile.mkdtemp(prefix="dynascope-workers-")
    try:
        cmds = {f"j{j}": [sys.executable, "-m", "viz.cli", "report", log, "-o", os.path.join(tmp, f"j{j}.html"),
                          "-j", str(j)] for j in js}
        cmds["tlparse"] = [_tlparse(), log, "-o", os.path.join(tmp, "tl"), "--overwrite", "--no-browser"]
        rows = []
        for row in tree_rounds(cmds, n):
            rows.append(row)
            print(json.dumps(row), flush=True)

        def med(xs: list[float]) -> float:
            xs = sorted(xs)
            return round((xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2, 2)

        summary: dict[str, Any] = {k: {m: med([r[k][m] for r in rows]) for m in ("wall", "cpu", "tree_rss_mb", "max_rss_mb")}
                                   for k in cmds}
        for k in cmds:
            if k != "tlparse":
                summary[k]["wall_ratio"] = med([r[k]["wall"] / r["tlparse"]["wall"] for r in rows])
                summary[k]["cpu_ratio"] = med([r[k]["cpu"] / r["tlparse"]["cpu"] for r in rows])
        summary["load"] = [min(r[k]["load"] for r in rows for k in cmds), max(r[k]["load"] for r in rows for k in cmds)]
        print(json.dumps({"medians": summary}), flush=True)
    finally:
        shutil.rmtree(tmp)

