"""The one-file report (viz/report_file.py): payloads round trip, a hostile name stays text inside and
outside the payloads, the overview lists every frame while the frames' sections wait in payloads,
and drawings of equal graphs are laid out once with the same output."""

from __future__ import annotations

import base64
import copy
import json
import re
import weakref
import zlib

import pytest
from viz_fixtures import wrap_capture

from tracer.model import Capture
from viz.code_view import frame_code_html
from viz.drawing import _num, drawings_json
from viz.html import frame_html
from viz.markup import json_block
from viz.report_file import (
    OPEN_ALL_BYTES,
    decode_payload,
    encode_payload,
    expand,
    frame_payload,
    payloads,
    write_report,
)
from viz.report_graphs import DrawingCache, frame_graphs, graph_drawing, report_data
from viz.report_info import report_info

HOSTILE = "</script><script>alert(1)</script><!--<img src=x onerror=alert(2)>&amp;"


@pytest.mark.parametrize("text", ["", "plain", "é ∂ 😀 \u2028 \x00", HOSTILE, "x" * 300_000])
def test_payload_round_trip_is_exact_and_base64_only(text):
    p = encode_payload(text)
    assert re.fullmatch(r"[A-Za-z0-9+/=]*", p)  # nothing that can end the script element or start markup
    assert decode_payload(p) == text
    # what the browser does: base64 -> zlib stream ("deflate" in DecompressionStream's terms) -> UTF-8
    assert zlib.decompressobj(wbits=15).decompress(base64.b64decode(p)).decode("utf-8") == text


@pytest.mark.parametrize("bad", ["not base64!", base64.b64encode(b"not zlib").decode(), "QUJD"])
def test_a_damaged_payload_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="not a report payload"):
        decode_payload(bad)


def _hostile_capture() -> Capture:
    cap = wrap_capture(HOSTILE)
    cap.fn = HOSTILE
    return cap


def test_hostile_names_stay_text_in_page_and_payloads(tmp_path):
    cap = _hostile_capture()
    page = write_report(tmp_path / "r.html", [cap], title=cap.fn).path.read_text(encoding="utf-8")
    # the page's own script elements: the one drawing script after the overview, then the payloads (base64)
    own = re.findall(r"<script[^>]*>", page)
    assert own[0] == "<script>" and len(own) == 1 + 3 * len(cap.frames)  # the frames' graphs differ: no part shared
    assert [t for t in own if "ds-payload" in t] == [
        f'<script type="application/octet-stream" class="ds-payload" data-frame="{i}" data-encoding="deflate" '
        f'data-parts="{2 * i} {2 * i + 1}">' for i in range(len(cap.frames))]
    assert [t for t in own if "ds-part" in t and "ds-payload" not in t] == [
        f'<script type="application/octet-stream" class="ds-part" data-part="{n}" data-encoding="deflate">'
        for n in range(2 * len(cap.frames))]
    assert HOSTILE not in page and "<img src" not in page
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page  # the function's name in the title and overview, escaped
    drawn = []
    for html in payloads(page).values():
        assert HOSTILE not in html and "<img src" not in html
        assert "&lt;/script&gt;&lt;script&gt;alert(1)" in html  # shown, escaped, in the frame's tables
        assert len(re.findall(r"<script", html)) <= 3  # the frame's drawings, its nodes' facts, its guards' data
        for block in re.findall(r'<script type="application/json" class="ds-[a-z-]+">([^<]*)</script>', html):
            drawn.append(json.loads(block))  # a JSON block that parses whole: no string ended it early
    assert len(drawn) >= len(cap.frames) and HOSTILE in json.dumps(drawn, ensure_ascii=False)


def test_the_payload_is_the_eager_frame_section_with_its_drawings():
    cap = wrap_capture()
    html = frame_payload(cap, cap.frames[0])
    data, (graphs,) = report_data(cap.frames[:1])
    assert html == ('<div class="ds-report">' + frame_html(cap.frames[0], graphs, frame_code_html(cap, cap.frames[0]))
                    + f'\n<script type="application/json" class="ds-drawings">{data}</script>'
                    + f'\n<script type="application/json" class="ds-node-info">{report_info(cap.frames[:1])}</script></div>')


