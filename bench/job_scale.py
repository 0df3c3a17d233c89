"""Jobs of many ranks: ``load_job`` and ``dynascope report <dir>`` with 1 and N worker processes, and the
memory of a job report, and of ``load_job`` with every finding read, over N copies of a big rank log
against one rank's fully read log.

Invariant: every figure is a whole fresh process (start-up included) on the same files, timed by
itself (``_CHILD`` prints its own wall, CPU and peak RSS: ``ru_maxrss`` of the process itself, the
parent; each worker process holds one rank and is not counted there). The rank log is the bench's
synthetic big log (bench/report_vs_tlparse.py ``synthetic_log``: a real transformer12 training log
repeated with frame ids shifted); the job directory holds N hard links to it named ``rank_<r>.log``,
so every rank is the same bytes and a job of 1 GB costs no disk.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any

__all__ = ["job_dir", "page_paint", "page_times", "run", "worker_rows"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = """
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
mode, path, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "one":  # one rank's log fully read: what a viewer of every frame reads
    from tracer.trace_log import load_trace
    from bench.report_vs_tlparse import _read_everything
    cap = load_trace(path)
    _read_everything(cap)
elif mode == "job":
    import tracer
    job = tracer.load_job(path, workers=workers)
elif mode == "job_all":  # load_job, then every finding, summary and problem read (what the job view's grid shows)
    import tracer
    job = tracer.load_job(path, workers=workers)
    text = str(job) + "".join(str(d) + repr(d.diff) for d in job.divergence) + "".join(job.checked)
    assert len(job.ranks) == int(sys.argv[4]), (len(job.ranks), job.problems)
