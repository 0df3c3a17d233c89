"""viz.grouping on small hand-built graphs with module stacks: which boxes show, folded how, opened
how far. Fast: what `make mutants` runs against it (tests/test_viz_layout.py checks the same on
synthetic and real transformer graphs)."""

from __future__ import annotations

from tracer.model import Graph, Node
from viz.backward_groups import NO_MODULE, NO_MODULE_TYPE
from viz.grouping import (
    BACKWARD_SUFFIX,
    GROUP_PREFIX,
    GROUP_THRESHOLD,
    INPUTS_GROUP,
    default_expanded,
    first_expanded,
    graph_chains,
    group_id,
    module_chain,
    module_tree,
    split_path,
    threshold_for,
    visible,
)

S, LAYERS, L0, L1, HEAD = "L['self']", "L['self'].layers", "L['self'].layers[0]", "L['self'].layers[1]", "L['self'].head"


def node(name: str, *inputs: str, stack=None, op: str = "call_function", **meta) -> Node:
    if stack is not None:
        meta["nn_module_stack"] = [list(e) for e in stack]
    return Node(name, op, name, args=list(inputs), inputs=list(inputs), meta=meta)


def graph(*nodes: Node) -> Graph:
    users: dict[str, list[str]] = {}
    for n in nodes:
        for i in n.inputs:
            users.setdefault(i, []).append(n.name)
    for n in nodes:
        n.users = users.get(n.name, [])
    return Graph(list(nodes))


def model() -> Graph:
    """x -> layers[0] (lin, act) -> layers[1] (lin, act) -> head -> output, all inside L['self']."""
    net, block = (S, "Net"), "Block"
    return graph(node("x", op="placeholder"),
                 node("l0_lin", "x", stack=[net, (L0, block), (L0 + ".lin", "Linear")]),
                 node("l0_act", "l0_lin", stack=[net, (L0, block), (L0 + ".act", "ReLU")]),
                 node("l1_lin", "l0_act", stack=[net, (L1, block), (L1 + ".lin", "Linear")]),
                 node("l1_act", "l1_lin", stack=[net, (L1, block), (L1 + ".act", "ReLU")]),
                 node("head", "l1_act", stack=[net, (HEAD, "Linear")]),
                 node("output", "head", op="output"))


def boxes(vis) -> list[tuple[str, int]]:
    return [(it.id, it.count) for it in vis.items]


def test_names():
    assert (GROUP_PREFIX, BACKWARD_SUFFIX, INPUTS_GROUP, GROUP_THRESHOLD) == ("module:", " [backward]", "(inputs)", 300)
    assert group_id("L['self'].fc") == "module:L['self'].fc"


def test_split_path():
    assert split_path("L['self'].layers[0].self_attn") == [S, LAYERS, L0, L0 + ".self_attn"]
    assert split_path("G['m']") == ["G['m']"] and split_path("") == []
    # brackets before the first dot belong to the first component; quoted dots and brackets are no split
    assert split_path("L['self']['k'].x") == ["L['self']['k']", "L['self']['k'].x"]
    assert split_path("L['self'].d['a.b[0]'].y") == [S, "L['self'].d", "L['self'].d['a.b[0]']", "L['self'].d['a.b[0]'].y"]
    assert split_path('L["self"].d["a.b"]') == ['L["self"]', 'L["self"].d', 'L["self"].d["a.b"]']
    # nested brackets split only at depth 0; a stray "]" does not make the depth negative
    assert split_path("L['self'].m[a[0]].n") == [S, "L['self'].m", "L['self'].m[a[0]]", "L['self'].m[a[0]].n"]
    assert split_path("a].b[0]") == ["a]", "a].b", "a].b[0]"]
    assert split_path(".a") == [".a"]  # a leading dot makes no empty prefix
    assert split_path("a.b") == ["a", "a.b"]
    # inside brackets neither "." nor "[" splits, however deep
    assert split_path("L['self'].m[a[0].b].n") == [S, "L['self'].m", "L['self'].m[a[0].b]", "L['self'].m[a[0].b].n"]
    # an unclosed quote runs to the end
    assert split_path("L['self'].b'c.d") == [S, "L['self'].b'c.d"]


