"""Job: one multi-process run (one capture per ``torchrun`` rank) as per-rank summaries, how the ranks
differ, and each rank's capture opened on demand.

Invariant: a Job is plain data like a Capture, ``Job.from_json(job.to_json()) == job``; it holds a
summary per rank (:class:`RankSummary`: its frames' ids, statuses and sizes), never every rank's
capture: :meth:`Job.rank` opens one (reading its file again, at most one kept). Every Divergence
names ranks that are keys of ``ranks`` and, per rank, a compile id that is a frame of that rank's
capture or "" (the rank has no such frame — which may be the finding itself). See Note [A job holds
summaries].
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import msgspec

from tracer import display
from tracer.model.capture import Capture
from tracer.model.diff import FrameDiff
from tracer.model.frame import Frame

__all__ = ["DIVERGENCE_KINDS", "Divergence", "FrameSummary", "Job", "RankSummary"]

# Note [A job holds summaries]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A job's rank logs are tens to hundreds of MB each, and a rank fully read holds several times its
# bytes, so a Job of many ranks cannot keep every rank's capture. What the job view's grid, its
# findings and ``print(job)`` need of a rank is small: per frame its compile id, code, status and
# the size of its graph (:class:`FrameSummary`), and the findings themselves, which load_job makes
# while it reads each rank (tracer/job.py, Note [Ranks compared one at a time]). So ``Job.ranks``
# maps each rank to a :class:`RankSummary`, and ``job.rank(r)`` opens rank ``r``'s whole Capture
# when someone asks for it (the explorer, a finding's side-by-side view): from the file it was read
# from (``RankSummary.path``, read again by the same loader), keeping the last one opened, so a
# Job holds at most one rank's capture. A Job made from captures in memory (:meth:`Job.of`, a test,
# a notebook that captured each rank itself) keeps those captures and hands them out; they are not
# part of its JSON (a rank of a Job read back from JSON opens from its file, or is a ValueError
# saying why not).

# Note [Kinds of divergence]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# What can differ between the ranks of one job, each found by tracer/job.py (see Note [Closed sets
# of kinds] in tracer/model/kinds.py for why kinds are a closed set):
#   "frames"       the ranks compiled a different sequence of frames (count or compile ids): tlparse
#                  warns "Detected divergence in compile ids between ranks" for this; or one compile
#                  id is a different function on each rank (its code), which is then not compared further
#   "status"       the same frame compiled on one rank and restarted/broke/failed on another
#   "graph"        the same frame produced graphs of different structure (ops, edges, shapes, graph
#                  inputs, HOP bodies, AOT graphs and saved values; node names ignored), or a
#                  different number of split pieces
#   "guards"       the same frame is guarded by a different set of guards (object ids aside)
#   "recompiles"   different recompile reasons
#   "collectives"  different collective ops (c10d / _c10d_functional) in different order in the graphs
# "graph" and "guards" are read from ``tracer.diff`` of the two frames and carry it
# (Note [Comparing frames across ranks] in tracer/job_frames.py).
DIVERGENCE_KINDS = ("frames", "status", "graph", "guards", "recompiles", "collectives")


@dataclass
class Divergence:
    """One way the ranks of a job differ, on one frame (or on the whole capture for "frames")."""

    kind: str  # one of DIVERGENCE_KINDS
    ranks: list[int]  # the ranks compared, sorted
    compile_ids: dict[int, str]  # rank -> the compile id of the frame concerned on it ("" none / whole capture)
    message: str  # one line, for a person
    diff: Optional[FrameDiff] = None  # "graph"/"guards": tracer.diff of the lower rank's frame and the other's (ids in guard code masked)

    def __repr__(self) -> str:
        return f"Divergence({self.kind}, ranks {self.ranks}: {self.message[:60]})"

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


@dataclass
class FrameSummary:
    """What the job's grid shows of one frame of one rank (read when the rank was loaded)."""

    compile_id: str  # "0/0", as Frame.compile_id
    code: str  # "file.py:12 in fn", as Frame.code
    status: str  # as Frame.status
    status_reason: str = ""  # as Frame.status_reason
    nodes: int = 0  # nodes of its root graph (0: no graph)
    pieces: int = 0  # pieces of a split graph (DDPOptimizer buckets), as len(Frame.pieces)

    @classmethod
    def of(cls, f: Frame) -> FrameSummary:
        return cls(f.compile_id, f.code, f.status, f.status_reason, len(f.graph.nodes), len(f.pieces))


@dataclass
class RankSummary:
    """One rank of a job, without its capture: where it was read from and its frames in compile order.
    ``Job.rank(r)`` opens the capture (See Note [A job holds summaries])."""

    fn: str = ""  # Capture.fn of the rank's capture
    frames: list[FrameSummary] = field(default_factory=list)  # every compile attempt, in compile order
    problems: list[str] = field(default_factory=list)  # the capture's problems (Capture.all_problems)
    path: str = ""  # the file the rank was read from ("" for a capture given in memory, Job.of)
    loader: str = ""  # how that file is read: "capture" (Capture.load), "trace" (tracer.load_trace) or "trace-read-only"
    not_read: str = ""  # why the rank's file was not read whole (Capture.meta["not_read"]; "" it was)
    cut_in: Optional[list[str]] = None  # the log's text ends early: the compile ids it ends inside (Capture.meta["cut_in"])

    @classmethod
    def of(cls, cap: Capture, path: str = "", loader: str = "") -> RankSummary:
        """The summary of ``cap`` (reads each frame's root graph, to count its nodes)."""
        cut = cap.meta.get("cut_in")
        return cls(cap.fn, [FrameSummary.of(f) for f in cap.frames], cap.all_problems(), path, loader,
                   str(cap.meta.get("not_read") or ""), list(cut) if isinstance(cut, list) else None)

    def frame(self, compile_id: str) -> Optional[FrameSummary]:
        """The summary of frame ``compile_id``, or None."""
        return next((f for f in self.frames if f.compile_id == compile_id), None)

    def __repr__(self) -> str:
        from tracer._text import plural

        where = f", {os.path.basename(self.path)}" if self.path else ""
        problems = f", {plural(len(self.problems), 'problem')}" if self.problems else ""
        return f"Rank({self.fn or '?'}, {plural(len(self.frames), 'compile attempt')}{problems}{where})"


