"""tracer.graph_align on hand-built graphs: each rule of Note [Graph alignment], one case each.

Fast (no torch): these are the tests `make mutants` runs against tracer/graph_align.py.
"""

from __future__ import annotations

from tracer.graph_align import align
from tracer.model import Graph, Node


def ph(name: str, **meta) -> Node:
    return Node(name, "placeholder", name, role="operand", meta=meta)


def op(name: str, target: str, *inputs: str, args: list[str] | None = None, kwargs: dict | None = None,
       **meta) -> Node:
    return Node(name, "call_function", target, args=list(inputs) if args is None else args, kwargs=kwargs or {},
                inputs=list(inputs), meta=meta)


def out(*inputs: str) -> Node:
    return Node("output", "output", "output", args=[f"({', '.join(inputs)},)"], inputs=list(inputs), role="output")


def pairs(d) -> list[tuple[str, str]]:
    return [(p.a, p.b) for p in d.pairs]


def changes(d) -> dict[str, list[str]]:
    return {p.b: p.changes for p in d.pairs if p.changes}


T = {"kind": "tensor", "dtype": "float32", "shape": [3]}


def test_a_graph_aligned_with_itself_pairs_every_node_unchanged():
    g = Graph([ph("x", **T), ph("y", **T), op("add", "operator.add", "x", "y", **T), op("sin", "torch.sin", "add", **T),
               op("add_1", "operator.add", "sin", "x", **T), out("add_1")])
    d = align(g, g, "body", "body")
    assert (d.a, d.b) == ("body", "body")
    assert pairs(d) == [(n.name, n.name) for n in g.nodes]
    assert not d.added and not d.removed and not d.changed and not d


def test_names_do_not_matter_structure_does():
    # b renamed every node: the pairs follow the dataflow, not the names
    a = Graph([ph("x"), op("sin", "torch.sin", "x"), op("cos", "torch.cos", "sin"), out("cos")])
    b = Graph([ph("x"), op("s", "torch.sin", "x"), op("c", "torch.cos", "s"), out("c")])
    d = align(a, b)
    assert pairs(d) == [("x", "x"), ("sin", "s"), ("cos", "c"), ("output", "output")]
    assert not d  # args are compared after renaming b's names to their partners
    assert (d.a, d.b) == ("", "")  # the root graph's name


def test_among_equal_nodes_the_first_unmatched_in_graph_order():
    a = Graph([ph("x"), op("sin", "torch.sin", "x"), op("sin_1", "torch.sin", "x")])
    b = Graph([ph("x"), op("s", "torch.sin", "x")])
    d = align(a, b)
    assert pairs(d) == [("x", "x"), ("sin", "s")] and d.removed == ["sin_1"]
    b2 = Graph([ph("x"), op("s", "torch.sin", "x"), op("t", "torch.sin", "x"), op("u", "torch.sin", "x")])
    d2 = align(a, b2)
    assert pairs(d2) == [("x", "x"), ("sin", "s"), ("sin_1", "t")] and d2.added == ["u"] and not d2.removed


def test_equal_constant_args_are_preferred():
    # add(x, 1) and add(x, 2) read the same input: the constant decides which is which
    a = Graph([ph("x"), op("add", "operator.add", "x", args=["x", "1"]), op("add_1", "operator.add", "x", args=["x", "2"])])
    b = Graph([ph("x"), op("add", "operator.add", "x", args=["x", "2"])])
    d = align(a, b)
    assert pairs(d) == [("x", "x"), ("add_1", "add")] and d.removed == ["add"] and not d.changed
    swapped = Graph([ph("x"), op("p", "operator.add", "x", args=["x", "2"]), op("q", "operator.add", "x", args=["x", "1"])])
    d = align(a, swapped)
    assert pairs(d) == [("x", "x"), ("add_1", "p"), ("add", "q")] and not d