def test_module_chain_adds_every_prefix_typed_only_where_called():
    n = node("n", stack=[(S, "Net"), (L0 + ".lin", "Linear")])
    assert module_chain(n) == [(S, "Net"), (LAYERS, ""), (L0, ""), (L0 + ".lin", "Linear")]
    assert module_chain(node("n")) == [] and module_chain(node("n", stack=[])) == []


def test_module_chain_of_a_backward_node_is_its_forward_op_s():
    n = node("n", fwd_nn_module_stack=[[S, "Net"]])
    assert module_chain(n) == [(S, "Net")]
    n = node("n", stack=[], fwd_nn_module_stack=[[S, "Net"]])  # an empty stack of its own counts as none
    assert module_chain(n) == [(S, "Net")]
    n = node("n", stack=[(HEAD, "Linear")], fwd_nn_module_stack=[[S, "Net"]])
    assert module_chain(n) == [(S, ""), (HEAD, "Linear")]


def test_module_chain_skips_damaged_entries():
    n = node("n", nn_module_stack=[[S], 5, {"path": S}, [S, "Net"], (HEAD, "Linear", "extra")])
    assert module_chain(n) == [(S, "Net"), (HEAD, "Linear")]


def test_threshold_is_zero_when_a_node_has_a_module_stack():
    assert threshold_for(model()) == 0
    assert threshold_for(graph(node("x", op="placeholder"), node("y", "x"))) == GROUP_THRESHOLD
    assert threshold_for(graph(node("y", fwd_nn_module_stack=[[S, "Net"]]))) == 0


def test_module_tree():
    assert module_tree(model()) == {"": [S], S: [LAYERS, HEAD], LAYERS: [L0, L1], L0: [L0 + ".lin", L0 + ".act"],
                                    L0 + ".lin": [], L0 + ".act": [], L1: [L1 + ".lin", L1 + ".act"],
                                    L1 + ".lin": [], L1 + ".act": [], HEAD: []}
    assert module_tree(graph(node("x", op="placeholder"))) == {"": []}


def test_first_view_folds_the_unopened_groups():
    vis = visible(model(), (), threshold=0)
    # L['self'] holds nearly everything (opened automatically); head holds one node (opened too)
    assert vis.grouped and boxes(vis) == [("x", 1), ("module:" + LAYERS, 4), ("head", 1), ("output", 1)]
    layers = vis.items[1]
    assert (layers.group, layers.module_type, layers.members, layers.first, layers.node) == (
        LAYERS, "", ["l0_lin", "l0_act", "l1_lin", "l1_act"], 1, None)
    assert vis.items[0].node.name == "x" and (vis.items[0].group, vis.items[0].first) == (None, 0)
    assert vis.edges == [("x", "module:" + LAYERS), ("module:" + LAYERS, "head"), ("head", "output")]
    assert vis.item_of == {"x": "x", "l0_lin": "module:" + LAYERS, "l0_act": "module:" + LAYERS,
                           "l1_lin": "module:" + LAYERS, "l1_act": "module:" + LAYERS, "head": "head", "output": "output"}


def test_expanding_opens_one_level():
    vis = visible(model(), [LAYERS], threshold=0)
    assert boxes(vis) == [("x", 1), ("module:" + L0, 2), ("module:" + L1, 2), ("head", 1), ("output", 1)]
    assert [it.module_type for it in vis.items[1:3]] == ["Block", "Block"]
    assert vis.edges == [("x", "module:" + L0), ("module:" + L0, "module:" + L1), ("module:" + L1, "head"),
                         ("head", "output")]
    vis = visible(model(), [LAYERS, L0, L1], threshold=0)
    assert [it.id for it in vis.items] == [n.name for n in model().nodes] and vis.grouped


