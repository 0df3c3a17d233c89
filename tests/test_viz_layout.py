"""viz.layout: geometry invariants for both engines, engine choice, the deadline, caching, grouping."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest
from viz_fixtures import graph, root_graph

import viz
import viz.graph_layout as LAYOUT
from tracer.model import Graph
from viz import layout_dot, layout_linear
from viz.backward_groups import NO_MODULE
from viz.grouping import (
    GROUP_THRESHOLD,
    INPUTS_GROUP,
    default_expanded,
    module_chain,
    module_tree,
    split_path,
    threshold_for,
    visible,
)
from viz.synthetic import chain_graph, joint_like_graph

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz dot not installed")


def check_geometry(lay, tol: float = 2.0) -> None:
    """Boxes inside the drawing and not overlapping; every edge starts at its source and ends at its target."""
    boxes = {b.id: b for b in lay.boxes}
    assert len(boxes) == len(lay.boxes)
    for b in lay.boxes:
        assert 0 <= b.x and b.x + b.w <= lay.width + tol and 0 <= b.y and b.y + b.h <= lay.height + tol
    rows: dict[float, list] = {}
    for b in lay.boxes:
        rows.setdefault(b.y, []).append(b)
    for row in rows.values():
        row.sort(key=lambda b: b.x)
        for left, right in zip(row, row[1:], strict=False):
            assert left.x + left.w <= right.x + 0.01, (left, right)
    for e in lay.edges:
        assert (len(e.points) - 1) % 3 == 0 and len(e.points) >= 4  # cubic bezier control points
        s, d = boxes[e.src], boxes[e.dst]
        (x0, y0), (x1, y1) = e.points[0], e.points[-1]
        assert s.x - tol <= x0 <= s.x + s.w + tol and s.y - tol <= y0 <= s.y + s.h + tol, (e, s)
        assert d.x - tol <= x1 <= d.x + d.w + tol and d.y - tol <= y1 <= d.y + d.h + tol, (e, d)


def test_linear_layout_of_small_graph():
    g = root_graph()
    lay = viz.layout(g, engine="linear")
    assert lay.engine == "linear" and not lay.grouped and lay.note == ""
    assert [b.id for b in lay.boxes] == [n.name for n in g.nodes]
    assert {(e.src, e.dst) for e in lay.edges} == {(i, n.name) for n in g.nodes for i in n.inputs}
    check_geometry(lay)
    y = {b.id: b.y for b in lay.boxes}
    # rank = longest-path depth: wrap (reads y, which reads l_x_) sits two rows below l_x_; the source
    # wrap_body_0 (a get_attr) sits just above its user, beside y
    assert y["l_x_"] < y["y"] == y["wrap_body_0"] < y["wrap"] < y["getitem"] < y["mul"] < y["output"]
    box = lay.box("wrap")
    assert (box.label, box.sublabel, box.role, box.group, box.count) == (
        "wrap", "wrap(wrap_body_0) · (f32[3])", "hop", None, 1)


def test_long_edges_run_in_lanes_right_of_all_boxes():
    g = joint_like_graph(60, layers=2)
    lay = viz.layout(g, engine="linear", threshold=GROUP_THRESHOLD)  # flat, to get long edges
    check_geometry(lay)
    right = max(b.x + b.w for b in lay.boxes)
    row = {y: i for i, y in enumerate(sorted({b.y for b in lay.boxes}))}
    rank = {b.id: row[b.y] for b in lay.boxes}
    long_edges = [e for e in lay.edges if rank[e.dst] - rank[e.src] > 1]
    assert len(long_edges) > 20
    for e in long_edges:
        assert max(x for x, _ in e.points) > right  # detours through a lane, never across boxes


@needs_dot
def test_dot_layout_of_small_graph():
    layout_dot.cache_clear()
    lay = viz.layout(root_graph(), engine="auto")
    assert lay.engine == "dot" and lay.note == ""
    check_geometry(lay)
    y = {b.id: b.y for b in lay.boxes}
    assert y["l_x_"] < y["y"] < y["wrap"] < y["output"]


def test_auto_sends_long_edged_graphs_to_the_linear_layout():
    g = joint_like_graph(400)  # far over DOT_MAX_VIRTUAL: dot would take minutes (Note [dot limits])
    vis = visible(g, (), 10**9)
    boxes = LAYOUT._boxes(vis.items, 40)
    assert LAYOUT.virtual_nodes(boxes, vis.edges) > LAYOUT.DOT_MAX_VIRTUAL
    lay = viz.layout(g, threshold=10**9)
    assert lay.engine == "linear" and "virtual nodes" in lay.note
    check_geometry(lay)


def test_auto_sends_many_boxes_to_the_linear_layout(monkeypatch):
    monkeypatch.setattr(layout_dot, "run_dot", lambda *a, **k: pytest.fail("dot must not run"))
    lay = viz.layout(chain_graph(LAYOUT.DOT_MAX_BOXES + 50), threshold=10**9)
    assert lay.engine == "linear" and "boxes" in lay.note


def test_deadline_kills_a_slow_dot(tmp_path, monkeypatch):
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    layout_dot.cache_clear()
    lay = viz.layout(root_graph(), engine="dot", deadline=0.5)
    assert lay.engine == "linear" and "did not finish within 0.5 s" in lay.note
    check_geometry(lay)
    layout_dot.cache_clear()


def test_missing_dot_falls_back(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    layout_dot.cache_clear()
    lay = viz.layout(root_graph(), engine="dot")
    assert lay.engine == "linear" and lay.note


@needs_dot
def test_layout_cache_keyed_by_dot_text(monkeypatch):
    layout_dot.cache_clear()
    calls = []
    real = layout_dot.subprocess.run
    monkeypatch.setattr(layout_dot.subprocess, "run", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = viz.layout(root_graph())
    second = viz.layout(root_graph())
    assert len(calls) == 1 and first == second and first.engine == "dot"
    viz.layout(graph("", [("z", "placeholder", "z", [], "operand")]))
    assert len(calls) == 2


def test_bad_arguments_name_choices():
    with pytest.raises(ValueError, match=r"must be one of \['auto', 'dot', 'linear'\]"):
        viz.layout(root_graph(), engine="elk")
    with pytest.raises(ValueError, match="deadline"):
        viz.layout(root_graph(), deadline=0)


def test_to_dict_is_json_friendly():
    lay = viz.layout(root_graph(), engine="linear")
    d = json.loads(json.dumps(lay.to_dict()))
    assert d["engine"] == "linear" and len(d["boxes"]) == 7
    assert d["boxes"][0]["id"] == "l_x_" and isinstance(d["edges"][0]["points"][0], list)


def test_empty_graph():
    lay = viz.layout(Graph(), engine="auto")
    assert lay.boxes == [] and lay.edges == [] and lay.width > 0 and lay.height > 0


# -- grouping ----------------------------------------------------------------------------------


def test_split_path_nests_module_lists():
    assert split_path("L['self'].layers.0.norm1") == [
        "L['self']", "L['self'].layers", "L['self'].layers.0", "L['self'].layers.0.norm1"]
    assert split_path("L['fn'].layers[3]") == ["L['fn']", "L['fn'].layers", "L['fn'].layers[3]"]
    assert split_path("G['a.b']") == ["G['a.b']"]  # a dot inside quotes is not a separator


def test_grouping_kicks_in_above_the_threshold():
    g = chain_graph(290, layers=2)
    assert not viz.layout(g, engine="linear", threshold=GROUP_THRESHOLD).grouped  # at most 300 nodes: every node shows
    assert viz.layout(g, engine="linear").grouped  # but module stacks group whatever the size
    bare = chain_graph(290, layers=2)
    for n in bare.nodes:
        n.meta.pop("nn_module_stack", None)
    assert threshold_for(bare) == GROUP_THRESHOLD and not viz.layout(bare, engine="linear").grouped
    g = chain_graph(400, layers=2)
    lay = viz.layout(g, engine="linear")
    assert lay.grouped
    assert [b.id for b in lay.boxes] == ["l_x_", "module:L['self'].layers.0", "module:L['self'].layers.1", "output"]
    groups = [b for b in lay.boxes if b.group]
    assert all(b.role == "group" for b in groups) and sum(b.count for b in groups) == len(g.nodes) - 2
    assert groups[0].group == "L['self'].layers.0" and groups[0].sublabel.startswith("TransformerEncoderLayer")
    assert [(e.src, e.dst) for e in lay.edges] == [
        ("l_x_", "module:L['self'].layers.0"), ("module:L['self'].layers.0", "module:L['self'].layers.1"),
        ("module:L['self'].layers.1", "output")]


def test_groups_nest_and_expand():
    g = chain_graph(3000, layers=12)
    tree = module_tree(g)
    assert tree[""] == ["L['self']"] and tree["L['self']"] == ["L['self'].layers"]
    assert tree["L['self'].layers"] == [f"L['self'].layers.{i}" for i in range(12)]
    lay = viz.layout(g)
    assert len(lay.boxes) == 14  # input, 12 layers, output
    opened = viz.layout(g, expanded={"L['self'].layers.3"})
    ids = [b.id for b in opened.boxes]
    assert "module:L['self'].layers.3" not in ids and "module:L['self'].layers.2" in ids
    in_layer3 = {n.name for n in g.nodes if "L['self'].layers.3" in [p for p, _ in module_chain(n)]}
    inner = [b for b in opened.boxes if (b.group or "").startswith("L['self'].layers.3.") or b.id in in_layer3]
    assert any(b.group for b in inner) and any(not b.group for b in inner)  # one-node groups show the node
    assert sum(b.count for b in inner) == lay.box("module:L['self'].layers.3").count == len(in_layer3)
    assert sum(b.count for b in opened.boxes) == sum(b.count for b in lay.boxes) == len(g.nodes)
    check_geometry(opened)


def test_default_expanded_fills_up_to_the_threshold():
    g = chain_graph(3000, layers=12)
    exp = default_expanded(g)
    shown = visible(g, exp)
    assert 14 < len(shown.items) <= 300
    assert default_expanded(chain_graph(100)) == frozenset()


def test_10k_graph_lays_out_only_visible_boxes(monkeypatch):
    g = chain_graph(10_000, layers=12)
    seen = {}
    real_dot, real_place = layout_dot.run_dot, layout_linear.place

    def spy_dot(source, deadline, *, capped):
        seen["dot"] = source.count("[width=")
        return real_dot(source, deadline, capped=capped)

    def spy_place(boxes, edges):
        seen["linear"] = len(boxes)
        return real_place(boxes, edges)

    monkeypatch.setattr(layout_dot, "run_dot", spy_dot)
    monkeypatch.setattr(layout_linear, "place", spy_place)
    lay = viz.layout(g)
    assert lay.grouped and len(lay.boxes) == 14
    assert seen.get("dot", seen.get("linear")) == 14  # whichever engine ran saw 14 boxes, not 10,000
    lay = viz.layout(g, expanded=default_expanded(g))
    assert len(lay.boxes) <= 300 and max(seen.values()) <= 300


def test_folded_groups_may_form_cycles():
    # A shared module called twice with an op between: its group reads the op and the op reads it.
    stack = {"nn_module_stack": [["L['self'].act", "ReLU"]]}
    specs = [("x", "placeholder", "x", [], "operand")]
    prev = "x"
    for i in range(4):
        specs.append((f"relu_{i}", "call_function", "aten.relu.default", [prev], "op",
                      {"meta": {"kind": "tensor", "dtype": "float32", "shape": [3], **stack}}))
        specs.append((f"mul_{i}", "call_function", "aten.mul.Tensor", [f"relu_{i}"], "op"))
        prev = f"mul_{i}"
    specs.append(("output", "output", "output", [prev], "output", {"meta": {}}))
    g = graph("", specs)
    for engine in ("linear", "auto"):
        lay = viz.layout(g, threshold=3, engine=engine)
        assert lay.box("module:L['self'].act").count == 4
        assert ("mul_0", "module:L['self'].act") in {(e.src, e.dst) for e in lay.edges}
        check_geometry(lay)


@pytest.mark.slow
def test_real_12_layer_transformer_joint_graph_opens():
    """Issue 4: the AOT joint graph of a 12-layer TransformerEncoder (dot: not within 300 s) must open."""
    torch = pytest.importorskip("torch")
    import tracer

    layer = torch.nn.TransformerEncoderLayer(32, 2, 64, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
    cap = tracer.capture(model, torch.randn(2, 5, 32), backward=True)
    f = cap.frames[0]
    joint = f.aot.joint
    assert len(joint.nodes) > 1500
    lay = viz.layout(joint)
    assert lay.grouped and len(lay.boxes) <= 300
    check_geometry(lay)
    groups = {b.id: b for b in lay.boxes if b.group}
    assert groups[f"module:{INPUTS_GROUP}"].count > 100  # primals and tangents fold (Note [Folded inputs])
    layer_paths = sorted({b.group for b in groups.values() if b.group not in (INPUTS_GROUP, NO_MODULE)},
                         key=lambda p: int(p.rsplit(".", 1)[-1]))
    assert len(layer_paths) == 12 and all(".layers." in p for p in layer_paths)
    # each layer shows as a forward box and a backward box (Note [Joint graph groups])
    fwd, bwd = groups[f"module:{layer_paths[3]}"], groups[f"module:{layer_paths[3]} [backward]"]
    assert fwd.group == bwd.group == layer_paths[3] and bwd.sublabel.startswith("backward")
    opened = viz.layout(joint, expanded={layer_paths[3]})
    assert len(opened.boxes) > len(lay.boxes) and f"module:{layer_paths[3]}" not in {b.id for b in opened.boxes}
    check_geometry(opened)
    # the whole joint graph, ungrouped, never goes to dot
    whole = viz.layout(joint, threshold=10**9)
    assert whole.engine == "linear" and len(whole.boxes) == len(joint.nodes) and whole.note
    # the Dynamo graph folds into its 12 layers
    root = viz.layout(f.graph)
    assert root.grouped and sum(1 for b in root.boxes if b.group) == 12


def test_many_module_less_inputs_fold_into_one_box():
    g = joint_like_graph(400, layers=4)
    for k in range(20):  # twenty parameters as placeholders, like an AOT graph's primals
        g.nodes.insert(1, graph("", [(f"primals_p{k}", "placeholder", f"primals_p{k}", [], "param")]).nodes[0])
    lay = viz.layout(g, engine="linear")
    box = lay.box(f"module:{INPUTS_GROUP}")
    assert box.group == INPUTS_GROUP and box.count == 22  # primals_1, tangents_1 and the twenty
    assert not any(b.id.startswith("primals_") for b in lay.boxes)
    opened = viz.layout(g, expanded={INPUTS_GROUP}, engine="linear")
    assert "primals_p0" in {b.id for b in opened.boxes} and f"module:{INPUTS_GROUP}" not in {b.id for b in opened.boxes}
    few = viz.layout(joint_like_graph(400, layers=4), engine="linear")  # two inputs: nothing to fold
    assert {"primals_1", "tangents_1"} <= {b.id for b in few.boxes}