def test_equal_constant_args_are_looked_for_among_the_first_four_free_candidates():
    # a bounded look (the lookup stays O(1)): add(x, 3) finds its twin, the 4th free one; add(x, 4) is
    # 5th, beyond the look, so it takes the first free candidate and reports the changed constant
    a = Graph([ph("x")] + [op(f"add_{k}", "operator.add", "x", args=["x", str(k)]) for k in range(5)])
    d = align(a, Graph([ph("x"), op("y", "operator.add", "x", args=["x", "3"])]))
    assert pairs(d) == [("x", "x"), ("add_3", "y")] and not d.changed
    d = align(a, Graph([ph("x"), op("y", "operator.add", "x", args=["x", "4"])]))
    assert pairs(d) == [("x", "x"), ("add_0", "y")]
    assert changes(d) == {"y": ["args (x, 0) → (x, 4)"]}


def test_equal_constant_args_after_earlier_candidates_were_taken():
    # add(x, 3) takes the third candidate first: the first two stay free for add(x, 2) and add(x, 1)
    a = Graph([ph("x")] + [op(f"add_{k}", "operator.add", "x", args=["x", str(k)]) for k in range(1, 5)])
    b = Graph([ph("x"), op("p", "operator.add", "x", args=["x", "3"]), op("q", "operator.add", "x", args=["x", "2"]),
               op("r", "operator.add", "x", args=["x", "1"])])
    d = align(a, b)
    assert pairs(d) == [("x", "x"), ("add_3", "p"), ("add_2", "q"), ("add_1", "r")]
    assert d.removed == ["add_4"] and not d.changed


def test_without_equal_constant_args_the_first_free_candidate_not_the_nearest():
    # the exact rule takes the first unmatched equal node in graph order, even when a later one
    # lies right after the previous match (sin)
    a = Graph([ph("x"), op("add", "operator.add", "x", args=["x", "1"]), op("exp", "torch.exp", "x"),
               op("sin", "torch.sin", "x"), op("add_1", "operator.add", "x", args=["x", "2"])])
    b = Graph([ph("x"), op("s", "torch.sin", "x"), op("y", "operator.add", "x", args=["x", "5"])])
    assert pairs(align(a, b)) == [("x", "x"), ("sin", "s"), ("add", "y")]


def test_matched_candidates_leave_the_exact_lookup():
    # five equal nodes in both graphs pair in order; a sixth in b has no partner left
    a = Graph([ph("x")] + [op(f"sin_{k}", "torch.sin", "x") for k in range(5)])
    b = Graph([ph("x")] + [op(f"s{k}", "torch.sin", "x") for k in range(6)])
    d = align(a, b)
    assert pairs(d) == [("x", "x")] + [(f"sin_{k}", f"s{k}") for k in range(5)]
    assert d.added == ["s5"] and not d.removed and not d.changed


def test_a_node_whose_input_changed_is_paired_with_the_candidate_sharing_most_inputs():
    # b's add reads a new node (t) and x; of a's two adds only add_1 also reads x in that position,
    # although add is nearer to where the previous match left off
    a = Graph([ph("x"), ph("y"), op("add", "operator.add", "x", "y"), op("add_1", "operator.add", "y", "x"),
               out("add", "add_1")])
    b = Graph([ph("x"), ph("y"), op("t", "torch.tan", "x"), op("z", "operator.add", "t", "x"), out("z")])
    d = align(a, b)
    assert pairs(d) == [("x", "x"), ("y", "y"), ("add_1", "z"), ("output", "output")]
    assert d.added == ["t"] and d.removed == ["add"]
    assert changes(d) == {"z": ["args (y, x) → (t, x)"], "output": ["args ((add, add_1,)) → ((z,))"]}


def test_among_equally_good_candidates_the_nearest_to_the_previous_match():
    # relu(t) reads a node a lacks: both relus of a share nothing with it, so the one right after
    # the last match (exp, a's index 3) wins: relu_1 at index 4, not relu at index 2
    a = Graph([ph("x"), ph("y"), op("relu", "torch.relu", "x"), op("exp", "torch.exp", "y"),
               op("relu_1", "torch.relu", "x")])
    b = Graph([ph("x"), ph("y"), op("t", "torch.tan", "x"), op("e", "torch.exp", "y"), op("r", "torch.relu", "t")])
    d = align(a, b)
    assert pairs(d) == [("x", "x"), ("y", "y"), ("exp", "e"), ("relu_1", "r")]
    assert d.added == ["t"] and d.removed == ["relu"]
    # the previous match decides: with exp matched before relu, the near candidate is relu (index 2)
    b2 = Graph([ph("x"), ph("y"), op("t", "torch.tan", "x"), op("r", "torch.relu", "t"), op("e", "torch.exp", "y")])
    assert pairs(align(a, b2)) == [("x", "x"), ("y", "y"), ("relu", "r"), ("exp", "e")]


