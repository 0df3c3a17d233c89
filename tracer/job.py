"""load_job(dir): the per-rank records of one ``torchrun`` job as a Job, and what differs between ranks.

Invariant: a finding is made only from what both ranks recorded — a frame one rank has and another
lacks is a "frames" finding, never compared field by field; what could not be compared (a rank
missing, no collectives in any graph) is a line of ``Job.checked`` or ``Job.problems``, never
silently taken for equality. Divergences name ranks and per-rank compile ids
(Note [Kinds of divergence] in tracer/model/job.py). Two ranks' frames are compared by
``tracer.diff`` itself, so a finding and the frame diff shown for it never disagree
(Note [Comparing frames across ranks] in tracer/job_frames.py).
"""

from __future__ import annotations

import os
import re
from typing import Callable, Optional

from tracer._text import headline, plural
from tracer.job_collectives import collectives, compared_collectives, frame_collectives
from tracer.job_cut import settle_cuts
from tracer.job_frames import _graph_parts, _mask, compare_frames, rank_diff  # noqa: F401 (_graph_parts: tests)
from tracer.model import Capture, Divergence, Frame, FrameSummary, Job, RankSummary
from tracer.rank_pool import compare_ranks, load_rank, read_ranks, worker_count

__all__ = ["collectives", "compare_frames", "find_divergence", "load_job", "rank_diff", "rank_part"]

_RANK = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)


def load_job(path: str, *, workers: Optional[int] = 1, progress: Optional[Callable[[str], None]] = None,
             read_only: bool = False) -> Job:
    """The Job in directory ``path``: a summary per rank, and ``job.divergence``; ``job.rank(r)``
    opens rank ``r``'s capture from its file when asked (Note [A job holds summaries] in
    tracer/model/job.py).

    ``path`` holds either per-rank capture JSON files (``cap.save(f"{dir}/rank{rank}.json")`` in
    each rank) or a ``TORCH_TRACE`` directory (torch writes ``dedicated_log_torch_trace_rank_<N>_*.log``
    per rank). The rank is the number after "rank" in the file name. A JSON file that is not a
    capture, a damaged rank file and a gap in the ranks are each a line of ``job.problems`` (the
    other ranks still load); a directory with no rank file at all, or two files for one rank, is a
    ``ValueError``. Ranks are read here, one after the other and lazily (``workers=1``, the
    default), each compared with the lowest rank frame by frame and let go (Note [Ranks compared one
    at a time]; a small lowest rank is kept and read once: Note [A small reference read once]), or in ``workers`` processes (``None``: one per core, at most one per rank), each
    comparing its rank the same way and answering with its summary and findings as plain data (Note
    [Ranks read in worker processes] in tracer/rank_pool.py); the Job is the same either way, and so
    is the memory of this process. On a busy 2-core machine the processes pay little
    (bench/RESULTS.md, job_scale), so they are opt-in. ``progress(line)`` is called after each rank is read.
    ``read_only=True`` reads TORCH_TRACE logs as ``load_trace(..., read_only=True)`` does, here and in
    ``job.rank(r)`` (Note [Read-only graphs] in tracer/trace_log/deferred.py): the same Job, faster.
    """
    if not os.path.isdir(path):
        raise ValueError(f"load_job: {path!r} is not a directory (expected per-rank capture JSON files or a TORCH_TRACE directory)")
    names = sorted(os.listdir(path))
    jsons = [n for n in names if n.endswith(".json")]
    from tracer.trace_log.source import LOG_SUFFIXES  # the one place that says what a log file is

    logs = [n for n in names if n.endswith(LOG_SUFFIXES)]
    job = Job(source=path)
    notes: dict[str, str] = {}  # file name -> its problem, said in file-name order
    if jsons:
        job.meta["loaded_from"] = "capture json"
        files, kind = rank_files(notes, path, jsons), "capture"
    elif logs:
        job.meta["loaded_from"] = "TORCH_TRACE"
        files, kind = rank_files(notes, path, logs), "trace-read-only" if read_only else "trace"
    else:
        raise ValueError(f"load_job: no rank files in {path!r} (expected rank<N>.json capture files or "
                         f"TORCH_TRACE logs *rank_<N>*.log or .log.gz; found {names[:10]})")
    cmp = _Streamed()
    if worker_count(len(files), workers) == 1:  # read here, lazily: the reference is read again per rank ...
        kept: Optional[Capture] = None  # ... unless it is small: See Note [A small reference read once]
        for rank, cap, error in read_ranks(files, kind, 1, progress):
            if cap is None:  # a damaged rank must not hide the others
                notes[os.path.basename(files[rank])] = f"{os.path.basename(files[rank])}: rank {rank} not loaded: {error}"
                continue
            if cmp.ref is None and _kept_whole(kind, files[rank]):
                job.ranks[rank] = cmp.add(rank, cap, None, path=files[rank], loader=kind, keep=True)
                kept = cap
                continue
            ref = None if cmp.ref is None else (lambda k=kept: k) if kept is not None else (lambda: load_rank(kind, files[cmp.ref]))
            job.ranks[rank] = cmp.add(rank, cap, ref, path=files[rank], loader=kind, ref_kept=kept is not None)
            del cap  # See Note [Ranks compared one at a time]
        del kept
    else:  # each worker compares its rank with the reference: See Note [Ranks compared one at a time]
        for rank, part, error in compare_ranks(files, kind, _part_in_worker, Job.from_json, workers, progress):
            if part is None:
                notes[os.path.basename(files[rank])] = f"{os.path.basename(files[rank])}: rank {rank} not loaded: {error}"
                continue
            job.ranks[rank] = cmp.merge(rank, part)
    job.problems += [notes[n] for n in sorted(notes)]
    if not job.ranks:
        raise ValueError(f"load_job: no rank of {path!r} could be read: " + "; ".join(job.problems))
    present = sorted(job.ranks)
    missing = [r for r in range(max(files) + 1) if r not in job.ranks]
    if missing:
        job.problems.append(f"rank(s) {missing} missing: no readable file for them (ranks read: {present})")
    job.ranks = {r: job.ranks[r] for r in present}
    job.divergence, job.checked = cmp.result()
    settle_cuts(job)  # a damaged rank is a problem; what a cut log hides is no finding (tracer/job_cut.py)
    return job


