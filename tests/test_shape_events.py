"""tracer.shape_events on hand-written ShapeEnv events: each rule of Note [Where a specialization came
from], one case each. Fast (no torch): these are the tests `make mutants` runs against it
(tests/test_shapes.py checks the same records on real compiles).

The event metadata below has the fields torch/fx/experimental/symbolic_shapes.py logs
(``create_symbol``: symbol, val, vr, source, user_stack; ``guard_added_fast``: expr, user_stack;
``symbolic_shape_specialization``: symbol, sources, value, reason, user_stack), with stack frames as
torch/_logging/structured.py ``from_traceback`` writes them (filename interned as a number).
"""

from __future__ import annotations

from tracer.model.shapes import ShapeGuard, ShapeSymbol, SourceLine, Specialization
from tracer.shape_events import SHAPE_EVENTS, shape_records

FILES = {1: "/home/u/model.py", 2: "/home/u/util.py"}


def frame(line: int, name: str = "forward", loc: str = "", filename: int = 1) -> dict:
    return {"line": line, "name": name, "filename": filename, "loc": loc}


def line(n: int, fn: str = "forward", code: str = "", file: str = FILES[1]) -> SourceLine:
    return SourceLine(file, n, fn, code)


def sym(symbol: str, source: str, val: str = "8", vr: str = "[2, int_oo]", stack=None) -> tuple:
    return ("create_symbol", {"symbol": symbol, "val": val, "vr": vr, "source": source, "user_stack": stack}, None)


def guard(expr: str, stack=None) -> tuple:
    return ("guard_added_fast", {"expr": expr, "user_stack": stack}, None)


def spec(symbol: str, value: str, reason: str = "range_refined_to_singleton", sources=None, stack=None) -> tuple:
    return ("symbolic_shape_specialization",
            {"symbol": symbol, "sources": sources, "value": value, "reason": reason, "user_stack": stack}, None)


def test_the_events_read_in_torch_order():
    assert SHAPE_EVENTS == ("create_symbol", "create_unbacked_symbol", "guard_added_fast",
                            "symbolic_shape_specialization")


def test_a_backed_symbol_and_its_zero_one_specialization():
    stack = [frame(3, loc="y = x * 2"), frame(5, "g"), frame(7)]
    symbols, guards, specs = shape_records([sym("s0", "L['x'].size()[0]", stack=stack)], FILES)
    assert symbols == [ShapeSymbol("s0", "L['x'].size()[0]", "8", "[2, int_oo]", False,
                                   [line(3, code="y = x * 2"), line(5, "g"), line(7)], line(7))]  # the innermost frame
    assert guards == []
    assert specs == [Specialization("zero_one", "s0", ["L['x'].size()[0]"], "[2, int_oo]", "0/1 specialization",
                                    user_line=line(7))]


def test_a_symbol_that_may_be_zero_or_one_is_no_specialization():
    for vr in ("[0, int_oo]", "[1, 8]", "[-2, 4]", "[20, 30]"):
        assert shape_records([sym("s0", "L['x'].size()[0]", vr=vr)], FILES)[2] == [], vr


def test_a_zero_one_specialization_without_source_or_stack():
    symbols, _, specs = shape_records([sym("s0", "", stack=None)], FILES)
    assert symbols[0].user_stack == [] and symbols[0].source == ""
    assert specs == [Specialization("zero_one", "s0", [], "[2, int_oo]", "0/1 specialization", user_line=None)]


def test_an_unbacked_symbol_has_no_value_and_no_zero_one():
    ev = ("create_unbacked_symbol", {"symbol": "u0", "vr": "[2, int_oo]", "source": None, "val": "5",
                                     "user_stack": [frame(4)]}, None)
    symbols, guards, specs = shape_records([ev], FILES)
    assert symbols == [ShapeSymbol("u0", "", "", "[2, int_oo]", True, [line(4)], line(4))]
    assert (guards, specs) == ([], [])


