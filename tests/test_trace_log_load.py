"""tracer.trace_log.load_trace on small hand-written logs: what a whole, cut-off, damaged or foreign file
loads as, and the one problem line that says what was not read.

Records are written as torch 2.13's ``trace_structured`` writes them (glog prefix, JSON metadata with the
md5 of the payload in ``has_payload``, payload lines after a tab; Note [A log cut off at the end]).
"""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from tracer.trace_log import DamagedTrace, NotATrace, load_trace

HEAD = "V1125 21:34:46.093000 27159 torch/_dynamo/convert_frame.py:303] "
IDS = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
GRAPH = ('class GraphModule(torch.nn.Module):\n    def forward(self, L_x_: "f32[3][1]cpu"):\n        l_x_ = L_x_\n'
         "        sin = torch.sin(l_x_);  l_x_ = None\n        return (sin,)\n")


def _line(meta: dict, payload: str | None = None) -> str:
    if payload is None:
        return HEAD + json.dumps(meta) + "\n"
    md5 = hashlib.md5(payload.encode("utf-8"), usedforsecurity=False).hexdigest()
    return HEAD + json.dumps({**meta, "has_payload": md5}) + "\n" + "".join(f"\t{p}\n" for p in payload.split("\n"))


def _compile(frame: int) -> str:
    ids = {**IDS, "frame_id": frame}
    return (_line({"dynamo_start": {"stack": [{"line": 3, "name": "f", "filename": 0}]}, **ids})
            + _line({"dynamo_output_graph": {}, **ids}, GRAPH)
            + _line({"compilation_metrics": {"co_name": "f", "co_filename": "/home/u/t.py", "co_firstlineno": 3,
                                             "entire_frame_compile_time_s": 0.5, "graph_op_count": 1}, **ids}))


LOG = _line({"str": ["/home/u/t.py", 0]}) + _compile(0)  # 10 lines: the string, 3 records (a graph of 6 lines)


def _load(tmp_path, text: str | bytes, name: str = "t.log"):
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return load_trace(str(p))


def _said(cap) -> str | None:
    assert cap.meta.get("not_read") == (cap.problems[0] if "not_read" in cap.meta else None)
    return cap.meta.get("not_read")


def test_a_whole_log(tmp_path):
    seen: list[int] = []
    p = tmp_path / "t.log"
    p.write_text(LOG)
    cap = load_trace(p, progress=seen.append)  # a path-like is taken
    assert [(f.compile_id, f.code, f.status, f.times) for f in cap.frames] == [("0/0", "t.py:3 in f", "compiled", {"total": 0.5})]
    assert (cap.problems, cap.meta["log_lines"], cap.fn, seen) == ([], 10, "t.log", [])
    assert _said(cap) is None


def test_the_last_record_lacking_only_its_newline_is_kept(tmp_path):
    cap = _load(tmp_path, LOG.rstrip("\n"))
    assert (cap.problems, len(cap.frames), cap.frames[0].times) == ([], 1, {"total": 0.5})


def test_a_log_cut_in_its_last_line(tmp_path):
    text = LOG + _compile(1)
    cut = text[: text.rindex('"co_firstlineno"')]
    cap = _load(tmp_path, cut)
    lines = cut.count("\n") + 1
    assert _said(cap) == (f"t.log: cut off: the file ends (byte {len(cut)}) in the middle of line {lines}; "
                          "kept 5 records (2 compile attempts)")
    assert cap.problems == [_said(cap)]  # the cut line is said once, as the cut, not as a skipped line
    assert [f.status for f in cap.frames] == ["compiled", "compiled"]
    assert "torch logged no compilation metrics" in cap.frames[1].problems[0]