# Note [Ranks compared one at a time]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A job's ranks together may be many GB fully read; load_job needs the memory of about one. Each rank
# is compared with the reference rank (the lowest that could be read) as it is read, by the very code
# ``find_divergence`` runs on captures in memory (``_compare_captures``), so the findings are the
# same. Read here (one worker), both captures are lazy (graphs parse on first read): the pair is
# walked frame by frame, and once a frame pair is compared, its summary and collectives taken, both
# frames' graphs and guards are emptied (``Frame.let_go``); the reference is read again, lazily, for each
# rank, since its emptied frames cannot be read twice (a small reference is kept instead: Note [A small
# reference read once]). So memory holds two lazily loaded logs and one frame pair parsed, plus the
# summaries and findings. With worker processes each worker does
# exactly that for its rank (:func:`rank_part`: its rank and the reference read lazily, compared
# frame by frame, let go) and answers with what its rank adds to the job as plain data, a Job of that
# rank alone (its summary, its findings with the reference, its checked lines and its collectives),
# as JSON text: the caller's process then holds the summaries and findings only, and each worker what
# the in-process load holds. (Before, a worker sent its rank fully read and the caller compared: the
# caller held the reference and one more rank fully read, five times one rank's memory on a 1 GB job.)
# The reference is the lowest rank that can be read; a worker compares with the lowest rank file, and
# if that rank cannot be read the ranks after it are compared again with the next (rank_pool.compare_ranks).


# Note [A small reference read once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Read here, the reference rank was read again for every other rank (Note [Ranks compared one at a
# time]): on the real 8-rank job that was 7 of the 15 log reads, an eighth of load_job's CPU
# (bench/RESULTS.md, 2026-11-27 04:20 UTC). The re-reads buy memory: a lazily read log holds about half its
# bytes, the same log fully read four to six times them (read-only and editable, measured on rank 0 of that
# job). So the reference is kept, fully read, and read once, only while that costs little:
# a capture JSON file (``Capture.load`` reads it whole anyway, so the re-read held as much) or a
# TORCH_TRACE log of at most ``_KEEP_REFERENCE`` bytes, not compressed (a ``.gz``'s size says little
# of its text). Then memory holds the reference fully read (at most about 6 x 4 MiB) beside one lazily
# read rank, instead of two lazily read logs; a bigger reference is read again per rank as before, so
# a job of big logs keeps the memory of Note [Ranks compared one at a time]. The findings are the same
# either way: comparing reads both frames and changes neither (``rank_diff`` diffs masked copies), so
# the reference kept is the reference read again; tests/test_job.py checks the JSON of both ways.
_KEEP_REFERENCE = 4 * 2**20


def _kept_whole(kind: str, path: str) -> bool:
    """Whether the reference rank's file ``path`` is kept fully read and read once: Note [A small reference read once]."""
    if kind == "capture":
        return True
    return not path.endswith(".gz") and os.path.getsize(path) <= _KEEP_REFERENCE


