"""Ranks read in worker processes (tracer/rank_pool.py): the same Job as the serial load on a real
torchrun job's logs and captures, a damaged rank a problem of its own, a dead worker an error line."""

from __future__ import annotations

import concurrent.futures as cf
import gc
import multiprocessing
import os
import shutil
import threading
import weakref

import pytest

import tracer
from tracer.job import _part_in_worker, rank_part
from tracer.model import Job
from tracer.rank_pool import _context, _result, compare_ranks, read_ranks, worker_count


@pytest.mark.parametrize("sub", ["trace", "."])
def test_workers_give_the_serial_job(ddp_job_dir, sub):
    """The real 2-rank torchrun job (TORCH_TRACE logs, and the captures the ranks saved): the Job read
    by two worker processes is the serial one, to the byte of its JSON."""
    path = str(ddp_job_dir / sub)
    serial = tracer.load_job(path, workers=1)
    lines: list[str] = []
    parallel = tracer.load_job(path, workers=2, progress=lines.append)
    assert sorted(parallel.ranks) == [0, 1] and parallel.divergence  # rank 1's graph break: findings to compare
    assert parallel.to_json() == serial.to_json()
    assert [line.split(" ", 2)[:2] for line in lines] == [["rank", "0"], ["rank", "1"]]
    assert all("2 workers" in line for line in lines)


def test_workers_answer_with_each_ranks_part_not_its_capture(ddp_job_dir):
    """load_job(workers=N): each worker compares its rank with the reference and sends a one-rank Job
    (summary, findings, collectives), the one rank_part gives in this process; no capture crosses
    (Note [Ranks compared one at a time] in tracer/job.py)."""
    files = {r: str(p) for r, p in enumerate(sorted((ddp_job_dir / "trace").glob("*rank_*.log")))}
    got = list(compare_ranks(files, "trace", _part_in_worker, Job.from_json, 2))
    assert [r for r, _, _ in got] == [0, 1] and all(err is None and isinstance(part, Job) for _, part, err in got)
    for r, part, _ in got:
        assert list(part.ranks) == [r] and "collectives" in part.meta
        assert part.to_json() == rank_part("trace", files[r], r, 0, None if r == 0 else files[0]).to_json()
    assert got[0][1].divergence == [] and got[1][1].divergence  # rank 1's graph break, found in its worker


@pytest.mark.parametrize("workers", [1, 2])
def test_a_rank_read_is_not_held_while_the_next_is_read(ddp_job_dir, workers):
    """What keeps ``dynascope report <dir>`` at one rank's memory: read_ranks holds no capture it handed out."""
    files = {r: str(p) for r, p in enumerate(sorted((ddp_job_dir / "trace").glob("*rank_*.log")))}
    before = None
    for _, cap, err in read_ranks(files, "trace", workers):
        gc.collect()
        assert err is None and (before is None or before() is None)
        before = weakref.ref(cap)
        del cap


def test_workers_started_beside_other_threads_give_the_serial_job(ddp_job_dir):
    """With another Python thread running (as in a notebook kernel) workers start from a forkserver,
    not a fork (Note [Ranks read in worker processes]): the same Job."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert _context().get_start_method() == "forkserver"
        parallel = tracer.load_job(str(ddp_job_dir / "trace"), workers=2)
    finally:
        stop.set()
        other.join()
    assert _context().get_start_method() in {"fork", "forkserver"}
    assert parallel.to_json() == tracer.load_job(str(ddp_job_dir / "trace"), workers=1).to_json()


def test_a_damaged_rank_log_is_that_ranks_problem(ddp_job_dir, tmp_path):
    """Rank 1's log cut in half and rank 0's replaced by binary data: each worker answers for its own
    rank, with the text the serial load gives, and nothing hangs."""
    trace = tmp_path / "trace"
    shutil.copytree(ddp_job_dir / "trace", trace)
    (log0,) = trace.glob("*rank_0*.log")
    (log1,) = trace.glob("*rank_1*.log")
    text = log1.read_bytes()
    log1.write_bytes(text[: len(text) // 2])
    log0.write_bytes(bytes(range(256)) * 64)
    serial = tracer.load_job(str(trace), workers=1)
    parallel = tracer.load_job(str(trace), workers=2)
    assert parallel.to_json() == serial.to_json()
    assert sorted(parallel.ranks) == [1]
    assert any(p.startswith(f"{log0.name}: rank 0 not loaded: ") and "not a TORCH_TRACE structured log" in p
               for p in parallel.problems)
    assert any("cut off" in p for p in parallel.ranks[1].problems)


def test_no_readable_rank_is_one_error_from_the_workers(tmp_path):
    for r in (0, 1):
        (tmp_path / f"rank{r}.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"no rank of .* could be read: rank0.json: rank 0 not loaded: not a dynascope"):
        tracer.load_job(str(tmp_path), workers=2)


def test_a_dead_worker_is_an_error_line_not_a_hang():
    """A worker process that exits under the pool (as one killed for memory does) breaks it: the rank
    waiting on it gets an error line."""
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("forkserver")) as pool:
        fut = pool.submit(os._exit, 9)
        cap, err = _result(fut)
    assert cap is None and err.startswith("its worker process died before it was read")


def test_a_worker_exception_names_its_type(tmp_path):
    """Only OSError/ValueError are a loader's defined errors; anything else still reaches the rank."""
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("forkserver")) as pool:
        fut = pool.submit(int, [])  # TypeError in the worker
        cap, err = _result(fut)
    assert cap is None and err.startswith("its worker failed: TypeError: int() argument must be")


def test_worker_count():
    cores = os.cpu_count() or 1
    assert worker_count(8) == min(8, cores) and worker_count(8, 3) == 3 and worker_count(2, 16) == 2
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="workers must be a positive int or None"):
            worker_count(4, bad)


def test_an_unknown_loader_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown loader 'pt2' \(must be one of \['capture', 'trace', 'trace-read-only'\]\)"):
        list(read_ranks({0: "x"}, "pt2"))
