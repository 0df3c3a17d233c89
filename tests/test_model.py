"""The data model and the fx converter: JSON-friendly, validated, never holding torch objects."""

from __future__ import annotations

import json

import pytest
import torch

import tracer
from tracer._torch.fx_graph import graph_from_fx, meta_of
from tracer.model import Capture, Frame, Graph, Node, Subgraph, SubgraphInput, ValidationError, validate


def _plain(obj):
    return json.loads(json.dumps(obj))  # raises on anything not JSON-friendly


def test_meta_of_values():
    assert meta_of(torch.zeros(2, 3, dtype=torch.bfloat16)) == {
        "kind": "tensor", "shape": [2, 3], "stride": [3, 1], "dtype": "bfloat16", "device": "cpu", "requires_grad": False,
    }
    assert meta_of(None) == {"kind": "none", "value": "None"}
    assert meta_of((1, 2.0))["items"] == [{"kind": "int", "value": "1"}, {"kind": "float", "value": "2.0"}]
    assert meta_of(object()) == {"kind": "opaque", "type": "object"}
    p = meta_of(torch.nn.Parameter(torch.ones(1)))
    assert p["requires_grad"] is True and "subclass" not in p

    class Broken:
        def __len__(self):
            raise RuntimeError("no")

    assert meta_of([Broken()])["items"][0]["kind"] == "opaque"


def test_graph_from_fx_symbolic_trace():
    gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    g = graph_from_fx(gm, "seq")
    _plain([n.meta for n in g.nodes])
    assert [n.op for n in g.nodes] == ["placeholder", "call_module", "call_module", "output"]
    assert g.nodes[1].target == "0" and g.nodes[1].inputs == ["input_1"] and g.nodes[1].users == ["_1"]
    assert g.output.role == "output" and g.name == "seq"
    assert "\x1b[" not in g.code and "def forward" in g.code


def test_graph_from_fx_make_fx_symbolic():
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: torch.mm(x, x.t()), tracing_mode="symbolic")(torch.randn(3, 4))
    g = graph_from_fx(gm)
    mm = g.find(target="aten.mm.default")[0]
    s0 = g.placeholders[0].meta["shape"][0]
    assert isinstance(s0, str) and mm.meta["shape"] == [s0, s0]
    _plain([n.meta for n in g.nodes])


def _tiny() -> Capture:
    root = Graph(nodes=[
        Node("x", "placeholder", "x", role="operand", users=["wrap"]),
        Node("wrap", "call_function", "wrap", args=["wrap_body_0", "x"], inputs=["x"], role="hop", calls=["wrap_body_0"]),
        Node("output", "output", "output", inputs=["wrap"], role="output"),
    ])
    body = Graph(nodes=[Node("x", "placeholder", "x", role="operand"), Node("output", "output", "output", role="output")],
                 name="wrap_body_0")
    sg = Subgraph("wrap_body_0", "wrap", "", "wrap", body, [SubgraphInput("x", "operand", "x")])
    return Capture(frames=[Frame("0/0", "f.py:1 in f", root, {"wrap_body_0": sg})], fn="f")


def test_round_trip_and_validate_tiny():
    cap = _tiny()
    validate(cap)
    assert Capture.from_json(cap.to_json()) == cap


def test_validate_names_bad_kinds():
    cap = _tiny()
    cap.frames[0].subgraphs["wrap_body_0"].inputs[0].kind = "closure"
    with pytest.raises(ValidationError, match="closure"):
        validate(cap)


def test_from_json_rejects_foreign_text():
    with pytest.raises(ValueError, match="not a dynascope capture"):
        Capture.from_json("[1, 2]")


def test_load_of_a_binary_file_is_the_documented_error(tmp_path):
    path = tmp_path / "picture.json"
    path.write_bytes(bytes(range(128, 256)) + bytes(range(128)))
    with pytest.raises(ValueError) as e:
        Capture.load(str(path))
    assert str(e.value) == "not a dynascope capture: binary data, not JSON text (byte 0x80 at offset 0 is not UTF-8)"
    cap = _tiny()
    cap.save(str(path))
    assert Capture.load(str(path)) == cap


def test_result_is_not_serialized():
    cap = tracer.capture(lambda x: x * 2, torch.ones(2))
    assert torch.equal(cap.result, torch.full((2,), 2.0))
    assert "result" not in json.loads(cap.to_json())["capture"]


def test_find_filters_by_op_role_and_target_substring():
    g = _tiny().frames[0].graph
    assert [n.name for n in g.find(op="placeholder")] == ["x"]
    assert [n.name for n in g.find(op="call_function", role="hop")] == ["wrap"]
    assert [n.name for n in g.find(target="ra")] == ["wrap"]  # substring of "wrap"
    assert g.find(op="output", role="hop") == []


def test_frame_lookup_names_the_choices():
    cap = _tiny()
    assert cap.frame("0/0") is cap.frames[0]
    with pytest.raises(KeyError, match=r"no frame '9/9' \(frames: \['0/0'\]\)"):
        cap.frame("9/9")


def test_code_of_a_compile_torch_named_no_code_for():
    # Note [Code object from the frame id]: a refused compile takes the code an earlier attempt with
    # its frame id named; with no earlier attempt of that frame id it stays unknown
    from tracer.model.attempts import FrameCodes

    codes = FrameCodes()
    orphan, first, refused = Frame(compile_id="0/0", code=""), Frame(compile_id="1/0", code="f.py:2 in f"), Frame(compile_id="1/1", code="")
    first.meta["filename"] = "/src/f.py"
    codes.settle(orphan, (7, 0, 0))
    codes.settle(first, (3, 0, 0))
    codes.settle(refused, (3, 1, 0))
    assert (orphan.code, orphan.problems) == ("unknown", ["torch did not say which code object this compile was for"])
    assert (refused.code, refused.meta["filename"], refused.problems) == ("f.py:2 in f", "/src/f.py", [])
    later = Frame(compile_id="0/1", code="")
    codes.settle(later, (7, 1, 0))
    assert later.code == "unknown"  # the unknown of an earlier attempt is not a name to copy