class _Streamed:
    """find_divergence's result, built one rank at a time (Note [Ranks compared one at a time])."""

    def __init__(self) -> None:
        self.ref: Optional[int] = None
        self.found: list[Divergence] = []
        self.notes: list[str] = []
        self.seqs: dict[int, list[tuple[str, str]]] = {}

    def add(self, rank: int, cap: Capture, ref: Optional[Callable[[], Capture]], *, path: str = "", loader: str = "",
            keep: bool = False, ref_kept: bool = False) -> RankSummary:
        """Compare ``cap`` with the reference (``ref()`` opens it; None: ``cap`` is the reference),
        let its frames go unless ``keep`` (the reference's too, unless ``ref_kept``: the same capture is
        handed out for the next rank), and return its summary."""
        frames: dict[int, FrameSummary] = {}
        seq: dict[int, list[tuple[str, str]]] = {}
        problems: dict[int, list[str]] = {}
        at = {id(f): i for i, f in enumerate(cap.frames)}

        def taken(f: Frame) -> None:  # read before the frame is let go: its graphs' parse problems included
            frames[at[id(f)]] = FrameSummary.of(f)
            seq[at[id(f)]] = frame_collectives(f)
            problems[at[id(f)]] = [f"frame {f.compile_id}: {p}" for p in f.problems]

        if ref is None:
            self.ref = rank
            for f in cap.frames:
                taken(f)
                if not keep:
                    f.let_go()
        else:
            a = ref()
            unique = all(len({f.compile_id for f in c.frames}) == len(c.frames) for c in (a, cap))
            release = not keep and unique  # a repeated compile id may be compared twice: nothing let go then
            more, notes = _compare_captures(self.ref, a, rank, cap, _released(taken, ref_kept) if release else None, taken)
            self.found += more
            self.notes += notes
            del a
        self.seqs[rank] = [c for i in sorted(seq) for c in seq[i]]
        cut = cap.meta.get("cut_in")
        return RankSummary(cap.fn, [frames[i] for i in sorted(frames)], [*cap.problems, *(p for i in sorted(problems) for p in problems[i])],
                           path, loader, str(cap.meta.get("not_read") or ""), list(cut) if isinstance(cut, list) else None)

    def merge(self, rank: int, part: Job) -> RankSummary:
        """Take what :func:`rank_part` found for ``rank`` (in rank order; the first is the reference)."""
        if self.ref is None:
            self.ref = rank
        self.found += part.divergence
        self.notes += part.checked
        self.seqs[rank] = [(c, t) for c, t in part.meta["collectives"]]
        return part.ranks[rank]

    def result(self) -> tuple[list[Divergence], list[str]]:
        if len(self.seqs) < 2:
            return [], [f"only {len(self.seqs)} rank: nothing to compare"]
        checked = [f"frames, status, graphs, guards and recompiles of every rank compared with rank {self.ref}",
                   *self.notes]
        found_c, line = compared_collectives(self.seqs)
        return self.found + found_c, [*checked, line]


def rank_part(kind: str, path: str, rank: int, ref_rank: int, ref_path: Optional[str]) -> Job:
    """What rank ``rank`` (its file ``path``, read by loader ``kind``) adds to a job, compared with the
    reference rank ``ref_rank`` in ``ref_path`` (None: ``rank`` is the reference) as load_job does in
    process: a Job of that rank alone, its findings with the reference, its checked lines and, in
    ``meta["collectives"]``, its collectives. What a worker process answers (plain data, JSON): See
    Note [Ranks compared one at a time]. ``ValueError``/``OSError`` when either file cannot be read."""
    cmp = _Streamed()
    cmp.ref = None if ref_path is None else ref_rank
    summary = cmp.add(rank, load_rank(kind, path), None if ref_path is None else (lambda: load_rank(kind, ref_path)),
                      path=path, loader=kind)
    return Job(ranks={rank: summary}, divergence=cmp.found, checked=cmp.notes,
               meta={"collectives": [list(c) for c in cmp.seqs[rank]]})


def _part_in_worker(kind: str, path: str, rank: int, ref_rank: int, ref_path: Optional[str]) -> tuple[bool, str]:
    """In a worker process: (True, :func:`rank_part`'s JSON text) or (False, the loader's error line). Strings only."""
    try:
        return True, rank_part(kind, path, rank, ref_rank, ref_path).to_json()
    except (OSError, ValueError) as e:  # the rank's defined error; anything else reaches the caller's future
        return False, str(e)


def _released(taken: Callable[[Frame], None], ref_kept: bool = False) -> Callable[[Optional[Frame], Optional[Frame]], None]:
    def done(a: Optional[Frame], b: Optional[Frame]) -> None:
        if b is not None:
            taken(b)
            b.let_go()
        if a is not None and not ref_kept:
            a.let_go()

    return done


def rank_files(problems: dict[str, str], path: str, names: list[str]) -> dict[int, str]:
    """Rank -> path of every file in ``names`` (in directory ``path``) whose name has a rank number;
    a name without one gets its line in ``problems`` (name -> line), two files for one rank are a ``ValueError``."""
    files: dict[int, str] = {}
    for name in names:
        m = _RANK.search(name)
        if m is None:
            problems[name] = f"{name}: skipped, no rank number in the file name"
            continue
        rank = int(m.group(1))
        if rank in files:
            raise ValueError(f"load_job: two files for rank {rank} in {path!r}: "
                             f"{os.path.basename(files[rank])!r} and {name!r}")
        files[rank] = os.path.join(path, name)
    return files


