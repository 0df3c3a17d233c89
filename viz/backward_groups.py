"""Where the nodes of a backward graph (or a joint graph's backward half) show when torch gave them no module.

Invariant: display only, never the record: a node's ``meta`` is untouched; a backward computing node
with no module chain goes to the one NO_MODULE box, except an epilogue ``copy_`` into an input,
which goes with the module that reads that input; edges carrying a saved or recomputed forward
value are of kind SAVED_EDGE, and in a backward graph they do not rank (``ranking_edges``). Torch-free
and linear in the graph.
"""

from __future__ import annotations

from tracer.model import Graph, Node

__all__ = ["NO_MODULE", "NO_MODULE_TYPE", "RUN_TYPE_PREFIX", "SAVED_EDGE", "edge_kind", "place_unmoduled", "ranking_edges", "run_path",
           "run_type"]

# Note [Backward nodes without a forward node]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# AOTAutograd copies a forward op's ``nn_module_stack`` onto the backward nodes sharing its ``seq_nr``
# (``fwd_nn_module_stack``, torch/_functorch/_aot_autograd/utils.py copy_fwd_metadata_to_bw_nodes);
# a log gives the same where its printed user line proves it (Note [Backward groups from a log] in
# tracer/trace_log/line_modules.py). Torch 2.13 records nothing else: the gradient-accumulation
# ``add`` (``is_gradient_acc``) and the backward of an op run outside any module (GPT-2's residual
# adds, a top-level ``relu``) have no module. They are not guessed into a neighbour's box: they all
# show in one NO_MODULE box, which says so. That box sits on the gradient path between the module
# boxes, so it would make every box order a cycle; Note [Group boxes in topological order] orders
# the other boxes without its edges.
# Two exceptions, both display only:
#   * AOTAutograd's epilogue ``aten.copy_`` of a mutated input back into it (BatchNorm's running
#     stats, ``copy_(primals_k, add_3)``) has no stack either, live or logged; it shows in the module
#     of the nodes that read that input (the BatchNorm's own forward reads its running stats), when
#     they are all in one module, so ResNet's joint graph is not crowded with loose ``copy_`` boxes;
#   * in a forward graph nothing moves: a node torch left loose there is top-level code.
NO_MODULE = "(no module)"
NO_MODULE_TYPE = "no module recorded"

# Note [Runs of the no-module group]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A backward graph from a log is placed sparsely: the log carries no ``seq_nr`` and no module stack,
# only the nodes reading one module's parameters are placed (Note [Backward groups from a log] in
# tracer/trace_log/line_modules.py), so GPT-2's logged backward has 31 of 376 computing nodes in a
# module. One NO_MODULE box of the other 345 is a hub every module box feeds and reads: the gradient
# path disappears into it. Drawn flat, the graph was 6,406 px wide. So when ``runs`` is asked for,
# NO_MODULE holds one child box per run: the loose nodes between two changes of placed module, in
# graph order. A backward graph is in the order the autograd engine runs it (from the loss towards
# the inputs), so the runs and the module boxes between them follow the gradient, top to bottom.
# The first view of a backward graph opens NO_MODULE; of a forward or joint graph, only when its runs
# and the other boxes number at most twice the first view's boxes: a joint's runs of both halves
# (GPT-2's logged joint: 100) stay one box per half, opened on demand.
# A logged forward or joint graph is drawn the same way: every computing node the log leaves without
# a module is in a run (a joint's run never spans its forward and backward halves), so what the log
# does not carry stays visibly unplaced. A run claims no module: its path is numbered (``(no module).3``,
# the third run), never named after a neighbouring module, and its type -- the box's first line --
# says what it holds (``run_type``): the user lines its nodes were traced at, as the log's ``# File:``
# comments give them (for a backward node, the line of the forward op it differentiates),
# "model.py:12 +2 lines"; with no line recorded, its ops, "op add +1 op".

# Note [Saved values as their own edge kind]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A backward graph reads two kinds of values: gradients (the tangents and what is computed from them:
# the main direction) and forward values kept for it -- saved activations and parameters (backward
# placeholders that are not ``TangentAOTInput``) or, in a joint graph, forward-half nodes (including
# those the partitioner recomputes, ``meta["recomputed"]``). Drawn alike, a saved ``h.0`` output
# feeding ``h.0``'s backward read as if ``h.0`` fed ``h.1``. An edge leaving such a value into the
# backward is of kind SAVED_EDGE, drawn dashed; a folded edge is SAVED_EDGE only when every node
# edge it stands for is.
SAVED_EDGE = "saved"