else:
    from viz.cli import write_report
    write_report(path, sys.argv[4], workers=workers)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the worker processes, once the pool has joined them
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "workers_cpu": kids.ru_utime + kids.ru_stime, "workers_rss": kids.ru_maxrss * 1024}))
"""


def _child(mode: str, path: str, workers: int, out: str = "") -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _CHILD, mode, path, str(workers), out], check=True, capture_output=True,
                       text=True, env=env, timeout=3600, cwd=ROOT)
    return json.loads(r.stdout.strip().splitlines()[-1])


def job_dir(log: str, ranks: int, where: str) -> str:
    """A directory of ``ranks`` hard links (copies where links fail) to ``log``, named ``rank_<r>.log``."""
    os.makedirs(where, exist_ok=True)
    for r in range(ranks):
        dst = os.path.join(where, f"rank_{r}.log")
        try:
            os.link(log, dst)
        except OSError:
            import shutil

            shutil.copyfile(log, dst)
    return where


def _load() -> str:
    with open("/proc/loadavg", encoding="ascii") as fh:
        return " ".join(fh.read().split()[:3])


def job_memory(log: str, rank_bytes: int, ranks: int, tmp: str, workers: int = 1) -> dict[str, Any]:
    """``job_load_all_rss_over_one_rank``: peak RSS of ``load_job`` (1 worker) of ``ranks`` copies of the
    synthetic log grown from ``log`` to ``rank_bytes``, with every finding read, ÷ one rank fully read
    (target <= 1: one rank's memory plus the job's summary), with both figures, walls and CPU times;
    with ``workers`` > 1 the same with that many worker processes (``*_n_workers``: the caller's peak
    RSS, and the largest worker's, each ÷ one rank fully read; CPU of the caller and of its workers)."""
    from bench.report_vs_tlparse import synthetic_log

    big = os.path.join(tmp, "rank_mem.log")
    nbytes = synthetic_log(log, big, rank_bytes)
    many = job_dir(big, ranks, os.path.join(tmp, "mem"))
    load = {"start": _load()}
    one = _child("one", big, 1)
    load["one_rank"] = _load()
    full = _child("job_all", many, 1, str(ranks))
    load["1_worker"] = _load()
    mb = 2**20
    out = {"job_mem_rank_log_bytes": nbytes, "job_mem_ranks": ranks, "job_mem_total_bytes": nbytes * ranks,
           "job_mem_one_rank_rss_mb": round(one["rss"] / mb, 1), "job_mem_one_rank_seconds": round(one["wall"], 2),
           "job_mem_one_rank_cpu_seconds": round(one["cpu"], 2),
           "job_load_all_rss_mb": round(full["rss"] / mb, 1), "job_load_all_seconds": round(full["wall"], 2),
           "job_load_all_cpu_seconds": round(full["cpu"], 2),
           "job_load_all_rss_over_one_rank": round(full["rss"] / one["rss"], 3), "job_mem_loadavg": load}
    if workers > 1:
        par = _child("job_all", many, workers, str(ranks))
        load["n_workers"] = _load()
        out.update({"job_mem_workers": workers, "job_load_all_rss_mb_n_workers": round(par["rss"] / mb, 1),
                    "job_load_all_worker_rss_mb_n_workers": round(par["workers_rss"] / mb, 1),
                    "job_load_all_rss_over_one_rank_n_workers": round(par["rss"] / one["rss"], 3),
                    "job_load_all_worker_rss_over_one_rank_n_workers": round(par["workers_rss"] / one["rss"], 3),
                    "job_load_all_seconds_n_workers": round(par["wall"], 2),
                    "job_load_all_cpu_seconds_n_workers": round(par["cpu"], 2),
                    "job_load_all_workers_cpu_seconds_n_workers": round(par["workers_cpu"], 2)})
    return out


def worker_rows(log: str, rank_bytes: int, ranks: int, tmp: str, workers: int = 2, rounds: int = 1) -> dict[str, Any]:
    """``load_job`` (every finding read) and ``dynascope report <dir>`` of ``ranks`` copies of the synthetic
    log grown from ``log`` to ``rank_bytes``, with 1 and ``workers`` processes, ``rounds`` times (order 1, N
    then N, 1 in alternate rounds): one row per run with wall, CPU and peak RSS of the process and of
    its largest worker (``RUSAGE_CHILDREN``), the 1-minute load average before it, and for a report
    whether its file equals the 1-worker file byte for byte; one rank fully read as the baseline."""
    import hashlib

    from bench.report_vs_tlparse import synthetic_log

    big = os.path.join(tmp, "rank_rows.log")
    nbytes = synthetic_log(log, big, rank_bytes)
    many = job_dir(big, ranks, os.path.join(tmp, "rows"))
    mb = 2**20
    out: dict[str, Any] = {"rows_rank_log_bytes": nbytes, "rows_ranks": ranks, "rows_total_bytes": nbytes * ranks,
                           "rows_cores": os.cpu_count(), "rows_rounds": rounds, "rows": []}
    load = _load()
    one = _child("one", big, 1)
    out["rows_one_rank"] = {"load": load, "wall": round(one["wall"], 2), "cpu": round(one["cpu"], 2),
                            "rss_mb": round(one["rss"] / mb, 1)}
    digests: dict[int, str] = {}
    for r in range(rounds):
        for w in ((1, workers) if r % 2 == 0 else (workers, 1)):
            for mode in ("report", "job_all"):
                html = os.path.join(tmp, f"rows_{w}.html")
                load = _load()
                got = _child(mode, many, w, html if mode == "report" else str(ranks))
                row = {"round": r, "what": "dynascope report" if mode == "report" else "load_job", "workers": w,
                       "load": load, "wall": round(got["wall"], 2), "cpu": round(got["cpu"], 2),
                       "workers_cpu": round(got["workers_cpu"], 2), "rss_mb": round(got["rss"] / mb, 1),
                       "worker_rss_mb": round(got["workers_rss"] / mb, 1) if w > 1 else None}
                if mode == "report":
                    with open(html, "rb") as fh:
                        digest = hashlib.sha256(fh.read()).hexdigest()
                    row["same_file_as_1_worker"] = digests.setdefault(1, digest) == digest if w == 1 or 1 in digests else None
                    digests.setdefault(w, digest)
                out["rows"].append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    out["rows_end_load"] = _load()
    return out


_VIEWS = """async () => {
  let fcp = null;
  for (let i = 0; i < 400 && fcp === null; i++) {
    const e = performance.getEntriesByName('first-contentful-paint')[0];
    if (e) fcp = e.startTime; else await new Promise((r) => setTimeout(r, 5));
  }
  const nav = performance.getEntriesByType('navigation')[0];
  const views = [];
  for (const side of document.querySelectorAll('details.ds-sidebyside')) {
    const t0 = performance.now();
    side.open = true;  // what its "side by side" link does
    const shown = () => side.dataset.dsLoaded
      && [...side.querySelectorAll('details.ds-lazy-frame[open]')].every((d) => d.dataset.dsLoaded);
    for (let i = 0; i < 12000 && !shown(); i++) await new Promise((r) => setTimeout(r, 2));
    document.body.offsetHeight;  // laid out
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));  // and painted
    views.push(side.dataset.dsLoaded === '1' ? performance.now() - t0 : null);
    side.open = false;
  }
  return {first_paint: fcp, load: nav.loadEventStart, views};
}"""


def page_times(path: str, runs: int = 1) -> dict[str, Any]:
    """Headless Chromium (1,440 x 900) on the job page at ``path``, ``runs`` fresh pages: first
    contentful paint, load event, and each finding's view opened in turn until it (and the frames it
    opens with) is decoded, laid out and painted, in ms (``job_page_*_runs_ms``: one value per run;
    ``job_page_first_paint_ms`` and ``job_page_slowest_view_ms``: the worst of them)."""
    from playwright.sync_api import sync_playwright

    from bench.report_size import CHROMIUM

    got: list[dict[str, Any]] = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], timeout=60_000)
        try:
            for _ in range(runs):
                page = b.new_page(viewport={"width": 1440, "height": 900})
                page.goto(pathlib.Path(path).resolve().as_uri(), wait_until="load", timeout=120_000)
                got.append(page.evaluate(_VIEWS))
                page.close()
        finally:
            b.close()
    ms = lambda v: round(v, 1) if isinstance(v, (int, float)) else v  # noqa: E731
    paints = [ms(g["first_paint"]) for g in got]
    return {"job_page_bytes": os.path.getsize(path), "job_page_first_paint_runs_ms": paints,
            "job_page_first_paint_ms": max(paints) if None not in paints else None,
            "job_page_load_runs_ms": [ms(g["load"]) for g in got],
            "job_page_view_runs_ms": [[ms(v) for v in g["views"]] for g in got],
            "job_page_slowest_view_ms": max((ms(v) for g in got for v in g["views"] if v is not None), default=None)}


