"""The reader on a log's bytes gives exactly what it gives on the text decoded from them.

``load_trace`` hands the reader the file's bytes (Note [Reading a log as bytes] in
tracer/trace_log/reader.py): units cut on bytes and decoded one by one, a payload seen before with the
same md5 and equal bytes handed out as the text decoded then, ASCII metadata read by msgspec. Each is
checked against reading the text as ``LogText`` decodes it (UTF-8, undecodable bytes replaced, no
newline translation): hand-written damage, fuzzed bytes cut into small blocks, and a real log.
"""

from __future__ import annotations

import glob
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.trace_log import reader as reader_mod
from tracer.trace_log.reader import Reader

HEAD = b"V1125 21:34:46.093000 27159 torch/_dynamo/convert_frame.py:303] "


def _both(data: bytes) -> tuple[tuple, tuple]:
    """(what the reader gives on ``data``'s bytes, what it gives on their decoded text)."""
    out = []
    for fh in (io.BytesIO(data), io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline="\n")):
        r = Reader(fh)
        recs = [(x.meta, x.payload, x.line, x.event) for x in r]
        out.append((recs, r.skipped, r.strings, r.lines, r.unterminated, r.skipped_before_end, r.unterminated_head))
    return out[0], out[1]


def _line(meta: str, payload: bytes | None = None, head: bytes = HEAD) -> bytes:
    out = head + meta.encode() + b"\n"
    return out + (b"" if payload is None else b"".join(b"\t" + p + b"\n" for p in payload.split(b"\n")))


_CASES = [
    b"",
    _line('{"dynamo_output_graph": {}, "has_payload": "m"}', b"class G:\n    def forward(self):\n\t\tpass\n"),
    # the same md5 with other bytes (a log's md5 is not trusted): each payload is its own text
    _line('{"a": {}, "has_payload": "m"}', b"one\ntwo") + _line('{"a": {}, "has_payload": "m"}', b"one\ntwO")
    + _line('{"a": {}, "has_payload": "m"}', b"one\ntwo") + _line('{"a": {}, "has_payload": "m"}', b"one\ntwo\n"),
    _line('{"a": {}, "has_payload": 5}', b"x") + _line('{"a": {}, "has_payload": 5}', b"x"),
    _line('{"a": NaN, "b": Infinity}') + _line('{"a": 1e400}') + _line('{"a": "\\ud800"}') + _line('{"a": 1} x'),
    _line('{"a": "caf\\u00e9"}') + HEAD + '{"a": "café ✓"}\n'.encode() + _line('{"a": [1, 2.5, -0.0, true, null]}'),
    _line('{"a": 1}', "é\n\xff".encode("latin-1")) + b"\t\xe2\x82\n" + _line('{"b": 1}', b"\xf0\x9f\x98"),
    b"\tan orphan\n\ttwo\n" + _line('{"a": 1}') + b"not a trace line\n\tits payload\n" + b"\n \n",
    "V1125 21:34:46.093000 ٢٧ f.py:3] {\"a\": 1}\n".encode(),  # Unicode digits in the prefix: the text's \d
    _line('{"a": 1}', b"x\r\ny\r") + b"V1125 21:34:46.1 5 f.py:1] {\"c\": 1}\r\n",
    _line('{"str": ["/a/b.py", 0]}') + _line('{"str": "x"}') + _line('{"dynamo_start": {}, "has_payload": "q"}', b"p"),
    _line('{"a": 1}', b"cut") + HEAD + b'{"b": 2, "has_payload": "z"}\n\tpartial',  # no last newline
    _line('{"a": 1}') + HEAD + b'{"b":',
    b"[rank3]:" + _line('{"a": 1}') + HEAD.rstrip() + b' [0/0] [__graph] {"b": 1}\n',
]


@pytest.mark.parametrize("chunk", [3, 64, 1 << 22])
@pytest.mark.parametrize("case", range(len(_CASES)))
def test_bytes_read_as_their_text(case, chunk, monkeypatch):
    monkeypatch.setattr(reader_mod, "_CHUNK", chunk)
    got, want = _both(_CASES[case])
    assert got == want


def test_an_equal_payload_is_the_same_string_and_a_changed_one_is_not():
    data = b"".join(_line('{"g": {}, "has_payload": "h"}', b"graph\ntext") for _ in range(3))
    data += _line('{"g": {}, "has_payload": "h"}', b"graph\ntexT")
    recs = list(Reader(io.BytesIO(data)))
    assert recs[0].payload == "graph\ntext" and recs[1].payload is recs[0].payload is recs[2].payload
    assert recs[3].payload == "graph\ntexT"


def test_payloads_remembered_are_bounded(monkeypatch):
    monkeypatch.setattr(reader_mod, "_KEPT_PAYLOADS", 2)
    monkeypatch.setattr(reader_mod, "_KEPT_BYTES", 10)
    data = b"".join(_line(f'{{"g": {{}}, "has_payload": "{i}"}}', b"p" * (4 + i)) for i in range(4))
    r = Reader(io.BytesIO(data))
    assert [x.payload for x in r] == ["p" * (4 + i) for i in range(4)]
    assert list(r._kept) == ["3"] and r._kept_bytes == 7  # "2" (6 bytes) went: 6 + 7 > 10


_PIECES = [b"\n", b"\t", b"\n\t", b"\r", b" ", b"x", b"\xc3\xa9", b"\xe2\x9c", b"\xff", b"\x85", "٢".encode(),
           HEAD, b"[rank1]:", b'{"a": 1}', b'{"has_payload": "m", "b": 2}', b'{"has_payload": "n"}',
           b'{"str": ["f.py", 1]}', b'{"x": NaN}', b'{"u": "\\u00e9"}', b"{", b"}", b'"', b"1"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map(b"".join), st.sampled_from([1, 5, 17, 1 << 22]))
def test_fuzzed_bytes_read_as_their_text(data, chunk):
    old = reader_mod._CHUNK
    reader_mod._CHUNK = chunk
    try:
        got, want = _both(data)
    finally:
        reader_mod._CHUNK = old
    assert got == want


def test_a_real_log_read_as_its_text(child_trace_dir):
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    with open(path, "rb") as fh:
        data = fh.read()
    got, want = _both(data + data)
    assert got == want and len(got[0]) > 10 and got[1] == []
    recs = list(Reader(io.BytesIO(data + data)))  # the second copy's payloads are the first's strings
    half = len(recs) // 2
    assert any(r.payload for r in recs[:half])
    assert all(b.payload is a.payload for a, b in zip(recs[:half], recs[half:], strict=True) if a.payload)
