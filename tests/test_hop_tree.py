"""The HOP subgraph tree (tracer/hop_tree.py) on hand-built graphs, one test per rule, no torch.

A graph here is plain data read by a small reader of the GraphReader protocol: a parent node is a
``str`` (its name), a body is the attribute name of a child graph, anything else is a constant;
what each call feeds is the real table of tracer/hop_feeds.py. Live capture and the log loader
use the same module with their own readers (tests/test_body_inputs.py, tests/test_trace_log.py
check those end to end against torch's own recording).
"""

from __future__ import annotations

from typing import Any, Optional

import pytest

from tracer.hop_feeds import CallReader, Feed, call_feeds
from tracer.hop_tree import Body, HopCall, KindPolicy, build_subgraphs, subgraph_tree, walk
from tracer.model.graph import Graph, Node


class _Plain:
    """A graph as data: placeholders (name, meta), HOP calls (node, hop, args), bodies by attribute."""

    def __init__(self, placeholders: list[Any], calls: list[tuple[str, str, list[Any]]],
                 children: Optional[dict[str, _Plain]] = None, opened: Optional[list[str]] = None) -> None:
        phs = [p if isinstance(p, tuple) else (p, {}) for p in placeholders]
        self.children = children or {}
        self.calls = calls
        self.opened = opened if opened is not None else []  # the names body() was asked for, in order
        nodes = [Node(n, "placeholder", n, meta=dict(m)) for n, m in phs]
        nodes += [Node(c, "call_function", hop) for c, hop, _ in calls]
        self.graph = Graph(nodes=nodes + [Node("output", "output", "output", role="output")])
        self.placeholders = [n for n, _ in phs]
        self._reader = CallReader(is_node=lambda v: isinstance(v, str) and v not in self.children,
                                  body=lambda v: v if isinstance(v, str) and v in self.children else "",
                                  result=lambda attr: None)

    def hop_calls(self) -> list[HopCall]:
        return [HopCall(c, hop, tuple(a for a in args if isinstance(a, str) and a in self.children), args)
                for c, hop, args in self.calls]

    def body(self, attr: str, name: str) -> _Plain:
        self.opened.append(name)
        return self.children[attr]

    def feeds(self, call: HopCall, index: int, body: str, n: int) -> tuple[list[Feed], list[str]]:
        return call_feeds(call.hop, call.ref, {}, index, n, self._reader, body, call.node)

    def leaf_name(self, leaf: Any) -> str:
        return leaf


def _kinds(table: Optional[dict[tuple[str, int], str]] = None, seen: Optional[list] = None) -> KindPolicy:
    """Kinds from ``table`` by (body, position); records what the policy was asked in ``seen``."""

    def kind(b: Body, i: int, fed_from: list[Any]) -> Optional[str]:
        if seen is not None:
            seen.append((b.name, i, fed_from))
        return (table or {}).get((b.name, i))

    return KindPolicy(kind, lambda b, names: f"{b.name}: {names} unknown")


def _wrap_tree() -> _Plain:
    inner = _Plain(["a", "b"], [])
    outer = _Plain(["p", "q"], [("wrap_1", "wrap", ["wrap_body_0", "p", "q"])], {"wrap_body_0": inner})
    other = _Plain(["r"], [])
    return _Plain(["l_x_", "l_y_"], [("wrap", "wrap", ["wrap_body_0", "l_x_", "l_y_"]),
                                     ("sin", "some_bodiless_hop", ["l_x_"]),
                                     ("cond", "cond", ["l_x_", "true_0", "false_0", ("l_y_",)])],
                  {"wrap_body_0": outer, "true_0": other, "false_0": _Plain(["s"], [])})


