"""tracer.trace_log.events on hand-written records: each parser of the table, and what ``apply`` does with
a record no parser can read.

Every record here has the metadata and payload torch 2.13's ``trace_structured`` writes for that event
(checked against a TORCH_TRACE log of tests/trace_log_child.py: the event name first, then frame_id,
frame_compile_id, attempt; payloads as the log's tab lines hold them).
"""

from __future__ import annotations

import json

import pytest

from tracer.model.attempts import AttemptInfo
from tracer.model.guards import GraphBreak
from tracer.trace_log.events import PARSERS, LogState, apply
from tracer.trace_log.reader import Record

IDS = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}


def _rec(meta: dict, payload: str | None = None, line: int = 7) -> Record:
    return Record(meta, payload, line)


def _state() -> LogState:
    return LogState({0: "/venv/torch/_dynamo/convert_frame.py", 1: "/home/u/train.py"})


def _apply(*recs: Record, st: LogState | None = None) -> LogState:
    st = st or _state()
    for r in recs:
        apply(r, st)
    return st


# -- which compile attempt a record belongs to --------------------------------------------------
@pytest.mark.parametrize("ids, key", [
    ({"frame_id": 3, "frame_compile_id": 1, "attempt": 2}, (3, 1, 2)),
    ({"frame_id": 0, "frame_compile_id": 0}, (0, 0, 0)),  # no attempt: the first
    ({"frame_id": 3, "frame_compile_id": 1, "attempt": None}, (3, 1, 0)),
    ({"frame_id": 3, "frame_compile_id": 1, "attempt": -1}, (3, 1, 0)),  # damaged: not an attempt number
    ({"frame_id": 3, "frame_compile_id": 1, "attempt": True}, (3, 1, 0)),
    ({"frame_id": 3, "frame_compile_id": 1, "attempt": "1"}, (3, 1, 0)),
    ({"frame_compile_id": 1}, None),
    ({"frame_id": 3}, None),
    ({"frame_id": -1, "frame_compile_id": 0}, None),
    ({"frame_id": 0, "frame_compile_id": -1}, None),
    ({"frame_id": True, "frame_compile_id": 0}, None),
    ({"frame_id": 0, "frame_compile_id": False}, None),
    ({"frame_id": 1.0, "frame_compile_id": 0}, None),
    ({"frame_id": 0, "frame_compile_id": 0, "compiled_autograd_id": 0}, None),  # compiled autograd: no user frame
    ({"frame_id": 0, "frame_compile_id": 0, "compiled_autograd_id": 2, "attempt": 0}, None),
])
def test_attempt_key_from_torchs_ids(ids, key):
    st = _state()
    assert st.attempt(_rec({"dynamo_start": {"stack": []}, **ids})) == key
    assert st.order == ([key] if key else [])


def test_compiled_autograd_records_do_not_merge_into_user_frames():
    """torch's compiled autograd logs its graphs with a compiled_autograd_id beside frame ids of its own."""
    st = _apply(_rec({"dynamo_start": {"stack": []}, **IDS}),
                _rec({"dynamo_output_graph": {}, **IDS, "compiled_autograd_id": 0}, "class G(torch.nn.Module): ..."),
                _rec({"dynamo_start": {"stack": []}, **IDS, "compiled_autograd_id": 1}))
    assert st.order == [(0, 0, 0)]
    assert st.attempts[(0, 0, 0)].texts == {}
    assert st.problems == ["line 7: dynamo_output_graph not read (ValueError: no compile id in the metadata)",
                           "line 7: dynamo_start not read (ValueError: no compile id in the metadata)"]


def test_attempts_are_kept_in_the_order_the_log_first_names_them():
    st = _apply(*(_rec({"dynamo_start": {"stack": []}, "frame_id": f, "frame_compile_id": c, "attempt": a})
                  for f, c, a in [(1, 0, 0), (0, 0, 0), (1, 0, 0), (1, 0, 1)]))
    assert st.order == [(1, 0, 0), (0, 0, 0), (1, 0, 1)]
    assert list(st.attempts) == st.order