def test_missing_fields_read_as_empty_text():
    symbols, guards, specs = shape_records([("create_symbol", {}, None), ("guard_added_fast", {}, None),
                                            ("symbolic_shape_specialization", {}, None)], FILES)
    assert symbols == [ShapeSymbol("", "", "", "", False, [])]
    assert guards == [ShapeGuard("", [])]
    assert specs == [Specialization("static", "", [], "", "", "", None)]


def test_events_of_other_names_and_metadata_that_is_no_dict_are_skipped():
    events = [("dynamo_start", {"symbol": "s9"}, None), ("create_symbol", "s0", None), ("guard_added_fast", None, None),
              ("symbolic_shape_specialization", ["s0"], None), sym("s1", "L['y'].size()[0]", vr="[0, 4]")]
    symbols, guards, specs = shape_records(events, FILES)
    assert [s.name for s in symbols] == ["s1"] and guards == [] and specs == []


def test_a_guard_and_the_static_specialization_it_caused():
    events = [sym("s0", "L['x'].size()[0]", vr="[0, int_oo]"),
              guard("Eq(s0, 8)", stack=[frame(2, "f"), frame(12, "forward", "if x.shape[0] == 8:")]),
              spec("s0", "8", sources=["L['x'].size()[0]"])]
    _, guards, specs = shape_records(events, FILES)
    assert guards == [ShapeGuard("Eq(s0, 8)", [line(2, "f"), line(12, code="if x.shape[0] == 8:")],
                                 line(12, code="if x.shape[0] == 8:"))]  # no user_file: the innermost frame
    assert specs == [Specialization("static", "s0", ["L['x'].size()[0]"], "8", "range_refined_to_singleton",
                                    "Eq(s0, 8)", line(12, code="if x.shape[0] == 8:"))]


def test_a_specialization_with_its_own_stack_keeps_it():
    events = [guard("Eq(s0, 8)", stack=[frame(12)]), spec("s0", "8", stack=[frame(30, "g", filename=2)])]
    assert shape_records(events, FILES)[2][0].user_line == line(30, "g", file=FILES[2])


def test_a_specialization_after_a_guard_without_a_stack_has_no_line():
    events = [guard("Eq(s0, 8)"), spec("s0", "8")]
    s = shape_records(events, FILES)[2][0]
    assert (s.guard, s.user_line) == ("Eq(s0, 8)", None)


def test_a_specialization_without_a_guard_before_it():
    s = shape_records([spec("s0", "8", sources="L['x'].size()[0]")], FILES)[2][0]
    assert s == Specialization("static", "s0", [], "8", "range_refined_to_singleton", "", None)  # sources no list: none


def test_the_last_guard_is_the_cause():
    events = [guard("Eq(s1, 4)", stack=[frame(5)]), guard("Eq(s0, 8)", stack=[frame(6)]), spec("s0", "8")]
    s = shape_records(events, FILES)[2][0]
    assert (s.guard, s.user_line) == ("Eq(s0, 8)", line(6))


def test_sources_are_text():
    s = shape_records([spec("s0", "8", sources=["L['x'].size()[0]", 3])], FILES)[2][0]
    assert s.sources == ["L['x'].size()[0]", "3"]


def test_a_lazy_find_names_the_specialization_its_symbol_was_tied_to():
    # Eq(s0, s1) ties s0 to s1; s1 is made static by Eq(s1, 8) at line 20; s0's replacement is
    # found later ("find", logged at a later read with its own stack): its cause is s1's
    events = [guard("Eq(s0, s1)", stack=[frame(10)]), guard("Eq(s1, 8)", stack=[frame(20)]),
              spec("s1", "8", sources=["L['y'].size()[0]"]), guard("Eq(s2, 3)", stack=[frame(25)]),
              spec("s2", "3"), spec("s0", "8", reason="find", stack=[frame(40)])]
    specs = shape_records(events, FILES)[2]
    assert specs[-1] == Specialization("static", "s0", [], "8", "find: Eq(s0, s1) ties it to s1", "Eq(s1, 8)", line(20))
    # later specializations that are no static one of another symbol are passed over
    events = [guard("Eq(s0, s1)"), guard("Eq(s1, 8)", stack=[frame(20)]), spec("s1", "8"), guard("Eq(s0, 8)"),
              spec("s0", "8"), guard("Eq(Mod(s4, 2), 0)"), spec("s0", "8", reason="find")]
    s = shape_records(events, FILES)[2][-1]
    assert (s.reason, s.guard, s.user_line) == ("find: Eq(s0, s1) ties it to s1", "Eq(s1, 8)", line(20))


