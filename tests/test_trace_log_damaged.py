"""Damaged TORCH_TRACE files, made from a real log (tests/trace_log_child.py run with TORCH_TRACE): each
case gives its exact one line, naming the file, where it broke and what was kept; a file of which
nothing can be read is one ValueError. And ``load_trace`` of a directory, as torch writes them.

The expected numbers are worked out from the bytes (zlib, line counts), and what is kept is checked
against the same log cut at a record boundary: a damaged file keeps exactly what a whole shorter log has.
"""

from __future__ import annotations

import glob
import gzip
import os
import re
import shutil
import sys
import zlib

import pytest

import tracer
from tracer.trace_log import DamagedTrace, NotATrace, load_trace

_RECORD = re.compile(rb"^[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] ")
_EXPECTED = ("expected lines like 'V1123 11:43:51.297000 22811 file.py:28] {\"dynamo_start\": ...}' as torch's "
             "trace_structured writes them)")


@pytest.fixture(scope="module")
def real_log(child_trace_dir) -> bytes:
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    with open(path, "rb") as fh:
        return fh.read()


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def _summary(cap: tracer.Capture) -> list:
    return [(f.compile_id, f.status, [n.name for n in f.graph.nodes], sorted(f.subgraphs), len(f.guards))
            for f in cap.frames]


def _whole_part(text: bytes) -> bytes:
    """``text`` up to the end of its last whole record: before the record line the cut falls in."""
    k = len(text) - 1 if text.endswith(b"\n") else len(text)
    while True:
        k = text.rindex(b"\n", 0, k)
        if text[k + 1:k + 2] != b"\t":
            return text[:k + 1]


def _records(text: bytes) -> int:
    """Records of a whole text: its record lines, less the interned-string ones."""
    return sum(1 for ln in text.split(b"\n") if _RECORD.match(ln) and b'] {"str": [' not in ln)


def _lines(text: bytes) -> int:
    return text.count(b"\n") + (0 if text.endswith(b"\n") else 1)


def _break_line(text: bytes) -> int:
    """The line a break right after ``text`` falls in (the next one when ``text`` ends a line)."""
    return text.count(b"\n") + 1


def _kept(tmp_path, cap: tracer.Capture, text: bytes, ends_whole: bool = False) -> str:
    """'kept R records (F compile attempts)' for a file that broke in ``text``'s last record (after
    it when ``ends_whole``), after checking the capture has exactly the frames of the log cut there."""
    whole = text if ends_whole else _whole_part(text)
    shorter = load_trace(_write(tmp_path / "shorter.log", whole))
    assert _summary(cap) == _summary(shorter) and shorter.meta.get("not_read") is None
    tracer.validate(cap)
    return f"kept {_records(whole)} records ({len(shorter.frames)} compile attempts)"


def _cut_in_line(data: bytes, fraction: float, payload: bool) -> int:
    """A byte offset 20 characters into the first record line (or payload line) after ``fraction`` of the log."""
    start = data.index(b"\n\t" if payload else b"\nV", int(len(data) * fraction)) + 1
    return start + 20


def test_a_good_log_says_nothing_was_skipped(real_log, tmp_path):
    cap = load_trace(_write(tmp_path / "good.log", real_log))
    assert cap.problems == [] and "not_read" not in cap.meta and cap.limits
    gz = load_trace(_write(tmp_path / "good.log.gz", gzip.compress(real_log, mtime=0)))
    assert _summary(gz) == _summary(cap) and gz.problems == []
    as_log = load_trace(_write(tmp_path / "compressed-but-named.log", gzip.compress(real_log, mtime=0)))
    assert _summary(as_log) == _summary(cap)  # gzip is recognised by its magic bytes, not by the name


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.8])
def test_gzip_cut_off_mid_stream(real_log, tmp_path, fraction):
    gz = gzip.compress(real_log, mtime=0)
    cut = gz[:int(len(gz) * fraction)]
    got = zlib.decompressobj(wbits=31).decompress(cut)  # all the text before the cut
    assert 0 < len(got) < len(real_log) and real_log.startswith(got)
    cap = load_trace(_write(tmp_path / "t.log.gz", cut))
    want = (f"t.log.gz: the gzip data breaks in line {_break_line(got)}, after {len(got)} decompressed bytes (Compressed "
            f"file ended before the end-of-stream marker was reached); {_kept(tmp_path, cap, got)}")
    assert cap.meta["not_read"] == want
    assert cap.problems == [want]  # the cut record is said once, as the break, not as a skipped line