def test_equally_near_candidates_go_to_the_earlier_node():
    # after exp (index 2) a near match is looked for at index 3: relu (1) and relu_1 (5) are both
    # 2 away and share nothing: the earlier one wins
    a = Graph([ph("x"), op("relu", "torch.relu", "x"), op("exp", "torch.exp", "x"), op("sin", "torch.sin", "x"),
               op("cos", "torch.cos", "x"), op("relu_1", "torch.relu", "x")])
    b = Graph([ph("x"), op("t", "torch.tan", "x"), op("e", "torch.exp", "x"), op("r", "torch.relu", "t")])
    assert pairs(align(a, b)) == [("x", "x"), ("exp", "e"), ("relu", "r")]


def test_the_first_near_match_is_looked_for_at_the_start():
    # no placeholder, nothing matched yet: the near candidate nearest to index 0 wins
    a = Graph([Node("w", "get_attr", "w"), op("relu", "torch.relu", "w"), op("relu_1", "torch.relu", "w")])
    b = Graph([Node("v", "get_attr", "v"), op("r", "torch.relu", "v")])
    d = align(a, b)
    assert pairs(d) == [("relu", "r")] and d.added == ["v"] and d.removed == ["w", "relu_1"]
    a = Graph([op("ones", "torch.ones", args=["3"]), op("ones_1", "torch.ones", args=["4"])])
    b = Graph([Node("v", "get_attr", "v"), op("o", "torch.ones", "v")])
    assert pairs(align(a, b)) == [("ones", "o")]


def test_the_only_candidate_of_a_near_match_is_found_wherever_it_lies():
    a = Graph([ph("x"), op("relu", "torch.relu", "x"), op("exp", "torch.exp", "x"), op("sin", "torch.sin", "x")])
    b = Graph([ph("x"), op("e", "torch.exp", "x"), op("s", "torch.sin", "x"), op("t", "torch.tan", "x"),
               op("r", "torch.relu", "t")])
    d = align(a, b)
    assert ("relu", "r") in pairs(d) and d.added == ["t"] and not d.removed


def test_near_candidates_are_searched_in_a_window_around_the_expected_place():
    # 40 relus of x in a; b's relu reads an unmatched node, after a match at a's index 41 (exp): the
    # candidates within 32 of that place are considered, the nearest wins (relu_39, index 40)
    a = Graph([ph("x")] + [op(f"relu_{k}", "torch.relu", "x") for k in range(40)] + [op("exp", "torch.exp", "x")])
    b = Graph([ph("x"), op("t", "torch.tan", "x"), op("e", "torch.exp", "x"), op("r", "torch.relu", "t")])
    d = align(a, b)
    assert pairs(d) == [("x", "x"), ("exp", "e"), ("relu_39", "r")]
    # five relus of x take relu_0..relu_4 (exact, in order); the near one then takes the next free one
    b = Graph([ph("x")] + [op(f"r{k}", "torch.relu", "x") for k in range(35, 40)]
              + [op("t", "torch.tan", "x"), op("r", "torch.relu", "t")])
    d = align(a, b)
    assert ("relu_5", "r") in pairs(d)
    # a candidate sharing an input but more than 32 candidates below the expected place is not seen
    a = Graph([ph("x"), ph("y"), op("add", "operator.add", "y", "x")]
              + [op(f"add_{k}", "operator.add", "x", "y") for k in range(40)] + [op("exp", "torch.exp", "x")])
    b = Graph([ph("x"), ph("y"), op("t", "torch.tan", "x"), op("e", "torch.exp", "x"), op("z", "operator.add", "t", "x")])
    assert pairs(align(a, b)) == [("x", "x"), ("y", "y"), ("exp", "e"), ("add_39", "z")]