def test_a_find_takes_the_latest_tied_specialization():
    events = [guard("Eq(s0, s1)"), guard("Eq(s0, s2)"), guard("Eq(s1, 8)", stack=[frame(20)]), spec("s1", "8"),
              guard("Eq(s2, 8)", stack=[frame(21)]), spec("s2", "8"), spec("s0", "8", reason="find")]
    s = shape_records(events, FILES)[2][-1]
    assert (s.reason, s.guard, s.user_line) == ("find: Eq(s0, s2) ties it to s2", "Eq(s2, 8)", line(21))


def test_a_find_tied_to_nothing_keeps_its_own_record():
    # no guard names s0 with another statically specialized symbol: s0's own specialization and
    # s3's divisibility (tied to s0 by the first guard) are not what it is tied to
    events = [guard("Eq(s0, 2*s3)"), guard("Eq(Mod(s3, 4), 0)"), guard("Eq(s0, 8)", stack=[frame(9)]), spec("s0", "8"),
              guard("Eq(s5, s6)", stack=[frame(11)]), spec("s5", "2"), spec("s0", "8", reason="find", stack=[frame(50)])]
    s = shape_records(events, FILES)[2][-1]
    assert (s.reason, s.guard, s.user_line) == ("find", "Eq(s5, s6)", line(50))


def test_only_a_find_is_traced_back():
    events = [guard("Eq(s0, s1)"), guard("Eq(s1, 8)", stack=[frame(20)]), spec("s1", "8"),
              spec("s0", "8", reason="range_refined_to_singleton", stack=[frame(40)])]
    s = shape_records(events, FILES)[2][-1]
    assert (s.reason, s.guard, s.user_line) == ("range_refined_to_singleton", "Eq(s1, 8)", line(40))


def test_a_guard_text_that_is_no_expression_ties_nothing():
    for bad in ("Eq(s0,", "s0 = s1", "Eq(s0, s1); x = 1"):  # sympy prints expressions: anything else is damage
        events = [guard(bad), guard("Eq(s1, 8)", stack=[frame(20)]), spec("s1", "8"), spec("s0", "8", reason="find")]
        s = shape_records(events, FILES)[2][-1]
        assert (s.reason, s.guard) == ("find", "Eq(s1, 8)"), bad


def test_divisibility_guards_are_specializations():
    events = [sym("s0", "L['x'].size()[0]", vr="[0, int_oo]"), sym("s1", "L['x'].size()[1]", vr="[0, int_oo]"),
              guard("And(Eq(Mod(s0, 4), 0), Eq(Mod(s1, 2), 0))", stack=[frame(8, loc="x.view(-1, 4)")])]
    _, _, specs = shape_records(events, FILES)
    expr = "And(Eq(Mod(s0, 4), 0), Eq(Mod(s1, 2), 0))"
    assert specs == [
        Specialization("divisibility", "s0", ["L['x'].size()[0]"], "4", expr, expr, line(8, code="x.view(-1, 4)")),
        Specialization("divisibility", "s1", ["L['x'].size()[1]"], "2", expr, expr, line(8, code="x.view(-1, 4)")),
    ]


