"""A real 8-rank ``torchrun`` job (gloo, CPU) of a small transformer under torch.compile, DDP and FSDP2:
what ``tracer.load_job`` finds on its TORCH_TRACE directory beside ``tlparse --all-ranks-html``'s warnings.

Invariant: both tools read the same directory in the same run: the job of tests/ranks/transformer_job.py
(rank 5 breaks the graph) with rank 2's log cut in the middle of a line afterwards, made by the tests'
own ``run_transformer_job`` (tests/torchrun_job.py). tlparse's warnings are the ``Warning:`` paragraphs
of its multi-rank ``index.html`` and the non-``ok`` counters of its per-rank ``Stats`` lines (stderr);
ours are ``Job.divergence``, ``Job.problems`` and the findings a cut explains (``Job.checked``, "not
counted"). Every time is one run, wall clock, on whatever else the machine is doing (load average printed).

``python -m bench.job_real [--tlparse PATH] [--wraps ddp,fsdp2] [--out DIR]``: one section per wrap, then one JSON line;
``--page-of <out>/<wrap>/trace``: only the job page of a job run before (one JSON line).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
from typing import Any, Optional

__all__ = ["compare", "run", "tlparse_warnings"]

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def tlparse_warnings(index_html: str) -> list[str]:
    """The text of every ``<strong>Warning:</strong>`` paragraph (and the "not available" notes) of a
    ``tlparse --all-ranks-html`` index page, tags removed."""
    out = []
    for m in re.finditer(r"<p>\s*<strong>(Warning:|Runtime analysis not available:)</strong>(.*?)</p>", index_html, re.S):
        text = html.unescape(re.sub(r"<[^>]+>", " ", m.group(1) + m.group(2)))
        out.append(re.sub(r"\s+", " ", text).strip())
    return out


def _tlparse_stats(stderr: str) -> dict[int, str]:
    """Rank -> tlparse's ``Stats { ... }`` line for it (stderr, after "Detected rank: Some(N)"), where it
    counts something besides ok/other_rank, with the first line it printed about a failure (cut to 160 characters)."""
    out: dict[int, str] = {}
    rank: Optional[int] = None
    said = ""
    for line in stderr.splitlines():
        m = re.match(r"Detected rank: Some\((\d+)\)", line)
        if m:
            rank, said = int(m.group(1)), ""
        elif line.startswith("Stats {") and rank is not None:
            counts = dict(re.findall(r"(\w+): (\d+)", line))
            if set(counts) - {"ok", "other_rank"}:
                out[rank] = line.strip() + (f" ({said})" if said else "")
        elif rank is not None and not said and line.strip():
            said = line.strip()[:160] + ("..." if len(line.strip()) > 160 else "")
    return out


def compare(trace: str, tlparse: str, out: str) -> dict[str, Any]:
    """tlparse --all-ranks-html and tracer.load_job on the same TORCH_TRACE directory, each timed once."""
    import tracer

    t0 = time.perf_counter()
    done = subprocess.run([tlparse, trace, "--all-ranks-html", "-o", out, "--overwrite", "--no-browser"],
                          capture_output=True, text=True, timeout=600)
    tl_wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"tlparse failed ({done.returncode}): {done.stderr[-2000:]}")
    index = pathlib.Path(out, "index.html").read_text(encoding="utf-8")
    t0 = time.perf_counter()
    job = tracer.load_job(trace)
    ours_wall = time.perf_counter() - t0
    return {
        "tlparse_seconds": round(tl_wall, 3),
        "tlparse_warnings": tlparse_warnings(index),
        "tlparse_rank_stats": _tlparse_stats(done.stderr),
        "load_job_seconds": round(ours_wall, 3),
        "divergence": [str(d) for d in job.divergence],
        "problems": list(job.problems),
        "not_counted": [line for line in job.checked if line.startswith("not counted: ")],
    }


def _page(job_dir: str, out: str, runs: int = 3) -> dict[str, Any]:
    """The static job page (viz.export_job_html): bytes, build time (load_job included), and in Chromium
    its first contentful paint, load event and each finding's view opened (bench/job_scale.py ``page_times``)."""
    import tracer
    import viz
    from bench.job_scale import page_times

    t0, c0 = time.perf_counter(), time.process_time()
    path = viz.export_job_html(tracer.load_job(job_dir), out)
    build, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"job_page_build_seconds": round(build, 3), "job_page_build_cpu_seconds": round(cpu, 3),
            **page_times(str(path), runs)}


