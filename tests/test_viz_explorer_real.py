"""The explorer widget without a browser, on real captures: every example case (tests/cases.py) walked
end to end, an AOT training capture's partition, a large joint graph, a 12-layer transformer."""

from __future__ import annotations

import json

import pytest
from cases import CASES
from explorer_capture import _state

from tracer.model import Aot, Capture, Frame
from viz.explorer import Explorer, collapsed_groups
from viz.markup import human_bytes
from viz.mimebundle import mimebundle
from viz.synthetic import chain_graph, joint_like_graph

# -- real captures (tests/cases.py and an AOT training capture) --------------------------------------


def _walk_everything(ex: Explorer) -> None:
    """Open every frame and graph, inspect every node, click every HOP node like the browser does."""
    for f in ex.capture.frames:
        for name, g in f.graphs().items():
            ex.select(name, frame=f.compile_id)
            assert ex.canvas.box_ids() == [b.id for b in ex._layouts.get(g, ex.expanded).boxes]
            for n in g.nodes:
                ex.select_node(n.name)
                info = ex.inspector
                json.dumps(info)
                assert info["name"] == n.name and info["op"] == n.op
                if n.op == "placeholder" and name:
                    # a body placeholder says where it came from, through every enclosing body
                    inp = f.subgraphs[name].input(n.name)
                    if inp.kind == "hop_supplied":  # made by the HOP (a slice, a carry, a gradient)
                        assert info["supplied"].endswith(inp.supplied) and "lifted_chain" not in info
                        assert info.get("derived_from", {}).get("node", "") == inp.source
                        continue
                    assert info["lifted_from"] == {"graph": f.subgraphs[name].parent, "node": inp.source}
                    assert info["lifted_chain"][0]["graph"] == name
            for hop in g.find(role="hop"):
                ex.select(name, frame=f.compile_id)
                ex.canvas.selected = hop.name
                bodies = [c for c in hop.calls if c in f.subgraphs]
                if bodies:
                    assert ex.graph_name == bodies[0] and ex.inspector["name"] == hop.name


@pytest.mark.parametrize("case", sorted(CASES))
def test_explorer_on_every_capture_case(captured, case):
    cap = captured(case)
    ex = Explorer(cap)
    assert str(ex).startswith(str(cap))
    _walk_everything(ex)
    # the tree lists every body of the frame, labelled with its HOP and lifted count
    for f in cap.frames:
        ex.select("", frame=f.compile_id)
        labels = dict((v, label) for label, v in ex._tree.options)
        for qn, sg in f.subgraphs.items():
            assert f"[{sg.hop}]" in labels[qn] and f"{len(sg.lifted)} lifted" in labels[qn]
    if any(f.aot is not None for f in cap.frames):
        ex.partition_view()
    # the JSON copy of the capture gives the same widget state
    b = Explorer(Capture.from_json(cap.to_json()))
    a = Explorer(cap)
    for e in (a, b):
        if cap.frames and cap.frames[0].subgraphs:
            e.select(next(iter(cap.frames[0].subgraphs)))
    assert _state(a) == _state(b)
    bundle = mimebundle(cap)
    assert bundle["text/plain"] == str(cap) and "<svg" in bundle["text/html"]


def test_explorer_partition_of_a_real_training_capture():
    import torch

    import tracer

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    cap = tracer.capture(m, torch.randn(3, 4), backward=True)
    (frame,) = [f for f in cap.frames if f.aot is not None]
    a = frame.aot
    assert a.mode == "training" and a.saved
    ex = Explorer(cap)
    ex.select("", frame=frame.compile_id)
    view = ex.partition_view()
    assert view.sides() == {"left": "forward", "right": "backward"}
    saved = [s.name for s in a.saved]
    # every saved value is a node on both sides, and both canvases mark it
    for side, g in (("left", a.forward), ("right", a.backward)):
        names = {n.name for n in g.nodes}
        assert set(saved) <= names
        assert f"{len(saved)} saved value(s) marked" in view._titles[side].value
    assert f"Saved for backward: {len(a.saved)} value(s), {human_bytes(a.saved_bytes)}" in view.tables.value
    assert f"activations {human_bytes(a.activation_bytes)}" in view.tables.value
    view.canvases["right"].selected = saved[0]
    first = a.saved[0]
    assert view.info["name"] == saved[0] and view.inspector.info == view.info
    assert view.info["saved_for_backward"] == f"{human_bytes(first.nbytes)}, {first.origin}"
    if a.joint is not None:
        view.choice.value = "joint"
        assert view.sides() == {"left": "joint"} and view.canvases["left"].box_ids()
        left, right = view._pair.children  # the joint graph alone uses the whole width
        assert left.layout.width == "100%" and right.layout.display == "none"


def test_partition_opens_for_a_large_joint_graph():

    joint = joint_like_graph(6000)
    aot = Aot("training", joint=joint, forward=chain_graph(3000, name="forward"),
              backward=chain_graph(3000, name="backward"))
    cap = Capture(frames=[Frame("0/0", "big.py:1 in forward", graph=chain_graph(2000), aot=aot)], fn="Big")
    ex = Explorer(cap)
    view = ex.partition_view()
    view.choice.value = "joint"
    lay = ex._layouts.get(joint)
    assert lay.grouped and len(lay.boxes) < 600
    assert len(view.canvases["left"].group_paths()) >= 1
    group = collapsed_groups(lay)[0]
    view.canvases["left"].expanded = [group]  # a click on a module box
    assert len(ex._layouts.get(joint, frozenset([group])).boxes) > len(lay.boxes)


@pytest.mark.slow
def test_explorer_on_a_real_12_layer_transformer():
    """Issue 4: the 12-layer transformer's graph opens grouped, a layer expands, nodes inside inspect,
    and the Partition view opens the joint graph."""
    import torch

    import tracer

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 2, 64, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
    cap = tracer.capture(model, torch.randn(2, 5, 32), backward=True)
    ex = Explorer(cap)
    g = ex.graph
    lay = ex._layouts.get(g, ex.expanded)
    assert lay.grouped and len(lay.boxes) < 300
    layers = [p for p in collapsed_groups(lay) if p.endswith(".layers.3")]
    assert layers, collapsed_groups(lay)
    ex.canvas.expanded = [*ex.canvas.expanded, layers[0]]  # a click on the layer's box
    assert layers[0] in ex.expanded
    inside = [b.id for b in ex._layouts.get(g, ex.expanded).boxes if not b.group and b.id in {n.name for n in g.nodes}
              and any(layers[0] == p for p, _ in g.node(b.id).meta.get("nn_module_stack", []))]
    assert inside and inside[0] in ex.canvas.box_ids()
    ex.canvas.selected = inside[0]
    assert ex.inspector["nn_module"].startswith(layers[0])
    view = ex.partition_view()
    view.choice.value = "joint"
    joint = ex._layouts.get(cap.frames[0].aot.joint)
    assert joint.grouped and view.canvases["left"].group_paths()