def test_a_divisibility_of_an_unknown_symbol_has_no_source_and_no_line():
    specs = shape_records([sym("s0", ""), guard("Eq(Mod(s7, 3), 0)")], FILES)[2]
    assert specs[-1] == Specialization("divisibility", "s7", [], "3", "Eq(Mod(s7, 3), 0)", "Eq(Mod(s7, 3), 0)", None)
    assert shape_records([sym("s7", ""), guard("Eq(Mod(s7, 3), 0)")], FILES)[2][-1].sources == []


def test_what_is_not_a_divisibility():
    for expr in ("Eq(Mod(s0, 4), 1)", "Eq(Mod(s0, 4), s1)", "Ne(Mod(s0, 4), 0)", "Eq(Div(s0, 4), 0)",
                 "Eq(Mod(s0, 4, 2), 0)", "Eq(Mod(2*s0, 4), 0)", "Eq(Mod(s0, s1), 0)", "Eq(Mod(s0, 4), 0, 1)",
                 "Eq(0, Mod(s0, 4))", "x.Eq(Mod(s0, 4), 0)", "Eq(x.Mod(s0, 4), 0)", "Eq(Mod(s0, 4)", "Eq(s0, 8)",
                 "Eq(Mod(s0, 4), 0); y = 1"):
        assert shape_records([guard(expr)], FILES)[2] == [], expr


def test_stack_frames_as_torch_logs_them_and_damaged_ones():
    stack = [frame(3), {"filename": 9, "line": 4, "name": "g"}, {"filename": "/a/b.py", "line": "7", "name": None},
             {"filename": None}, "not a frame", {"filename": 2, "line": 5.0, "name": "h", "loc": None}]
    symbols = shape_records([sym("s0", "L['x'].size()[0]", stack=stack)], FILES)[0]
    assert symbols[0].user_stack == [line(3), SourceLine("<file #9>", 4, "g"), SourceLine("/a/b.py", 0, ""),
                                     SourceLine("", 0, ""), SourceLine(FILES[2], 0, "h")]
    assert shape_records([sym("s0", "", stack="no list")], FILES)[0][0].user_stack == []


def test_with_user_file_a_guard_line_is_the_innermost_user_frame_and_none_without_one():
    def user(f):  # util.py plays the library here (a live export passes torch's own test)
        return f != FILES[2]

    lib = [frame(250, "_while_loop_op_wrapper", filename=2), frame(224, "flat_body_fn", filename=2)]
    events = [guard("Eq(Mod(s0, 2), 0)", stack=[*lib, frame(7, "body", "torch._check(x)"), frame(9, "g", filename=2)]),
              guard("s0 >= 4", stack=lib), guard("s1 >= 4")]
    _, guards, specs = shape_records(events, FILES, user)
    assert [g.user_line for g in guards] == [line(7, "body", "torch._check(x)"), None, None]
    assert [len(g.user_stack) for g in guards] == [4, 2, 0]  # the stack stays as torch logged it
    assert [(sp.kind, sp.user_line) for sp in specs] == [("divisibility", line(7, "body", "torch._check(x)"))]
    only_lib = shape_records([sym("s2", "L['x'].size()[0]", stack=lib)], FILES, user)[2]
    assert only_lib[0].kind == "zero_one" and only_lib[0].user_line is None
    # a symbol's user line follows the same rule: the innermost user frame, None with torch's frames only
    inner_lib = [*lib[:1], frame(7, "body", "torch._check(x)"), *lib[1:]]
    symbols = shape_records([sym("s2", "L['x'].size()[0]", stack=lib), sym("s3", "L['y'].size()[0]", stack=inner_lib),
                             sym("s4", "L['z'].size()[0]")], FILES, user)[0]
    assert [s.user_line for s in symbols] == [None, line(7, "body", "torch._check(x)"), None]
    torch_free = shape_records([sym("s3", "", stack=inner_lib)], FILES)[0][0]  # no user_file (a log): the innermost
    assert torch_free.user_line == line(224, "flat_body_fn", file=FILES[2])
