"""The report's pieces as pure functions: guard groups, graph-break folding, packed drawings and guard
rows, the compile-time chart, the module tree, and the first view's grouping of AOT graphs."""

from __future__ import annotations

import json
import re

import pytest
from viz_fixtures import graph, t, wrap_capture

import viz
from tracer.model import Aot, Capture, Frame, GraphBreak, Guard, SavedValue
from viz.backward_groups import NO_MODULE
from viz.canvas import drawing
from viz.graph_layout import layout
from viz.grouping import GROUP_THRESHOLD, first_expanded, graph_chains, threshold_for, visible
from viz.guard_groups import group_guards
from viz.module_view import module_rows
from viz.panels import _guard_row, guards_html, overview_html
from viz.report_graphs import graph_drawing, pack
from viz.synthetic import chain_graph
from viz.time_chart import bars

# -- guards -----------------------------------------------------------------------------------------

GUARDS = [
    Guard("TENSOR_MATCH", "L['x']", ["check_tensor(L['x'], Tensor, torch.float32, [s0, 3])"], ["f.py:1 in f"]),
    Guard("GRAD_MODE", ""),
    Guard("EMPTY_NN_MODULE_HOOKS_DICT", "L['self']._modules['a']._forward_hooks", [], ["f.py:2 in f", "m.py:9 in forward"]),
    Guard("SHAPE_ENV", "", ["L['x'].size()[0] == L['y'].size()[0]", "2 <= L['x'].size()[0]"]),
    Guard("TYPE_MATCH", "G['torch']", ["___check_type_id(G['torch'], 1)"]),
    Guard("TENSOR_MATCH", "L['y']", []),
    Guard("BACKEND_MATCH", "", ["cache entry backend is f"]),
]


def test_guards_grouped_by_variable_relations_in_each_global_last():
    groups = group_guards(GUARDS)
    assert [g.title for g in groups] == ["L['x']", "L['self']", "L['y']", "G['torch']", "global"]
    by = {g.title: [(x.kind, rel) for x, rel in g.rows] for g in groups}
    assert by["L['x']"] == [("TENSOR_MATCH", False), ("SHAPE_ENV", True)]  # the relation that mentions it
    assert by["L['y']"] == [("SHAPE_ENV", True), ("TENSOR_MATCH", False)]  # the same relation, in install order
    assert by["L['self']"] == [("EMPTY_NN_MODULE_HOOKS_DICT", False)]
    assert by["global"] == [("GRAD_MODE", False), ("BACKEND_MATCH", False)]
    # nothing dropped: every guard is in some group, only relations are in more than one
    assert {id(g) for grp in groups for g, _ in grp.rows} == {id(g) for g in GUARDS}


def test_guards_view_is_folded_counts_kinds_and_filters():
    html = guards_html(GUARDS)
    assert html.count("<details class=\"ds-guard-group\"") == 5 and " open>" not in html
    assert '<span class="ds-chip">TENSOR_MATCH 2</span>' in html
    assert "<summary>f.py:2 in f</summary>" not in html and "<summary>m.py:9 in forward</summary>" in html  # innermost line
    filtered = guards_html(GUARDS, "backend")
    assert "1 of 7 guard(s) in 1 group(s)" in filtered and filtered.count(" open>") == 1


def test_packed_guard_rows_restore_exactly():
    # Note [Packed guard rows]: the page's restore, done here in Python, gives back every string.
    for grp in group_guards(GUARDS):
        for g, rel in grp.rows:
            src, kind, code, _, _ = json.loads(json.dumps(_guard_row(g, grp.title, 0, rel)))
            if src.startswith("\x02"):
                src = grp.title + src[1:]
            assert (src, kind, [c.replace("\x01", src) for c in code]) == (g.source, g.kind, g.code)
    report = guards_html(GUARDS, report=True)
    assert '<script type="application/json" class="ds-guard-data">' in report and "<tbody></tbody>" in report


