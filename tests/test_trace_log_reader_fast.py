"""Metadata lines read straight from their bytes give exactly what reading them as text gives.

The reader reads an ASCII metadata line with the glog prefix and JSON msgspec takes as an object from its
bytes, without making its text (Note [Metadata lines read as bytes] in tracer/trace_log/reader.py); every
other line goes the text way. Each check here reads the same bytes both ways (the bytes way turned off by
a prefix pattern that matches nothing) and compares records, skipped lines, and whole loaded Captures:
hand-written damage, fuzzed bytes, and damaged copies of a real log.
"""

from __future__ import annotations

import glob
import io
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_trace_log_bytes import _CASES, _PIECES

from tracer.trace_log import load_trace
from tracer.trace_log import reader as reader_mod
from tracer.trace_log.events import LogState, _count
from tracer.trace_log.reader import Reader, Record

_NEVER = re.compile(b"(?!)")  # a prefix pattern that matches no line: every line is read as text


def _read(data: bytes) -> tuple:
    r = Reader(io.BytesIO(data))
    recs = [(x.meta, x.payload, x.line, x.event) for x in r]
    return recs, r.skipped, r.strings, r.lines, r.unterminated, r.skipped_before_end, r.unterminated_head


def _both_ways(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple, tuple, int]:
    """(what the reader gives, what it gives with every line read as text, records read from bytes)."""
    fast = 0
    real = reader_mod._fast_record

    def counted(line: bytes, lineno: int) -> Record | None:
        nonlocal fast
        rec = real(line, lineno)
        fast += rec is not None
        return rec

    with monkeypatch.context() as m:
        m.setattr(reader_mod, "_fast_record", counted)
        got = _read(data)
    with monkeypatch.context() as m:
        m.setattr(reader_mod, "_PREFIX_BYTES", _NEVER)
        want = _read(data)
    return got, want, fast


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_hand_written_damage_reads_the_same_both_ways(case, monkeypatch):
    got, want, _ = _both_ways(_CASES[case], monkeypatch)
    assert got == want


def test_the_bytes_way_is_taken_for_plain_records_only(monkeypatch):
    head = b"V1125 21:34:46.093000 27159 f.py:3] "
    plain = [b'{"a": 1}', b'{"frame_id": 0, "describe_storage": {"id": 1}}', b'{"b": {}, "has_payload": "m"}\n\tx']
    text_way = [b'{"a": NaN}', b'{"a": "\\ud800"}', b"[1, 2]", b"{}", b'{"a": 1} x', '{"é": 1}'.encode(), b'{"a":']
    data = b"".join(head + x + b"\n" for x in plain + text_way) + b"no prefix\n\n  \n"
    got, want, fast = _both_ways(data, monkeypatch)
    assert got == want and fast == len(plain)
    assert [r[3] for r in got[0]] == ["a", "describe_storage", "b", "a", "a", "é"]  # NaN, "\ud800", "é" as text
    assert len(got[1]) == 5  # [1, 2], {}, trailing text, cut JSON, no prefix; blank lines are no records


def test_the_event_is_the_first_key_that_is_not_context_either_way(monkeypatch):
    head = b"V1125 21:34:46.093000 27159 f.py:3] "
    data = (head + b'{"frame_id": 0, "attempt": 0, "describe_source": {}}\n' + head + b'{"rank": 0}\n'
            + head + b'{"describe_tensor": {}, "describe_tensor": {"id": 2}, "frame_id": 1}\n')
    got, want, fast = _both_ways(data, monkeypatch)
    assert got == want and fast == 3
    assert [(r[0], r[3]) for r in got[0]] == [({"frame_id": 0, "attempt": 0, "describe_source": {}}, "describe_source"),
                                              ({"rank": 0}, ""),
                                              ({"describe_tensor": {"id": 2}, "frame_id": 1}, "describe_tensor")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map(b"".join), st.sampled_from([1, 5, 17, 1 << 19]))
def test_fuzzed_bytes_read_the_same_both_ways(data, chunk):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reader_mod, "_CHUNK", chunk)
        got, want, _ = _both_ways(data, mp)
    assert got == want


@pytest.fixture(scope="module")
def real_log(child_trace_dir) -> bytes:
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    with open(path, "rb") as fh:
        return fh.read()


def _damaged(data: bytes, rnd: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rnd.randint(1, 30)):
        i = rnd.randrange(len(b))
        b[i] = rnd.choice([rnd.randrange(256), *b'{}[]",:0-\\ \n\tVe'])
    return bytes(b)


@pytest.mark.parametrize("seed", range(12))
def test_damaged_real_logs_load_the_same_capture_both_ways(real_log, seed, tmp_path, monkeypatch):
    data = real_log if seed == 0 else _damaged(real_log, random.Random(seed))
    path = tmp_path / "t.log"
    path.write_bytes(data)

    def load() -> str:
        try:
            return load_trace(str(path)).to_json()
        except ValueError as e:
            return f"{type(e).__name__}: {e}"

    got = load()
    with monkeypatch.context() as m:
        m.setattr(reader_mod, "_PREFIX_BYTES", _NEVER)
        want = load()
    assert got == want


@pytest.mark.parametrize("value", [0, 3, -1, True, False, 1.0, -0.0, "0", None, [1], 1 << 70, -(1 << 70)])
def test_compile_ids_of_any_json_type_key_an_attempt_as_count_says(value):
    for meta in ({"frame_id": value, "frame_compile_id": 1, "a": 1}, {"frame_id": 2, "frame_compile_id": value},
                 {"frame_id": 2, "frame_compile_id": 1, "attempt": value}):
        st_ = LogState({})
        fid, cid = meta.get("frame_id"), meta.get("frame_compile_id")
        a = meta.get("attempt") or 0
        want = (fid, cid, a if _count(a) else 0) if _count(fid) and _count(cid) else None
        assert st_.attempt(Record(meta, None, 1)) == want
        assert st_.order == ([want] if want is not None else [])