def test_at_or_below_the_threshold_every_node_shows():
    vis = visible(model(), (), threshold=7)
    assert not vis.grouped and [it.id for it in vis.items] == [n.name for n in model().nodes]
    assert all(it.count == 1 and it.group is None for it in vis.items)
    assert visible(model(), (), threshold=6).grouped


def test_a_group_takes_the_first_module_type_it_meets():
    # n1 only passes through layers[0] (a prefix of its stack: no type); n2 was called in it
    g = graph(node("n1", stack=[(S, "Net"), (L0 + ".lin", "Linear")]), node("n2", "n1", stack=[(S, "Net"), (L0, "Block")]),
              node("n3", "n2", stack=[(S, "Net"), (L1, "Block")]), node("n4", "n3", stack=[(S, "Net"), (L1, "Block")]))
    vis = visible(g, [LAYERS], threshold=0)
    assert [(it.id, it.module_type, it.count) for it in vis.items] == [("module:" + L0, "Block", 2), ("module:" + L1, "Block", 2)]


def test_the_backward_half_of_a_module_is_its_own_box():
    fwd = [(S, "Net"), (L0, "Block")]
    g = graph(node("a", stack=fwd, partition="forward"), node("b", "a", stack=fwd, partition="forward"),
              node("c", "b", stack=[(S, "Net"), (L1, "Block")]),
              node("gb", "c", fwd_nn_module_stack=[list(e) for e in fwd], partition="backward"),
              node("ga", "gb", fwd_nn_module_stack=[list(e) for e in fwd], partition="backward"))
    vis = visible(g, [], threshold=0)
    back = "module:" + L0 + " [backward]"
    assert boxes(vis) == [("module:" + L0, 2), ("c", 1), (back, 2)]
    assert (vis.items[2].group, vis.items[2].partition, vis.items[0].partition) == (L0, "backward", "")
    assert vis.edges == [("module:" + L0, "c"), ("c", back)]


def test_edges_are_deduplicated_without_self_loops_or_unknown_inputs():
    g = graph(node("x", op="placeholder"), node("a", "x", "x", stack=[(S, "Net"), (HEAD, "Linear")]),
              node("b", "a", "x", "ghost", stack=[(S, "Net"), (HEAD, "Linear")]), node("y", "b", "a"))
    vis = visible(g, [], threshold=0)
    assert boxes(vis) == [("x", 1), ("module:" + HEAD, 2), ("y", 1)]
    assert vis.edges == [("x", "module:" + HEAD), ("module:" + HEAD, "y")]


def test_auto_open_rules():
    # a group of one node never shows collapsed; nor a group with no nodes of its own and one child group
    # (it holds what its child holds); nor the only child group of its parent that holds more than half
    net = (S, "Net")
    g = graph(node("x", op="placeholder"), node("p", "x", stack=[net, ("L['self'].pre", "Pre")]),
              node("p2", "p", stack=[net, ("L['self'].pre", "Pre")]),
              node("a", "p2", stack=[net, ("L['self'].wrap.act", "ReLU")]),
              node("b", "a", stack=[net, ("L['self'].wrap.act", "ReLU")]), node("c", "b", stack=[net, ("L['self'].one", "X")]),
              node("output", "c", op="output"))
    vis = visible(g, [], threshold=0)
    # L['self'] (5 of 7 nodes, the only child of the graph) opens; wrap (no nodes of its own, one child) opens;
    # one (one node) opens; pre and wrap.act (two nodes each) stay closed
    assert boxes(vis) == [("x", 1), ("module:L['self'].pre", 2), ("module:L['self'].wrap.act", 2), ("c", 1), ("output", 1)]
    # exactly half is not more than half: L['self'] then stays closed when it holds 3 of 6 nodes
    g = graph(node("x", op="placeholder"), node("y", "x"), node("a", "y", stack=[net, (HEAD, "Linear")]),
              node("b", "a", stack=[net, (HEAD, "Linear")]), node("c", "b", stack=[net, ("L['self'].t", "T")]),
              node("output", "c", op="output"))
    assert boxes(visible(g, [], threshold=0)) == [("x", 1), ("y", 1), ("module:" + S, 3), ("output", 1)]
    g.nodes.insert(1, node("y0", "x"))  # 3 of 7 is less than half: still closed
    assert boxes(visible(g, [], threshold=0))[3] == ("module:" + S, 3)
    g = graph(node("x", op="placeholder"), node("a", "x", stack=[net, (HEAD, "Linear")]),
              node("b", "a", stack=[net, (HEAD, "Linear")]), node("c", "b", stack=[net, ("L['self'].t", "T")]),
              node("output", "c", op="output"))  # 3 of 5: more than half, L['self'] opens; head (2 nodes) shows
    assert boxes(visible(g, [], threshold=0)) == [("x", 1), ("module:" + HEAD, 2), ("c", 1), ("output", 1)]


