"""Ranks whose log is damaged or cut off, in a Job: the job names each, and what a cut hides is no finding.

Invariant: every rank whose summary says it was not read whole (``RankSummary.not_read``, from the
capture's ``meta["not_read"]`` that ``load_trace`` sets) is one line of ``Job.problems`` naming the rank and its file; a finding that a cut
explains (Note [Findings a cut log explains]) leaves ``Job.divergence`` for one line of
``Job.checked`` that says why, so it is never silently dropped nor shown as a divergence.
"""

from __future__ import annotations

from typing import Optional

from tracer.model import Divergence, Job

__all__ = ["cut_frames", "settle_cuts"]


def cut_frames(job: Job) -> dict[int, set[str]]:
    """Rank -> the compile ids of its frames that its log ends inside, for every rank whose log's text
    ends early (an empty set: it ended between compiles). See Note [Frames a cut log ends inside] in
    tracer/trace_log/__init__.py."""
    return {r: set(s.cut_in) for r, s in job.ranks.items() if s.cut_in is not None}


# Note [Findings a cut log explains]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A rank whose log is cut off recorded its compiles up to the cut: the frames it ends inside are
# incomplete (no AOT graphs, fewer guards, ...) and whatever it compiled after the cut is not in the
# file. Compared with a whole rank, both read as divergence although nothing says the ranks differed.
# So, for a cut rank r:
# - a "frames" finding is explained when r's compile ids are the first ones of the other rank's
#   (the other rank only went on past r's cut); one that differs before the cut stays a finding, and
#   says that the frames only on the other rank may be ones r compiled after its cut;
# - any other finding is explained when it names, on r, a frame the log ends inside, or no frame
#   ("") while every frame it names on the other ranks is one r has no whole record of.
# An explained finding becomes a line of ``Job.checked``: "not counted: ... (rank r's log is cut off ...)".
def settle_cuts(job: Job) -> None:
    """Name every damaged rank in ``job.problems`` and move the findings its cut explains to
    ``job.checked``. See Note [Findings a cut log explains]."""
    cuts = cut_frames(job)
    for r, summary in job.ranks.items():
        said = summary.not_read
        if not said:
            continue
        line = f"rank {r}: {said}"
        if r in cuts:
            inside = sorted(cuts[r])
            line += ("; its log ends inside " + (f"frame(s) {', '.join(inside)}" if inside else "no compile")
                     + f" and what rank {r} compiled after the cut is unknown: findings the cut explains are not counted")
        job.problems.append(line)
    if not cuts:
        return
    kept = []
    for d in job.divergence:
        why = _explained(job, d, cuts)
        if why is None:
            kept.append(d)
        else:
            job.checked.append(f"not counted: [{d.kind}] {d.message} ({why})")
    job.divergence = kept


def _explained(job: Job, d: Divergence, cuts: dict[int, set[str]]) -> Optional[str]:
    """Why rank cuts explain finding ``d``, or None if they do not (a finding that stands); a "frames"
    finding that stands gets the cut said in its message."""
    for r in (r for r in d.ranks if r in cuts):
        whole = {f.compile_id for f in job.ranks[r].frames} - cuts[r]
        if d.kind == "frames":
            ids = [f.compile_id for f in job.ranks[r].frames]
            for o in (o for o in d.ranks if o != r):
                theirs = [f.compile_id for f in job.ranks[o].frames]
                if theirs[:len(ids)] == ids:
                    return f"rank {r}'s log is cut off after its {len(ids)} compile attempts; rank {o} went on"
                d.message += (f" (rank {r}'s log is cut off: frames only on rank {o} may be ones rank {r} compiled "
                              f"after the cut)")
            continue
        cid = d.compile_ids.get(r, "")
        if cid in cuts[r]:
            return f"rank {r}'s log ends inside frame {cid}"
        if cid == "" and not any(c in whole for o, c in d.compile_ids.items() if o != r and c):
            return f"rank {r}'s log is cut off before it"
    return None