def test_nesting_qualified_names_parents_first_and_hop_roles():
    root = _wrap_tree()
    subs = subgraph_tree(root, _kinds(), [])
    # breadth first: every body called from the root, then the bodies they call
    assert list(subs) == ["wrap_body_0", "true_0", "false_0", "wrap_body_0.wrap_body_0"]
    assert [(s.hop, s.parent, s.call_node) for s in subs.values()] == [
        ("wrap", "", "wrap"), ("cond", "", "cond"), ("cond", "", "cond"), ("wrap", "wrap_body_0", "wrap_1")]
    assert [s.depth for s in subs.values()] == [1, 1, 1, 2]
    assert subs["wrap_body_0.wrap_body_0"].graph is root.children["wrap_body_0"].children["wrap_body_0"].graph
    hop = {n.name: (n.role, n.calls) for n in root.graph.nodes if n.op == "call_function"}
    assert hop == {"wrap": ("hop", ["wrap_body_0"]), "sin": ("hop", []), "cond": ("hop", ["true_0", "false_0"])}
    (inner_call,) = subs["wrap_body_0"].graph.find(op="call_function")
    assert (inner_call.role, inner_call.calls) == ("hop", ["wrap_body_0.wrap_body_0"])
    assert [n.role for n in root.graph.placeholders] == ["op", "op"]  # the root's placeholders are not body inputs


def test_each_input_kind_and_placeholder_roles():
    body = _Plain(["score", "b", "h", "q_idx", "kv_idx", "buf0", "buf1", "buf2"], [])
    root = _Plain(["q", "k", "v", "w", "s0"], [("flex", "flex_attention",
                                               ["q", "k", "v", "score_0", ("bm",), 1.0, {}, ("w", "s0", "k"), ()])],
                  {"score_0": body})
    table = {("score_0", 0): "operand",  # the policy is not asked about an input the HOP supplies
             ("score_0", 5): "lifted_freevar", ("score_0", 6): "lifted_symbol", ("score_0", 7): "operand"}
    seen: list = []
    problems: list[str] = []
    (sg,) = subgraph_tree(root, _kinds(table, seen), problems).values()
    kinds = ["hop_supplied"] * 5 + ["lifted_freevar", "lifted_symbol", "operand"]
    assert [i.kind for i in sg.inputs] == kinds
    assert [n.role for n in sg.graph.placeholders] == kinds
    assert [i.supplied for i in sg.inputs] == ["score", "b", "h", "q_idx", "kv_idx", "", "", ""]
    assert [i.source for i in sg.inputs] == ["", "", "", "", "", "w", "s0", "k"]
    assert seen == [("score_0", 5, ["w"]), ("score_0", 6, ["s0"]), ("score_0", 7, ["k"])]
    assert problems == []


def test_unknown_kind_is_unknown_and_the_policy_says_why_once_per_body():
    root = _wrap_tree()
    problems: list[str] = []
    subs = subgraph_tree(root, _kinds({("wrap_body_0", 0): "operand"}), problems)
    assert [i.kind for i in subs["wrap_body_0"].inputs] == ["operand", "unknown"]
    assert [n.role for n in subs["wrap_body_0"].graph.placeholders] == ["operand", "unknown"]
    assert problems == ["wrap_body_0: ['q'] unknown", "true_0: ['r'] unknown", "false_0: ['s'] unknown",
                        "wrap_body_0.wrap_body_0: ['a', 'b'] unknown"]
    quiet = KindPolicy(lambda b, i, fed_from: None, lambda b, names: "")  # a log: said once in its limits
    problems = []
    subs = subgraph_tree(_wrap_tree(), quiet, problems)
    assert problems == [] and {i.kind for s in subs.values() for i in s.inputs} == {"unknown"}