def test_a_node_without_any_candidate_is_added_and_an_unmatched_one_removed():
    a = Graph([ph("x"), op("sin", "torch.sin", "x"), op("cos", "torch.cos", "x"), out("sin", "cos")])
    b = Graph([ph("x"), op("sin", "torch.sin", "x"), op("tan", "torch.tan", "x"), out("sin", "tan")])
    d = align(a, b)
    assert d.added == ["tan"] and d.removed == ["cos"]
    assert pairs(d) == [("x", "x"), ("sin", "sin"), ("output", "output")]


def test_changes_name_type_requires_grad_device_and_args():
    a = Graph([ph("x", **T), op("add", "operator.add", "x", args=["x", "1"], kwargs={"alpha": "2"},
                               kind="tensor", dtype="float32", shape=[3], requires_grad=False, device="cpu")])
    b = Graph([ph("x", **T), op("add", "operator.add", "x", args=["x", "1"], kwargs={"alpha": "3"},
                               kind="tensor", dtype="float16", shape=[3], requires_grad=True, device="meta")])
    assert changes(align(a, b)) == {"add": ["type f32[3] → f16[3]", "requires_grad False → True",
                                            "device cpu → meta", "args (x, 1, alpha=2) → (x, 1, alpha=3)"]}


def test_kwargs_naming_nodes_compare_after_renaming():
    a = Graph([ph("x"), op("sin", "torch.sin", "x"),
               op("add", "operator.add", "x", "sin", args=["x", "torch.float32"], kwargs={"other": "sin", "dtype": "torch.int8"})])
    b = Graph([ph("x"), op("s", "torch.sin", "x"),
               op("a", "operator.add", "x", "s", args=["x", "torch.float32"], kwargs={"other": "s", "dtype": "torch.int8"})])
    assert not align(a, b)  # names that are no node (torch, float32) stay as they are


def test_equal_requires_grad_and_device_are_no_change():
    m = {"kind": "tensor", "dtype": "float32", "shape": [3], "requires_grad": True, "device": "cpu"}
    a = Graph([ph("x", **m), op("sin", "torch.sin", "x", **m)])
    assert not align(a, Graph([ph("x", **m), op("sin", "torch.sin", "x", **m)]))


def test_a_type_unknown_on_one_side_reads_as_a_question_mark():
    a = Graph([ph("x"), op("sin", "torch.sin", "x")])
    b = Graph([ph("x"), op("sin", "torch.sin", "x", **T)])
    assert changes(align(a, b)) == {"sin": ["type ? → f32[3]"]}
    assert changes(align(b, a)) == {"sin": ["type f32[3] → ?"]}


def test_placeholder_changes_never_compare_args():
    a = Graph([ph("x", **T)])
    b = Graph([Node("x", "placeholder", "x", args=["default"], role="operand", meta=dict(T))])
    assert not align(a, b)


def test_placeholders_match_by_guarded_source_before_order():
    a = Graph([Node("l_x_", "placeholder", "arg0_1", meta={"graph_arg_source": "L['x']", **T}),
               Node("l_y_", "placeholder", "arg1_1", meta={"graph_arg_source": "L['y']", **T})])
    b = Graph([Node("l_y_", "placeholder", "arg0_1", meta={"graph_arg_source": "L['y']", **T}),
               Node("l_x_", "placeholder", "arg1_1", meta={"graph_arg_source": "L['x']", **T})])
    assert pairs(align(a, b)) == [("l_y_", "l_y_"), ("l_x_", "l_x_")]