def test_the_frames_a_cut_log_ends_inside(tmp_path):
    """Note [Frames a cut log ends inside]: the compile with no metrics before the cut is named, its
    frames say so; a compile whose metrics came before the cut is whole; a whole log names none."""
    assert "cut_in" not in _load(tmp_path, LOG + _compile(1)).meta
    text = LOG + _compile(1)
    cap = _load(tmp_path, text[: text.rindex('"co_firstlineno"')])  # in frame 1's metrics record
    assert cap.meta["cut_in"] == ["1/0"]
    assert [[p for p in f.problems if "the log ends inside this compile" in p] != [] for f in cap.frames] == [False, True]
    assert cap.frames[1].status == "compiled"  # its graph came before the cut
    no_graph = LOG + _line({"dynamo_start": {"stack": []}, **{**IDS, "frame_id": 1}})
    cap = _load(tmp_path, no_graph + no_graph[:len(HEAD) + 9])  # cut in the next line, before any graph
    assert cap.meta["cut_in"] == ["1/0"]
    assert (cap.frames[1].status, cap.frames[1].status_reason) == ("failed", "unknown: the log is cut off inside this compile")
    cap = _load(tmp_path, LOG + LOG[:len(HEAD) + 9])  # cut between compiles
    assert cap.meta["cut_in"] == [] and cap.meta["not_read"]


def test_a_later_attempt_proves_a_restart_also_without_metrics(tmp_path):
    ids1 = {**IDS, "frame_id": 1}
    text = (LOG + _line({"dynamo_start": {"stack": []}, **ids1})
            + _line({"dynamo_start": {"stack": []}, **ids1, "attempt": 1}) + _line({"dynamo_output_graph": {}, **ids1, "attempt": 1}, GRAPH))
    cap = _load(tmp_path, text)  # whole, but torch logged no metrics for frame 1 (a process that died mid-compile)
    assert [(f.compile_id, f.status) for f in cap.frames] == [("0/0", "compiled"), ("1/0", "restarted"), ("1/0_1", "compiled")]
    assert cap.frames[1].status_reason == "unknown" and "torch did not say why this attempt restarted" in cap.frames[1].problems


def test_a_log_cut_at_the_end_of_a_payload_line(tmp_path):
    text = _line({"str": ["/home/u/t.py", 0]}) + _line({"dynamo_start": {"stack": []}, **IDS}) + _line({"dynamo_output_graph": {}, **IDS}, GRAPH)
    cut = text[: text.index("\t        return")]
    cap = _load(tmp_path, cut)
    assert _said(cap) == (f"t.log: cut off: the file ends (byte {len(cut)}) within the payload of the record at line 3 "
                          "(its md5 is not the record's has_payload); kept 1 record (1 compile attempt)")
    assert not cap.frames[0].has_graph  # the cut graph was dropped, not read as a shorter graph
    mid = cut + "\t        ret"
    cap = _load(tmp_path, mid)
    assert _said(cap) == (f"t.log: cut off: the file ends (byte {len(mid)}) in the middle of line 8, in the payload of "
                          "the record at line 3; kept 1 record (1 compile attempt)")


def test_a_log_cut_right_after_a_record_that_has_a_payload(tmp_path):
    text = LOG + _line({"dynamo_start": {"stack": []}, **{**IDS, "frame_id": 1}})
    cut = text + HEAD + json.dumps({"dynamo_output_graph": {}, **IDS, "frame_id": 1, "has_payload": "0" * 32}) + "\n"
    cap = _load(tmp_path, cut)
    assert _said(cap) == (f"t.log: cut off: the file ends (byte {len(cut)}) within the payload of the record at line 12 "
                          "(its md5 is not the record's has_payload); kept 4 records (2 compile attempts)")


def test_a_payload_without_has_payload_is_not_checked(tmp_path):
    text = _line({"dynamo_start": {"stack": []}, **IDS}) + HEAD + json.dumps({"dynamo_output_graph": {}, **IDS, "has_payload": 5}) + "\n\tx\n"
    cap = _load(tmp_path, text)
    assert cap.meta.get("not_read") is None