def test_the_policy_gets_the_chain_of_nodes_feeding_an_input_outward():
    # root: l_x_ -> outer.p -> mid.m -> inner.a ; inner.b <- mid's own node "cos"; mid.n <- constant
    inner = _Plain(["a", "b"], [])
    mid = _Plain(["m", "n"], [("w3", "wrap", ["wrap_body_0", "m", "cos"])], {"wrap_body_0": inner})
    outer = _Plain(["p"], [("w2", "wrap", ["wrap_body_0", "p", 3])], {"wrap_body_0": mid})
    root = _Plain(["l_x_"], [("w1", "wrap", ["wrap_body_0", "l_x_"])], {"wrap_body_0": outer})
    seen: list = []
    subgraph_tree(root, _kinds(seen=seen), [])
    assert seen == [("wrap_body_0", 0, ["l_x_"]),
                    ("wrap_body_0.wrap_body_0", 0, ["p", "l_x_"]),
                    ("wrap_body_0.wrap_body_0", 1, []),  # a constant: no node
                    ("wrap_body_0.wrap_body_0.wrap_body_0", 0, ["m", "p", "l_x_"]),
                    ("wrap_body_0.wrap_body_0.wrap_body_0", 1, ["cos"])]  # not a placeholder: the chain ends


def test_the_chain_ends_where_an_outer_call_feeds_are_unknown():
    inner = _Plain(["a"], [])
    outer = _Plain(["p", "extra"], [("w2", "wrap", ["wrap_body_0", "p"])], {"wrap_body_0": inner})
    root = _Plain(["l_x_"], [("w1", "wrap", ["wrap_body_0", "l_x_"])], {"wrap_body_0": outer})  # 1 value, 2 placeholders
    seen: list = []
    problems: list[str] = []
    subs = subgraph_tree(root, _kinds(seen=seen), problems)
    assert seen == [("wrap_body_0", 0, []), ("wrap_body_0", 1, []), ("wrap_body_0.wrap_body_0", 0, ["p"])]
    assert subs["wrap_body_0.wrap_body_0"].inputs[0].source == "p"
    assert problems[0] == ("body 'wrap_body_0' called by 'w1': the call passes 1 values for 2 placeholders; "
                           "their sources are unknown")


def test_a_body_whose_call_gives_no_feeds_has_unknown_sources_and_a_problem():
    body = _Plain(["a", "b"], [])
    root = _Plain(["l_x_"], [("w", "wrap", ["wrap_body_0", "l_x_"])], {"wrap_body_0": body})
    problems: list[str] = []
    (sg,) = subgraph_tree(root, _kinds({("wrap_body_0", 0): "operand", ("wrap_body_0", 1): "lifted_freevar"}),
                          problems).values()
    assert [(i.name, i.kind, i.source, i.supplied, i.meta) for i in sg.inputs] == [
        ("a", "operand", "", "", {}), ("b", "lifted_freevar", "", "", {})]
    assert [(c.node, c.sources) for c in sg.call_sites] == [("w", ["", ""])]
    assert problems == ["body 'wrap_body_0' called by 'w': the call passes 1 values for 2 placeholders; "
                        "their sources are unknown"]


def test_call_sites_list_each_call_and_sources_are_as_at_the_first():
    opened: list[str] = []
    body = _Plain(["a", "b"], [])
    root = _Plain(["l_x_", "l_y_"], [("call_1", "invoke_subgraph", ["body_0", "id", "l_x_", "l_y_"]),
                                     ("call_2", "invoke_subgraph", ["body_0", "id", "l_y_", 2]),
                                     ("call_3", "invoke_subgraph", ["body_0", "id", "l_x_"])],
                  {"body_0": body}, opened)
    problems: list[str] = []
    subs = subgraph_tree(root, _kinds(), problems)
    assert list(subs) == ["body_0"] and opened == ["body_0"]  # one body, its graph opened once
    sg = subs["body_0"]
    assert sg.call_node == "call_1"
    assert [(c.node, c.sources) for c in sg.call_sites] == [("call_1", ["l_x_", "l_y_"]), ("call_2", ["l_y_", ""]),
                                                            ("call_3", ["", ""])]
    assert [i.source for i in sg.inputs] == ["l_x_", "l_y_"]
    assert all(i.meta == {} for i in sg.inputs)  # a constant at a later call is not the input's constant
    assert [n.calls for n in root.graph.find(role="hop")] == [["body_0"]] * 3
    assert problems == ["body 'body_0' called by 'call_3': the call passes 1 values for 2 placeholders; "
                        "their sources are unknown", "body_0: ['a', 'b'] unknown"]  # the walk's, then the kinds'