def test_placeholders_match_by_aot_descriptor_unless_plain_or_tangent():
    def aot(name, desc, **meta):
        return Node(name, "placeholder", name, meta={"desc": desc, **meta})

    p = {"kind": "tensor", "dtype": "float32", "shape": [4, 4]}
    a = Graph([aot("primals_1", "ParamAOTInput(target='w')", **p), aot("primals_2", "ParamAOTInput(target='v')", **p)])
    b = Graph([aot("primals_1", "ParamAOTInput(target='v')", **p), aot("primals_2", "ParamAOTInput(target='w')", **p)])
    assert pairs(align(a, b)) == [("primals_2", "primals_1"), ("primals_1", "primals_2")]
    # PlainAOTInput / TangentAOTInput carry only a position, which a new input shifts: matched by value instead
    for kind in ("PlainAOTInput", "TangentAOTInput"):
        a = Graph([aot("primals_1", f"{kind}(idx=0)", **T), aot("primals_2", f"{kind}(idx=1)", **p)])
        b = Graph([aot("primals_1", f"{kind}(idx=0)", kind="symint", value="s0"),
                   aot("primals_2", f"{kind}(idx=1)", **T), aot("primals_3", f"{kind}(idx=2)", **p)])
        d = align(a, b)
        assert pairs(d) == [("primals_1", "primals_2"), ("primals_2", "primals_3")] and d.added == ["primals_1"], kind


def test_placeholders_match_by_target_unless_it_is_positional():
    a = Graph([ph("l_x_", **T), ph("l_y_", **T)])
    b = Graph([ph("l_y_", **T), ph("l_x_", **T)])
    assert pairs(align(a, b)) == [("l_y_", "l_y_"), ("l_x_", "l_x_")]
    for name in ("primals", "tangents", "arg3", "fwd_rng_state", "bwd_rng_state"):
        a = Graph([ph(f"{name}_1", **T)])
        b = Graph([ph(f"{name}_1", kind="symint", value="s0"), ph(f"{name}_2", **T)])
        d = align(a, b)
        assert pairs(d) == [(f"{name}_1", f"{name}_2")] and d.added == [f"{name}_1"], name


def test_a_stable_key_seen_twice_in_b_matches_once():
    a = Graph([ph("l_x_", **T)])
    b = Graph([ph("l_x_", **T), Node("l_x_1", "placeholder", "l_x_", meta=dict(T))])
    d = align(a, b)
    assert pairs(d) == [("l_x_", "l_x_")] and d.added == ["l_x_1"]


def test_the_first_of_equal_stable_keys_in_a_is_the_partner():
    a = Graph([ph("l_x_", **T), Node("l_x_1", "placeholder", "l_x_", meta=dict(T))])
    b = Graph([ph("l_x_", **T)])
    d = align(a, b)
    assert pairs(d) == [("l_x_", "l_x_")] and d.removed == ["l_x_1"]


def test_positional_placeholders_match_by_signature_in_order():
    i64 = {"kind": "tensor", "dtype": "int64", "shape": [2]}
    f32_2d = {"kind": "tensor", "dtype": "float32", "shape": [3, 3]}
    a = Graph([ph("arg0_1", **T), ph("arg1_1", **i64), ph("arg2_1", **f32_2d), ph("arg3_1", **T)])
    # b: a symbol input inserted first, the 2-d input dropped: every other input shifts by one
    b = Graph([ph("arg0_1", kind="symint", value="s0"), ph("arg1_1", **T), ph("arg2_1", **i64), ph("arg3_1", **T)])
    d = align(a, b)
    assert pairs(d) == [("arg0_1", "arg1_1"), ("arg1_1", "arg2_1"), ("arg3_1", "arg3_1")]
    assert d.added == ["arg0_1"] and d.removed == ["arg2_1"] and not d.changed


def test_signature_is_role_kind_dtype_and_rank():
    a = Graph([ph("arg0_1", **T), Node("arg1_1", "placeholder", "arg1_1", role="lifted_freevar", meta=dict(T))])
    b = Graph([Node("arg0_1", "placeholder", "arg0_1", role="lifted_freevar", meta=dict(T)), ph("arg1_1", **T)])
    assert pairs(align(a, b)) == [("arg1_1", "arg0_1"), ("arg0_1", "arg1_1")]
    # same kind and dtype, other rank: a size change, matched by the loose signature only when nothing fits better
    a = Graph([ph("arg0_1", kind="tensor", dtype="float32", shape=[3, 3]), ph("arg1_1", **T)])
    b = Graph([ph("arg0_1", **T), ph("arg1_1", kind="tensor", dtype="float32", shape=[5, 5])])
    assert pairs(align(a, b)) == [("arg1_1", "arg0_1"), ("arg0_1", "arg1_1")]


