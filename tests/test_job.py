"""tracer.load_job and divergence on real captures (in-process; the torchrun job is test_job_torchrun.py)."""

from __future__ import annotations

import gzip
import itertools
import json
import os

import pytest
import torch

import tracer
import viz
from tracer.job import collectives, compare_frames, find_divergence, rank_diff
from tracer.model import Job, RankSummary
from viz.report_file import expand


def _step(brk: bool):
    def f(x):
        y = x.sin()
        if brk:
            torch._dynamo.graph_break()
        return y.cos()

    return f


@pytest.fixture(scope="module")
def caps():
    return {
        "plain": tracer.capture(_step(False), torch.randn(3)),
        "plain5": tracer.capture(_step(False), torch.randn(5)),
        "broken": tracer.capture(_step(True), torch.randn(3)),
    }


def _write(tmp_path, **files):
    for name, cap in files.items():
        text = cap if isinstance(cap, str) else cap.to_json()
        (tmp_path / name).write_text(text, encoding="utf-8")
    return str(tmp_path)


def test_same_captures_do_not_diverge(caps, tmp_path):
    job = tracer.load_job(_write(tmp_path, **{"rank0.json": caps["plain"], "rank1.json": caps["plain"]}))
    assert sorted(job.ranks) == [0, 1] and job.divergence == [] and job.problems == []
    assert any("no collectives in the graphs" in line for line in job.checked)


def test_status_and_frames_divergence_name_the_frame(caps, tmp_path):
    job = tracer.load_job(_write(tmp_path, **{"rank0.json": caps["plain"], "rank1.json": caps["broken"]}))
    by_kind = {d.kind: d for d in job.divergence}
    broken = caps["broken"]
    assert broken.frame("0/0").status == "restarted"  # torch's own record: the break restarted 0/0
    assert by_kind["status"].compile_ids == {0: "0/0", 1: "0/0"}
    assert "compiled on rank 0, restarted" in by_kind["status"].message
    only_1 = [f.compile_id for f in broken.frames if f.compile_id not in {g.compile_id for g in caps["plain"].frames}]
    assert by_kind["frames"].compile_ids[1] == only_1[0] and only_1
    assert job.divergent(0, "0/0") and job.divergent(1, "0/0")


def _lines(a, b):
    return compare_frames(a, b)[0]


def test_graph_and_guards_divergence_is_structure_not_names(caps):
    a, b = caps["plain"].frame("0/0"), caps["plain5"].frame("0/0")
    assert [line.split(":")[0] for line in _lines(a, b)] == ["graph differs"]  # x: f32[3] vs f32[5]
    assert "L['x'] size changed in dim 0 (3 → 5)" in _lines(a, b)[0]

    def scaled(x, n):
        return x * n

    c2, c3 = (tracer.capture(scaled, torch.randn(3), n) for n in (2, 3))
    lines = _lines(c2.frame("0/0"), c3.frame("0/0"))
    assert {line.split(" ", 1)[0] for line in lines} == {"graph", "guards"}, lines
    assert any("EQUALS_MATCH L['n']" in line or "CONSTANT_MATCH L['n']" in line for line in lines), lines
    assert _lines(a, a) == []
    # the same code captured again: fresh object ids in the guards, fx names aside, nothing differs
    again = tracer.capture(_step(False), torch.randn(3))
    assert _lines(a, again.frame("0/0")) == []
    # the findings carry tracer.diff of the two frames: the same guard change, the same graph change
    found, _ = find_divergence({0: c2, 1: c3})
    assert sorted(d.kind for d in found) == ["graph", "guards"]
    d = found[0].diff
    assert d is not None and all(f.diff == d for f in found) and d == tracer.diff(c2.frame("0/0"), c3.frame("0/0"))
    assert [(g.change, g.kind, g.source) for g in d.guards] == [("changed", k, "L['n']") for k in
                                                                 {g.kind for g in c2.frame("0/0").guards if g.source == "L['n']"}]
    mul = next(p for p in d.graph("").pairs if p.changes)  # x * 2 vs x * 3: the constant argument
    assert "2" in mul.changes[0] and "3" in mul.changes[0]
    job = Job.of({0: c2, 1: c3}, divergence=found)
    assert Job.from_json(job.to_json()) == job  # the diff a finding carries is plain data too
    assert "diff 0/0 → 0/0" in expand(viz.job_html(job))  # and the job page shows it as the finding's side-by-side view