def test_shared_read_only_guards_are_rendered_once_by_identity(monkeypatch):
    # Note [Shared guards rendered once]: another frame's list of the same read-only guards is the text
    # the editable guards give, without encoding them again; an editable list still goes by digest.
    import viz.panels as panels
    from tracer.model.read_only import freeze_guards

    shared = freeze_guards(GUARDS)
    first = guards_html(list(shared), report=True)
    assert first == guards_html(list(GUARDS), report=True)

    def no_digest(*_a, **_k):
        raise AssertionError("the guards were encoded again")

    monkeypatch.setattr(panels.hashlib, "sha256", no_digest)
    assert guards_html(list(shared), report=True) == first  # a second frame holding the same guards
    with pytest.raises(AssertionError):
        guards_html(list(GUARDS), report=True)  # editable guards: by digest


# -- graph breaks ------------------------------------------------------------------------------------

REASON = ("Encountered graph break when attempting to trace CALL: a function call:\n\n"
          "logging.Logger method not supported\n  Explanation: not supported.\n  Hint: Add it to `ignore_logging_functions`.\n"
          "\n  Developer debug context: <Logger>\n")


def test_a_break_is_shown_once_per_cause_with_its_count_type_and_hint():
    cap = wrap_capture()  # one logging line reached with four arguments: one cause, one row
    cap.graph_breaks = [GraphBreak(REASON.replace("<Logger>", f"<Logger> args: [{i}]"), "m.py:7", ["m.py:7 in f"],
                                   "0/0", "log.warning(x)") for i in range(4)]
    html = overview_html(cap)
    rows = re.findall(r"<tr><td>&times;(\d+)</td>", html)
    assert rows == ["4"] and html.count("logging.Logger method not supported</summary>") == 1
    assert html.count("Developer debug context") == 1  # the first full reason once, folded
    assert "<div>not supported.</div>" in html and "the first of 4" in html
    assert "<code>log.warning(x)</code>" in html and "Add it to `ignore_logging_functions`." in html


def test_an_attempt_that_did_not_compile_shows_its_cause_not_the_generic_line():
    cap = wrap_capture()
    cap.frames[0].status, cap.frames[0].status_reason = "failed", REASON
    html = overview_html(cap)
    assert "<summary>logging.Logger method not supported</summary>" in html
    assert "<summary>Encountered graph break" not in html


# -- time chart -------------------------------------------------------------------------------------

def test_time_chart_splits_torch_numbers_and_guesses_nothing():
    f0 = Frame("0/0", "f.py:1 in f", status="restarted", times={"total": 1.0, "dynamo": 1.0})
    f1 = Frame("0/0_1", "f.py:1 in f", times={"total": 4.0, "dynamo": 2.5, "backend": 1.5, "aot_autograd": 1.5,
                                              "before_restart": 1.0})
    f2 = Frame("1/0", "g.py:1 in g", status="failed")  # torch reported nothing
    got = {b.compile_id: [(s.phase, s.seconds) for s in b.segments] for b in bars(Capture(frames=[f0, f1, f2]))}
    assert got == {"0/0": [("dynamo", 1.0)],
                   "0/0_1": [("before restart", 1.0), ("dynamo", 1.5), ("aot_autograd", 1.5)],
                   "1/0": []}
    svg = overview_html(Capture(frames=[f0, f1, f2]))
    assert svg.count("<svg") == 1 and ">?</text>" in svg  # the unreported total says so


# -- drawings ---------------------------------------------------------------------------------------

def _unpack(p: dict, strings: list[str]) -> list[dict]:
    keys = ("id", "label", "sub", "role", "x", "y", "w", "h", "group", "part", "src")
    out = []
    for row in p["b"]:
        b = {k: (strings[v] if i in (2, 3, 8, 9, 10) else v) for i, (k, v) in enumerate(zip(keys, row, strict=False)) if v != 0}
        b.setdefault("label", b["id"])
        b.setdefault("sub", "")
        out.append(b)
    return out


def test_packed_drawing_unpacks_to_the_canvas_drawing():
    g = chain_graph(120, layers=3)
    d = drawing(layout(g, engine="linear", threshold=10_000))
    table = {"": 0}
    p = pack(d, table)
    strings = list(table)
    assert _unpack(p, strings) == d["boxes"]
    for (si, di, *pts), e in zip(p["e"], d["edges"], strict=True):
        s, t_ = d["boxes"][si], d["boxes"][di]
        assert (s["id"], t_["id"]) == (e["src"], e["dst"])
        if pts:
            assert pts[0] == e["pts"]
        else:  # the plain S-curve the page rebuilds
            y0, y1 = s["y"] + s["h"], t_["y"]
            want = [s["x"] + s["w"] / 2, y0, s["x"] + s["w"] / 2, (y0 + y1) / 2, t_["x"] + t_["w"] / 2, (y0 + y1) / 2,
                    t_["x"] + t_["w"] / 2, y1]
            assert all(abs(a - b) <= 0.11 for a, b in zip(e["pts"], want, strict=True))