def test_a_symbol_input_is_not_matched_with_a_constant_input():
    a = Graph([ph("arg0_1", kind="int", value="3"), ph("arg1_1", kind="symint", value="s0")])
    b = Graph([ph("arg0_1", kind="symint", value="s1")])
    d = align(a, b)
    assert pairs(d) == [("arg1_1", "arg0_1")] and d.removed == ["arg0_1"]


def test_a_changed_dtype_still_matches_by_kind():
    a = Graph([ph("arg0_1", **T), ph("arg1_1", kind="symint", value="s0")])
    b = Graph([ph("arg0_1", kind="tensor", dtype="float16", shape=[3]), ph("arg1_1", kind="symint", value="s1")])
    d = align(a, b)
    assert pairs(d) == [("arg0_1", "arg0_1"), ("arg1_1", "arg1_1")]
    assert changes(d) == {"arg0_1": ["type f32[3] → f16[3]"], "arg1_1": ["type Sym(s0) → Sym(s1)"]}


def test_positional_placeholders_are_searched_in_a_window_after_the_last_match():
    # 40 int64 inputs then one float32 input in a; b has only the float32 one: it lies 40 places
    # past the cursor (beyond the 32-wide window), so by value it is not found and the loose pass,
    # which starts its window again at 0, pairs it with the first tensor input (dtype changed)
    i64 = {"kind": "tensor", "dtype": "int64", "shape": [3]}
    a = Graph([ph(f"arg{k}_1", **i64) for k in range(40)] + [ph("arg40_1", **T)])
    d = align(a, Graph([ph("arg0_1", **T)]))
    assert pairs(d) == [("arg0_1", "arg0_1")] and changes(d) == {"arg0_1": ["type i64[3] → f32[3]"]}
    # within the window it is found by value
    a = Graph([ph(f"arg{k}_1", **i64) for k in range(31)] + [ph("arg31_1", **T)])
    d = align(a, Graph([ph("arg0_1", **T)]))
    assert pairs(d) == [("arg31_1", "arg0_1")] and not d.changed


def test_a_signature_match_moves_the_cursor_past_it():
    # after b's first input matched a's index 1, the next search starts at index 2: a's index 0,
    # free and of the same signature, is left for the loose pass only if nothing later fits
    a = Graph([ph("arg0_1", **T), ph("arg1_1", kind="symint", value="s0"), ph("arg2_1", **T)])
    b = Graph([ph("arg0_1", kind="symint", value="s1"), ph("arg1_1", **T)])
    d = align(a, b)
    assert pairs(d) == [("arg1_1", "arg0_1"), ("arg2_1", "arg1_1")] and d.removed == ["arg0_1"]


def test_a_type_change_is_whatever_the_type_texts_say_also_between_equal_numbers():
    """A node's type is compared as ``format_meta`` writes it (the fast path that skips formatting when
    every field it reads is equal must not take ``1 == 1.0 == True`` as equal texts): for each pair of
    metas the change is reported exactly when the two texts differ. (``b`` has one more node: equal node
    lists are aligned at once, Note [Equal graphs aligned at once], and ``Node ==`` takes ``1 == 1.0``.)"""
    from tracer.model import format_meta

    metas = [{"kind": "tensor", "dtype": "float32", "shape": s} for s in ([3], [3.0], [True], [1], ["s0"], [3, 1])]
    metas += [{"kind": "symint", "value": v} for v in (1, 1.0, True, "s0")]
    metas += [{"kind": "tuple", "items": [dict(T)]}, {"kind": "tuple", "items": [dict(T, dtype="float16")]}]
    for ma in metas:
        for mb in metas:
            a = Graph([ph("x", **T), op("sin", "torch.sin", "x", **ma)])
            b = Graph([ph("x", **T), op("sin", "torch.sin", "x", **mb), op("cos", "torch.cos", "sin", **T)])
            want = [] if format_meta(ma) == format_meta(mb) else [f"type {format_meta(ma)} → {format_meta(mb)}"]
            assert changes(align(a, b)).get("sin", []) == want, (ma, mb)