def test_gzip_damaged_header_of_a_second_member(real_log, tmp_path):
    """Two gzip members (as ``gzip -c more >> log.gz`` makes); the second one's header is damaged
    (compression method byte 8 -> 7): what the first member holds is read, up to its last byte."""
    half = _whole_part(real_log[:len(real_log) // 2])
    second = bytearray(gzip.compress(real_log[len(half):], mtime=0))
    second[2] = 7
    cap = load_trace(_write(tmp_path / "two.log.gz", gzip.compress(half, mtime=0) + bytes(second)))
    assert cap.meta["not_read"] == (f"two.log.gz: the gzip data breaks in line {_break_line(half)}, after {len(half)} "
                                    f"decompressed bytes (Unknown compression method); {_kept(tmp_path, cap, half, ends_whole=True)}")


def test_gzip_checksum_that_does_not_match(real_log, tmp_path):
    """The CRC at the end is checked after the last byte: every line was read, and may be damaged."""
    gz = bytearray(gzip.compress(real_log, mtime=0))
    gz[-8] ^= 0xFF  # the stored CRC32
    stored = int.from_bytes(gz[-8:-4], "little")
    cap = load_trace(_write(tmp_path / "crc.log.gz", bytes(gz)))
    full = load_trace(_write(tmp_path / "full.log", real_log))
    assert _summary(cap) == _summary(full)
    assert cap.problems == [
        f"crc.log.gz: the gzip checksum does not match the decompressed text (CRC check failed {hex(stored)} != "
        f"{hex(zlib.crc32(real_log))}): some of its {_lines(real_log)} lines may be damaged; "
        f"kept {_records(real_log)} records ({len(full.frames)} compile attempts)"]


def test_gzip_damaged_mid_stream_keeps_what_came_before_and_names_garbage(real_log, tmp_path):
    """A flipped byte in the deflate data: the text after it is garbage until the checksum fails at the
    end. Every frame wholly before the damage is kept as it was, every garbage line that is no record
    is named and counted, and the line says the text may be damaged and what was kept.

    What a flip does depends on the log's bytes (times and pids differ per run), so several flips are
    checked. Not promised: that nothing after the damage is kept. Deflate garbage can copy earlier,
    valid text (back-references), which then reads as records; the gzip checksum says only *that* the
    text is damaged, not where, so the line says "may be damaged" and the loader keeps what parses.
    """
    named = 0
    for k in range(12):
        gz = bytearray(gzip.compress(real_log, mtime=0))
        gz[len(gz) // 2 + 131 * k] ^= 0x55
        try:
            text = zlib.decompressobj(wbits=-15).decompress(bytes(gz[10:-8]))  # the raw deflate body, no checks
        except zlib.error:  # the flip breaks the deflate data itself: a damaged stream, tested above
            continue
        name = f"flip{k}.log.gz"
        cap = load_trace(_write(tmp_path / name, bytes(gz)))
        line = cap.meta["not_read"]
        assert line.startswith(f"{name}: the gzip checksum does not match the decompressed text (CRC check failed "
                               f"{hex(zlib.crc32(real_log))} != {hex(zlib.crc32(text))}): some of its {_lines(text)} "
                               f"lines may be damaged; ")
        # the reader's skipped lines follow the summary; a record read but not understood is a problem of its
        # own before it ("line N: dynamo_start not read (...)", tracer/trace_log/events.py), not a skipped line
        after = cap.problems[cap.problems.index(line) + 1:]
        skipped = [p for p in after if p.startswith("line ")]
        more = [int(m.group(1)) for p in after for m in [re.match(r"\.\.\. and (\d+) more lines skipped$", p)] if m]
        if skipped:
            named += 1
            n = len(skipped) + sum(more)
            assert f"; {n} line{'s' if n != 1 else ''} not read (first: {skipped[0]}); " in line
        first_bad = next(i for i, (a, b) in enumerate(zip(text, real_log, strict=False)) if a != b)
        before = _summary(load_trace(_write(tmp_path / "before.log", _whole_part(real_log[:first_bad]))))
        assert _summary(cap)[:max(len(before) - 1, 0)] == before[:-1]  # the last may straddle the damage
        assert re.search(rf"; kept \d+ records \({len(cap.frames)} compile attempts?\)$", line), line
        tracer.validate(cap)
    assert named, "no flip made a garbage line"


@pytest.mark.parametrize("payload", [False, True], ids=["record-line", "payload-line"])
def test_log_cut_mid_line(real_log, tmp_path, payload):
    cut = _cut_in_line(real_log, 0.5, payload)
    text = real_log[:cut]
    cap = load_trace(_write(tmp_path / "cut.log", text))
    where = f"in the middle of line {_lines(text)}"
    if payload:
        record = _lines(_whole_part(text)) + 1
        where += f", in the payload of the record at line {record}"
    assert cap.problems == [f"cut.log: cut off: the file ends (byte {cut}) {where}; {_kept(tmp_path, cap, text)}"]


def test_log_cut_at_the_end_of_a_payload_line(real_log, tmp_path):
    """Cut between two payload lines: every line is whole, the record's md5 (has_payload) tells."""
    cut = real_log.index(b"\n\t", real_log.index(b"\n\t", len(real_log) // 2) + 2) + 1
    text = real_log[:cut]
    cap = load_trace(_write(tmp_path / "cut.log", text))
    record = _lines(_whole_part(text)) + 1
    assert cap.problems == [f"cut.log: cut off: the file ends (byte {cut}) within the payload of the record at line "
                            f"{record} (its md5 is not the record's has_payload); {_kept(tmp_path, cap, text)}"]


def test_log_whose_last_record_only_lacks_its_newline_is_whole(real_log, tmp_path):
    cap = load_trace(_write(tmp_path / "no-newline.log", real_log.rstrip(b"\n")))
    assert cap.problems == [] and _summary(cap) == _summary(load_trace(_write(tmp_path / "f.log", real_log)))


def test_nothing_readable_is_one_error(real_log, tmp_path):
    gz = gzip.compress(real_log, mtime=0)
    path = _write(tmp_path / "head.log.gz", gz[:20])  # the gzip header and 10 bytes of deflate data
    with pytest.raises(DamagedTrace) as e:
        load_trace(path)
    assert str(e.value) == (f"{path}: the gzip data breaks before any text (Compressed file ended before the "
                            "end-of-stream marker was reached); nothing could be read before it")
    path = _write(tmp_path / "first.log", real_log[:real_log.index(b"] {") + 10])  # inside the first record's JSON
    with pytest.raises(DamagedTrace) as e:
        load_trace(path)
    assert str(e.value) == (f"{path}: cut off: the file ends (byte {os.path.getsize(path)}) in the middle of line 1; "
                            "nothing could be read before it")
    assert isinstance(e.value, ValueError)


def test_empty_and_binary_files_are_not_a_trace(tmp_path):
    path = _write(tmp_path / "empty.log", b"")
    with pytest.raises(NotATrace) as e:
        load_trace(path)
    assert str(e.value) == f"{path}: empty file, not a TORCH_TRACE structured log"
    with open(sys.executable, "rb") as fh:  # a real binary (the interpreter), named .log
        path = _write(tmp_path / "binary.log", fh.read(1 << 16))
    with pytest.raises(NotATrace) as e:
        load_trace(path)
    assert str(e.value) == f"{path}: not a TORCH_TRACE structured log (binary data; {_EXPECTED}"
    path = _write(tmp_path / "notes.log", b"hello\nworld")
    with pytest.raises(NotATrace) as e:
        load_trace(path)
    assert str(e.value) == f"{path}: not a TORCH_TRACE structured log (no structured-trace record in 2 lines; {_EXPECTED}"


def test_a_torch_trace_directory(child_trace_dir, real_log, tmp_path):
    """TORCH_TRACE=<dir> writes a directory: its only log is read; several are listed, never guessed."""
    (log,) = glob.glob(str(child_trace_dir / "*.log"))
    assert _summary(load_trace(str(child_trace_dir))) == _summary(load_trace(log))
    d = tmp_path / "trace"
    d.mkdir()
    with pytest.raises(NotATrace) as e:
        load_trace(str(d))
    assert str(e.value) == f"{d}: no TORCH_TRACE logs in this directory (expected *.log or *.log.gz files; found 0 other entries)"
    (d / "notes.txt").write_text("x")
    with pytest.raises(NotATrace, match=r"found 1 other entry: notes\.txt\)$"):
        load_trace(str(d))
    shutil.copy(log, d / "dedicated_log_torch_trace_a.log")
    _write(d / "dedicated_log_torch_trace_b.log.gz", gzip.compress(real_log, mtime=0))
    os.utime(d / "dedicated_log_torch_trace_a.log", (1, 1))  # the older one
    with pytest.raises(ValueError) as e:
        load_trace(d)  # a path-like works too
    assert str(e.value) == (f"{d}: 2 TORCH_TRACE logs in this directory, load_trace reads one: pass its file (newest "
                            "first: dedicated_log_torch_trace_b.log.gz, dedicated_log_torch_trace_a.log), or "
                            "tracer.load_job(dir) for the per-rank logs of one job")
    with pytest.raises(FileNotFoundError, match=r"missing: no such file or directory$"):
        load_trace(str(tmp_path / "missing"))