def test_globals_dynamo_numbers_per_process_are_no_divergence():
    """Dynamo names the builtins dict it installs ``__builtins_dict___N`` from one counter per process
    (OutputGraph.install_global -> unique_id), so the same code compiled later in a process — or on a
    rank that compiled more before — is guarded through another name."""
    def make():
        def f(x):
            return x * len(x.shape)

        return f

    a, b = (tracer.capture(make(), torch.randn(3)).frame("0/0") for _ in range(2))
    names = [{g.source for g in f.guards if g.source.startswith("G['__builtins_dict__")} for f in (a, b)]
    assert names[0] and names[1] and names[0].isdisjoint(names[1])  # torch's own guards, different names
    assert {g.kind for g in tracer.diff(a, b).guards} >= {"BUILTIN_MATCH"}
    assert not rank_diff(a, b) and compare_frames(a, b)[0] == []


def test_object_ids_in_guard_code_are_masked_only_there():
    from tracer.model import Frame, Guard

    def frame(obj_id: int, n: int) -> Frame:
        return Frame("0/0", "f.py:1 in f", guards=[Guard("ID_MATCH", "L['self']", [f"___check_obj_id(L['self'], {obj_id})"]),
                                                  Guard("CONSTANT_MATCH", "L['n']", [f"L['n'] == {n}"])])

    a, b = frame(140234567890, 4), frame(139999999999, 4)
    assert tracer.diff(a, b)  # torch's ids differ from process to process ...
    assert not rank_diff(a, b) and compare_frames(a, b)[0] == []  # ... and are no divergence
    (change,) = rank_diff(a, frame(139999999999, 8)).guards  # a real change next to a masked id still shows
    assert (change.kind, change.before, change.after) == ("CONSTANT_MATCH", ["L['n'] == 4"], ["L['n'] == 8"])
    assert a.guards[0].code == ["___check_obj_id(L['self'], 140234567890)"]  # the frames themselves are unchanged


def test_job_json_round_trip(caps, tmp_path):
    job = tracer.load_job(_write(tmp_path, **{"rank0.json": caps["plain"], "rank1.json": caps["broken"]}))
    assert Job.from_json(job.to_json()) == job
    with pytest.raises(ValueError, match=r"\$\.job\.ranks"):
        Job.from_json(json.dumps({"schema": 2, "job": {"ranks": {"x": {}}}}))


def test_load_job_holds_summaries_and_opens_one_rank_at_a_time(caps, tmp_path):
    path = _write(tmp_path, **{"rank0.json": caps["plain"], "rank1.json": caps["broken"], "rank2.json": caps["plain5"]})
    job = tracer.load_job(path)
    saved = {r: tracer.Capture.load(os.path.join(path, f"rank{r}.json")) for r in range(3)}
    # the findings made one rank at a time are exactly those of the three captures compared in memory
    assert (job.divergence, job.checked) == find_divergence(saved)
    assert {d.kind for d in job.divergence} >= {"frames", "status", "graph"}
    assert job.ranks[1] == RankSummary.of(saved[1], os.path.join(path, "rank1.json"), "capture")
    assert [(f.compile_id, f.status, f.nodes) for f in job.ranks[1].frames] == [
        (f.compile_id, f.status, len(f.graph.nodes)) for f in caps["broken"].frames]
    assert "_kept" not in job.__dict__ or job._kept is None  # load_job kept no capture
    one = job.rank(1)
    assert one.to_json() == caps["broken"].to_json() and job.rank(1) is one  # read again from its file, then kept
    assert job.rank(0).to_json() == caps["plain"].to_json() and job.rank(1) is not one  # one kept at a time
    with pytest.raises(KeyError, match=r"no rank 7 in the job \(ranks: \[0, 1, 2\]\)"):
        job.rank(7)
    back = Job.from_json(job.to_json())  # summaries and findings only; a rank opens from its file
    assert back == job and back.rank(2).to_json() == caps["plain5"].to_json()
    held = Job.from_json(Job.of({0: caps["plain"]}).to_json())
    with pytest.raises(ValueError, match="rank 0's capture is not available: the job was made from captures in memory"):
        held.rank(0)


def test_damaged_missing_and_foreign_files_are_problems(caps, tmp_path):
    path = _write(tmp_path, **{"rank0.json": caps["plain"], "rank1.json": '{"schema": 2, "capture": {"frames": 3}}',
                               "rank3.json": caps["plain"], "config.json": "{}", "rank4.json": "not json"})
    job = tracer.load_job(path)
    assert sorted(job.ranks) == [0, 3]
    text = "\n".join(job.problems)
    assert "rank1.json: rank 1 not loaded: invalid capture file: $.frames" in text
    assert "rank4.json: rank 4 not loaded: not a dynascope capture" in text
    assert "config.json: skipped, no rank number" in text
    assert "rank(s) [1, 2, 4] missing" in text