def test_a_wrapper_with_nodes_of_its_own_stays_closed():
    net = (S, "Net")
    g = graph(node("x", op="placeholder"), node("y", "x"), node("z", "y"), node("a", "z", stack=[net]),
              node("b", "a", stack=[net, ("L['self'].act", "ReLU")]), node("c", "b", stack=[net, ("L['self'].act", "ReLU")]),
              node("output", "c", op="output"))
    # L['self'] holds 3 of 7 nodes, one of them its own: it shows as one box
    assert boxes(visible(g, [], threshold=0)) == [("x", 1), ("y", 1), ("z", 1), ("module:" + S, 3), ("output", 1)]


def test_many_module_less_inputs_fold_into_one_box():
    def with_inputs(k: int) -> Graph:
        ins = [node(f"p{j}", op="placeholder") for j in range(k)]
        return graph(*ins, node("a", *[n.name for n in ins], stack=[(S, "Net"), (HEAD, "Linear")]),
                     node("b", "a", stack=[(S, "Net"), (HEAD, "Linear")]), node("output", "b", op="output"))

    vis = visible(with_inputs(9), [], threshold=0)
    assert boxes(vis) == [("module:" + INPUTS_GROUP, 9), ("module:" + HEAD, 2), ("output", 1)]
    assert (vis.items[0].group, vis.items[0].module_type) == (INPUTS_GROUP, "placeholder")
    assert vis.edges == [("module:" + INPUTS_GROUP, "module:" + HEAD), ("module:" + HEAD, "output")]
    assert len(visible(with_inputs(9), [INPUTS_GROUP], threshold=0).items) == 11  # expanded: each input shows
    assert len(visible(with_inputs(8), [], threshold=0).items) == 10  # eight inputs are not folded
    assert len(visible(with_inputs(9), [], threshold=100).items) == 12  # not grouped: nothing folds


def test_boxes_come_in_topological_order_of_their_edges():
    # module A's box starts with a1 (index 1) but reads b1 (index 2) through a2: B's box comes first
    a, b = [(S, "Net"), ("L['self'].a", "A")], [(S, "Net"), ("L['self'].b", "B")]
    g = graph(node("x", op="placeholder"), node("a1", "x", stack=a), node("b1", "x", stack=b),
              node("b2", "b1", stack=b), node("a2", "a1", "b2", stack=a), node("y", "x"), node("output", "a2", "y", op="output"))
    vis = visible(g, [], threshold=0)
    assert [it.id for it in vis.items] == ["x", "module:L['self'].b", "module:L['self'].a", "y", "output"]
    # ties go by first node: y (index 5) before output; a cycle keeps first-node order
    g = graph(node("x", op="placeholder"), node("a1", "x", stack=a), node("b1", "a1", stack=b),
              node("b2", "b1", stack=b), node("a2", "b2", stack=a), node("output", "a2", op="output"))
    assert [it.id for it in visible(g, [], threshold=0).items] == ["x", "module:L['self'].a", "module:L['self'].b", "output"]