# -- divergence ---------------------------------------------------------------------------------
def find_divergence(ranks: dict[int, Capture]) -> tuple[list[Divergence], list[str]]:
    """What differs between ``ranks`` (each compared with the lowest rank), and what was checked.
    The captures are read, not changed (load_job makes the same findings one rank at a time)."""
    cmp = _Streamed()
    for r in sorted(ranks):
        cmp.add(r, ranks[r], None if cmp.ref is None else (lambda: ranks[cmp.ref]), keep=True)
    return cmp.result()


def _compare_captures(ra: int, a: Capture, rb: int, b: Capture,
                      done: Optional[Callable[[Optional[Frame], Optional[Frame]], None]] = None,
                      seen: Optional[Callable[[Frame], None]] = None) -> tuple[list[Divergence], list[str]]:
    """The findings between two ranks, and what could not be compared (lines for ``Job.checked``);
    ``done(frame of a, frame of b or None)`` after each frame of ``a`` is compared, then
    ``done(None, frame)`` for each frame only ``b`` has; else ``seen(frame)`` for each frame of ``b``."""
    out: list[Divergence] = []
    notes: list[str] = []
    rec_a, rec_b = _recompiles(a), _recompiles(b)
    ids_a, ids_b = [f.compile_id for f in a.frames], [f.compile_id for f in b.frames]
    if ids_a != ids_b:
        only_a = [c for c in ids_a if c not in ids_b]
        only_b = [c for c in ids_b if c not in ids_a]
        first_a, first_b = (only_a or [""])[0], (only_b or [""])[0]
        out.append(Divergence("frames", [ra, rb], {ra: first_a, rb: first_b},
                              f"rank {ra} made {plural(len(ids_a), 'compile attempt')}, rank {rb} {len(ids_b)}"
                              + (f"; only on rank {ra}: {', '.join(only_a)}" if only_a else "")
                              + (f"; only on rank {rb}: {', '.join(only_b)}" if only_b else "")))
    fb = {f.compile_id: f for f in b.frames}
    for fa in a.frames:
        other = fb.get(fa.compile_id)
        if other is not None:
            more, problems = _compare_frame(ra, fa, rb, other)
            out += more
            notes += problems
        if done is not None:
            done(fa, other)
    if done is not None:
        in_a = set(ids_a)
        for f in b.frames:  # the frames only b has, in b's order
            if f.compile_id not in in_a:
                done(None, f)
    elif seen is not None:
        for f in b.frames:
            seen(f)
    for cid in sorted(set(rec_a) | set(rec_b)):
        if rec_a.get(cid) != rec_b.get(cid):
            ids = {ra: cid if cid in rec_a else "", rb: cid if cid in rec_b else ""}
            out.append(Divergence("recompiles", [ra, rb], ids,
                                  f"recompile {cid}: rank {ra}: {_first(rec_a.get(cid))}; rank {rb}: {_first(rec_b.get(cid))}"))
    return out, notes


def _compare_frame(ra: int, fa: Frame, rb: int, other: Frame) -> tuple[list[Divergence], list[str]]:
    """The findings on one frame both ranks have, and its diff's problems."""
    ids = {ra: fa.compile_id, rb: other.compile_id}
    where = f"frame {fa.compile_id} ({fa.code})"
    if fa.code != other.code:  # one compile id, two functions (the ranks went different ways before): not comparable
        return [Divergence("frames", [ra, rb], ids, f"frame {fa.compile_id} is {fa.code} on rank {ra}, "
                                                    f"{other.code} on rank {rb}: different code, not compared")], []
    if fa.status != other.status:
        return [Divergence("status", [ra, rb], ids, f"{where}: {_status(fa)} on rank {ra}, {_status(other)} on rank {rb}")], []
    lines, d = compare_frames(fa, other)
    out = [Divergence(line.partition(" ")[0], [ra, rb], ids, f"{where}: {line} (rank {ra} vs rank {rb})",
                      diff=d if d else None) for line in lines]
    return out, [f"rank {ra} vs rank {rb}, {where}: {p}" for p in d.problems]


def _status(f: Frame) -> str:
    return f.status if not f.status_reason else f"{f.status} ({headline(f.status_reason)})"


def _first(reasons: Optional[list[str]]) -> str:
    return "no recompile" if not reasons else reasons[0][:120]


def _recompiles(cap: Capture) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in cap.recompiles:
        out.setdefault(r.compile_id, []).append(_mask(r.reason))
    return out