def test_overview_lists_every_frame_and_frames_wait_in_payloads(tmp_path):
    one = wrap_capture()
    cap = Capture(frames=[], fn="many")
    for i in range(12):
        f = copy.deepcopy(one.frames[0])
        f.compile_id = f"{i}/0"
        cap.frames.append(f)
    stats = write_report(tmp_path / "r.html", [cap], title="many")
    page = stats.path.read_text(encoding="utf-8")
    assert stats.frames == 12 and len(payloads(page)) == 12
    visible = page[:page.index("<script>")]  # the overview; then the script, then the payloads
    for i in range(12):
        assert f'<details class="ds-lazy-frame" id="ds-frame-{i}" data-payload="{i}"><summary>Frame {i}/0 ' in visible
    assert 'class="ds-graphbox"' not in visible and "ds-guard-data" not in visible  # no frame section up front
    assert '<td><a href="#ds-frame-11">11/0</a></td>' in visible  # the overview's frames table links to them
    full = expand(page)
    assert full.count('class="ds-graphbox"') == 12 * len(frame_graphs(one.frames[0]))
    assert 'data-open-all="1"' in page  # small: every frame opens at load
    assert stats.payload_bytes <= OPEN_ALL_BYTES and stats.layouts_reused == 11 * len(frame_graphs(one.frames[0]))
    # equal graphs: one drawings part and one facts part for all twelve (Note [Equal parts of payloads stored once])
    assert page.count('class="ds-part"') == 2 and page.count('data-parts="0 1"') == 12
    assert full.count('class="ds-part"') == 0 and full.count('class="ds-drawings"') == 12


def test_a_payload_is_its_head_then_its_parts_and_a_missing_part_is_an_error(tmp_path):
    cap = wrap_capture()
    page = write_report(tmp_path / "r.html", [cap], title="one").path.read_text(encoding="utf-8")
    assert payloads(page) == {str(i): frame_payload(cap, f) for i, f in enumerate(cap.frames)}
    cut = re.sub(r'\n<script type="application/octet-stream" class="ds-part" data-part="1" [^>]*>[^<]*</script>', "", page)
    assert cut != page
    with pytest.raises(ValueError, match="names part '1'"):
        payloads(cut)


def test_a_directory_report_has_a_section_per_capture(tmp_path):
    caps = [wrap_capture(), wrap_capture()]
    page = write_report(tmp_path / "r.html", caps, title="job", headings=["rank_0.log", "rank_1.log"]).path.read_text()
    assert "<h1>rank_0.log</h1>" in page and "<h1>rank_1.log</h1>" in page
    assert sorted(payloads(page)) == ["0-0", "0-1", "1-0", "1-1"] and 'id="ds-frame-1-0"' in page


def test_captures_are_rendered_one_at_a_time(tmp_path):
    """Note [One capture at a time]: when the next capture is asked for, nothing holds the previous one
    (a job of many big ranks needs one rank's memory; no collection by the test: the writer's own), and
    the page is the one a list gives."""
    refs: list[weakref.ref] = []
    alive_when_asked: list[list[bool]] = []

    def caps():
        for _ in range(3):
            alive_when_asked.append([r() is not None for r in refs])
            cap = wrap_capture()
            refs.append(weakref.ref(cap))
            yield cap
            del cap

    streamed = write_report(tmp_path / "a.html", caps(), title="job", headings=lambda c: c.fn, release=True)
    assert alive_when_asked == [[], [False], [False, False]]
    listed = write_report(tmp_path / "b.html", [wrap_capture() for _ in range(3)], title="job",
                          headings=[wrap_capture().fn] * 3, release=True)
    assert streamed.path.read_text() == listed.path.read_text() and streamed.headings == listed.headings


def test_equal_graphs_are_laid_out_once_with_the_same_drawing():
    cap = wrap_capture()
    g = cap.frames[0].graph
    twin = copy.deepcopy(g)
    cache = DrawingCache(size=2)
    plain = graph_drawing(g, [], {"": 0})
    assert graph_drawing(g, [], {"": 0}, cache) == plain and cache.hits == 0
    assert graph_drawing(twin, [], {"": 0}, cache) == plain and cache.hits == 1
    twin.nodes[1].meta["shape_note"] = "changed"  # any field of any node makes another key
    assert DrawingCache.key(twin, []) != DrawingCache.key(g, [])
    assert DrawingCache.key(g, ["y"]) != DrawingCache.key(g, [])  # highlight is part of the drawing
    for i in range(3):  # bounded: the oldest entry goes
        other = copy.deepcopy(g)
        other.name = f"g{i}"
        graph_drawing(other, [], {"": 0}, cache)
    assert cache.get(DrawingCache.key(g, [])) is None