def _nodes_in(p: dict) -> list[str]:
    """Node names drawn in packed drawing ``p`` and, at any depth, in the drawings of its module boxes."""
    return [n for row in p["b"] for n in (_nodes_in(p["open"][row[0]]) if row[0] in p.get("open", {}) else [row[0]])]


def test_every_module_box_of_the_report_opens_on_its_own_nodes_one_level_down():
    g = chain_graph(400, layers=4)
    table = {"": 0}
    d = graph_drawing(g, [], table)
    boxes = _unpack(d, list(table))
    groups = [b for b in boxes if "group" in b]
    assert groups and set(d["open"]) == {b["id"] for b in groups}
    inside = [n for b in groups for n in _nodes_in(d["open"][b["id"]])]
    marked = graph_drawing(g, [inside[0]], {"": 0})  # a box holding a highlighted node is marked
    assert [h for h in marked["hi"] if h.startswith("module:")] == [b["id"] for b in groups
                                                                    if inside[0] in _nodes_in(d["open"][b["id"]])]
    # every node is drawn as its own box exactly once, at its module's level
    assert sorted(inside + [b["id"] for b in boxes if "group" not in b]) == sorted(n.name for n in g.nodes)
    layer = d["open"]["module:L['self'].layers.0"]  # a layer opens on its parts, each on its nodes
    parts = {row[0] for row in layer["b"] if row[0].startswith("module:")}
    assert {"module:L['self'].layers.0.self_attn", "module:L['self'].layers.0.norm1"} <= parts == set(layer["open"])
    assert all(not row[0].startswith("module:") for p in layer["open"].values() for row in p["b"])


# -- grouping of real-shaped graphs ----------------------------------------------------------------

def test_small_graphs_with_module_stacks_are_grouped_and_open_their_top_modules():
    g = chain_graph(60, layers=3)
    assert threshold_for(g) == 0 and layout(g, engine="linear").grouped
    first = first_expanded(g)
    lay = layout(g, engine="linear", expanded=first)
    assert len(lay.boxes) <= 20 and any(b.group for b in lay.boxes)


def _backward_like():
    """A backward graph: layer 0's box starts with an early node (a weight's transpose) but the gradient
    reaches it last; an accumulation add has no forward node."""
    def fwd(path):
        return {**t(3), "fwd_nn_module_stack": [[path, "Linear"]], "partition": "backward"}

    return graph("backward", [
        ("tangents_1", "placeholder", "tangents_1", [], "operand"),
        ("w0", "placeholder", "w0", [], "operand"),
        ("t_0", "call_function", "aten.t.default", ["w0"], "op", {"meta": fwd("L['self'].l0")}),
        ("mm_1", "call_function", "aten.mm.default", ["tangents_1"], "op", {"meta": fwd("L['self'].l1")}),
        ("view_1", "call_function", "aten.view.default", ["mm_1"], "op", {"meta": fwd("L['self'].l1")}),
        ("add_9", "call_function", "aten.add.Tensor", ["view_1", "tangents_1"], "op", {"meta": t(3)}),
        ("mm_0", "call_function", "aten.mm.default", ["add_9", "t_0"], "op", {"meta": fwd("L['self'].l0")}),
        ("output", "output", "output", ["mm_0"], "output", {"meta": {}}),
    ])


def test_backward_boxes_follow_the_gradient_and_accumulation_adds_show_as_no_module():
    g = _backward_like()
    chains = graph_chains(g)
    assert [c[-1][0] if c else "" for c in chains] == ["", "", "L['self'].l0", "L['self'].l1", "L['self'].l1",
                                                        NO_MODULE, "L['self'].l0", ""]  # add_9: torch gives it no module
    assert g.node("add_9").meta.get("fwd_nn_module_stack") is None  # the record is untouched
    vis = visible(g, {"L['self']"}, 0)  # (add_9 left it 4 of 8 nodes: not auto-opened)
    order = [it.id for it in vis.items]
    # topological, not first-node order (Note [Group boxes in topological order]); backward halves have their own box
    assert order.index("module:L['self'].l1 [backward]") < order.index("module:L['self'].l0 [backward]")


