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


def _ways(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple, tuple, tuple, int, int]:
    """(what the reader gives, what it gives with every line read as text, what it gives with every unit's
    end searched, records it read as text, units it took as a repeat)."""
    as_text = repeats = 0
    real_record, real_repeat = Reader._record, Reader._repeat

    def record(self: Reader, *a) -> Record | None:
        nonlocal as_text
        rec = real_record(self, *a)
        as_text += rec is not None
        return rec

    def repeat(self: Reader, buf: bytes, pos: int, nl: int) -> tuple[Record, int] | None:
        nonlocal repeats
        out = real_repeat(self, buf, pos, nl)
        repeats += out is not None
        return out

    with monkeypatch.context() as m:
        m.setattr(Reader, "_record", record)
        m.setattr(Reader, "_repeat", repeat)
        got = _read(data)
    with monkeypatch.context() as m:
        m.setattr(reader_mod, "_PREFIX_BYTES", _NEVER)
        want = _read(data)
    with monkeypatch.context() as m:
        m.setattr(reader_mod, "_KNOWN_ENDS", False)
        searched = _read(data)
    return got, want, searched, as_text, repeats


def _both_ways(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple, tuple, int]:
    """(what the reader gives, what it gives with every line read as text, records it read as text); the
    reader with every unit's end searched gives the same as the first."""
    got, want, searched, as_text, _ = _ways(data, monkeypatch)
    assert searched == got
    return got, want, as_text


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_hand_written_damage_reads_the_same_both_ways(case, monkeypatch):
    got, want, _ = _both_ways(_CASES[case], monkeypatch)
    assert got == want


def test_the_bytes_way_is_taken_for_plain_records_only(monkeypatch):
    head = b"V1125 21:34:46.093000 27159 f.py:3] "
    plain = [b'{"a": 1}', b'{"frame_id": 0, "describe_storage": {"id": 1}}', b'{"b": {}, "has_payload": "m"}\n\tx']
    text_way = [b'{"a": NaN}', b'{"a": "\\ud800"}', b"[1, 2]", b"{}", b'{"a": 1} x', '{"é": 1}'.encode(), b'{"a":']
    data = b"".join(head + x + b"\n" for x in plain + text_way) + b"no prefix\n\n  \n"
    got, want, as_text = _both_ways(data, monkeypatch)
    assert got == want and as_text == 3 and len(got[0]) == len(plain) + 3
    assert [r[3] for r in got[0]] == ["a", "describe_storage", "b", "a", "a", "é"]  # NaN, "\ud800", "é" as text
    assert len(got[1]) == 5  # [1, 2], {}, trailing text, cut JSON, no prefix; blank lines are no records


def test_the_event_is_the_first_key_that_is_not_context_either_way(monkeypatch):
    head = b"V1125 21:34:46.093000 27159 f.py:3] "
    data = (head + b'{"frame_id": 0, "attempt": 0, "describe_source": {}}\n' + head + b'{"rank": 0}\n'
            + head + b'{"describe_tensor": {}, "describe_tensor": {"id": 2}, "frame_id": 1}\n')
    got, want, as_text = _both_ways(data, monkeypatch)
    assert got == want and as_text == 0
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
    twice = real_log + real_log  # the second copy's payloads repeat the first's
    data = twice if seed == 0 else _damaged(twice, random.Random(seed))
    path = tmp_path / "t.log"
    path.write_bytes(data)

    def load() -> str:
        try:
            return load_trace(str(path)).to_json()
        except ValueError as e:
            return f"{type(e).__name__}: {e}"

    repeats = []
    real_repeat = Reader._repeat
    with monkeypatch.context() as m:
        m.setattr(Reader, "_repeat", lambda self, buf, pos, nl: repeats.append(real_repeat(self, buf, pos, nl)) or repeats[-1])
        got = load()
    with monkeypatch.context() as m:
        m.setattr(reader_mod, "_PREFIX_BYTES", _NEVER)
        want = load()
    with monkeypatch.context() as m:
        m.setattr(reader_mod, "_KNOWN_ENDS", False)
        searched = load()
    assert got == want == searched
    assert sum(r is not None for r in repeats) > (10 if seed == 0 else 0)


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


def test_a_repeated_payload_is_the_unit_a_search_finds(monkeypatch):
    head = b"V1125 21:34:46.093000 27159 f.py:3] "

    def unit(md5: str, payload: bytes, meta: bytes = b'"g": {}') -> bytes:
        return head + b"{" + meta + b', "has_payload": "' + md5.encode() + b'"}\n\t' + payload.replace(b"\n", b"\n\t") + b"\n"

    g = b"graph\ntext\n  more"
    data = (unit("a", g) + unit("a", g) + unit("a", g + b"\nlonger") + unit("a", g[:-1]) + unit("a", g)
            + unit("b", g) + unit("a", g).replace(b"text", b"t\xc3\xa9t") + unit("a", g, b'"g": NaN') + b"\tstray\n"
            + unit("a", g) + b"\n" + unit("a", g) + unit("b", g)[:-1])  # an empty line after; the last one cut
    got, want, searched, _, repeats = _ways(data, monkeypatch)
    assert got == want == searched
    # repeats: the 2nd, and the one after the empty line; not the longer, shorter, other md5, changed or NaN
    # ones, not the one after the stray tab line (that line is the NaN record's payload), not the cut one
    assert repeats == 2
    assert [r[1] for r in got[0]].count("graph\ntext\n  more") == 7 and got[3] == data.count(b"\n") + 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    b"V1 00:00:00.1 5 f.py:1] {\"g\": {}, \"has_payload\": \"m\"}\n\tab\n\tc\n", b"\tab\n\tc\n", b"\tab\n",
    b"V1 00:00:00.1 5 f.py:1] {\"g\": {}, \"has_payload\": \"n\"}\n\tab\n", b"\n", b"\t", b"ab", b"x\n",
    b"V1 00:00:00.1 5 f.py:1] {\"g\": {}, \"has_payload\": \"m\"}\n"]), max_size=30).map(b"".join),
    st.sampled_from([1, 7, 64, 1 << 19]))
def test_fuzzed_repeats_read_as_searched(data, chunk):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reader_mod, "_CHUNK", chunk)
        got, want, searched, _, _ = _ways(data, mp)
    assert got == want == searched
