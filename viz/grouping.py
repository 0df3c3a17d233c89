"""Which boxes a graph shows: every node, or nodes folded into collapsed ``nn_module_stack`` groups
(the paths themselves come from viz.module_paths), and which groups its first view opens.

Invariant: linear in the graph's size (one pass over nodes and edges), pure (same graph and
``expanded`` give the same :class:`Visible`), and every node is represented by exactly one visible
item; items come in the order of their first node, so FX's topological order carries over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from tracer.model import Graph, Node
from viz.backward_groups import NO_MODULE, edge_kind, ranking_edges
from viz.module_paths import (
    INFERRED,
    distinct_chains,
    graph_chains,
    module_chain,
    module_tree,
    part_chains,
    split_path,
)

__all__ = [
    "BACKWARD_SUFFIX",
    "GROUP_PREFIX",
    "GROUP_THRESHOLD",
    "INPUTS_GROUP",
    "Item",
    "Visible",
    "default_expanded",
    "first_expanded",
    "group_id",
    "threshold_for",
    "visible",
    # viz.module_paths' names, re-exported so callers keep one import for grouping
    "INFERRED",
    "distinct_chains",
    "graph_chains",
    "module_chain",
    "part_chains",
    "module_tree",
    "split_path",
]

# Grouping starts when a graph has more nodes than this (a few hundred visible boxes is what a canvas shows readably).
GROUP_THRESHOLD = 300

# Note [Group whatever the size]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A 251-node GPT-2 graph drawn flat is 3.6 px labels after "fit": it is the module structure a person
# reads first, whatever the size. So a graph whose nodes carry a module stack (``nn_module_stack``, or
# ``fwd_nn_module_stack`` on AOT backward nodes: torch/_functorch/_aot_autograd copies the forward
# node's metadata through ``seq_nr``) is grouped from its first node; GROUP_THRESHOLD applies only to
# graphs without module stacks (there is nothing to group but the inputs).
def threshold_for(graph: Graph) -> int:
    """The grouping threshold to draw ``graph`` with: 0 when any node carries a module stack, else GROUP_THRESHOLD."""
    first = next((c for c in map(module_chain, graph.nodes) if c), None)  # a log's may be too sparse:
    return 0 if first and (first[-1][1] != INFERRED or any(graph_chains(graph))) else GROUP_THRESHOLD


# A group box's id is GROUP_PREFIX + module path; fx node names are identifiers, so they never clash.
GROUP_PREFIX = "module:"


# Note [Joint graph groups]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# In an AOT joint graph a backward node carries its forward op's module stack (``fwd_nn_module_stack``),
# so one module holds forward and backward nodes. Folded together they would make every layer box read
# from and feed the next one (a cycle per layer). Instead the backward half of a module is its own box,
# id ``group_id(path) + BACKWARD_SUFFIX``, with the same ``group`` path: expanding the path opens both.
BACKWARD_SUFFIX = " [backward]"


# Note [Folded inputs]
# ~~~~~~~~~~~~~~~~~~~~
# Placeholders (and get_attr constants) have no module stack, so grouping leaves them alone; an AOT graph
# has one per parameter, buffer and tangent: the 12-layer transformer's joint graph would show 145 ``primals_*``
# boxes around 24 module boxes. Over INPUTS_FOLD_MIN such loose inputs fold into one box, path INPUTS_GROUP
# (never a real module path, which starts with ``L[``/``G[``); expanding INPUTS_GROUP shows them again.
INPUTS_GROUP = "(inputs)"
INPUTS_FOLD_MIN = 8
_INPUT_OPS = ("placeholder", "get_attr")  # a lifted constant (``_tensor_constant0``) is an input too


def group_id(path: str) -> str:
    """Box id of the collapsed group of module ``path``.

    >>> group_id("L['self'].layers")
    "module:L['self'].layers"
    """
    return GROUP_PREFIX + path


@dataclass
class Item:
    """One visible box before layout: a node, or a collapsed module group."""

    id: str  # node name, or group_id(path)
    first: int  # graph index of its first node (orders items topologically)
    node: Optional[Node] = None  # the node, when this item is one node
    group: Optional[str] = None  # module path, when this item is a collapsed group
    module_type: str = ""  # the group's nn.Module type, when known
    count: int = 1  # nodes inside
    members: list[str] = field(default_factory=list)  # names of the nodes inside (groups only)
    partition: str = ""  # joint graphs: "backward" for the backward half of a module (Note [Joint graph groups])


@dataclass
class Visible:
    """What to lay out: items in topological-ish order and the deduplicated edges between them."""

    items: list[Item]
    edges: list[tuple[str, str]]  # (src item id, dst item id), in graph order, no self loops
    grouped: bool  # True when grouping was applied (the graph is above the threshold)
    item_of: dict[str, str]  # node name -> id of the item that shows it
    kinds: list[str] = field(default_factory=list)  # per edge: "" or SAVED_EDGE (Note [Saved values as their own edge kind])
    ranking: list[tuple[str, str]] = field(default_factory=list)  # the edges layouts rank on, drawn or not (Note [Saved edges do not rank])


def _auto_open(graph: Graph) -> set[str]:
    """Groups that never show collapsed, because folding them would hide without simplifying:

    * a group holding a single node;
    * a group with no nodes of its own and one child group (``L['self']`` around ``L['self'].act``):
      it holds exactly what its child holds, and the child's name says more;
    * the only child group of its parent when it holds more than half of the graph (a wrapper such as
      ``L['self']`` or ``L['self'].layers`` around nearly everything would be one box).
    """
    tree = module_tree(graph)
    counts: dict[str, int] = {}
    owns: set[str] = set()  # groups some node sits in directly (as its innermost group)
    for chain, k in distinct_chains(graph):  # Note [Equal chains shared]
        for path, _ in chain:
            counts[path] = counts.get(path, 0) + k
        if chain:
            owns.add(chain[-1][0])
    half = len(graph.nodes) / 2
    opened = {p for p, c in counts.items() if c <= 1}
    for path, kids in tree.items():
        kids = [k for k in kids if k != NO_MODULE]  # a box beside the modules, not one of them
        if path and path not in owns and len(kids) == 1:
            opened.add(path)
        if len(kids) == 1 and counts[kids[0]] > half:
            opened.add(kids[0])
    return opened


def visible(graph: Graph, expanded: Iterable[str] = (), threshold: int = GROUP_THRESHOLD) -> Visible:
    """The boxes to draw: all nodes when ``len(graph.nodes) <= threshold``, else module groups.

    A node shows inside the outermost group of its chain that is neither in ``expanded`` nor opened
    automatically (see ``_auto_open``); other nodes show themselves, except that many module-less
    placeholders fold into one :data:`INPUTS_GROUP` box (Note [Folded inputs]).
    """
    nodes = graph.nodes
    grouped = len(nodes) > threshold
    targets = _targets(graph, expanded) if grouped else [None] * len(nodes)
    items: list[Item] = []
    by_id: dict[str, Item] = {}
    item_of: dict[str, str] = {}
    gids: dict[tuple[str, bool], str] = {}  # (path, backward half) -> box id, made once per box
    for idx, n in enumerate(nodes):
        target = targets[idx]
        if target is None:
            items.append(Item(id=n.name, first=idx, node=n))
            item_of[n.name] = n.name
            continue
        backward = n.meta.get("partition") == "backward"
        gid = gids.get((target[0], backward))
        if gid is None:
            gid = gids[(target[0], backward)] = group_id(target[0]) + (BACKWARD_SUFFIX if backward else "")
        it = by_id.get(gid)
        if it is None:
            it = Item(id=gid, first=idx, group=target[0], count=0, partition="backward" if backward else "")
            items.append(it)
            by_id[gid] = it
        it.count += 1
        it.members.append(n.name)
        if target[1]:  # the module's class: one per path, but a member may hold the path only as a prefix ("")
            it.module_type = target[1]
        item_of[n.name] = gid
    aot = graph.name in ("backward", "joint")
    saved: dict[tuple[str, str], bool] = {}  # in order, once, no self loops; True while every node edge is saved
    node_of = {n.name: n for n in nodes} if aot else {}  # what graph.node answers, without its checks per edge
    for n in nodes:
        mine = item_of[n.name]
        for i in n.inputs:
            src = item_of.get(i)
            if src is not None and src != mine:
                key = (src, mine)
                if aot:
                    saved[key] = saved.get(key, True) and bool(edge_kind(graph, node_of[i], n))
                elif key not in saved:
                    saved[key] = False  # no edge of a forward graph is saved
    edges = list(saved)
    kinds = ["saved" if saved[e] else "" for e in edges]
    ranking = ranking_edges(graph, item_of, edges, kinds, group_id(NO_MODULE))  # Note [Saved edges do not rank]
    return Visible(items=_topological(items, ranking), edges=edges, grouped=grouped, item_of=item_of, kinds=kinds,
                   ranking=ranking)


def _targets(graph: Graph, expanded: Iterable[str]) -> list[Optional[tuple[str, str]]]:
    """(path, module type) of the group each node of a grouped graph shows in; None: it shows itself."""
    chains = graph_chains(graph)
    opened = set(expanded) | _auto_open(graph)
    loose = sum(1 for n, c in zip(graph.nodes, chains, strict=True) if not c and n.op in _INPUT_OPS)
    fold_inputs = INPUTS_GROUP not in opened and loose > INPUTS_FOLD_MIN
    out: list[Optional[tuple[str, str]]] = []
    first: dict[int, Optional[tuple[str, str]]] = {}  # per chain object (Note [Equal chains shared])
    for k, n in enumerate(graph.nodes):
        chain = chains[k]
        if not chain:
            target = (INPUTS_GROUP, "placeholder") if fold_inputs and n.op in _INPUT_OPS else None
        elif id(chain) in first:
            target = first[id(chain)]
        else:
            target = first[id(chain)] = next(((path, typ) for path, typ in chain if path not in opened), None)
        out.append(target)
    return out


# Note [Group boxes in topological order]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Items start in the order of their first node, which for nodes is FX's topological order but for a
# module box need not be: in a backward graph ``layers.0``'s box starts with an early node (a weight's
# transpose) although the gradient reaches it last, through ``layers.11 -> ... -> layers.1``. The linear
# layout ranks along item order, so that box order put all twelve layer boxes on one 5,700 px row.
# Items are therefore sorted topologically over the box edges (ties by first node, so a graph without
# groups keeps FX's order exactly); if folding made a cycle, the first-node order stays. The box edges are
# ``Visible.ranking``: a backward graph's saved edges take no part (Note [Saved edges do not rank] in viz/backward_groups.py).
def _topological(items: list[Item], edges: list[tuple[str, str]]) -> list[Item]:
    import heapq

    pos = {it.id: k for k, it in enumerate(items)}
    indeg = [0] * len(items)
    succ: list[list[int]] = [[] for _ in items]
    loose = group_id(NO_MODULE)  # it sits on the gradient path between modules: no order through it
    for s, d in edges:
        if s == loose or d == loose:
            continue
        succ[pos[s]].append(pos[d])
        indeg[pos[d]] += 1
    ready = [k for k, n in enumerate(indeg) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for j in succ[k]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, j)
    return items if len(order) != len(items) else [items[k] for k in order]


def default_expanded(graph: Graph, threshold: int = GROUP_THRESHOLD) -> frozenset[str]:
    """A good first ``expanded`` set: open groups breadth-first while at most ``threshold`` boxes show.

    Linear in the graph: box counts come from the module tree, not from trial layouts. For a
    12-layer transformer this opens ``layers`` (12 layer boxes) and then as many layers as fit.
    """
    if len(graph.nodes) <= threshold:
        return frozenset()
    return _open_breadth_first(graph, threshold)


# The first view of a graph with module stacks opens module boxes breadth-first up to this many boxes:
# a 1,440 px notebook shows about this many labelled boxes at >= 10 px (the canvas never fits below
# viz.style.READABLE_PX labels, viz/view.js).
FIRST_VIEW_BOXES = 20


def first_expanded(graph: Graph, boxes: int = FIRST_VIEW_BOXES) -> frozenset[str]:
    """The ``expanded`` set a graph is first shown with: wrappers opened (but too big ones), then modules breadth-first
    while at most ``boxes`` boxes show (Note [The first view opens wrappers], Note [Group whatever the size]);
    :func:`default_expanded` for a graph without module stacks."""
    if threshold_for(graph):
        return default_expanded(graph)
    return _open_breadth_first(graph, boxes)


# Note [The first view opens wrappers]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The first view (first_expanded; default_expanded alike) is a walk over the module tree, outermost
# groups first: a group opens when the boxes shown, counted from the module tree (a closed group is one
# box, an open one shows its own nodes and its children; _auto_open groups are never boxes), stay within
# the budget once it is open; one that would overflow stays closed and the walk goes on with later ones.
# Before the budget, the walk opens every *wrapper*: a group holding more than half of the nodes placed
# in a module (not loose, not in the "no module" group) with a child group that holds more than half too,
# unless it is too big to open (below). Groups over half form one chain, outside in (any two share a
# node, so one encloses the other); all but the innermost are wrappers: closed, each would be one box
# holding most of the graph, mostly one child. The innermost is where the bulk first splits (GPT-2's
# ``transformer.h`` into its blocks) and stays under the budget. A wrapper's opened boxes count toward
# the budget, leaving less for the rest.
# Why: the first view must not hang on how many nodes sit beside the bulk. GPT-2's ``transformer``
# holds its embeddings, ``h``, ``ln_f`` and some nodes of its own: 8 on torch 2.13, 18 on 2.11 (the
# attention mask's arange/le/expand are traced there too), where opening ``transformer`` overflowed 20
# boxes, so the first view was input, transformer (258 of 261 nodes), lm_head, output. Likewise a log's
# GPT-2 joint on 2.11 has 375 of its 819 nodes in "no module" and 372 in ``transformer``: counted over
# all nodes, ``transformer`` would hold less than half. With the rule, ``transformer`` opens on both
# releases and ``transformer.h`` is a closed box (2.13 also opens wte, wpe and ln_f within the budget).
# (_auto_open's "only child over half" does not cover this: lm_head is transformer's sibling.)
# Too big: a wrapper opens only when what it shows open, its own nodes plus its children as the walk
# counts them, is at most WRAPPER_BUDGETS budgets (40 boxes for the first view's 20); a bigger one stays
# one box and the walk goes on as for any group (it opens only within the budget, so not at all). So a
# wrapper holding hundreds of nodes of its own (none in a child) never puts them all in the first view,
# and the rule does not depend on what sits beside the wrapper (the walk counts a joint's module once,
# though it shows a forward and a backward half). The biggest wrappers met are far below:
# GPT-2's ``transformer`` on 2.11 shows 23 boxes open in the Dynamo graph and 26 in a log's joint,
# Llama's ``model.model`` (bench.models' llama_hf) 19 on 2.11, T5's ``model.decoder`` (t5_hf) 4.
WRAPPER_BUDGETS = 2  # the same slack a joint's "no module" runs get (Note [Runs of the no-module group])


def _wrappers(graph: Graph) -> set[str]:
    """Groups holding more than half of the nodes placed in a module, but the innermost (Note [The first view opens wrappers])."""
    counts: dict[str, int] = {}
    placed = 0  # nodes in a real module: neither loose nor in the "no module" group (or its runs)
    for chain, k in distinct_chains(graph):  # Note [Equal chains shared]
        if chain and chain[0][0] != NO_MODULE:
            placed += k
            for path, _ in chain:
                counts[path] = counts.get(path, 0) + k
    bulk = [p for p, c in counts.items() if c > placed / 2]
    return set(bulk) - {max(bulk, key=len)} if bulk else set()  # nested paths: the innermost is the longest


def _open_breadth_first(graph: Graph, threshold: int) -> frozenset[str]:
    tree = module_tree(graph)
    auto = _auto_open(graph)
    direct: dict[str, int] = {}  # nodes whose innermost group is this path ("" = no group)
    loose_inputs = 0
    chains = graph_chains(graph)
    for k, n in enumerate(graph.nodes):
        key = chains[k][-1][0] if chains[k] else ""
        direct[key] = direct.get(key, 0) + 1
        loose_inputs += not chains[k] and n.op in _INPUT_OPS
    if loose_inputs > INPUTS_FOLD_MIN:  # they show as one box (Note [Folded inputs])
        direct[""] -= loose_inputs - 1

    def boxes_open(path: str) -> int:  # boxes shown for ``path`` when it is open and its children are closed
        total = direct.get(path, 0)
        for kid in tree[path]:
            total += boxes_open(kid) if kid in auto else 1
        return total

    opened: set[str] = set()
    wrappers = _wrappers(graph)  # Note [The first view opens wrappers]
    shown = boxes_open("")
    queue = list(tree[""])
    if tree.get(NO_MODULE) and not queue.remove(NO_MODULE) and (  # Note [Runs of the no-module group]
            graph.name == "backward" or shown + boxes_open(NO_MODULE) - 1 <= 2 * threshold):  # a joint's may not fit
        opened.add(NO_MODULE)
        shown += boxes_open(NO_MODULE) - 1
    while queue:
        path = queue.pop(0)
        if path in auto:
            queue.extend(tree[path])
            continue
        extra = boxes_open(path) - 1
        wrapper = path in wrappers and extra + 1 <= WRAPPER_BUDGETS * threshold  # Note [The first view opens wrappers]
        if wrapper or shown + extra <= threshold:
            opened.add(path)
            shown += extra
            queue.extend(tree[path])
    return frozenset(opened)