def test_report_draws_forward_and_backward_with_saved_values_marked():
    g = chain_graph(30, layers=1)
    fwd = graph("forward", [("primals_1", "placeholder", "primals_1", [], "operand"),
                            ("cos", "call_function", "aten.cos.default", ["primals_1"], "op"),
                            ("output", "output", "output", ["cos"], "output", {"meta": {}})])
    bwd = graph("backward", [("cos", "placeholder", "cos", [], "operand"),
                             ("neg", "call_function", "aten.neg.default", ["cos"], "op"),
                             ("output", "output", "output", ["neg"], "output", {"meta": {}})])
    aot = Aot("training", forward=fwd, backward=bwd, saved=[SavedValue("cos", "tensor", [3], "float32", 12, "activation")])
    html = viz.capture_html(Capture(frames=[Frame("0/0", "m.py:1 in f", graph=g, aot=aot)], fn="f"))
    block = json.loads(re.search(r'class="ds-drawings">([^<]*)</script>', html).group(1))
    kinds = re.findall(r'data-graph="(\d+)" data-kind="(\w+)"', html)
    hi = {k: block["graphs"][int(i)]["hi"] for i, k in kinds}
    assert hi == {"root": [], "forward": ["cos"], "backward": ["cos"]}
    assert GROUP_THRESHOLD == 300
    # the saved ``cos`` read by the backward is a dashed edge kind (Note [Saved values as their own edge kind])
    (bi,) = [int(i) for i, k in kinds if k == "backward"]
    edges = block["graphs"][bi]["e"]
    assert [e[3:] for e in edges] == [["saved"], []]  # cos -> neg is saved, neg -> output is the gradient
    assert viz.to_svg(layout(bwd, engine="linear")).count('class="edge saved"') == 1  # the static SVG too
    # and the DOT, where it does not rank (Note [Saved edges do not rank])
    assert viz.to_dot(bwd).count("[style=dashed constraint=false]") == 1


def test_module_rows_count_nodes_params_and_saved_bytes():
    cap = wrap_capture()
    f = cap.frames[0]
    for n in f.graph.nodes:
        if n.op != "placeholder" and n.op != "output":
            n.meta["nn_module_stack"] = [["L['self'].block", "Block"]]
    rows, untraced = module_rows(f)
    assert [(r.path, r.type, r.nodes) for r in rows] == [("L['self']", "", 5), ("L['self'].block", "Block", 5)]
    assert untraced == sum(s.nbytes for s in f.aot.saved)  # the fixture's saved values name no Dynamo node


def test_bench_report_size_runs_on_a_tiny_capture():
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root: `import bench`
    from bench import report_size

    res = report_size.run(repeat=1, size="tiny", browser=False, tlparse=False)
    assert res["report_bytes"] > 0 and res["report_write_seconds"] > 0 and res["explorer_build_seconds"] > 0


def test_frame_trie_follows_the_recorded_stack_else_the_file():
    from viz.panels import frame_trie

    a = Frame("0/0", "m.py:5 in forward", meta={"stack": ["run.py:3 in <module>", "m.py:5 in forward"]})
    b = Frame("1/0", "n.py:9 in loss", meta={"stack": ["run.py:3 in <module>", "n.py:9 in loss"]})
    c = Frame("2/0", "k.py:1 in g")  # a live capture: no stack in the record
    trie = frame_trie(Capture(frames=[a, b, c]))
    (run, kids, here), (kfile, kkids, _) = trie
    assert run == "run.py:3 in <module>" and here == [] and [k[0] for k in kids] == ["m.py:5 in forward", "n.py:9 in loss"]
    assert kids[0][2] == [a] and kids[1][2] == [b]
    assert kfile == "k.py" and kkids == [("k.py:1 in g", [], [c])]
    html = overview_html(Capture(frames=[a, c]))
    assert "the call stack above each frame is not in this record" not in html  # one frame has it