def page_paint(log: str, tmp: str, other: str = "", runs: int = 3) -> dict[str, Any]:
    """The static job page (``viz.export_job_html``) of two ranks in headless Chromium (:func:`page_times`):
    ``log`` (bench's transformer12 training log) on rank 0 and ``other`` on rank 1, by default the same
    model's log at size "tiny" (1 layer instead of 12, other shapes): the ranks' frame 0/0 differs in its
    graph and in nearly every guard, the largest finding two ranks of this model can have (``other`` =
    ``log``: two equal ranks, no finding: what a quick run measures)."""
    import tracer
    import viz
    from bench.report_vs_tlparse import training_log

    where = os.path.join(tmp, "two")
    os.makedirs(where, exist_ok=True)
    other = other or training_log(os.path.join(tmp, "tiny"), "tiny")
    for rank, src in ((0, log), (1, other)):
        with open(src, "rb") as fh, open(os.path.join(where, f"rank_{rank}.log"), "wb") as out:
            out.write(fh.read())
    job = tracer.load_job(where)
    path = viz.export_job_html(job, os.path.join(tmp, "job.html"))
    return {"job_page_findings": [f"{d.kind}: {d.message[:100]}" for d in job.divergence], **page_times(str(path), runs)}


def run(size: str = "full", rank_bytes: int = 100 * 2**20, ranks: int = 10, job_ranks: int = 4,
        job_rank_bytes: int = 25 * 2**20, workers: int = 0) -> dict[str, Any]:
    """Keys: ``job_report_rss_over_one_rank`` (peak RSS of ``dynascope report`` over ``ranks`` copies of a
    ``rank_bytes`` log, one worker, ÷ one rank's log fully read; target <= 1: one rank's memory plus the
    report's summary), the same with N workers (the parent's RSS); ``job_load_seconds_{1,n}_workers`` and
    ``job_report_seconds_{1,n}_workers`` with their ratio (``*_speedup``); ``job_load_rss_mb_*``; and
    :func:`job_memory`'s keys on the ``ranks`` x ``rank_bytes`` job. ``workers`` 0 = one per core.
    The machine's cores and load average are recorded beside the figures."""
    from bench.report_vs_tlparse import synthetic_log, training_log

    n = workers or (os.cpu_count() or 1)
    out: dict[str, Any] = {"job_cores": os.cpu_count(), "job_workers_n": n, "job_loadavg": {"start": _load()}}
    with tempfile.TemporaryDirectory(prefix="dynascope-bench-job-") as tmp:
        log = training_log(tmp, size)
        big, small = os.path.join(tmp, "rank_big.log"), os.path.join(tmp, "rank_small.log")
        nbytes = synthetic_log(log, big, rank_bytes)
        small_bytes = synthetic_log(log, small, job_rank_bytes)
        many = job_dir(big, ranks, os.path.join(tmp, "many"))
        few = job_dir(small, job_ranks, os.path.join(tmp, "few"))
        html = os.path.join(tmp, "job.html")
        one = _child("one", big, 1)
        out["job_loadavg"]["one_rank"] = _load()
        rep1 = _child("report", many, 1, html)
        out["job_loadavg"]["report_1"] = _load()
        repn = _child("report", many, n, html)
        out["job_loadavg"]["report_n"] = _load()
        load1 = _child("job", few, 1)
        loadn = _child("job", few, n)
        out["job_loadavg"]["end"] = _load()
        out.update(job_memory(log, rank_bytes, ranks, tmp, n))
        out.update(page_paint(log, tmp, "" if size == "full" else log))
    mb = 2**20
    out.update({
        "job_rank_log_bytes": nbytes, "job_ranks": ranks, "job_total_bytes": nbytes * ranks,
        "one_rank_all_read_rss_mb": round(one["rss"] / mb, 1), "one_rank_all_read_seconds": round(one["wall"], 2),
        "job_report_rss_mb_1_worker": round(rep1["rss"] / mb, 1),
        "job_report_rss_mb_n_workers": round(repn["rss"] / mb, 1),
        "job_report_rss_over_one_rank": round(rep1["rss"] / one["rss"], 3),
        "job_report_rss_over_one_rank_n_workers": round(repn["rss"] / one["rss"], 3),
        "job_report_seconds_1_worker": round(rep1["wall"], 2), "job_report_seconds_n_workers": round(repn["wall"], 2),
        "job_report_cpu_seconds_1_worker": round(rep1["cpu"], 2),
        "job_report_speedup": round(rep1["wall"] / repn["wall"], 2),
        "job_load_ranks": job_ranks, "job_load_rank_bytes": small_bytes,
        "job_load_seconds_1_worker": round(load1["wall"], 2), "job_load_seconds_n_workers": round(loadn["wall"], 2),
        "job_load_speedup": round(load1["wall"] / loadn["wall"], 2),
        "job_load_rss_mb_1_worker": round(load1["rss"] / mb, 1), "job_load_rss_mb_n_workers": round(loadn["rss"] / mb, 1),
    })
    return out