def _backward(graph: Graph, n: Node) -> bool:
    return n.meta.get("partition") == "backward" or (graph.name == "backward" and n.op not in ("placeholder", "output"))


def _forward_value(graph: Graph, n: Node) -> bool:
    """A value the backward reads that the forward computed or was given (Note [Saved values as their own edge kind])."""
    if graph.name == "backward":
        return n.op == "placeholder" and not str(n.meta.get("desc", "")).startswith("TangentAOTInput")
    return n.meta.get("partition") == "forward" or bool(n.meta.get("recomputed"))


def edge_kind(graph: Graph, src: Node, dst: Node) -> str:
    """SAVED_EDGE for a forward value read by a backward node, else ""."""
    if graph.name not in ("backward", "joint") or not _backward(graph, dst) or dst.op == "output":
        return ""
    return SAVED_EDGE if _forward_value(graph, src) else ""


# Note [Saved edges do not rank]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# In a backward graph (``graph.name == "backward"``) the gradient is the main direction, drawn top
# down: the box edges a layout ranks on (``Visible.ranking``, from ``ranking_edges``) leave out the
# SAVED_EDGE ones. ``dot`` gets a drawn edge that does not rank with ``constraint=false``
# (viz/layout_dot.py; ``viz.to_dot`` alike, viz/dot.py); the linear layout ranks, wraps and places x on the ranking edges only, and the
# boxes are sorted topologically over them (viz/grouping.py ``visible``). A box whose only edges are
# saved ones has nothing to rank on: it is a source and sits in the top row, like a placeholder, in
# both engines. Saved edges are still drawn (dashed), up or down a lane as they fall.
# The folded NO_MODULE box is a hub on the gradient path (``h.3 -> (no module) -> h.2 -> (no module)``):
# ranked on, it is a cycle and the modules' order is lost. So in a backward graph its edges do not rank
# either (it is a source, in the top row: the loss's gradient starts in module-less nodes); in their
# place rank the module-to-module edges the gradient takes through its nodes (``h.3 -> h.2``), found
# in one pass over the graph. They are not drawn (``dot`` gets them ``style=invis``).
# Why: ranked on, a saved value pulls its reader below it, and GPT-2's blocks, each reading the saved
# output of the block before, were drawn h.0 above h.1 ... above h.3 above ln_f: the forward's order,
# while the gradient runs ln_f -> h.3 -> ... -> h.0 through "(no module)" nodes drawn against it.
# A joint graph keeps ranking on every edge: there the point is the forward half above the backward
# half, and the saved edges are exactly what holds each backward node below the forward value it reads.
def ranking_edges(graph: Graph, item_of: dict[str, str], edges: list[tuple[str, str]], kinds: list[str],
                  loose: str) -> list[tuple[str, str]]:
    """The box edges to rank on (Note [Saved edges do not rank]): ``edges`` (box ids, ``kinds`` alike), but in
    a backward graph without saved ones, and with the NO_MODULE box ``loose`` (when folded) ranked through."""
    if graph.name != "backward":
        return list(edges)
    out = {e: None for e, k in zip(edges, kinds, strict=True) if k != SAVED_EDGE and loose not in e}
    reach: dict[str, set[str]] = {}  # a node in ``loose`` -> the boxes whose gradient reaches it through ``loose`` only
    node_of = {n.name: n for n in graph.nodes}  # graph.node's answers, without its checks per edge
    for n in graph.nodes:
        box = item_of[n.name]
        for i in n.inputs:
            if i not in item_of or edge_kind(graph, node_of[i], n):
                continue
            came = reach.get(i, set()) if item_of[i] == loose else {item_of[i]}
            if box == loose:
                reach.setdefault(n.name, set()).update(came)
            else:
                out.update(((a, box), None) for a in came if a != box)
    return list(out)


def run_path(k: int) -> str:
    """The module path of the ``k``-th run of the NO_MODULE group (Note [Runs of the no-module group]).

    >>> run_path(3)
    '(no module).3'
    """
    return f"{NO_MODULE}.{k}"