def run(wraps: tuple[str, ...] = ("ddp", "fsdp2"), tlparse: Optional[str] = None, out: Optional[str] = None,
        python: str = sys.executable, page: bool = True) -> dict[str, Any]:
    """Per wrap: the torchrun job's wall time, then :func:`compare` (and the job page's figures) on its directory."""
    sys.path.insert(0, str(ROOT / "tests"))
    from torchrun_job import CUT_RANK, ODD_RANK, RANKS, run_transformer_job

    if tlparse is None:
        from bench.report_vs_tlparse import _tlparse

        tlparse = _tlparse()
    base = pathlib.Path(out or tempfile.mkdtemp(prefix="job_real_"))
    result: dict[str, Any] = {"ranks": RANKS, "odd_rank": ODD_RANK, "cut_rank": CUT_RANK, "loadavg_start": _loadavg()}
    for wrap in wraps:
        where = base / wrap
        where.mkdir(parents=True, exist_ok=True)
        job = run_transformer_job(where, wrap, python=python)
        row = {"job_seconds": round(job.seconds, 1), "loadavg_after_job": _loadavg(),
               "cut": f"{job.cut.name}: {job.cut.stat().st_size} of {job.uncut.stat().st_size} bytes"}
        row.update(compare(str(job.trace), tlparse, str(where / "tl_out")))
        if page:
            row.update(_page(str(job.trace), str(where / "job.html")))
        result[wrap] = row
        _print(wrap, row)
    result["loadavg_end"] = _loadavg()
    return result


def _print(wrap: str, row: dict[str, Any]) -> None:
    print(f"== {wrap}: torchrun job {row['job_seconds']} s (load {row['loadavg_after_job']}); cut {row['cut']}", flush=True)
    print(f"  tlparse --all-ranks-html {row['tlparse_seconds']} s:", flush=True)
    for w in row["tlparse_warnings"]:
        print(f"    {w}")
    for r, s in sorted(row["tlparse_rank_stats"].items()):
        print(f"    (its stderr) rank {r}: {s}")
    print(f"  tracer.load_job {row['load_job_seconds']} s:")
    for line in row["problems"]:
        print(f"    problem: {line}")
    for line in row["divergence"]:
        print(f"    {line}")
    for line in row["not_counted"]:
        print(f"    {line}")
    if "job_page_bytes" in row:
        print(f"  job page: {row['job_page_bytes']} bytes, built in {row['job_page_build_seconds']} s "
              f"(CPU {row['job_page_build_cpu_seconds']} s), FCP {row['job_page_first_paint_runs_ms']} ms, "
              f"load event {row['job_page_load_runs_ms']} ms, each finding's view {row['job_page_view_runs_ms']} ms",
              flush=True)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.job_real", description=__doc__.split("\n")[0])
    p.add_argument("--tlparse", help="the tlparse executable (default: on PATH or beside this python)")
    p.add_argument("--wraps", default="ddp,fsdp2", help="comma-separated: ddp, fsdp2")
    p.add_argument("--out", help="directory for the jobs and tlparse's output (default: a new temporary one)")
    p.add_argument("--python", default=sys.executable, help="the python whose torch runs the job")
    p.add_argument("--no-page", action="store_true", help="skip the job page in Chromium")
    p.add_argument("--page-of", metavar="TRACE_DIR", help="only the job page of this job's TORCH_TRACE directory "
                   "(a run's <out>/<wrap>/trace): no torchrun, no tlparse")
    a = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if a.page_of:
        got = {"loadavg_start": _loadavg(), **_page(a.page_of, str(pathlib.Path(a.page_of).parent / "job.html")),
               "loadavg_end": _loadavg()}
        print(json.dumps(got))
        return 0
    got = run(tuple(a.wraps.split(",")), a.tlparse, a.out, a.python, page=not a.no_page)
    print(json.dumps(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