def test_stack_names_interned_files():
    st = _state()
    frames = [{"line": 28, "name": "<module>", "filename": 1, "loc": "main()"},
              {"line": 11, "name": "step", "filename": 0},
              {"line": 3, "name": "f", "filename": "/a/b/direct.py"},
              {"line": 4, "name": "g", "filename": 9},  # index never interned
              {"line": 5, "name": "h"},
              "not a frame"]
    assert st.stack(frames) == ["train.py:28 in <module>", "convert_frame.py:11 in step", "direct.py:3 in f",
                                "?:4 in g", "None:5 in h"]
    assert st.stack({"line": 1}) == [] and st.stack(None) == []


# -- the parsers -----------------------------------------------------------------------------------
def test_dynamo_start_keeps_its_stack():
    stack = [{"line": 28, "name": "<module>", "filename": 1}]
    st = _apply(_rec({"dynamo_start": {"stack": stack}, **IDS}),
                _rec({"dynamo_start": None, "frame_id": 1, "frame_compile_id": 0, "attempt": 0}),
                _rec({"dynamo_start": {}, "frame_id": 2, "frame_compile_id": 0, "attempt": 0}))
    assert [st.attempts[k].start_stack for k in st.order] == [stack, [], []]
    assert st.problems == [] and not st.ignored and not st.unknown


def test_compilation_metrics_belong_to_the_compile_and_name_the_final_attempt():
    m = {"compile_id": "0/0", "co_name": "f", "entire_frame_compile_time_s": 0.15, "restart_reasons": []}
    st = _apply(_rec({"compilation_metrics": m, "frame_id": 4, "frame_compile_id": 1, "attempt": 2}))
    assert st.info == {(4, 1): AttemptInfo(metrics=m, final_attempt=2)}
    bad = _apply(_rec({"compilation_metrics": [1], **IDS}, line=12), _rec({"compilation_metrics": {}}, line=13))
    assert bad.problems == ["line 12: compilation_metrics not read (ValueError: compilation_metrics is not an object)",
                            "line 13: compilation_metrics not read (ValueError: no compile id in the metadata)"]
    assert bad.info == {}


GRAPH = 'class GraphModule(torch.nn.Module):\n    def forward(self, L_x_: "f32[3][1]cpu"):\n        return (L_x_,)\n'


@pytest.mark.parametrize("event, kind", [("dynamo_output_graph", "dynamo"), ("aot_joint_graph", "joint"),
                                         ("aot_forward_graph", "forward"), ("aot_backward_graph", "backward"),
                                         ("aot_inference_graph", "inference")])
def test_graph_texts_by_kind(event, kind):
    st = _apply(_rec({event: {}, **IDS, "has_payload": "x"}, GRAPH, line=20))
    assert st.attempts[(0, 0, 0)].texts == {kind: (GRAPH, 20)}
    bad = _apply(_rec({event: {}, **IDS}, None, line=21))
    assert bad.problems == [f"line 21: {event} not read (ValueError: graph event without payload)"]


def test_guards_json_and_cpp_guard_tree():
    guards = [{"code": None, "guard_types": ["TENSOR_MATCH"], "name": "L['x']"}]
    st = _apply(_rec({"dynamo_guards": {}, **IDS}, json.dumps(guards)),
                _rec({"dynamo_cpp_guards_str": {}, **IDS}, "TREE_GUARD_MANAGER:\n+- RootGuardManager"))
    a = st.attempts[(0, 0, 0)]
    assert (a.guards_json, a.cpp_guards) == (guards, "TREE_GUARD_MANAGER:\n+- RootGuardManager")
    empty = _apply(_rec({"dynamo_cpp_guards_str": {}, **IDS}))
    assert empty.attempts[(0, 0, 0)].cpp_guards == "" and empty.problems == []
    bad = _apply(_rec({"dynamo_guards": {}, **IDS}, '{"a": 1}'), _rec({"dynamo_guards": {}, **IDS}),
                 _rec({"dynamo_guards": {}, **IDS}, "[1, "))
    assert bad.problems[:2] == ["line 7: dynamo_guards not read (ValueError: dynamo_guards payload is not a JSON list)"] * 2
    assert bad.problems[2].startswith("line 7: dynamo_guards not read (JSONDecodeError: ")
    assert bad.attempts[(0, 0, 0)].guards_json is None