def test_a_backward_node_without_stack_goes_to_the_one_no_module_box():
    """Note [Backward nodes without a forward node]: never guessed into a neighbour's box."""
    fwd = [[S, "Net"], [HEAD, "Linear"]]
    g = graph(node("t", op="placeholder"), node("w", op="get_attr"), node("add", "t", "w"), node("add_1", "add"),
              node("mm", "add_1", fwd_nn_module_stack=fwd), node("lone", "t"),
              node("mm2", "lone", fwd_nn_module_stack=[[S, "Net"], ["L['self'].t", "T"]]),
              node("output", "mm", "mm2", op="output"))
    g.name = "backward"
    chains = graph_chains(g)
    head = [(S, "Net"), (HEAD, "Linear")]
    tee = [(S, "Net"), ("L['self'].t", "T")]
    loose = [(NO_MODULE, NO_MODULE_TYPE)]
    # placeholders, get_attr and the output keep no module; add, add_1 and lone have none from torch
    assert chains == [[], [], loose, loose, head, loose, tee, []]
    vis = visible(g, threshold=0)
    assert {it.id for it in vis.items if it.group} == {group_id(S), group_id(NO_MODULE)}
    assert vis.item_of["add"] == vis.item_of["lone"] == group_id(NO_MODULE)
    # in a joint graph only the backward half moves; a forward node torch left loose is top-level code
    g = graph(node("x", op="placeholder"), node("relu", "x", partition="forward"),
              node("mm", "relu", stack=head, partition="forward"),
              node("relu_bw", "mm", partition="backward"), node("mm_bw", "relu_bw", fwd_nn_module_stack=fwd, partition="backward"))
    g.name = "joint"
    assert graph_chains(g) == [[], [], head, loose, head]


def test_a_running_stat_copy_goes_with_the_module_reading_that_input():
    bn = [(S, "Net"), ("L['self'].bn", "BatchNorm2d")]
    g = graph(node("x", op="placeholder"), node("running_mean", op="placeholder"),
              node("bn_out", "x", "running_mean", stack=bn), node("add", "running_mean", stack=bn),
              node("copy_", "running_mean", "add"), node("output", "bn_out", op="output"))
    g.nodes[4].target = "aten.copy_.default"
    g.name = "forward"
    assert graph_chains(g)[4] == bn
    g.nodes[3].meta["nn_module_stack"] = [[S, "Net"], ["L['self'].other", "Linear"]]  # two modules read it: loose
    # a graph's chains are computed once per graph (Note [Computed once per graph]): the changed record is a new graph
    assert graph_chains(Graph(nodes=list(g.nodes), name=g.name))[4] == []


def test_saved_values_are_their_own_edge_kind():
    """Note [Saved values as their own edge kind]: a forward value read by the backward is dashed."""
    g = graph(node("primals_1", op="placeholder", desc="PlainAOTInput(idx=0)"), node("relu", op="placeholder"),
              node("tangents_1", op="placeholder", desc="TangentAOTInput(output=PlainAOTOutput(idx=0))"),
              node("mul", "tangents_1", "relu"), node("mm", "mul", "primals_1"), node("output", "mm", op="output"))
    g.name = "backward"
    vis = visible(g, threshold=99)
    kinds = dict(zip(vis.edges, vis.kinds, strict=True))
    assert kinds == {("relu", "mul"): "saved", ("tangents_1", "mul"): "", ("primals_1", "mm"): "saved",
                     ("mul", "mm"): "", ("mm", "output"): ""}
    g.name = "forward"
    assert not any(visible(g, threshold=99).kinds)


def test_without_forward_metadata_module_less_nodes_stay_alone():
    g = graph(node("t", op="placeholder"), node("add", "t"), node("mm", "add", stack=[(S, "Net"), (HEAD, "Linear")]))
    assert graph_chains(g) == [[], [], [(S, "Net"), (HEAD, "Linear")]]


