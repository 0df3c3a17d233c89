"""viz.guard_groups on hand-written guard lists and graph-break reasons (fast: what `make mutants` runs)."""

from __future__ import annotations

from tracer.model import Guard
from viz.guard_groups import GuardGroup, base_of, bases_in, break_parts, group_guards, kind_counts


def test_bases_in_finds_every_local_and_global_once_in_order():
    assert bases_in("L['x'].size()[0] == G['n'] + L['x'].stride()[0] - L['y'] + 1") == ["L['x']", "G['n']", "L['y']"]
    assert bases_in("G['a'] L['b']") == ["G['a']", "L['b']"]  # whichever comes first
    assert bases_in("L['self']._modules['fc'].weight") == ["L['self']"]
    assert bases_in("") == [] and bases_in("___check_obj_id(x, 1)") == []


def test_bases_in_skips_names_that_only_end_in_l_or_g():
    assert bases_in("XL['a'] + _G['b'] + 1L['c'] + L['d']") == ["L['d']"]
    assert bases_in("(L['a'])") == ["L['a']"]


def test_bases_in_stops_at_an_unclosed_bracket():
    assert bases_in("L['a'] + L['b") == ["L['a']"]
    assert bases_in("G['b") == []
    assert bases_in("L['a + G['b']") == ["L['a + G['b']"]  # up to the first "]": a damaged source stays whole


def test_bases_in_reads_each_bracket_from_its_own_start():
    assert bases_in("x[0] == L['a']") == ["L['a']"]
    assert bases_in("G['a'] is not G['b'] and G['a'] is G['c']") == ["G['a']", "G['b']", "G['c']"]
    assert bases_in("L['é'] + éL['x']") == ["L['é']"]  # a letter of any script is part of a name


def test_base_of_is_the_first_base_or_nothing():
    assert base_of("dict(type(G['F']).__mro__[1].__dict__)") == "G['F']"
    assert base_of("L['x'] is G['y']") == "L['x']"
    assert base_of("") == "" and base_of("__builtins__") == ""


def test_groups_by_variable_locals_then_globals_then_global_state():
    g = [Guard("GRAD_MODE", ""), Guard("ID_MATCH", "G['torch']"), Guard("TENSOR_MATCH", "L['x']"),
         Guard("TYPE_MATCH", "L['self'].layers[0]"), Guard("TENSOR_MATCH", "L['y']"), Guard("CONSTANT_MATCH", "G['n']"),
         Guard("TYPE_MATCH", "L['x']")]
    groups = group_guards(g)
    assert [gr.title for gr in groups] == ["L['x']", "L['self']", "L['y']", "G['torch']", "G['n']", "global"]
    f = False
    assert [gr.rows for gr in groups] == [[(g[2], f), (g[6], f)], [(g[3], f)], [(g[4], f)], [(g[1], f)], [(g[5], f)], [(g[0], f)]]


def test_a_relation_joins_the_group_of_every_variable_it_names():
    rel = Guard("SHAPE_ENV", "", ["L['x'].size()[0] == L['y'].size()[0]", "L['y'].size()[1] == G['k']", "2 <= L['x'].size()[0]"])
    groups = group_guards([Guard("TENSOR_MATCH", "L['y']"), rel])
    assert [(gr.title, [(r.kind, related) for r, related in gr.rows]) for gr in groups] == [
        ("L['y']", [("TENSOR_MATCH", False), ("SHAPE_ENV", True)]),
        ("L['x']", [("SHAPE_ENV", True)]),
        ("G['k']", [("SHAPE_ENV", True)]),
    ]


def test_a_guard_without_source_or_names_is_global_state():
    groups = group_guards([Guard("BACKEND_MATCH", "", ["___check_current_backend(1)"]), Guard("GLOBAL_STATE", "")])
    assert [(gr.title, gr.count) for gr in groups] == [("global", 2)]
    assert group_guards([]) == []


def test_count_and_kinds_most_common_first():
    gr = GuardGroup("L['x']", [(Guard("TYPE_MATCH", "L['x']"), False), (Guard("TENSOR_MATCH", "L['x']"), False),
                               (Guard("TENSOR_MATCH", "L['x'].a"), False)])
    assert gr.count == 3 and gr.kinds == [("TENSOR_MATCH", 2), ("TYPE_MATCH", 1)]
    assert GuardGroup("global").count == 0 and GuardGroup("global").kinds == []


def test_kind_counts():
    g = [Guard("A", ""), Guard("B", ""), Guard("B", ""), Guard("C", ""), Guard("B", "")]
    assert kind_counts(g) == [("B", 3), ("A", 1), ("C", 1)]
    assert kind_counts([]) == []


def test_break_parts_gist_and_hints():
    reason = ("Encountered graph break when tracing CALL:\n\n  logging not supported  \n"
              "  Explanation: Dynamo does not know how to trace logging.\n  Hint: remove the call.\n"
              "  Hint:   use torch._dynamo.config.ignore_logger_methods.\n\n"
              "  Developer debug context: x\n For more details about this graph break, see y\n")
    assert break_parts(reason) == ("logging not supported",
                                   ["remove the call.", "use torch._dynamo.config.ignore_logger_methods."])


def test_break_parts_keeps_a_preamble_that_is_all_it_says():
    assert break_parts("Graph break: call_function\n  Hint: x") == ("Graph break: call_function", ["x"])
    assert break_parts("Graph break due to unsupported builtin\nbuiltin open") == ("builtin open", [])
    assert break_parts("Unsupported: generic_jump\nmore") == ("Unsupported: generic_jump", [])
    assert break_parts("") == ("", []) and break_parts("\n  \n") == ("", [])
    assert break_parts("  Hint: only a hint") == ("", ["only a hint"])
    # Dynamo's explanation, debug context and documentation pointer are no gist
    for tail in ("Explanation: why", "Developer debug context: where", "For more details, see the docs"):
        assert break_parts(f"Graph break in user code\n  {tail}\n") == ("Graph break in user code", []), tail
    # a line that only mentions "Hint:" later is part of the body
    assert break_parts("see Hint: below") == ("see Hint: below", [])