# The payload of torch 2.13's dynamo_graph_break_reason artifact (symbolic_convert.py log_graph_break),
# as in a TORCH_TRACE log: head, reason, user traceback (traceback.format_list), then Dynamo's own traceback.
BREAK = """Graph break in user code at /home/u/train.py:13
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Call to `torch._dynamo.graph_break()`
  Explanation: User-inserted graph break. Message: None

User code traceback:
  File "/home/u/train.py", line 28, in <module>
    main()
  File "/home/u/train.py", line 19, in main
    f(torch.randn(2, 3), torch.randn(3, 3))
  File "/home/u/train.py", line 13, in hop_and_break
    torch._dynamo.graph_break()

Traceback (most recent call last):
  File "/venv/torch/_dynamo/symbolic_convert.py", line 1076, in wrapper
    return inner_fn(self, inst)
"""
REASON = ("Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):\n\n"
          "Call to `torch._dynamo.graph_break()`\n  Explanation: User-inserted graph break. Message: None")


def _break_rec(payload: str, ids: dict = IDS, line: int = 65) -> Record:
    return _rec({"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, **ids, "has_payload": "x"},
                payload, line)


def test_graph_break_reason_location_stack_and_code_line():
    st = _apply(_break_rec(BREAK, {"frame_id": 2, "frame_compile_id": 1, "attempt": 0}))
    assert st.breaks == [((2, 1, 0), GraphBreak(reason=REASON, location="train.py:13", code_line="torch._dynamo.graph_break()",
                                                user_stack=["train.py:28 in <module>", "train.py:19 in main",
                                                            "train.py:13 in hop_and_break"]))]
    assert st.info[(2, 1)].break_reasons == {0: [REASON]}
    st2 = _apply(_break_rec(BREAK.replace(", line 13, in hop_and_break\n    torch._dynamo.graph_break()",
                                          ", line 13, in hop_and_break"), {"frame_id": 2, "frame_compile_id": 1, "attempt": 1}),
                 st=st)
    assert st2.info[(2, 1)].break_reasons == {0: [REASON], 1: [REASON]}
    assert st2.breaks[1][1].code_line == ""  # the last frame printed no code line


def test_graph_breaks_of_one_attempt_and_outside_a_compile():
    second = BREAK.replace("train.py:13\n", "train.py:14\n", 1)
    st = _apply(_break_rec(BREAK), _break_rec(second), _break_rec(BREAK, {}))
    assert st.info[(0, 0)].break_reasons == {0: [REASON, REASON]}
    assert [(k, b.location) for k, b in st.breaks] == [((0, 0, 0), "train.py:13"), ((0, 0, 0), "train.py:14"),
                                                       (None, "train.py:13")]
    assert list(st.info) == [(0, 0)]


def test_graph_break_without_traceback_or_reason_prefix():
    st = _apply(_break_rec("Graph break in user code at f.py:3\n  why  "), _break_rec("Graph break in user code at nowhere"))
    assert [(b.reason, b.location, b.user_stack, b.code_line) for _, b in st.breaks] == \
        [("why", "f.py:3", [], ""), ("", ":nowhere", [], "")]
    bad = _apply(_break_rec("Graph break at f.py:3"), _break_rec(None))
    assert bad.problems == ["line 65: artifact not read (ValueError: graph break payload does not start with "
                            "'Graph break in user code at')"] * 2
    assert bad.breaks == []


def test_user_traceback_stops_at_the_first_blank_line_after_it():
    tb = BREAK.replace("    torch._dynamo.graph_break()\n\nTraceback", "    torch._dynamo.graph_break()\nTraceback")
    (_, gb), = _apply(_break_rec(tb)).breaks
    assert gb.user_stack == ["train.py:28 in <module>", "train.py:19 in main", "train.py:13 in hop_and_break"]
    assert gb.code_line == "torch._dynamo.graph_break()"
    # blank lines before the first frame do not end it; a code line indented less than 4 is not one
    lead = BREAK.replace("User code traceback:\n", "User code traceback:\n\n").replace("    main()", "   main()")
    (_, gb), = _apply(_break_rec(lead)).breaks
    assert gb.user_stack[0] == "train.py:28 in <module>" and len(gb.user_stack) == 3
    # a relative file name, a name with ", in " in the code, a frame line that is not one
    odd = ('Graph break in user code at t.py:5\nwhy\nUser code traceback:\n  File "t.py", line 5, in f\n'
           '    g(x, in_)  # x, in y\n  File "/a/b/c/u.py", line x, in h\n')
    (_, gb), = _apply(_break_rec(odd)).breaks
    assert (gb.location, gb.user_stack, gb.code_line) == ("t.py:5", ["t.py:5 in f"], "g(x, in_)  # x, in y")


def test_recompile_reasons_one_string_or_a_json_list():
    """guards.py logs ``reasons[0] if len(reasons) == 1 else reasons``: a str as is, a list as JSON."""
    art = {"artifact": {"name": "recompile_reasons", "encoding": "json"}}
    st = _apply(_rec({**art, "frame_id": 2, "frame_compile_id": 1, "attempt": 0},
                     "2/0: tensor 'x' size mismatch at index 0. expected 3, actual 5"),
                _rec({**art, "frame_id": 2, "frame_compile_id": 2, "attempt": 0}, json.dumps(["2/1: a", "2/0: b", 3])),
                _rec({**art, "frame_id": 2, "frame_compile_id": 3, "attempt": 0}, '"2/2: quoted"'),
                _rec({**art, "frame_id": 2, "frame_compile_id": 4, "attempt": 0}))
    assert st.recompiles == [((2, 1), ["2/0: tensor 'x' size mismatch at index 0. expected 3, actual 5"]),
                             ((2, 2), ["2/1: a", "2/0: b", "3"]), ((2, 3), ["2/2: quoted"]), ((2, 4), [""])]
    bad = _apply(_rec({**art, **IDS}, '{"a": 1}'), _rec({**art}, "0/0: x"))
    assert bad.problems == ["line 7: artifact not read (ValueError: recompile_reasons payload is not a JSON list)",
                            "line 7: artifact not read (ValueError: no compile id in the metadata)"]


def test_torch_version_artifact():
    art = {"artifact": {"name": "torch_version", "encoding": "json"}, "has_payload": "x"}
    payload = '{\n"pytorch_version": "2.13.0+cpu",\n"commit": "cf30153",\n"oss": true\n}'
    for text, version in [(payload, "2.13.0+cpu"), ('{"commit": "c"}', ""), ("[1]", ""), (None, "")]:
        st = _apply(_rec(art, text))
        assert (st.torch_version, st.problems) == (version, [])


def test_other_artifacts_and_known_events_are_counted_as_ignored():
    st = _apply(_rec({"artifact": {"name": "aot_forward_graph_fw_metadata", "encoding": "string"}, **IDS}, "x"),
                _rec({"artifact": "not an object", **IDS}),
                _rec({"chromium_event": {}, **IDS}, "{}"), _rec({"chromium_event": {}, **IDS}, "{}"),
                _rec({"describe_storage": {"id": 0, "describer_id": 0, "size": 24}, **IDS}),
                _rec({"some_future_event": {}, **IDS}), _rec({"rank": 0, "frame_id": 0}))
    assert st.ignored == {"artifact": 2, "chromium_event": 2, "describe_storage": 1}
    assert st.unknown == {"some_future_event": 1, "": 1}
    assert st.problems == []


def test_shape_events_keep_their_fields_without_the_framework_stack():
    m = {"symbol": "s77", "val": "5", "vr": "[2, int_oo]", "source": "L['x'].size()[0]",
         "user_stack": [{"line": 20, "name": "<lambda>", "filename": 1}], "stack": [{"line": 1, "name": "x", "filename": 0}]}
    st = _apply(_rec({"create_symbol": m, **IDS}), _rec({"guard_added_fast": {"expr": "Eq(s77, 4)"}, **IDS}),
                _rec({"symbolic_shape_specialization": {"symbol": "s77", "value": "4"}, **IDS}),
                _rec({"create_unbacked_symbol": {"symbol": "u0"}, **IDS}),
                _rec({"create_symbol": "x", **IDS}, line=30))
    without = {k: v for k, v in m.items() if k != "stack"}
    assert st.attempts[(0, 0, 0)].shape_events == [
        ("create_symbol", without, None), ("guard_added_fast", {"expr": "Eq(s77, 4)"}, None),
        ("symbolic_shape_specialization", {"symbol": "s77", "value": "4"}, None),
        ("create_unbacked_symbol", {"symbol": "u0"}, None)]
    assert "stack" in m  # the record itself is not changed
    assert st.problems == ["line 30: create_symbol not read (ValueError: create_symbol is not an object)"]


def test_described_sources_and_which_are_parameters():
    """meta_utils.py ``describe_tensor`` leaves out fields at their default: is_parameter only when true."""
    st = _apply(_rec({"describe_tensor": {"id": 0, "describer_id": 0, "ndim": 2}, **IDS}),
                _rec({"describe_tensor": {"id": 1, "describer_id": 0, "is_parameter": True}, **IDS}),
                _rec({"describe_tensor": {"id": 2, "describer_id": 0, "is_parameter": "yes"}, **IDS}),
                _rec({"describe_tensor": [], **IDS}),
                _rec({"describe_source": {"describer_id": 0, "id": 0, "source": "L['x']"}, **IDS}),
                _rec({"describe_source": {"describer_id": 0, "id": 1, "source": "L['self']._parameters['w']"}, **IDS}),
                _rec({"describe_source": {"describer_id": 1, "id": 1, "source": "L['y']"}, **IDS}),
                _rec({"describe_source": {"describer_id": 0, "id": 2, "source": "L['z']"}, **IDS}),
                _rec({"describe_source": {"describer_id": 0, "id": 1}, **IDS}, line=40),
                _rec({"describe_source": "L['q']", **IDS}, line=41))
    assert st.parameters == {(0, 1)}
    assert st.attempts[(0, 0, 0)].sources == ["L['x']", "L['self']._parameters['w']", "L['y']", "L['z']"]
    assert st.param_sources == {"L['self']._parameters['w']"}
    assert st.problems == ["line 40: describe_source not read (ValueError: describe_source has no source)",
                           "line 41: describe_source not read (ValueError: describe_source has no source)"]


def test_ddp_split_graph_and_its_children():
    st = _apply(_rec({"optimize_ddp_split_graph": {}, **IDS}, "split text"),
                _rec({"optimize_ddp_split_child": {"name": "submod_0"}, **IDS}, "child 0"),
                _rec({"optimize_ddp_split_child": {"name": "submod_1"}, **IDS}),
                _rec({"optimize_ddp_split_child": None, **IDS}, "nameless"))
    a = st.attempts[(0, 0, 0)]
    assert (a.ddp_split, a.ddp_children) == ("split text", {"submod_0": "child 0", "submod_1": "", "None": "nameless"})
    assert _apply(_rec({"optimize_ddp_split_graph": {}, **IDS})).attempts[(0, 0, 0)].ddp_split == ""


def test_dump_file_sources_by_name():
    st = _apply(_rec({"dump_file": {"name": "<eval_with_key>.0"}}, "def forward(self): pass"),
                _rec({"dump_file": {"name": "empty"}}), _rec({"dump_file": {}}, "x"))
    assert st.files == {"<eval_with_key>.0": "def forward(self): pass", "empty": "", "None": "x"}


def test_a_record_no_parser_can_read_is_one_problem_naming_its_line():
    st = _apply(_rec({"dump_file": None}, "x", line=99), _rec({"guard_added_fast": {"expr": "x" * 400}}, line=100),
                _rec({"compilation_metrics": "y" * 500, **IDS}, line=5))
    assert st.problems == ["line 99: dump_file not read (AttributeError: 'NoneType' object has no attribute 'get')",
                           "line 100: guard_added_fast not read (ValueError: no compile id in the metadata)",
                           "line 5: compilation_metrics not read (ValueError: compilation_metrics is not an object)"]
    assert not st.ignored and not st.unknown  # a record that failed is not also counted


def test_every_parser_row_has_its_event():
    names = [p.event for p in PARSERS]
    assert names.count("artifact") == 7 and len(set(names)) == len(names) - 6  # 3 Dynamo artifacts, 4 of Inductor