def test_first_expanded_opens_breadth_first_up_to_the_box_budget():
    g = model()
    # closed: x, layers, head, output = 4 boxes; opening layers shows its 2 blocks (+1); each block its 2 nodes (+1)
    assert first_expanded(g, boxes=4) == frozenset()
    assert first_expanded(g, boxes=5) == {LAYERS}
    assert first_expanded(g, boxes=6) == {LAYERS, L0}
    assert first_expanded(g, boxes=7) == {LAYERS, L0, L1}
    assert first_expanded(g) == {LAYERS, L0, L1}  # 20 boxes by default
    # without module stacks: the threshold rule (nothing to open below 300 nodes)
    assert first_expanded(graph(node("x", op="placeholder"), node("y", "x"))) == frozenset()


def _gpt2_like(loose: int, block: int = 10) -> Graph:
    """x -> transformer (``loose`` nodes of its own, wte, h with 4 blocks of ``block`` nodes) -> lm_head (1 node)."""
    t = "L['self'].transformer"
    top, tr = (S, "LM"), (t, "Model")
    nodes = [node("x", op="placeholder")]
    nodes += [node(f"t{k}", nodes[-1].name, stack=[top, tr]) for k in range(loose)]
    nodes += [node(f"e{k}", nodes[-1].name, stack=[top, tr, (f"{t}.wte", "Embedding")]) for k in range(2)]
    nodes += [node(f"b{i}_{k}", nodes[-1].name, stack=[top, tr, (f"{t}.h.{i}", "Block")]) for i in range(4) for k in range(block)]
    return graph(*nodes, node("head", nodes[-1].name, stack=[top, (f"{S}.lm_head", "Linear")]),
                 node("output", "head", op="output"))


def test_first_view_opens_a_wrapper_whatever_its_loose_nodes():
    """Note [The first view opens wrappers]: ``transformer`` holds most of the graph, mostly ``h``; it opens
    with 2 nodes of its own (7 boxes) and with 12 (17 boxes, over the budget of 10) alike; ``h``, the
    innermost group over half the graph, is a box in both (opening it would overflow)."""
    t = "L['self'].transformer"
    for loose in (2, 12):
        g = _gpt2_like(loose)
        opened = first_expanded(g, boxes=10)
        assert t in opened and f"{t}.h" not in opened, (loose, opened)
        assert group_id(f"{t}.h") in [it.id for it in visible(g, opened, threshold=0).items]
    assert first_expanded(_gpt2_like(2), boxes=10) == {t, f"{t}.wte"}  # then the budget: wte fits, h does not
    assert first_expanded(_gpt2_like(12), boxes=10) == {t}


def test_a_wrapper_too_big_to_open_stays_one_box():
    """Note [The first view opens wrappers]: with a budget of 10, a wrapper opens while what it shows open (its
    own nodes, wte and h) is at most 20 boxes: ``transformer`` with 18 nodes of its own opens, with 19 it is one
    box (the walk goes on: nothing else fits), and with 300 the first view is still 4 boxes, not 303."""
    t = "L['self'].transformer"
    opened = first_expanded(_gpt2_like(18), boxes=10)
    assert t in opened and f"{t}.h" not in opened, opened
    assert len(visible(_gpt2_like(18), opened, threshold=0).items) == 23  # x, 18 own, wte, h, head, output
    for loose in (19, 300):
        g = _gpt2_like(loose, block=100)  # h stays over half of the placed nodes: transformer is still a wrapper
        opened = first_expanded(g, boxes=10)
        assert opened == frozenset(), (loose, opened)
        assert [it.id for it in visible(g, opened, threshold=0).items] == ["x", group_id(t), "head", "output"]


def test_first_view_counts_only_nodes_placed_in_a_module_for_wrappers():
    """Note [The first view opens wrappers]: 60 nodes without a module beside GPT-2-like modules (54 of 117
    nodes in ``transformer``, 54 of 55 placed in a module): ``transformer`` is still a wrapper and opens."""
    g = _gpt2_like(12)
    loose = [node(f"u{k}", "x") for k in range(60)]
    g = graph(*g.nodes[:-1], *loose, node("output", "head", *[n.name for n in loose], op="output"))
    t = "L['self'].transformer"
    opened = first_expanded(g, boxes=10)
    assert t in opened and f"{t}.h" not in opened, opened


