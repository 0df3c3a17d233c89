"""Damaged TORCH_TRACE logs: only defined outcomes (a ValueError naming what was expected, or a Capture
that validates, renders to HTML and lists every skipped line), and nothing readable is lost.

A seeded loop over 600 damaged copies of a real log (tests/trace_log_child.py run with TORCH_TRACE):
random truncation, byte flips, shuffled lines, inserted garbage lines, each also gzip-compressed. A
truncated log keeps exactly the records before the cut (a whole shorter log's frames) and says it was cut.
"""

from __future__ import annotations

import glob
import gzip
import random

import pytest
from test_trace_log_damaged import _whole_part

import tracer
from tracer.trace_log import LOG_LIMITS, load_trace
from viz.html import capture_html

N_DOCS = 600


@pytest.fixture(scope="module")
def real_log(child_trace_dir) -> bytes:
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    with open(path, "rb") as fh:
        return fh.read()


def _summary(cap: tracer.Capture) -> list:
    return [(f.compile_id, f.status, [n.name for n in f.graph.nodes], sorted(f.subgraphs)) for f in cap.frames]


def _damage(data: bytes, rnd: random.Random) -> tuple[str, bytes, list[int]]:
    """(how, damaged bytes, 1-based numbers of inserted garbage lines)."""
    how = rnd.choice(["truncate", "flip", "shuffle", "garbage"])
    if how == "truncate":
        return how, data[: rnd.randrange(len(data))], []
    if how == "flip":
        b = bytearray(data)
        for _ in range(rnd.randint(1, 20)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        return how, bytes(b), []
    lines = data.split(b"\n")
    if how == "shuffle":
        i = rnd.randrange(len(lines))
        j = min(len(lines), i + rnd.randint(2, 50))
        part = lines[i:j]
        rnd.shuffle(part)
        lines[i:j] = part
        return how, b"\n".join(lines), []
    inserted = []
    for _ in range(rnd.randint(1, 5)):
        # between records only, so every original record stays whole
        starts = [k for k, ln in enumerate(lines) if ln and not ln.startswith(b"\t")]
        k = rnd.choice(starts)
        garbage = rnd.choice([b"garbage", b'V1123 11:43:51.297000 1 x.py:1] {"broken', b'{"str": 1}', bytes(rnd.randrange(256) for _ in range(30)).replace(b"\n", b"").replace(b"\t", b"") or b"x"])
        lines.insert(k, garbage)
        inserted = [n + (n >= k + 1) for n in inserted] + [k + 1]
    return how, b"\n".join(lines), inserted


@pytest.mark.slow
def test_damaged_logs_have_only_defined_outcomes(real_log, tmp_path):
    original = load_trace(_write(tmp_path / "orig.log", real_log))
    assert _summary(original) and original.problems == [] and len(original.limits) == len(LOG_LIMITS)
    rnd = random.Random(12)
    outcomes = {"capture": 0, "not a trace": 0}
    for i in range(N_DOCS):
        how, data, inserted = _damage(real_log, rnd)
        plain = data
        if i % 2:
            data, path = gzip.compress(data), tmp_path / f"d{i}.log.gz"
        else:
            path = tmp_path / f"d{i}.log"
        try:
            cap = load_trace(_write(path, data))
        except ValueError as e:
            assert "not a TORCH_TRACE structured log" in str(e) or "nothing could be read" in str(e), (how, i, e)
            outcomes["not a trace"] += 1
            continue
        outcomes["capture"] += 1
        tracer.validate(cap)
        assert "frame" in capture_html(cap) or not cap.frames
        if how == "garbage":  # nothing readable lost, every garbage line named
            assert _summary(cap) == _summary(original), (how, i)
            for n in inserted:
                assert any(p.startswith(f"line {n}:") for p in cap.problems), (how, i, n, cap.problems)
        if how == "truncate":  # Note [A log cut off at the end]: the records before the cut, and the cut said
            rest = real_log[len(plain):]  # a cut just before or after a record's last newline keeps it whole
            at_boundary = (plain.endswith(b"\n") and rest[:1] != b"\t") or (rest[:1] == b"\n" and rest[1:2] != b"\t")
            whole = plain if at_boundary else _whole_part(plain)
            assert (cap.meta.get("not_read") is None) == at_boundary, (i, cap.meta.get("not_read"))
            if not at_boundary:
                assert "cut off" in cap.meta["not_read"] and cap.problems[0] == cap.meta["not_read"], (i, cap.problems)
            if whole:
                assert _summary(cap) == _summary(load_trace(_write(tmp_path / "whole.log", whole))), i
        path.unlink()
    assert outcomes["capture"] > N_DOCS * 0.9, outcomes


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)