def test_unloadable_directories_are_errors(caps, tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        tracer.load_job(str(tmp_path / "nope"))
    with pytest.raises(ValueError, match="no rank files"):
        tracer.load_job(str(tmp_path))
    (tmp_path / "a").mkdir()
    with pytest.raises(ValueError, match="two files for rank 0"):
        tracer.load_job(_write(tmp_path / "a", **{"rank0.json": caps["plain"], "rank_0.json": caps["plain"]}))
    (tmp_path / "b").mkdir()
    with pytest.raises(ValueError, match="no rank of"):
        tracer.load_job(_write(tmp_path / "b", **{"rank0.json": "{}"}))


def test_torch_trace_directory_loads_each_rank_with_load_trace(tmp_path, child_trace_dir):
    # One real TORCH_TRACE log, named as torch names a rank's log, twice: two ranks that did the same.
    # Rank 1's log is gzip-compressed, as jobs often keep them: load_job reads .log and .log.gz alike.
    (log,) = child_trace_dir.glob("*.log")
    (tmp_path / "dedicated_log_torch_trace_rank_0_x.log").write_bytes(log.read_bytes())
    (tmp_path / "dedicated_log_torch_trace_rank_1_x.log.gz").write_bytes(gzip.compress(log.read_bytes()))
    job = tracer.load_job(str(tmp_path))
    assert job.meta["loaded_from"] == "TORCH_TRACE" and sorted(job.ranks) == [0, 1]
    expected = [(f.compile_id, f.status, f.graph.code) for f in tracer.load_trace(str(log)).frames]
    assert len(expected) >= 3 and any(status == "compiled" for _, status, _ in expected)
    for r in job.ranks:
        assert [(f.compile_id, f.status, f.graph.code) for f in job.rank(r).frames] == expected
    assert job.divergence == [] and job.problems == []


def _logs_as_ranks(src, dst, names):
    """The rank logs of ``src`` (a TORCH_TRACE directory) copied to ``dst`` as ``names``: file name -> source rank."""
    dst.mkdir()
    for name, r in names.items():
        (log,) = src.glob(f"*rank_{r}_*.log")
        data = log.read_bytes()
        (dst / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return str(dst)


def test_a_small_reference_rank_is_read_once_a_big_one_again_per_rank(ddp_job_dir, tmp_path, monkeypatch):
    """Note [A small reference read once] in tracer/job.py: read here, the reference rank (the lowest) is
    kept fully read when its log is small (or a capture JSON file), so no rank reads it again; a big or
    compressed one is read again for each rank, as before. The Job is the same, to the byte of its JSON."""
    import tracer.job

    reads: list[str] = []
    real = tracer.job.load_rank
    monkeypatch.setattr(tracer.job, "load_rank", lambda kind, path: reads.append(os.path.basename(path)) or real(kind, path))
    three = {"dedicated_log_torch_trace_rank_0_a.log": 0, "dedicated_log_torch_trace_rank_1_b.log": 1,
             "dedicated_log_torch_trace_rank_2_c.log": 1}  # rank 1's graph break twice: findings for both
    small = _logs_as_ranks(ddp_job_dir / "trace", tmp_path / "small", three)
    for read_only in (False, True):
        reads.clear()
        once = tracer.load_job(small, read_only=read_only)
        assert reads == [] and {r for d in once.divergence for r in d.ranks} == {0, 1, 2}
        monkeypatch.setattr(tracer.job, "_KEEP_REFERENCE", 0)  # every log is big now
        again = tracer.load_job(small, read_only=read_only)
        assert reads == ["dedicated_log_torch_trace_rank_0_a.log"] * 2
        assert again.to_json() == once.to_json() == tracer.load_job(small, read_only=read_only, workers=2).to_json()
        monkeypatch.undo()
        monkeypatch.setattr(tracer.job, "load_rank", lambda kind, path: reads.append(os.path.basename(path)) or real(kind, path))
    reads.clear()
    gz = _logs_as_ranks(ddp_job_dir / "trace", tmp_path / "gz", {"dedicated_log_torch_trace_rank_0_a.log.gz": 0,
                                                                 **dict(list(three.items())[1:])})
    assert tracer.load_job(gz).divergence == once.divergence and len(reads) == 2  # a .gz is read again
    reads.clear()
    (tmp_path / "json").mkdir()
    for r in (0, 1, 2):
        (tmp_path / "json" / f"rank{r}.json").write_bytes((ddp_job_dir / f"rank{min(r, 1)}.json").read_bytes())
    assert tracer.load_job(str(tmp_path / "json")).divergence and reads == []  # capture files: read once


def test_every_graph_pair_a_job_aligns_gives_what_the_walk_gives(ddp_job_dir, child_trace_dir):
    """Note [Equal graphs aligned at once] in tracer/graph_align.py: ``align`` answers equal node lists
    without the node-by-node walk; on every graph pair load_job aligns (two real ranks, every frame both
    have: root, DDPOptimizer pieces, HOP bodies, AOT graphs; editable and read-only) and on every graph of a
    real log aligned with every graph of that log, the answer is the walk's."""
    from tracer.graph_align import _walk, align

    def graphs(f):
        out = {"": f.graph, **{f"piece{i}": p.graph for i, p in enumerate(f.pieces)},
               **{k: s.graph for k, s in f.subgraphs.items()}}
        if f.aot is not None:
            out.update({f"aot.{k}": getattr(f.aot, k) for k in ("joint", "forward", "backward", "inference")
                        if getattr(f.aot, k) is not None})
        return out

    shared = equal = 0
    (log,) = child_trace_dir.glob("*.log")
    ranks = [next((ddp_job_dir / "trace").glob(f"*rank_{r}_*.log")) for r in (0, 1)]  # they went different ways
    for (pa, pb), read_only in itertools.product([ranks, (log, log)], (False, True)):  # the log twice: ranks that agree
        a, b = (tracer.load_trace(str(p), read_only=read_only) for p in (pa, pb))
        theirs = {f.compile_id: f for f in b.frames}
        for fa in a.frames:
            fb = theirs.get(fa.compile_id)
            if fb is None:
                continue
            ga, gb = graphs(fa), graphs(fb)
            for name in ga.keys() & gb.keys():
                x, y = ga[name], gb[name]
                assert align(x, y, name, name) == _walk(x, y, name, name)
                shared += x.nodes is y.nodes and bool(x.nodes)
                equal += x.nodes is not y.nodes and x.nodes == y.nodes and bool(x.nodes)
    assert shared and equal  # the shortcut was taken both ways: one list shared, equal copies
    every = [g for f in tracer.load_trace(str(log)).frames for g in graphs(f).values()]
    for x in every:
        for y in every:
            assert align(x, y) == _walk(x, y, "", "")


def test_collectives_read_from_the_graphs():
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        def f(x):
            return funcol.all_reduce(x * 2, "sum", dist.group.WORLD) + 1

        cap = tracer.capture(f, torch.randn(4))
    finally:
        dist.destroy_process_group()
    targets = [n.target for n in cap.frame("0/0").graph.nodes if "c10d" in n.target]  # torch's graph, as recorded
    assert collectives(cap) == [("0/0", t) for t in targets if "wait_tensor" not in t] != []
    found, checked = find_divergence({0: cap, 1: cap})
    assert found == [] and checked[-1].startswith("collectives: order compared")


def test_job_html_marks_divergent_cells_and_escapes(caps, tmp_path):
    job = tracer.load_job(_write(tmp_path, **{"rank0.json": caps["plain"], "rank1.json": caps["broken"]}))
    job.divergence[0].message += " <script>alert(1)</script>"
    page = viz.job_html(job)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
    assert "<script>alert" not in expand(page) and "&lt;script&gt;alert(1)" in expand(page)  # the views, decoded
    assert 'class="ds-divergent" title=' in page and 'data-rank="1" data-frame="0/0"' in page
    assert 'href="#ds-rank-1-0/0"' in page and 'id="ds-rank-1-0/0"' in page
    assert sorted(job._repr_mimebundle_()) == ["application/vnd.jupyter.widget-view+json", "text/html", "text/plain"]
    view = viz.JobView(job)
    view.open(1)
    assert view.explorer.frame.compile_id == job.divergence[0].compile_ids[1] != ""  # rank 1's first finding
    view.open(0, "0/0")
    assert view.rank == 0 and view.explorer.frame.compile_id == "0/0"
    assert os.path.exists(viz.export_job_html(job, tmp_path / "job.html"))


def test_job_view_grid_clicks_open_that_rank_at_that_frame(caps, tmp_path):
    job = tracer.load_job(_write(tmp_path, **{"rank0.json": caps["plain"], "rank1.json": caps["broken"]}))
    later = [f.compile_id for f in job.ranks[1].frames][-1]  # a frame of rank 1 that no finding names first
    first = next(d.compile_ids[1] for d in job.divergence if d.compile_ids.get(1))
    assert later != first
    view = viz.JobView(job)
    assert 'data-rank="1" data-frame="0/0"' in view.grid.html and 'class="ds-rank" data-rank="1"' in view.grid.html
    view.grid.picked = {"rank": 1, "frame": later, "n": 1}  # what job_grid.js sends for a click on that cell
    assert (view.rank, view.explorer.frame.compile_id) == (1, later) and view.grid.current == {"rank": 1, "frame": later}
    view.grid.picked = {"rank": 0, "frame": "", "n": 2}  # a click on "rank 0": its first divergent frame
    assert (view.rank, view.explorer.frame.compile_id) == (0, "0/0")
    view.open(1, later)  # the rank button follows without reopening the rank at its first finding
    assert view._buttons.value == 1 and view.explorer.frame.compile_id == later
    view.grid.picked = {"rank": 7, "frame": "0/0", "n": 3}  # no such rank: nothing changes
    assert (view.rank, view.explorer.frame.compile_id) == (1, later)