def place_unmoduled(graph: Graph, chains: list[list[tuple[str, str]]], runs: bool = False) -> list[list[tuple[str, str]]]:
    """``chains`` (one per node) with Note [Backward nodes without a forward node] applied, and with
    ``runs`` (a graph from a log), Note [Runs of the no-module group]; a graph no node of which has a
    module chain is returned as it is."""
    if not any(chains):
        return chains
    nodes = graph.nodes
    index: dict[str, int] = {}  # built at the first epilogue copy_ (most graphs have none)
    out = list(chains)
    run, last, used = 1, None, False  # the current run's number, whether it has a node; the last placed chain
    members: dict[int, list[int]] = {}  # run number -> its nodes' positions
    part = None  # the current run's partition (a joint's run never spans forward and backward)
    for i, n in enumerate(nodes):
        if out[i] and n.op not in ("placeholder", "output", "get_attr"):
            if used and out[i] != last:
                run, used = run + 1, False
            last = out[i]
        elif used and n.op not in ("placeholder", "output", "get_attr") and n.meta.get("partition") != part:
            run, used = run + 1, False
        if out[i] or n.op in ("placeholder", "output", "get_attr"):
            continue
        if n.target.startswith("aten.copy_") and n.inputs:
            index = index or {m.name: k for k, m in enumerate(nodes)}
            dst = index.get(n.inputs[0])
            if dst is not None and nodes[dst].op == "placeholder":
                readers = {tuple(out[index[u]]) for u in nodes[dst].users if u in index and u != n.name and out[index[u]]}
                if len(readers) == 1:
                    out[i] = list(readers.pop())
                    continue
        if runs:  # from a log: whatever the log left loose, forward or backward
            out[i] = [(NO_MODULE, NO_MODULE_TYPE), (run_path(run), NO_MODULE_TYPE)]
            members.setdefault(run, []).append(i)
            used, part = True, n.meta.get("partition")
        elif _backward(graph, n):
            out[i] = [(NO_MODULE, NO_MODULE_TYPE)]
    for k, at in members.items():  # Note [Runs of the no-module group]: each run says what it holds
        entry = [(NO_MODULE, NO_MODULE_TYPE), (run_path(k), run_type([nodes[i] for i in at]))]
        for i in at:
            out[i] = entry
    return out


RUN_TYPE_PREFIX = NO_MODULE_TYPE + ": "


def run_type(nodes: list[Node]) -> str:
    """The type a run of the NO_MODULE group shows (Note [Runs of the no-module group]): "no module
    recorded: " and the user lines its nodes were traced at (a backward node's is the line of the forward
    op it differentiates), the first and how many more; without any, its first op and how many more.

    >>> a = Node(name="a", op="call_function", target="aten.add.Tensor", meta={"source": {"file": "/x/m.py", "line": 3}})
    >>> b = Node(name="b", op="call_function", target="aten.mul.Tensor", meta={"source": {"file": "/x/m.py", "line": 5}})
    >>> run_type([a, b]), run_type([a, a]), run_type([Node(name="c", op="call_function", target="aten.add.Tensor")])
    ('no module recorded: m.py:3 +1 line', 'no module recorded: m.py:3', 'no module recorded: op add')
    """
    lines = list(dict.fromkeys(w for w in map(_where, nodes) if w))
    if lines:
        more = len(lines) - 1
        return RUN_TYPE_PREFIX + lines[0] + (f" +{more} line{'s' if more > 1 else ''}" if more else "")
    ops = list(dict.fromkeys(_op(n.target) for n in nodes))
    return RUN_TYPE_PREFIX + "op " + ops[0] + (f" +{len(ops) - 1} op{'s' if len(ops) > 2 else ''}" if len(ops) > 1 else "")


def _where(n: Node) -> str:
    """``file.py:line`` of the user line the record gives ``n`` (``source``: logged and Dynamo nodes; ``from``: live AOT nodes)."""
    src = n.meta.get("source") or n.meta.get("from")
    if not isinstance(src, dict) or not src.get("file") or not isinstance(src.get("line"), int):
        return ""
    return f"{str(src['file']).replace(chr(92), '/').rsplit('/', 1)[-1]}:{src['line']}"


def _op(target: str) -> str:
    """``aten.add.Tensor`` -> ``add``; any other target as it is."""
    parts = target.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "prims") else target