def test_a_cut_line_that_is_no_record_in_a_file_of_records(tmp_path):
    cap = _load(tmp_path, LOG + "garbage without newline")
    assert _said(cap) == f"t.log: cut off: the file ends (byte {len(LOG) + 23}) in the middle of line 11; kept 3 records (1 compile attempt)"
    whole = _load(tmp_path, LOG + "garbage with newline\n")
    assert whole.problems == ["t.log: 1 line not read (first: line 11: not a structured-trace line (no glog prefix)); "
                              "kept 3 records (1 compile attempt)",
                              "line 11: not a structured-trace line (no glog prefix)"]


def test_skipped_lines_are_listed_up_to_200(tmp_path):
    bad = "".join(f"junk {i}\n" for i in range(203))
    cap = _load(tmp_path, LOG + bad)
    assert cap.problems[0] == ("t.log: 203 lines not read (first: line 11: not a structured-trace line (no glog prefix)); "
                               "kept 3 records (1 compile attempt)")
    assert cap.problems[1:3] == [f"line {n}: not a structured-trace line (no glog prefix)" for n in (11, 12)]
    assert len(cap.problems) == 1 + 200 + 1 and cap.problems[200] == "line 210: not a structured-trace line (no glog prefix)"
    assert cap.problems[-1] == "... and 3 more lines skipped"
    exactly = _load(tmp_path, LOG + bad[: bad.index("junk 200")])
    assert len(exactly.problems) == 201 and exactly.problems[-1].startswith("line 210:")


