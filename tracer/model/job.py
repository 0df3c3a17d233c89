"""Job: the captures of one multi-process run (one per ``torchrun`` rank) and how they differ.

Invariant: a Job is plain data like a Capture, ``Job.from_json(job.to_json()) == job``; every
Divergence names ranks that are keys of ``ranks`` and, per rank, a compile id that is a frame of
that rank's capture or "" (the rank has no such frame — which may be the finding itself).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import msgspec

from tracer import display
from tracer.model.capture import Capture
from tracer.model.diff import FrameDiff

__all__ = ["DIVERGENCE_KINDS", "Divergence", "Job"]

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
# (Note [Comparing frames across ranks] in tracer/job.py).
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
class Job:
    """The per-rank captures of one job. Evaluate it in a cell to open the job view."""

    ranks: dict[int, Capture] = field(default_factory=dict)  # rank -> its capture, by rank
    divergence: list[Divergence] = field(default_factory=list)  # what differs between ranks, found by load_job
    source: str = ""  # the directory it was loaded from
    checked: list[str] = field(default_factory=list)  # what load_job compared and could not compare, one line each
    problems: list[str] = field(default_factory=list)  # what the job record could not know exactly (files skipped, ...)
    meta: dict[str, Any] = field(default_factory=dict)  # escape hatch: world size, how it was loaded

    def divergent(self, rank: int, compile_id: str) -> list[Divergence]:
        """The findings that concern frame ``compile_id`` of ``rank``."""
        return [d for d in self.divergence if d.compile_ids.get(rank) == compile_id and rank in d.ranks]

    def __repr__(self) -> str:
        from tracer._text import plural

        problems = f", {plural(len(self.problems), 'problem')}" if self.problems else ""
        return f"Job({plural(len(self.ranks), 'rank')}, {plural(len(self.divergence), 'divergence')}{problems})"

    def __str__(self) -> str:
        lines = [repr(self)]
        for r, cap in self.ranks.items():
            lines.append(f"  rank {r}: {cap!r}")
        lines += [f"  {d}" for d in self.divergence]
        lines += [f"  problem: {p}" for p in self.problems]
        return "\n".join(lines)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rendered by whatever registered for Job (viz: the job view); else the text summary."""
        return display.mimebundle(self, include=include, exclude=exclude)

    # -- JSON ----------------------------------------------------------------------------------
    def to_json(self, indent: int | None = None) -> str:
        """JSON text: ``{"schema": N, "job": {...}}``, each rank's capture as Capture.to_json writes it."""
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