@dataclass
class Job:
    """One job: a summary per rank, what differs between ranks, and each rank's Capture opened on
    demand with :meth:`rank`. Evaluate it in a cell to open the job view."""

    ranks: dict[int, RankSummary] = field(default_factory=dict)  # rank -> its summary, by rank
    divergence: list[Divergence] = field(default_factory=list)  # what differs between ranks, found by load_job
    source: str = ""  # the directory it was loaded from
    checked: list[str] = field(default_factory=list)  # what load_job compared and could not compare, one line each
    problems: list[str] = field(default_factory=list)  # what the job record could not know exactly (files skipped, ...)
    meta: dict[str, Any] = field(default_factory=dict)  # escape hatch: world size, how it was loaded

    @classmethod
    def of(cls, captures: dict[int, Capture], **fields: Any) -> Job:
        """A Job of ``captures`` held in memory (rank -> capture), with ``fields`` (``divergence``,
        ``checked``, ...) as given; ``tracer.job.find_divergence(captures)`` finds the divergence.

        >>> job = Job.of({0: Capture(fn="f", frames=[Frame("0/0", "f.py:1 in f")])})
        >>> job.ranks[0], job.rank(0).fn
        (Rank(f, 1 compile attempt), 'f')
        """
        job = cls(ranks={r: RankSummary.of(captures[r]) for r in sorted(captures)}, **fields)
        job._held = dict(captures)
        return job

    def rank(self, rank: int) -> Capture:
        """Rank ``rank``'s whole Capture: one given to :meth:`of`, else the last one opened, else read
        again from its file (keeping it, and letting the one kept before go). See Note [A job holds
        summaries]. ``KeyError`` for a rank the job lacks, ``ValueError`` when it cannot be read."""
        if rank not in self.ranks:
            raise KeyError(f"no rank {rank} in the job (ranks: {sorted(self.ranks)})")
        held = self.__dict__.get("_held") or {}
        if rank in held:
            return held[rank]
        kept = self.__dict__.get("_kept")
        if kept is not None and kept[0] == rank:
            return kept[1]
        s = self.ranks[rank]
        if not s.path:
            raise ValueError(f"rank {rank}'s capture is not available: the job was made from captures in memory "
                             "(Job.of), and a job read back from JSON holds summaries only")
        self._kept = None  # the one kept before is let go before the next is read
        from tracer.rank_pool import load_rank  # the one place that maps a loader name to its reader

        try:
            cap = load_rank(s.loader, s.path)
        except OSError as e:
            raise ValueError(f"rank {rank}'s capture could not be read again from {s.path!r}: {e}") from None
        self._kept = (rank, cap)
        return cap

    def divergent(self, rank: int, compile_id: str) -> list[Divergence]:
        """The findings that concern frame ``compile_id`` of ``rank``."""
        return [d for d in self.divergence if d.compile_ids.get(rank) == compile_id and rank in d.ranks]

    def __repr__(self) -> str:
        from tracer._text import plural

        problems = f", {plural(len(self.problems), 'problem')}" if self.problems else ""
        return f"Job({plural(len(self.ranks), 'rank')}, {plural(len(self.divergence), 'divergence')}{problems})"

    def __str__(self) -> str:
        lines = [repr(self)]
        for r, summary in self.ranks.items():
            lines.append(f"  rank {r}: {summary!r}")
        lines += [f"  {d}" for d in self.divergence]
        lines += [f"  problem: {p}" for p in self.problems]
        return "\n".join(lines)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rendered by whatever registered for Job (viz: the job view); else the text summary."""
        return display.mimebundle(self, include=include, exclude=exclude)

    # -- JSON ----------------------------------------------------------------------------------
    def to_json(self, indent: int | None = None) -> str:
        """JSON text: ``{"schema": N, "job": {...}}``: the summaries and findings (no capture: each rank
        opens from its file, Note [A job holds summaries])."""
        from tracer.model.serialize import SCHEMA_VERSION, to_plain

        return json.dumps({"schema": SCHEMA_VERSION, "job": to_plain(self)}, indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Job:
        """Inverse of :meth:`to_json`; one ``ValueError`` naming the path of a bad field."""
        from tracer.model.serialize import SCHEMA_VERSION, _path

        try:
            doc = msgspec.json.decode(text, type=_JobFile, strict=True)
        except msgspec.ValidationError as e:
            raise ValueError(f"invalid job file: {_path(str(e))}") from None
        except msgspec.DecodeError as e:
            raise ValueError(f"not a dynascope job: {e}") from None
        if doc.schema != SCHEMA_VERSION:
            raise ValueError(f"unsupported job schema {doc.schema!r} (this dynascope reads {SCHEMA_VERSION})")
        return doc.job


@dataclass
class _JobFile:
    schema: int
    job: Job
