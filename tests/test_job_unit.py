"""tracer.job on hand-built captures: loading a job directory, each kind of divergence and its message,
masking of process-specific guard text, collectives. No torch, no capture (tests/test_job.py runs real ones)."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

import tracer
from tracer.job import _graph_parts, _mask, collectives, compare_frames, find_divergence, rank_diff
from tracer.model import (
    AotDiff,
    BodyChange,
    Capture,
    Divergence,
    Frame,
    FrameDiff,
    Graph,
    GraphDiff,
    GraphPiece,
    Guard,
    InputChange,
    Node,
    NodePair,
    Recompile,
    SavedChange,
    Subgraph,
)


def _graph(*targets: str, size: int = 3) -> Graph:
    """x -> targets[0] -> targets[1] ... -> output, as call_function nodes."""
    nodes = [Node("x", "placeholder", "L_x_", role="operand",
                  meta={"kind": "tensor", "dtype": "float32", "shape": [size], "stride": [1], "device": "cpu"})]
    prev = "x"
    for i, t in enumerate(targets):
        nodes.append(Node(f"n{i}", "call_function", t, args=[prev], inputs=[prev]))
        prev = f"n{i}"
    nodes.append(Node("output", "output", "output", args=[f"({prev},)"], inputs=[prev], role="output"))
    by = {n.name: n for n in nodes}
    for n in nodes:
        for i in n.inputs:
            by[i].users.append(n.name)
    return Graph(nodes=nodes)


def _frame(cid: str = "0/0", *targets: str, size: int = 3, **kw) -> Frame:
    return Frame(cid, "f.py:1 in f", graph=_graph(*(targets or ("torch.sin",)), size=size), **kw)


def _cap(*frames: Frame, **kw) -> Capture:
    return Capture(frames=list(frames), fn="f", **kw)


# -- load_job ------------------------------------------------------------------------------------
def _write(d, **files: Capture | str) -> str:
    d.mkdir(exist_ok=True)
    for name, c in files.items():
        (d / name).write_text(c if isinstance(c, str) else c.to_json(), encoding="utf-8")
    return str(d)


def test_load_job_reads_one_capture_per_rank(tmp_path):
    d = _write(tmp_path / "job", **{"rank1.json": _cap(_frame()), "rank0.json": _cap(_frame()), "notes.md": "x"})
    job = tracer.load_job(d)
    assert list(job.ranks) == [0, 1] and job.source == d
    assert (job.divergence, job.problems, job.meta) == ([], [], {"loaded_from": "capture json"})
    assert job.checked[0] == "frames, status, graphs, guards and recompiles of every rank compared with rank 0"


@pytest.mark.parametrize("name, rank", [("rank_3.json", 3), ("RANK-3.json", 3), ("run_rank12_x.json", 12), ("rank3.json", 3)])
def test_the_rank_is_the_number_after_rank(tmp_path, name, rank):
    job = tracer.load_job(_write(tmp_path / "job", **{name: _cap(_frame())}))
    assert list(job.ranks) == [rank]
    assert job.problems == ([] if rank == 0 else [f"rank(s) {list(range(rank))} missing: no readable file for them (ranks read: [{rank}])"])
    assert job.checked == ["only 1 rank: nothing to compare"]


def test_problems_of_a_job_directory(tmp_path):
    d = _write(tmp_path / "job", **{"rank0.json": _cap(_frame()), "rank1.json": "{not json", "rank3.json": _cap(_frame()),
                                    "summary.json": "{}", "config.json": "{}"})
    job = tracer.load_job(d)
    assert list(job.ranks) == [0, 3]
    assert job.problems[0] == "config.json: skipped, no rank number in the file name"
    assert job.problems[1].startswith("rank1.json: rank 1 not loaded: not a dynascope capture: the text is not JSON")
    assert job.problems[2] == "summary.json: skipped, no rank number in the file name"
    assert job.problems[3:] == ["rank(s) [1, 2] missing: no readable file for them (ranks read: [0, 3])"]


def test_unloadable_job_directories(tmp_path):
    f = tmp_path / "file.json"
    f.write_text("{}")
    with pytest.raises(ValueError) as e:
        tracer.load_job(str(f))
    assert str(e.value) == (f"load_job: {str(f)!r} is not a directory (expected per-rank capture JSON files or a "
                            "TORCH_TRACE directory)")
    empty = _write(tmp_path / "empty", **{f"n{i}.txt": "x" for i in range(12)})
    with pytest.raises(ValueError) as e:
        tracer.load_job(empty)
    assert str(e.value) == (f"load_job: no rank files in {empty!r} (expected rank<N>.json capture files or TORCH_TRACE "
                            f"logs *rank_<N>*.log or .log.gz; found {[f'n{i}.txt' for i in sorted(range(12), key=str)][:10]})")
    bad = _write(tmp_path / "bad", **{"rank0.json": "[]", "x.json": "{}"})
    with pytest.raises(ValueError) as e:
        tracer.load_job(bad)
    assert str(e.value).startswith(f"load_job: no rank of {bad!r} could be read: rank0.json: rank 0 not loaded: "
                                   "not a dynascope capture: ")
    assert str(e.value).endswith("; x.json: skipped, no rank number in the file name")
    two = _write(tmp_path / "two", **{"rank0.json": _cap(_frame()), "rank_0.json": _cap(_frame())})
    with pytest.raises(ValueError) as e:
        tracer.load_job(two)
    assert str(e.value) == f"load_job: two files for rank 0 in {two!r}: 'rank0.json' and 'rank_0.json'"


HEAD = "V1125 21:34:46.093000 27159 torch/_dynamo/convert_frame.py:303] "


def _log(code_line: int) -> str:
    """A TORCH_TRACE log of one compile, as trace_structured writes its records."""
    ids = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
    graph = ('class GraphModule(torch.nn.Module):\n    def forward(self, L_x_: "f32[3][1]cpu"):\n        l_x_ = L_x_\n'
             "        sin = torch.sin(l_x_);  l_x_ = None\n        return (sin,)\n")
    md5 = hashlib.md5(graph.encode(), usedforsecurity=False).hexdigest()
    return (HEAD + json.dumps({"dynamo_start": {"stack": []}, **ids}) + "\n"
            + HEAD + json.dumps({"dynamo_output_graph": {}, **ids, "has_payload": md5}) + "\n"
            + "".join(f"\t{p}\n" for p in graph.split("\n"))
            + HEAD + json.dumps({"compilation_metrics": {"co_name": "f", "co_filename": "/u/t.py", "co_firstlineno": code_line,
                                                         "graph_op_count": 1}, **ids}) + "\n")


def test_a_torch_trace_directory_loads_each_rank_log(tmp_path):
    d = tmp_path / "trace"
    d.mkdir()
    (d / "dedicated_log_torch_trace_rank_0_ab.log").write_text(_log(3))
    (d / "dedicated_log_torch_trace_rank_1_cd.log.gz").write_bytes(gzip.compress(_log(4).encode()))
    (d / "other.txt").write_text("x")
    job = tracer.load_job(str(d))
    assert job.meta == {"loaded_from": "TORCH_TRACE"} and job.problems == []
    assert {r: [f.code for f in c.frames] for r, c in job.ranks.items()} == {0: ["t.py:3 in f"], 1: ["t.py:4 in f"]}
    (d / "rank2.json").write_text(_cap(_frame()).to_json())  # capture JSON files come first
    assert tracer.load_job(str(d)).meta == {"loaded_from": "capture json"}


# -- divergence ----------------------------------------------------------------------------------
def test_nothing_to_compare_with_fewer_than_two_ranks():
    assert find_divergence({}) == ([], ["only 0 rank: nothing to compare"])
    assert find_divergence({4: _cap(_frame())}) == ([], ["only 1 rank: nothing to compare"])


def test_frames_only_one_rank_made():
    a = _cap(_frame("0/0"), _frame("1/0"), _frame("2/0"))
    b = _cap(_frame("0/0"), _frame("3/0"))
    found, checked = find_divergence({0: a, 1: b})
    assert found == [Divergence("frames", [0, 1], {0: "1/0", 1: "3/0"},
                                "rank 0 made 3 compile attempts, rank 1 2; only on rank 0: 1/0, 2/0; only on rank 1: 3/0")]
    found, _ = find_divergence({0: _cap(_frame("0/0")), 1: _cap(_frame("0/0"), _frame("1/0"), _frame("2/0"))})
    assert found == [Divergence("frames", [0, 1], {0: "", 1: "1/0"},
                                "rank 0 made 1 compile attempt, rank 1 3; only on rank 1: 1/0, 2/0")]
    found, _ = find_divergence({0: _cap(_frame("1/0"), _frame("0/0")), 1: _cap(_frame("0/0"), _frame("1/0"))})
    assert found == [Divergence("frames", [0, 1], {0: "", 1: ""}, "rank 0 made 2 compile attempts, rank 1 2")]  # order differs


def test_status_divergence_says_both_and_compares_nothing_else():
    a = _frame("0/0", "torch.sin")
    b = _frame("0/0", "torch.cos", status="restarted",
               status_reason="Graph Break Reason: Encountered graph break when attempting to trace CALL\nCall to graph_break()")
    found, _ = find_divergence({2: _cap(a), 5: _cap(b)})
    (d,) = found
    assert (d.kind, d.ranks, d.compile_ids, d.diff) == ("status", [2, 5], {2: "0/0", 5: "0/0"}, None)
    assert d.message == ("frame 0/0 (f.py:1 in f): compiled on rank 2, restarted (" + tracer._text.headline(b.status_reason)
                         + ") on rank 5")


def test_one_compile_id_that_is_other_code_on_each_rank_is_a_frames_finding_compared_no_further():
    a = _frame("2/0", "torch.sin")
    b = Frame("2/0", "f.py:9 in torch_dynamo_resume_in_f_at_9", graph=_graph("torch.cos"), status="restarted")
    found, _ = find_divergence({0: _cap(a), 5: _cap(b)})
    assert found == [Divergence("frames", [0, 5], {0: "2/0", 5: "2/0"}, "frame 2/0 is f.py:1 in f on rank 0, "
                                "f.py:9 in torch_dynamo_resume_in_f_at_9 on rank 5: different code, not compared")]


def test_frames_after_a_missing_or_a_divergent_one_are_still_compared():
    failed = dict(status="failed", status_reason="Unsupported: x")
    a = _cap(_frame("0/0"), _frame("1/0", **failed), _frame("2/0"), _frame("3/0", "torch.sin"))
    b = _cap(_frame("0/0"), _frame("1/0"), _frame("3/0", "torch.cos"))
    found, _ = find_divergence({0: a, 1: b})
    assert [(d.kind, d.compile_ids) for d in found] == [
        ("frames", {0: "2/0", 1: ""}), ("status", {0: "1/0", 1: "1/0"}), ("graph", {0: "3/0", 1: "3/0"})]
    assert found[1].message == "frame 1/0 (f.py:1 in f): failed (Unsupported: x) on rank 0, compiled on rank 1"


def test_graph_and_guard_findings_carry_the_frame_diff():
    ga = [Guard("TENSOR_MATCH", "L['x']", ["check_tensor(L['x'], size=[3])"])]
    gb = [Guard("TENSOR_MATCH", "L['x']", ["check_tensor(L['x'], size=[5])"])]
    a, b = _frame("0/0", "torch.sin", guards=ga), _frame("0/0", "torch.sin", "torch.neg", guards=gb)
    found, checked = find_divergence({0: _cap(a), 1: _cap(b)})
    d = rank_diff(a, b)
    assert [(x.kind, x.compile_ids, x.message, x.diff) for x in found] == [
        ("graph", {0: "0/0", 1: "0/0"},
         "frame 0/0 (f.py:1 in f): graph differs: root: 1 changed, 1 added, 0 removed nodes (output: args ((n0,)) → ((n1,))) "
         "(rank 0 vs rank 1)", d),
        ("guards", {0: "0/0", 1: "0/0"},
         "frame 0/0 (f.py:1 in f): guards differ: 1 (changed TENSOR_MATCH L['x']) (rank 0 vs rank 1)", d)]
    assert checked == ["frames, status, graphs, guards and recompiles of every rank compared with rank 0",
                       "collectives: no collectives in the graphs of any rank, so their order cannot be compared "
                       "(DDP's gradient allreduce runs in its reducer's autograd hooks, outside the compiled graphs)"]


def _aot_bodies(cid: str, *bodies: str) -> Frame:
    from tracer.model import Aot

    return _frame(cid, aot=Aot(mode="inference", subgraphs={b: Graph() for b in bodies}))


def test_what_could_not_be_compared_is_a_checked_line():
    """diff does not align the HOP bodies AOT graphs call (a FrameDiff problem): said per frame and rank pair."""
    a = _cap(_aot_bodies("0/0", "x"), _aot_bodies("1/0", "y"))
    b = _cap(_aot_bodies("0/0"), _aot_bodies("1/0"))
    found, checked = find_divergence({0: a, 1: b, 2: b})
    said = "the HOP bodies the AOT graphs call (Aot.subgraphs) differ and are not aligned"
    assert found == []
    assert checked == ["frames, status, graphs, guards and recompiles of every rank compared with rank 0",
                       f"rank 0 vs rank 1, frame 0/0 (f.py:1 in f): {said}", f"rank 0 vs rank 1, frame 1/0 (f.py:1 in f): {said}",
                       f"rank 0 vs rank 2, frame 0/0 (f.py:1 in f): {said}", f"rank 0 vs rank 2, frame 1/0 (f.py:1 in f): {said}",
                       checked[-1]]
    assert checked[-1].startswith("collectives: no collectives")


def test_every_rank_is_compared_with_the_lowest():
    base = _cap(_frame("0/0"))
    other = _cap(_frame("0/0", "torch.cos"))
    found, checked = find_divergence({7: base, 3: other, 9: _cap(_frame("0/0"))})
    assert [(d.kind, d.ranks) for d in found] == [("graph", [3, 7]), ("graph", [3, 9])]
    assert checked[0].endswith("compared with rank 3") and checked[-1].startswith("collectives: ")


def test_recompile_reasons_are_compared_with_ids_masked():
    r = [Recompile("0/1", "0/0: ___check_obj_id(L['m'], 140234567890)")]
    same = [Recompile("0/1", "0/0: ___check_obj_id(L['m'], 139999999999)")]
    other = [Recompile("0/1", "0/0: L['n'] == " + "7" * 200), Recompile("0/1", "0/0: second")]
    frames = [_frame("0/0"), _frame("0/1")]
    assert find_divergence({0: _cap(*frames, recompiles=r), 1: _cap(*frames, recompiles=same)})[0] == []
    found, _ = find_divergence({0: _cap(*frames, recompiles=r), 1: _cap(*frames, recompiles=other)})
    assert found == [Divergence("recompiles", [0, 1], {0: "0/1", 1: "0/1"},
                                "recompile 0/1: rank 0: 0/0: ___check_obj_id(L['m'], <id>); rank 1: "
                                + ("0/0: L['n'] == <id>")[:120])]
    found, _ = find_divergence({0: _cap(*frames), 1: _cap(*frames, recompiles=same)})
    assert found == [Divergence("recompiles", [0, 1], {0: "", 1: "0/1"},
                                "recompile 0/1: rank 0: no recompile; rank 1: 0/0: ___check_obj_id(L['m'], <id>)")]
    long = [Recompile("0/1", "0/0: " + "a" * 300)]
    found, _ = find_divergence({0: _cap(*frames, recompiles=long), 1: _cap(*frames)})
    assert found[0].message == f"recompile 0/1: rank 0: {('0/0: ' + 'a' * 300)[:120]}; rank 1: no recompile"
    assert found[0].compile_ids == {0: "0/1", 1: ""}


def test_mask_hides_only_process_specific_text():
    assert _mask("___check_obj_id(L['self'], 140234567890)") == "___check_obj_id(L['self'], <id>)"
    assert _mask("L['x'].size()[0] == 123456") == "L['x'].size()[0] == 123456"  # six digits: a size, kept
    assert _mask("G['__builtins_dict___3']['len'] and G['__import_torch_12']") == \
        "G['__builtins_dict___<n>']['len'] and G['__import_torch_<n>']"
    assert _mask("G['x_3'] G['__y']") == "G['x_3'] G['__y']"


def test_rank_diff_masks_guard_source_and_code_of_copies():
    def frame(n: int) -> Frame:
        return _frame("0/0", guards=[Guard("BUILTIN_MATCH", f"G['__builtins_dict___{n}']['len']",
                                           [f"___check_obj_id(G['__builtins_dict___{n}']['len'], 9482{n}00000)"])])

    a, b = frame(3), frame(5)
    assert tracer.diff(a, b) and not rank_diff(a, b)
    assert a.guards[0].source == "G['__builtins_dict___3']['len']"  # the frames themselves are unchanged


def test_compare_frames_of_split_graphs():
    def split(*pieces: Graph) -> Frame:
        f = _frame("0/0")
        f.pieces = [GraphPiece(g) for g in pieces]
        f.graph = pieces[0]  # a split frame's graph is its piece 0
        return f

    two = split(_graph("torch.sin"), _graph("torch.cos"))
    assert compare_frames(two, split(_graph("torch.sin"), _graph("torch.cos")))[0] == []
    assert compare_frames(two, _frame("0/0"))[0] == ["graph split into 2 vs 1 pieces (DDPOptimizer buckets)"]
    assert compare_frames(_frame("0/0"), two)[0] == ["graph split into 1 vs 2 pieces (DDPOptimizer buckets)"]
    assert compare_frames(two, split(_graph("torch.sin")))[0] == ["graph split into 2 vs 1 pieces (DDPOptimizer buckets)"]
    lines = compare_frames(two, split(_graph("torch.sin"), _graph("torch.cos", "torch.neg")))[0]
    assert lines == ["graph piece 1 differs: 1 changed, 1 added, 0 removed nodes (output: args ((n0,)) → ((n1,)))"]
    three = split(_graph("torch.sin"), _graph("torch.cos"), _graph("torch.tan"))
    lines = compare_frames(three, split(_graph("torch.sin"), _graph("torch.cos"), _graph("torch.tan", "torch.neg")))[0]
    assert lines == ["graph piece 2 differs: 1 changed, 1 added, 0 removed nodes (output: args ((n0,)) → ((n1,)))"]
    # piece 0 is the frame's root graph, compared by the frame diff: its line comes first, and only once
    lines = compare_frames(two, split(_graph("torch.sin", "torch.exp"), _graph("torch.cos")))[0]
    assert lines == ["graph differs: root: 1 changed, 1 added, 0 removed nodes (output: args ((n0,)) → ((n1,)))"]
    lines = compare_frames(two, split(_graph("torch.sin", "torch.exp"), _graph("torch.cos", "torch.neg")))[0]
    assert lines == ["graph differs: root: 1 changed, 1 added, 0 removed nodes (output: args ((n0,)) → ((n1,)))",
                     "graph piece 1 differs: 1 changed, 1 added, 0 removed nodes (output: args ((n0,)) → ((n1,)))"]
    # a finding from piece 1 alone carries no frame diff: the frame diff (of piece 0) is empty
    found, _ = find_divergence({0: _cap(two), 1: _cap(split(_graph("torch.sin"), _graph("torch.cos", "torch.neg")))})
    assert [(d.kind, d.diff) for d in found] == [("graph", None)]


def test_a_graph_line_joins_its_parts():
    assert compare_frames(_frame("0/0", size=3), _frame("0/0", size=5))[0] == [
        "graph differs: L_x_ size changed in dim 0 (3 → 5); root: 1 changed, 0 added, 0 removed nodes "
        "(x: type f32[3] → f32[5])"]


def test_guard_lines_show_three_changes():
    def frame(n: int, k: int) -> Frame:
        return _frame("0/0", guards=[Guard("CONSTANT_MATCH", f"L['c{i}']", [f"L['c{i}'] == {n}"]) for i in range(k)])

    assert compare_frames(frame(1, 3), frame(2, 3))[0] == [
        "guards differ: 3 (changed CONSTANT_MATCH L['c0'], changed CONSTANT_MATCH L['c1'], changed CONSTANT_MATCH L['c2'])"]
    assert compare_frames(frame(1, 4), frame(2, 4))[0] == [
        "guards differ: 4 (changed CONSTANT_MATCH L['c0'], changed CONSTANT_MATCH L['c1'], changed CONSTANT_MATCH L['c2'], ...)"]
    g = Guard("GRAD_MODE", "", ["___check_global_state()"])
    assert compare_frames(_frame("0/0"), _frame("0/0", guards=[g]))[0] == ["guards differ: 1 (added GRAD_MODE)"]


def test_graph_parts_of_a_frame_diff():
    assert _graph_parts(FrameDiff("0/0", "0/0")) == []
    ins = [InputChange(f"L['x{i}']", "dtype", "float32", "float16") for i in range(5)]
    d = FrameDiff("0/0", "0/0", inputs=ins, symbols_added=["s0", "s1"], symbols_removed=["s2"],
                  graphs=[GraphDiff("", "", added=["a"]), GraphDiff("wrap_body_0", "wrap_body_0"),
                          GraphDiff("wrap_body_0", "wrap_body_1", pairs=[NodePair("m", "m", ["target torch.sin → torch.cos"])]),
                          GraphDiff("aot.forward", "aot.forward", removed=["r", "s"]),
                          GraphDiff("", "x", removed=["r"])],
                  bodies=[BodyChange("added", "", "cond_true_0", "cond"), BodyChange("changed", "w", "w", "wrap"),
                          BodyChange("removed", "map_body_0", "", "map_impl")],
                  aot=AotDiff("training", "inference", saved=[SavedChange("added", "", "mul")], saved_bytes_a=12, saved_bytes_b=48))
    assert _graph_parts(d) == [
        "L['x0'] dtype changed (float32 → float16)", "L['x1'] dtype changed (float32 → float16)",
        "L['x2'] dtype changed (float32 → float16)", "2 more input changes",
        "symbols +s0, +s1, -s2",
        "root: 0 changed, 1 added, 0 removed nodes",
        "wrap_body_0 ↔ wrap_body_1: 1 changed, 0 added, 0 removed nodes (m: target torch.sin → torch.cos)",
        "aot.forward: 0 changed, 0 added, 2 removed nodes",
        "root ↔ x: 0 changed, 0 added, 1 removed nodes",
        "HOP body added: cond_true_0", "HOP body removed: map_body_0",
        "AOT training vs inference", "saved for backward 12 vs 48 bytes"]
    three = FrameDiff("0/0", "0/0", inputs=ins[:3], symbols_removed=["s9"], aot=AotDiff("", "training"))
    assert _graph_parts(three) == [str(i) for i in ins[:3]] + ["symbols -s9", "AOT none vs training"]
    assert _graph_parts(FrameDiff("0/0", "0/0", aot=AotDiff("inference", ""))) == ["AOT inference vs none"]
    assert _graph_parts(FrameDiff("0/0", "0/0", aot=AotDiff("training", "training"))) == []
    four = FrameDiff("0/0", "0/0", inputs=ins[:4], graphs=[
        GraphDiff("body", "", pairs=[NodePair("m", "n", ["target a → b", "args (x) → (y)"])])])
    assert _graph_parts(four) == [str(i) for i in ins[:3]] + [
        "1 more input changes", "body ↔ root: 1 changed, 0 added, 0 removed nodes (n: target a → b; args (x) → (y))"]


# -- collectives ---------------------------------------------------------------------------------
def _coll(*targets: str) -> Graph:
    return _graph(*targets)


def test_collectives_read_from_every_graph_of_a_frame():
    f = _frame("0/0")
    f.graph = _coll("_c10d_functional.all_reduce.default", "_c10d_functional.wait_tensor.default", "torch.sin",
                    "torch.distributed.broadcast")
    f.subgraphs = {"wrap_body_0": Subgraph("wrap_body_0", "wrap", "", "wrap", graph=_coll("_c10d_functional.all_gather_into_tensor.default"))}
    g = _frame("1/0")
    g.graph.nodes[1].op = "call_method"
    g.graph.nodes[1].target = "all_reduce"  # a method named like a collective is no collective node
    split = _frame("2/0")
    split.pieces = [GraphPiece(_coll("c10d.reduce_scatter")), GraphPiece(_coll("x.all_to_all"))]
    split.graph = _coll("torch.distributed.broadcast")  # the root of a split frame is its piece 0: not read twice
    assert collectives(_cap(f, g, split)) == [
        ("0/0", "_c10d_functional.all_reduce.default"), ("0/0", "torch.distributed.broadcast"),
        ("0/0", "_c10d_functional.all_gather_into_tensor.default"),
        ("2/0", "c10d.reduce_scatter"), ("2/0", "x.all_to_all")]


def test_collective_order_across_ranks():
    def cap(*targets: str) -> Capture:
        return _cap(Frame("0/0", "f.py:1 in f", graph=_coll(*targets)), Frame("1/0", "f.py:9 in g", graph=_coll("torch.sin")))

    ar, bc = "_c10d_functional.all_reduce.default", "_c10d_functional.broadcast.default"
    found, checked = find_divergence({0: cap(ar, bc), 1: cap(ar, bc), 2: cap(ar, ar), 3: cap(ar), 4: cap(ar, bc, ar)})
    coll = [d for d in found if d.kind == "collectives"]
    assert coll == [
        Divergence("collectives", [0, 2], {0: "0/0", 2: "0/0"}, f"collective #1 differs: rank 0 {bc}, rank 2 {ar} (2 vs 2 collectives)"),
        Divergence("collectives", [0, 3], {0: "0/0", 3: ""}, f"collective #1 differs: rank 0 {bc}, rank 3 none (2 vs 1 collectives)"),
        Divergence("collectives", [0, 4], {0: "", 4: "0/0"}, f"collective #2 differs: rank 0 none, rank 4 {ar} (2 vs 3 collectives)"),
    ]
    assert checked[-1] == "collectives: order compared across ranks (rank 0: 2, rank 1: 2, rank 2: 2, rank 3: 1, rank 4: 3 collective nodes in the graphs)"
    # the same targets from different compiles are the same order
    moved = _cap(Frame("0/0", "f.py:1 in f", graph=_coll(ar)), Frame("1/0", "f.py:9 in g", graph=_coll(bc)))
    assert [d for d in find_divergence({0: cap(ar, bc), 1: moved})[0] if d.kind == "collectives"] == []