def test_default_expanded_only_above_the_threshold():
    g = model()
    assert default_expanded(g, threshold=7) == frozenset()  # 7 nodes: every node shows
    assert default_expanded(g, threshold=6) == {LAYERS, L0}
    assert default_expanded(g, threshold=5) == {LAYERS}
    assert default_expanded(g) == frozenset()


def test_breadth_first_skips_a_group_that_would_not_fit_and_opens_a_later_one():
    net = (S, "Net")
    big = [node(f"b{k}", *(["x"] if k == 0 else [f"b{k - 1}"]), stack=[net, ("L['self'].big", "Big")]) for k in range(4)]
    g = graph(node("x", op="placeholder"), *big, node("s0", "b3", stack=[net, ("L['self'].small.u", "U")]),
              node("s1", "s0", stack=[net, ("L['self'].small.v", "V")]), node("output", "s1", op="output"))
    # closed: x, big, small, output (4); big opens to 4 nodes (+3), small to u and v (+1)
    assert first_expanded(g, boxes=5) == {"L['self'].small"}
    assert first_expanded(g, boxes=8) == {"L['self'].big", "L['self'].small"}


def test_breadth_first_counts_folded_inputs_as_one_box():
    _breadth_first_with_inputs(9)


def test_breadth_first_counts_eight_inputs_as_eight_boxes():
    ins = [node(f"p{j}", op="placeholder") for j in range(8)]
    head, inner = "L['head']", "L['blk'].inner"
    g = graph(*ins, node("a", *[n.name for n in ins], stack=[(head, "Linear")]), node("b", "a", stack=[(head, "Linear")]),
              node("c", "b", stack=[(inner, "Block")]), node("d", "c", stack=[(inner, "Block")]), node("output", "d", op="output"))
    # 8 inputs, head, inner, output = 11 boxes closed: opening anything needs 12
    assert first_expanded(g, boxes=11) == frozenset()
    assert first_expanded(g, boxes=12) == {head}


def _breadth_first_with_inputs(k: int) -> None:
    ins = [node(f"p{j}", op="placeholder") for j in range(k)]
    head, inner = "L['head']", "L['blk'].inner"
    g = graph(*ins, node("a", *[n.name for n in ins], stack=[(head, "Linear")]), node("b", "a", stack=[(head, "Linear")]),
              node("c", "b", stack=[(inner, "Block")]), node("d", "c", stack=[(inner, "Block")]), node("output", "d", op="output"))
    # closed: (inputs), head, inner (L['blk'] holds nothing of its own and one child: it opens), output = 4
    assert [it.id for it in visible(g, [], threshold=0).items] == [
        "module:" + INPUTS_GROUP, "module:" + head, "module:" + inner, "output"]
    assert first_expanded(g, boxes=4) == frozenset()
    assert first_expanded(g, boxes=5) == {head}
    assert first_expanded(g, boxes=6) == {head, inner}


def test_chains_are_computed_once_per_graph_and_again_when_its_nodes_change():
    import gc
    import weakref

    from viz.synthetic import chain_graph

    g = chain_graph(40, layers=2)
    first = graph_chains(g)
    assert graph_chains(g) is first  # Note [Computed once per graph]: one list per graph, shared
    assert first == [module_chain(n) for n in g.nodes]
    g.nodes.pop(1)  # another node list: computed again, and right for it
    again = graph_chains(g)
    assert again is not first and again == [module_chain(n) for n in g.nodes]
    copy = Graph(nodes=list(g.nodes), name=g.name)  # another graph with the same nodes: its own answer
    assert graph_chains(copy) is not again and graph_chains(copy) == again
    gone = weakref.ref(g)
    del g, copy, first, again
    gc.collect()
    assert gone() is None  # the cache keeps no graph alive


