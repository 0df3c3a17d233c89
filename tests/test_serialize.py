"""tracer/model/serialize.py: each way a document can be wrong is one ValueError with this exact text.

Hand-built captures, no torch: the schema check, the never-serialized result, msgspec's strict
typing (no "1.5" -> 1.5 coercion, in fields and in value meta), the path of a bad value meta through
lists and dicts of dataclasses, and the document kind (``what``) named in every message.
"""

from __future__ import annotations

import json

import pytest

from tracer.model import Capture, Frame, Graph, Node, Subgraph, SubgraphInput
from tracer.model.serialize import SCHEMA_VERSION, dumps, load_document, loads


def _capture() -> Capture:
    x = Node("x", "placeholder", "x", role="operand", meta={"kind": "tensor", "shape": [3]})
    root = Graph(nodes=[x, Node("output", "output", "output", inputs=["x"], role="output")])
    body = Graph(nodes=[Node("a", "placeholder", "a", role="operand"),
                        Node("output", "output", "output", inputs=["a"], role="output")], name="wrap_body_0")
    sg = Subgraph("wrap_body_0", "wrap", "", "wrap", body, [SubgraphInput("a", "operand", "x", meta={"kind": "tensor"})])
    return Capture(frames=[Frame("0/0", "f.py:1 in f", root, {"wrap_body_0": sg}, times={"total": 1.5})], fn="f")


def _doc() -> dict:
    return json.loads(dumps(_capture()))


def _error(doc: dict, **kw) -> str:
    with pytest.raises(ValueError) as e:
        if kw:
            load_document(json.dumps(doc), cls=Capture, **kw)
        else:
            loads(json.dumps(doc), Capture)
    return str(e.value)


def test_round_trip():
    assert loads(dumps(_capture()), Capture) == _capture()
    assert json.loads(dumps(_capture()))["schema"] == SCHEMA_VERSION == 2


def test_limits_round_trip_apart_from_problems():
    """Note [Limits of the source]: limits are their own list in the document, typed like problems."""
    cap = _capture()
    cap.problems, cap.limits = ["line 3: metadata is not JSON"], ["loaded from a log: no speculations", "x"]
    doc = json.loads(dumps(cap))
    assert doc["capture"]["problems"] == ["line 3: metadata is not JSON"]
    assert doc["capture"]["limits"] == ["loaded from a log: no speculations", "x"]
    back = loads(dumps(cap), Capture)
    assert back == cap and back.limits == cap.limits and back.problems == cap.problems
    assert loads(dumps(_capture()), Capture).limits == []
    doc["capture"]["limits"] = ["ok", 3]
    assert _error(doc) == "invalid capture file: $.limits[1]: Expected `str`, got `int`"
    doc["capture"]["limits"] = "not a list"
    assert _error(doc) == "invalid capture file: $.limits: Expected `array`, got `str`"
    del doc["capture"]["limits"]  # a capture saved before limits existed: none
    assert loads(json.dumps(doc), Capture).limits == []


def test_another_schema_is_refused_with_what_this_version_reads():
    doc = _doc()
    doc["schema"] = 1
    assert _error(doc) == "unsupported capture schema 1 (this dynascope reads 2; make the capture again with this version)"
    del doc["schema"]
    assert _error(doc).startswith("unsupported capture schema None (")


def test_no_schema_asked_reads_any():
    doc = _doc()
    doc["schema"] = 99
    assert load_document(json.dumps(doc), key="capture", cls=Capture, what="thing") == _capture()


def test_a_result_is_never_read():
    doc = _doc()
    doc["capture"]["result"] = 1
    assert _error(doc) == "$.capture.result: a capture's result is never serialized"


def test_types_are_strict():
    doc = _doc()
    doc["capture"]["frames"][0]["times"]["total"] = "1.5"
    assert _error(doc) == "invalid capture file: $.frames[0].times[...]: Expected `float`, got `str`"


def test_value_meta_is_strict_and_named_by_its_path_through_dicts_and_lists():
    doc = _doc()
    doc["capture"]["frames"][0]["subgraphs"]["wrap_body_0"]["inputs"][0]["meta"]["requires_grad"] = "true"
    want = ".frames[0].subgraphs.wrap_body_0.inputs[0].meta.requires_grad: Expected `bool`, got `str`"
    assert _error(doc) == "invalid capture file: $" + want
    assert _error(doc, key="capture", what="thing") == "invalid thing file: $" + want


def test_value_meta_of_a_node():
    doc = _doc()
    doc["capture"]["frames"][0]["graph"]["nodes"][0]["meta"]["shape"] = ["3", 1.5]
    assert _error(doc, key="capture", what="thing") == (
        "invalid thing file: $.frames[0].graph.nodes[0].meta.shape[1]: Expected `int | str`, got `float`")


def test_not_json_and_not_an_object():
    with pytest.raises(ValueError, match=r"^not a dynascope thing: the text is not JSON \("):
        load_document("[1", key="k", cls=Capture, what="thing")
    with pytest.raises(ValueError, match=r"^not a dynascope thing: expected a JSON object with a 'k' key$"):
        load_document("[]", key="k", cls=Capture, what="thing")


def test_bytes_are_utf8_json_or_one_error_saying_binary():
    text = dumps(_capture())
    assert loads(text.encode(), Capture) == _capture() == loads(bytearray(text.encode()), Capture)
    assert loads(b"\xef\xbb\xbf" + text.encode(), Capture) == _capture()  # a BOM is not part of the document
    png = b"\x89PNG\r\n\x1a\n\x00\x00"
    with pytest.raises(ValueError) as e:
        load_document(png, key="k", cls=Capture, what="thing")
    assert str(e.value) == "not a dynascope thing: binary data, not JSON text (byte 0x89 at offset 0 is not UTF-8)"
    latin1 = b'{"schema": 2, "capture": {"fn": "caf\xe9"}}'
    with pytest.raises(ValueError) as e:
        loads(latin1, Capture)
    assert str(e.value) == ("not a dynascope capture: binary data, not JSON text "
                            f"(byte 0xe9 at offset {latin1.index(0xe9)} is not UTF-8)")