def test_gzip_logs_and_their_damage(tmp_path):
    data = gzip.compress((LOG + _compile(1)).encode())
    assert [f.compile_id for f in _load(tmp_path, data, "t.log.gz").frames] == ["0/0", "1/0"]
    crc = bytearray(data)
    crc[-8] ^= 0xFF
    cap = _load(tmp_path, bytes(crc), "t.log.gz")
    assert _said(cap).startswith("t.log.gz: the gzip checksum does not match the decompressed text (CRC check failed ")
    assert _said(cap).endswith("): some of its 19 lines may be damaged; kept 6 records (2 compile attempts)")
    length = bytearray(data)
    length[-1] ^= 0xFF
    assert "the gzip checksum does not match the decompressed text (Incorrect length" in _said(_load(tmp_path, bytes(length), "t.log.gz"))
    big = gzip.compress((LOG + "".join(_compile(i) for i in range(1, 200))).encode())
    cut = _load(tmp_path, big[: len(big) // 2], "t.log.gz")
    said = _said(cut)
    assert said.startswith("t.log.gz: the gzip data breaks in line ") and ", after " in said
    line = int(said.split("breaks in line ")[1].split(",")[0])
    after = int(said.split(", after ")[1].split(" ")[0])
    text = (LOG + "".join(_compile(i) for i in range(1, 200))).encode()
    assert line == text[:after].count(b"\n") + 1  # the line the break is in
    assert said.endswith(" decompressed bytes (Compressed file ended before the end-of-stream marker was reached); "
                         f"kept {len(cut.frames) * 3} records ({len(cut.frames)} compile attempts)")


def test_stored_gzip_data_that_breaks_at_a_line_end_or_in_a_line(tmp_path):
    """Stored (level 0) deflate data: a cut at byte 15 + k leaves exactly k bytes of text (10 header bytes,
    5 of the block header), so the break can be put at a line end or inside a line."""
    data = gzip.compress(LOG.encode(), compresslevel=0)
    at_end = _said(_load(tmp_path, data[: 15 + len(LOG)], "t.log.gz"))
    assert at_end == (f"t.log.gz: the gzip data breaks in line 11, after {len(LOG)} decompressed bytes (Compressed file "
                      "ended before the end-of-stream marker was reached); kept 3 records (1 compile attempt)")
    inside = _said(_load(tmp_path, data[: 15 + len(LOG) - 5], "t.log.gz"))
    assert inside.startswith(f"t.log.gz: the gzip data breaks in line 10, after {len(LOG) - 5} decompressed bytes (")
    assert inside.endswith("kept 2 records (1 compile attempt)")


def test_a_cut_and_skipped_lines_are_one_problem(tmp_path):
    text = LOG + "junk\n" + HEAD + '{"dynamo_start": '
    assert _said(_load(tmp_path, text)) == (
        f"t.log: cut off: the file ends (byte {len(text)}) in the middle of line 12; 1 line not read (first: line 11: "
        "not a structured-trace line (no glog prefix)); kept 3 records (1 compile attempt)")


def test_a_whole_log_ending_with_a_payload(tmp_path):
    cap = _load(tmp_path, LOG + _line({"dynamo_output_graph": {}, **{**IDS, "frame_id": 1}}, GRAPH))
    assert (cap.problems, [f.compile_id for f in cap.frames]) == ([], ["0/0", "1/0"])


def test_progress_of_a_big_log(tmp_path):
    seen: list[int] = []
    p = tmp_path / "t.log"
    p.write_text(LOG + _line({"chromium_event": {}}, "\n".join(["x" * 1023] * (9 << 10))))
    cap = load_trace(str(p), progress=seen.append)
    assert seen == [8 << 20] and len(cap.frames) == 1


def test_gzip_data_that_breaks_before_any_text(tmp_path):
    data = gzip.compress(LOG.encode())
    with pytest.raises(DamagedTrace) as e:
        _load(tmp_path, data[:12], "t.log.gz")
    assert str(e.value) == (f"{tmp_path / 't.log.gz'}: the gzip data breaks before any text (Compressed file ended "
                            "before the end-of-stream marker was reached); nothing could be read before it")


def test_a_file_cut_in_its_first_record_is_damaged(tmp_path):
    with pytest.raises(DamagedTrace) as e:
        _load(tmp_path, LOG[len(_line({"str": ["/home/u/t.py", 0]})):][:80])
    assert str(e.value) == f"{tmp_path / 't.log'}: cut off: the file ends (byte 80) in the middle of line 1; nothing could be read before it"


def test_interned_strings_alone_are_a_log(tmp_path):
    cap = _load(tmp_path, _line({"str": ["/home/u/t.py", 0]}))
    assert (cap.frames, cap.problems) == ([], [])


@pytest.mark.parametrize("text, what", [
    ("hello\n", "no structured-trace record in 1 line"),
    ("hello\nworld\n", "no structured-trace record in 2 lines"),
    ("hello", "no structured-trace record in 1 line"),
    (b"\x00\x01binary\n", "binary data"),
])
def test_not_a_trace_says_what_it_is(tmp_path, text, what):
    with pytest.raises(NotATrace) as e:
        _load(tmp_path, text)
    assert str(e.value) == (f"{tmp_path / 't.log'}: not a TORCH_TRACE structured log ({what}; expected lines like "
                            "'V1123 11:43:51.297000 22811 file.py:28] {\"dynamo_start\": ...}' as torch's "
                            "trace_structured writes them)")


def test_an_empty_file(tmp_path):
    with pytest.raises(NotATrace) as e:
        _load(tmp_path, "")
    assert str(e.value) == f"{tmp_path / 't.log'}: empty file, not a TORCH_TRACE structured log"
    with pytest.raises(NotATrace, match="no structured-trace record in 0 lines"):
        _load(tmp_path, gzip.compress(b""), "t.log.gz")  # not empty on disk, no text in it


def test_a_directory_with_one_log(tmp_path):
    (tmp_path / "dedicated_log_torch_trace_abc.log").write_text(LOG)
    (tmp_path / "notes.txt").write_text("x")
    cap = load_trace(str(tmp_path))
    assert cap.fn == "dedicated_log_torch_trace_abc.log" and len(cap.frames) == 1