def test_a_frame_of_equal_graphs_reuses_the_whole_drawings_block_with_the_same_text():
    cap = wrap_capture()
    twin = copy.deepcopy(cap.frames[0])
    twin.compile_id = "9/0"
    cache = DrawingCache()
    plain = report_data(cap.frames[:1])
    assert report_data(cap.frames[:1], cache) == plain and cache.hits == 0
    assert report_data([twin], cache) == plain and cache.hits == len(plain[1][0])
    hits = cache.hits
    twin.graph.nodes[-1].meta["note"] = "x"  # one field of the root graph differs: that graph is drawn again
    assert report_data([twin], cache)[1] == plain[1] and cache.hits == hits + len(plain[1][0]) - 1



def test_the_drawings_block_is_json_dumps_text_written_without_json_dumps(monkeypatch):
    """Note [Drawing blocks written by msgspec]: the block is the text json_block writes, byte for byte,
    and json.dumps runs only where msgspec would write another text (a non-finite coordinate) or cannot."""
    cap = wrap_capture()
    real, calls = json.dumps, []
    monkeypatch.setattr(json, "dumps", lambda *a, **k: calls.append(a) or real(*a, **k))
    block, _ = report_data(cap.frames[:1])
    assert calls == []
    assert json_block(json.loads(block)) == block
    for odd in ({"w": float("nan")}, {"pts": [1.5, float("inf"), -float("inf")]}, {"s": "\ud800"},
                {"s": "null </script>&"}, {"s": "</script>&", "x": [0.5]}):
        assert drawings_json(odd) == json_block(odd), odd
    coords = [_num(v) for v in (2.5e-05, -0.04, 0.06, 123.45, 2.0**53 - 0.5, 1e16 + 2, 3e20, -7e300)]
    assert drawings_json({"x": coords}) == json_block({"x": coords})  # msgspec's 1e16 and 0.00001 never come from _num

def test_letting_frames_go_writes_the_same_page_and_empties_the_capture(child_trace_dir, tmp_path):
    """Note [Letting a frame go]: on a real log (a wrap body, a graph break, a recompile), the CLI's
    ``release`` writes byte for byte the page a report that keeps everything writes."""
    import glob
    import os

    from tracer.trace_log import load_trace

    (log,) = glob.glob(os.path.join(child_trace_dir, "*.log"))
    kept, let_go = load_trace(log), load_trace(log)
    assert kept.recompiles and kept.graph_breaks  # the diffs and the breaks are in the overview
    a = write_report(tmp_path / "a.html", [kept], title="t").path.read_text()
    b = write_report(tmp_path / "b.html", [let_go], title="t", release=True).path.read_text()
    assert a == b
    assert any(f.graph.nodes for f in kept.frames) and any(f.guards for f in kept.frames)
    assert not any(f.graph.nodes or f.guards for f in let_go.frames)


def test_a_failed_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "r.html"
    target.mkdir()  # the report cannot take a directory's place: an OSError, and nothing left behind
    with pytest.raises(OSError):
        write_report(target, [wrap_capture()], title="t")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"] and target.is_dir()


def test_no_collection_after_the_last_capture_of_a_list(tmp_path, monkeypatch):
    """Note [One capture at a time]: a collection frees a capture before the next is read; after the last
    one of a list nothing is read, so there is none (a generator's last is not known to be the last)."""
    import types

    import viz.report_file as report_file

    calls = []  # the writer's own collections (the loader's scopes collect through gc itself)
    monkeypatch.setattr(report_file, "gc", types.SimpleNamespace(collect=lambda *a: calls.append(1) or 0))
    listed = write_report(tmp_path / "a.html", [wrap_capture() for _ in range(3)], title="job",
                          headings=["a", "b", "c"], release=True)
    assert len(calls) == 2
    calls.clear()
    streamed = write_report(tmp_path / "b.html", (wrap_capture() for _ in range(3)), title="job",
                            headings=lambda c: "a", release=True)
    assert len(calls) == 3 and streamed.frames == listed.frames
