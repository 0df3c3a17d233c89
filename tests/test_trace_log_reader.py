"""tracer.trace_log.reader and .source on hand-written log text: records, skipped lines, cut-off ends,
interned strings, which files are logs, gzip text and where it breaks.

Lines are written as torch 2.13's ``TorchLogsFormatter`` writes a structured-trace record (glog prefix,
JSON metadata, payload lines each after a tab; Note [Structured trace line format]).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib

import pytest

from tracer.trace_log import reader as reader_mod
from tracer.trace_log.reader import Reader, Record, looks_like_trace
from tracer.trace_log.source import LOG_SUFFIXES, LogText, NotATrace, log_files, single_log, sniff_binary

HEAD = "V1125 21:34:46.093000 27159 torch/_dynamo/convert_frame.py:303] "


def _line(meta: dict, payload: str | None = None, head: str = HEAD) -> str:
    out = head + json.dumps(meta) + "\n"
    return out + ("" if payload is None else "".join(f"\t{p}\n" for p in payload.split("\n")))


def _read(text: str, **kw) -> tuple[list[Record], Reader]:
    r = Reader(io.StringIO(text), **kw)
    return list(r), r


# -- records ------------------------------------------------------------------------------------
def test_record_event_is_the_first_key_that_is_not_context():
    assert Record({"frame_id": 0, "dynamo_start": {}, "artifact": {}}, None, 1).event == "dynamo_start"
    assert Record({"rank": 0, "compiled_autograd_id": 1, "frame_id": 0, "frame_compile_id": 0, "attempt": 0,
                   "has_payload": "x", "stack": [], "severity": 1, "timestamp": 2, "pathname": "p", "thread": 3},
                  None, 1).event == ""


def test_records_payloads_and_line_numbers():
    text = (_line({"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile_id": 0, "attempt": 0})
            + _line({"dynamo_output_graph": {}, "has_payload": "m"}, "class GraphModule(torch.nn.Module):\n    def forward(self):\n\t\tpass\n")
            + _line({"artifact": {"name": "x"}, "has_payload": "m"}, "")
            + "[rank1]:" + _line({"chromium_event": {}})
            + HEAD.rstrip() + " [0/0] [__graph] " + json.dumps({"b": 1}) + "\n"
            + "W1125 01:02:03.4 1 x.py:9] " + json.dumps({"c": 1}) + "\n")
    recs, r = _read(text)
    assert [(x.event, x.line, x.payload) for x in recs] == [
        ("dynamo_start", 1, None),
        ("dynamo_output_graph", 2, "class GraphModule(torch.nn.Module):\n    def forward(self):\n\t\tpass\n"),
        ("artifact", 7, ""), ("chromium_event", 9, None), ("b", 10, None), ("c", 11, None)]
    assert (r.lines, r.skipped, r.unterminated, r.chars) == (11, [], None, len(text))


def test_interned_strings_are_no_records():
    text = (_line({"str": ["/venv/torch/_dynamo/convert_frame.py", 0]}) + _line({"str": ["/home/u/t.py", 1]})
            + _line({"str": ["x", "1"]}) + _line({"str": ["x"]}) + _line({"str": "x"}) + _line({"str": [1, 2]})
            + _line({"str": ["/a.py", 2], "frame_id": 0})  # more than the one key: a record (of no event we read)
            + _line({"str": ["/b.py", 3]}, "orphan"))
    recs, r = _read(text)
    # a string record never has a payload: its lines are named, the string is kept
    assert r.strings == {0: "/venv/torch/_dynamo/convert_frame.py", 1: "/home/u/t.py", 3: "/b.py"}
    assert [(x.line, x.meta) for x in recs] == [(7, {"str": ["/a.py", 2], "frame_id": 0})]
    assert r.skipped == [f"line {n}: 'str' record is not [text, index]" for n in (3, 4, 5, 6)] + [
        "line 9: payload line without a record before it"]
    assert 2 not in r.strings  # "str" beside other keys is no interned string


def test_what_is_skipped_and_why():
    text = ("\tpayload before any record\n\tanother\n"
            + "plain text line\n"
            + "V1125 21:34:46.093000 27159 f.py:1] not json\n"
            + HEAD + "[1, 2]\n" + HEAD + "{}\n"
            + HEAD + "{\"a\": 1\n\tits payload\n"
            + "\n   \n"
            + _line({"ok": 1}))
    recs, r = _read(text)
    assert [(x.event, x.line) for x in recs] == [("ok", 11)]
    assert r.skipped[:3] == ["line 1: payload line without a record before it",
                             "line 2: payload line without a record before it",
                             "line 3: not a structured-trace line (no glog prefix)"]
    assert r.skipped[3].startswith("line 4: metadata is not JSON (Expecting value: line 1 column 1")
    assert r.skipped[4:] == ["line 5: metadata is not a JSON object", "line 6: metadata is not a JSON object",
                             r.skipped[6], "line 8: payload line without a record before it"]
    assert r.skipped[6].startswith("line 7: metadata is not JSON (Expecting ',' delimiter")
    assert r.lines == 11  # blank lines are counted, not skipped
    recs, r = _read(_line({"a": 1}) + "\n\tafter a blank line\n" + _line({"b": 1}))
    assert [(x.event, x.line, x.payload) for x in recs] == [("a", 1, None), ("b", 4, None)]
    assert (r.skipped, r.lines) == (["line 3: payload line without a record before it"], 4)


def test_a_record_that_says_it_has_a_payload_and_has_no_line_of_it():
    """torch writes at least one tab line after a has_payload record (an empty payload is one "\\t" line), so
    a record without any is cut: its payload is "" (whose md5 is not has_payload), not None."""
    recs, _ = _read(_line({"a": 1, "has_payload": "d41d8cd98f00b204e9800998ecf8427e"}) + _line({"b": 2}, ""))
    assert [(x.event, x.payload) for x in recs] == [("a", ""), ("b", "")]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_records_cut_across_blocks_are_read_whole(chunk, monkeypatch):
    text = (_line({"a": 1}, "p1\np2") + "\n" + _line({"b": 2}) + _line({"str": ["f.py", 0]}) + "\tstray\n"
            + _line({"c": 3}, "x"))
    whole, r0 = _read(text)
    monkeypatch.setattr(reader_mod, "_CHUNK", chunk)
    cut, r1 = _read(text)
    assert [(x.meta, x.payload, x.line) for x in cut] == [(x.meta, x.payload, x.line) for x in whole] == [
        ({"a": 1}, "p1\np2", 1), ({"b": 2}, None, 5), ({"c": 3}, "x", 8)]
    assert (r1.skipped, r1.lines, r1.strings, r1.chars) == (r0.skipped, r0.lines, r0.strings, r0.chars) == \
        (["line 7: payload line without a record before it"], 9, {0: "f.py"}, len(text))


@pytest.mark.parametrize("chunk", [1, 5, 4096])
def test_a_text_without_its_last_newline(chunk, monkeypatch):
    monkeypatch.setattr(reader_mod, "_CHUNK", chunk)
    whole = _line({"a": 1}) + "junk\n"
    last = _line({"b": 2}, "x\ny").rstrip("\n")
    recs, r = _read(whole + last)
    assert [(x.meta, x.payload, x.line) for x in recs] == [({"a": 1}, None, 1), ({"b": 2}, "x\ny", 3)]
    assert (r.unterminated, r.skipped_before_end, r.lines, r.unterminated_head) == (3, 1, 5, last)
    recs, r = _read(whole + HEAD + '{"b": ' + "x" * 300)
    assert [x.line for x in recs] == [1] and (r.unterminated, r.skipped_before_end) == (3, 1)
    assert r.unterminated_head == (HEAD + '{"b": ' + "x" * 300)[:200]
    assert r.skipped[1].startswith("line 3: metadata is not JSON")
    _, r = _read(whole)
    assert (r.unterminated, r.unterminated_head, r.lines) == (None, "", 2)
    _, r = _read("")
    assert (r.unterminated, r.lines, r.skipped) == (None, 0, [])


def test_progress_is_called_every_8_mb():
    calls: list[int] = []
    big = _line({"a": 1}, "\n".join(["y" * 1023] * (17 << 10)))  # 17 MB of payload lines
    recs, r = _read(big, progress=calls.append)
    assert len(recs) == 1 and r.chars == len(big)
    assert len(big) < 24 << 20
    assert calls == [8 << 20, 16 << 20]  # a long unit is read on in blocks that end at each 4 MB of the text


class _ShortReads(io.StringIO):
    """A stream that returns at most 3 MB per read (a pipe or socket may return less than asked)."""

    def read(self, n: int = -1) -> str:
        return super().read(min(n, 3 << 20))


def test_progress_after_short_reads_is_at_each_8_mb_passed():
    calls: list[int] = []
    big = _line({"a": 1}, "\n".join(["y" * 1023] * (24 << 10)))  # just over 24 MB: reads end every 3 MB
    assert 24 << 20 < len(big) < 25 << 20
    list(Reader(_ShortReads(big), progress=calls.append))
    # reads of 512 KB, then up to each next 4 MB of the text (the unit is long), cut to 3 MB by the stream:
    # 0.5, 1, 4, 7, 8, 11, 14, 16, 19, 22, 24 MB; the first read at or past 8, 16 and 24 MB
    assert calls == [8 << 20, 16 << 20, 24 << 20]


def test_looks_like_trace():
    assert looks_like_trace(HEAD + "{}")
    assert looks_like_trace("[rank3]:I0101 00:00:00.1 5 a/b.py:1] x")
    assert not looks_like_trace("V1125 21:34:46 27159 f.py:3] {}")  # no fraction of a second
    assert not looks_like_trace("x" + HEAD)
    assert not looks_like_trace("V1125 21:34:46.1 27159 f.py] {}")


# -- source -------------------------------------------------------------------------------------
def _touch(path, text: str = "", mtime: float | None = None) -> str:
    with open(path, "w") as fh:
        fh.write(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return str(path)


def test_log_files_of_a_file_or_a_directory(tmp_path):
    assert LOG_SUFFIXES == (".log", ".log.gz")
    f = _touch(tmp_path / "notes.txt")
    assert log_files(f) == [f]
    d = tmp_path / "trace"
    d.mkdir()
    for n in ("b.log", "a.log.gz", "c.json", "d.logx", "e.gz"):
        _touch(d / n)
    (d / "sub.log").mkdir()
    assert log_files(str(d)) == [str(d / "a.log.gz"), str(d / "b.log")]
    with pytest.raises(FileNotFoundError, match=r"^/nonexistent/x: no such file or directory$"):
        log_files("/nonexistent/x")


@pytest.mark.parametrize("names, said", [
    ([], "found 0 other entries)"),
    (["a.txt"], "found 1 other entry: a.txt)"),
    (["a", "b", "c", "d", "e"], "found 5 other entries: a, b, c, d, e)"),
    (["a", "b", "c", "d", "e", "f"], "found 6 other entries: a, b, c, d, e, ...)"),
])
def test_a_directory_without_logs_says_what_it_holds(tmp_path, names, said):
    for n in names:
        _touch(tmp_path / n)
    with pytest.raises(NotATrace) as e:
        log_files(str(tmp_path))
    assert str(e.value) == (f"{tmp_path}: no TORCH_TRACE logs in this directory (expected *.log or *.log.gz files; "
                            + said)


def test_single_log_never_guesses_among_several(tmp_path):
    one = _touch(tmp_path / "a.log")
    assert single_log(one) == one and single_log(str(tmp_path)) == one
    for i, n in enumerate(["b.log", "c.log", "d.log", "e.log", "f.log.gz"]):
        _touch(tmp_path / n, mtime=1_000_000 + i)
    os.utime(one, (999_999, 999_999))
    with pytest.raises(ValueError) as e:
        single_log(str(tmp_path))
    assert str(e.value) == (f"{tmp_path}: 6 TORCH_TRACE logs in this directory, load_trace reads one: pass its file "
                            "(newest first: f.log.gz, e.log, d.log, c.log, b.log, ...), or tracer.load_job(dir) "
                            "for the per-rank logs of one job")
    os.remove(tmp_path / "b.log")
    os.utime(tmp_path / "c.log", (1_000_004, 1_000_004))  # same time as f.log.gz: by name
    with pytest.raises(ValueError, match=r"\(newest first: c.log, f.log.gz, e.log, d.log, a.log\), or"):
        single_log(str(tmp_path))


def test_log_text_plain_and_gzip(tmp_path):
    text = _line({"a": 1}, "é\nx") + "\r\n"
    plain = tmp_path / "p.log"
    plain.write_bytes(text.encode())
    with LogText(str(plain)) as src:
        assert (src.path, src.gzip, src.broken, src.size, src.bytes) == \
            (str(plain), False, None, len(text.encode()), len(text.encode()))
        assert src.text.read() == text  # newline="\n": a "\r" is kept
    assert src.text.closed
    gz = tmp_path / "g.log.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    src = LogText(str(gz))
    assert (src.gzip, src.bytes, src.size) == (True, 0, gz.stat().st_size)
    assert src.text.read() == text
    assert (src.broken, src.bytes) == (None, len(text.encode()))
    src.close()
    assert src.text.closed and src._guard.closed and src._guard.file.closed
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"ok \xff\xfe line\n")
    with LogText(str(bad)) as src:
        assert src.text.read() == "ok \ufffd\ufffd line\n"


def test_gzip_damage_ends_the_text_and_says_why(tmp_path):
    body = "".join(_line({"n": i}, "payload " * 50) for i in range(400)).encode()
    data = gzip.compress(body)
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(data[: len(data) // 2])
    with LogText(str(cut)) as src:
        got = src.text.read()
        assert src.broken == "Compressed file ended before the end-of-stream marker was reached"
        assert 0 < src.bytes == len(got.encode()) < len(body) and body.startswith(got.encode())
        assert src.text.buffer.read(10) == b""  # once broken, nothing more
    crc = bytearray(data)
    crc[-8] ^= 0xFF
    bad = tmp_path / "crc.log.gz"
    bad.write_bytes(bytes(crc))
    with LogText(str(bad)) as src:
        assert src.text.read().encode() == body
        assert src.broken.startswith("CRC check failed")
    header = tmp_path / "header.log.gz"
    header.write_bytes(data + b"\x1f\x8bXXXXXXXXXXXXXXXX")
    with LogText(str(header)) as src:
        assert src.text.read().encode() == body and src.broken == "Unknown compression method"


def test_a_gzip_error_without_a_message_is_named_by_its_type(tmp_path):
    gz = tmp_path / "a.log.gz"
    gz.write_bytes(gzip.compress(b"x\n"))
    src = LogText(str(gz))

    def fail(n):
        raise zlib.error()

    src._guard.gz.read1 = fail
    assert src.text.read() == "" and src.broken == "error"
    src.close()


def test_sniff_binary(tmp_path):
    def sniff(data: bytes, gz: bool = False) -> bool:
        p = tmp_path / "s.log"
        p.write_bytes(gzip.compress(data) if gz else data)
        return sniff_binary(str(p))

    assert not sniff(b"V1125 hello\n" * 10)
    assert sniff(b"text\x00more")
    assert sniff(b"x" * 4095 + b"\x00")
    assert not sniff(b"x" * 4096 + b"\x00")  # only the first 4 KB are looked at
    assert sniff(b"\x89PNG\r\n\x1a\n" + b"x" * 100)
    assert sniff(b"\xff" + b"x" * 100, gz=True)
    euro = "€".encode()  # 3 bytes: cut by the 4 KB limit after 1 or 2 of them
    assert not sniff(b"x" * 4094 + euro)
    assert not sniff(b"x" * 4095 + euro)
    assert not sniff(b"x" * 4093 + "😀".encode())  # 4 bytes, cut after 3 by the limit
    assert sniff(b"x" * 4092 + b"\xff" + b"xxxx")  # bad byte 4 before the end: binary
    assert not sniff(b"")