if __name__ == "__main__":
    args = dict(a.split("=", 1) for a in sys.argv[1:])
    if "log" in args:  # only the memory of load_job over a given log: python -m bench.job_scale log=L rank_mb=100 ranks=10 [workers=2]
        with tempfile.TemporaryDirectory(prefix="dynascope-bench-job-") as tmp:
            print(json.dumps(job_memory(args["log"], int(float(args.get("rank_mb", 100)) * 2**20),
                                        int(args.get("ranks", 10)), tmp, int(args.get("workers", 1))), indent=1))
        sys.exit(0)
    if "rows" in args:  # 1 and N workers, load_job and report: python -m bench.job_scale rows=LOG rank_mb=100 ranks=10 workers=2 rounds=1
        with tempfile.TemporaryDirectory(prefix="dynascope-bench-job-") as tmp:
            print(json.dumps(worker_rows(args["rows"], int(float(args.get("rank_mb", 100)) * 2**20),
                                         int(args.get("ranks", 10)), tmp, int(args.get("workers", 2)),
                                         int(args.get("rounds", 1))), indent=1))
        sys.exit(0)
    if "page" in args:  # only the job page's first paint and views: python -m bench.job_scale page=LOG [other=LOG]
        with tempfile.TemporaryDirectory(prefix="dynascope-bench-job-") as tmp:
            print(json.dumps(page_paint(args["page"], tmp, args.get("other", "")), indent=1))
        sys.exit(0)
    print(json.dumps(run(size=args.get("size", "full"), rank_bytes=int(float(args.get("rank_mb", 100)) * 2**20),
                         ranks=int(args.get("ranks", 10)), job_ranks=int(args.get("job_ranks", 4)),
                         job_rank_bytes=int(float(args.get("job_rank_mb", 25)) * 2**20),
                         workers=int(args.get("workers", 0))), indent=1))