def test_a_sparsely_placed_logged_backward_shows_its_loose_nodes_as_runs_in_graph_order():
    """Note [Runs of the no-module group]: a logged backward placing under half its nodes keeps its
    module boxes; its loose nodes show in numbered runs between changes of placed module, opened first,
    so the gradient path reads top to bottom; a run names no module."""
    from viz.backward_groups import run_path

    def at(path: str) -> dict:
        return {"log_module": {"path": path, "via": "parameter"}}

    b1, b0 = "L['self'].b1", "L['self'].b0"
    g = graph(node("w0", op="placeholder"), node("w1", op="placeholder"), node("tangent", op="placeholder"),
              node("g1", "tangent"), node("g2", "g1"), node("t1", "w1", **at(b1)), node("g3", "g2", "t1"),
              node("g4", "g3"), node("u1", "w1", **at(b1)), node("g5", "g4", "u1"), node("t0", "w0", **at(b0)),
              node("g6", "g5", "t0"), node("g7", "g6"), node("output", "g7", op="output"))
    g.name = "backward"
    chains = graph_chains(g)
    runs = {n.name: c[-1][0] for n, c in zip(g.nodes, chains, strict=True) if c and c[0][0] == NO_MODULE}
    # b1's two nodes are one placed module in a row: the run goes on past both; b0 starts the next
    assert runs == {"g1": run_path(1), "g2": run_path(1), "g3": run_path(2), "g4": run_path(2), "g5": run_path(2),
                    "g6": run_path(3), "g7": run_path(3)}
    assert all(c[0] == (NO_MODULE, NO_MODULE_TYPE) and c[-1][1].startswith(NO_MODULE_TYPE + ": ")
               for c in chains if c and c[0][0] == NO_MODULE)  # a run claims no module
    types = {c[-1][0]: c[-1][1] for c in chains if c and c[0][0] == NO_MODULE}
    assert types == {run_path(1): "no module recorded: op g1 +1 op", run_path(2): "no module recorded: op g3 +2 ops",
                     run_path(3): "no module recorded: op g6 +1 op"}  # no line recorded: the ops it holds
    assert all("log_module" not in n.meta for n in g.nodes if n.name in runs)  # display only
    opened = first_expanded(g)
    assert NO_MODULE in opened
    items = [it.id for it in visible(g, opened, threshold=0).items if it.group]
    assert [i for i in items if NO_MODULE in i] == [group_id(run_path(k)) for k in (1, 2, 3)]  # the gradient's order
    # the same nodes as a logged forward graph show the same runs; as a Dynamo graph, ungrouped
    # (Note [Groups inferred from a log])
    assert graph_chains(Graph(list(g.nodes), name="forward")) == chains
    assert not any(graph_chains(Graph(list(g.nodes), name="")))


def test_each_run_of_the_no_module_group_is_labelled_by_its_user_lines():
    """Note [Runs of the no-module group]: a run's box reads the user lines its nodes were traced at
    (for a backward node, the line of the forward op it differentiates), first line and how many more;
    the run number moves to the second line."""
    from viz.backward_groups import run_path
    from viz.graph_layout import layout

    def src(line: int) -> dict:
        return {"source": {"file": "/home/u/model.py", "line": line, "fn": "forward", "code": "y = f(x)"}}

    g = graph(node("w", op="placeholder"), node("tangent", op="placeholder"),
              node("g1", "tangent", **src(12)), node("g2", "g1", **src(12)), node("g3", "g2", **src(14)),
              node("t", "w", log_module={"path": "L['self'].lin", "via": "parameter"}, **src(9)),
              node("g4", "g3", "t", **src(9)), node("output", "g4", op="output"))
    g.name = "backward"
    chains = graph_chains(g)
    assert chains[2][-1] == (run_path(1), "no module recorded: model.py:12 +1 line")
    assert chains[6][-1] == (run_path(2), "no module recorded: model.py:9")
    lay = layout(g, expanded=first_expanded(g), engine="linear")
    runs = {b.group: (b.label, b.sublabel) for b in lay.boxes if (b.group or "").startswith(NO_MODULE + ".")}
    assert runs[run_path(1)] == ("model.py:12 +1 line", "no module \u00b7 run 1 \u00b7 3 nodes")