def test_constants_and_meta_of_inputs():
    meta = {"kind": "tensor", "shape": [2], "stack_trace": "File x", "source": {"line": 3}}
    body = _Plain([("xs", meta), ("n", {"kind": "int"}), ("c", {"kind": "tensor"})], [])
    root = _Plain(["l_x_", "l_c_"], [("m", "map_impl", ["map_body_0", ["l_x_"], [7, "l_c_"]])],
                  {"map_body_0": body})
    (sg,) = subgraph_tree(root, _kinds({("map_body_0", 1): "operand", ("map_body_0", 2): "lifted_freevar"}),
                          []).values()
    assert [(i.kind, i.source, i.supplied, i.meta) for i in sg.inputs] == [
        ("hop_supplied", "l_x_", "slice of xs[0]", {"kind": "tensor", "shape": [2]}),  # no stack or source line
        ("operand", "", "", {"kind": "int", "constant": "7"}),
        ("lifted_freevar", "l_c_", "", {"kind": "tensor"})]
    assert sg.call_sites[0].sources == ["l_x_", "", "l_c_"]
    assert body.graph.placeholders[0].meta == meta  # the graph's own meta is left as it is


def test_walk_then_build_lets_a_source_match_records_in_between():
    root = _wrap_tree()
    problems: list[str] = []
    tree = walk(root, problems)
    assert [b.name for b in tree.bodies] == ["wrap_body_0", "true_0", "false_0", "wrap_body_0.wrap_body_0"]
    assert [b.parent for b in tree.bodies] == ["", "", "", "wrap_body_0"]
    assert [[n for n, _ in b.sites] for b in tree.bodies] == [["wrap"], ["cond"], ["cond"], ["wrap_1"]]
    assert [[f.node for f in b.feeds] for b in tree.bodies] == [["l_x_", "l_y_"], ["l_y_"], ["l_y_"], ["p", "q"]]
    assert tree.bodies[0].reader is root.children["wrap_body_0"]
    assert list(tree.calls) == ["", "wrap_body_0", "true_0", "false_0", "wrap_body_0.wrap_body_0"]
    assert [c.node for c in tree.calls[""]] == ["wrap", "sin", "cond"]
    assert all(n.role == "op" for n in root.graph.nodes if n.op == "call_function")  # roles wait for the build
    subs = build_subgraphs(tree, _kinds(), problems)
    assert list(subs) == [b.name for b in tree.bodies] and root.graph.node("wrap").role == "hop"


def test_a_call_of_two_bodies_already_found_adds_a_site_to_each():
    root = _Plain(["p", "l_x_"], [("cond", "cond", ["p", "true_0", "false_0", ("l_x_",)]),
                                  ("cond_1", "cond", ["p", "true_0", "false_0", ("p",)])],
                  {"true_0": _Plain(["a"], []), "false_0": _Plain(["b"], [])})
    subs = subgraph_tree(root, _kinds(), [])
    assert {name: [(c.node, c.sources) for c in s.call_sites] for name, s in subs.items()} == {
        "true_0": [("cond", ["l_x_"]), ("cond_1", ["p"])], "false_0": [("cond", ["l_x_"]), ("cond_1", ["p"])]}


def test_a_reader_whose_graph_disagrees_with_its_placeholders_is_an_error():
    body = _Plain(["a", "b"], [])
    body.placeholders = ["a"]
    root = _Plain(["l_x_"], [("w", "wrap", ["wrap_body_0", "l_x_"])], {"wrap_body_0": body})
    with pytest.raises(ValueError) as e:
        subgraph_tree(root, _kinds(), [])
    assert str(e.value) == "body 'wrap_body_0': its graph has placeholders ['a', 'b'], its reader said ['a']"
