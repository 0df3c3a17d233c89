"""Which module groups each node sits in: ``nn_module_stack`` (or a log's placement) read as nested paths.

Invariant: pure and torch-free; a node's chain lists every enclosing path outermost first, each
path once, with every dotted prefix of a called module's path (Note [Module paths nest by prefix]);
:func:`graph_chains` is computed once per graph. Folding nodes into boxes is viz.grouping's job.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Optional

from tracer.model import Graph, Node
from viz.backward_groups import place_unmoduled
from viz.per_graph import per_graph

__all__ = ["INFERRED", "LOG_GROUP_MIN_SHARE", "distinct_chains", "graph_chains", "part_chains", "module_chain", "module_tree", "split_path"]

# Note [Module paths nest by prefix]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo's nn_module_stack lists only modules that were *called*: ``L['self']`` then
# ``L['self'].layers.0`` then ``L['self'].layers.0.norm1``. A ModuleList (``layers``) is never called,
# so it never appears, yet it is the natural box holding 12 layers. We therefore also make a group of
# every dotted prefix of a path (``L['self'].layers``), splitting at "." and at "[" outside brackets and
# quotes, but never inside the first component (``L['self']`` stays whole).
_QUOTED = re.compile(r"'[^']*'?|\"[^\"]*\"?")  # a quoted part (to the end when unclosed): no split inside


def split_path(path: str) -> list[str]:
    """The prefixes of a module path, outermost first, ending with ``path`` itself.

    >>> split_path("L['self'].layers[0].self_attn")
    ["L['self']", "L['self'].layers", "L['self'].layers[0]", "L['self'].layers[0].self_attn"]
    """
    masked = _QUOTED.sub(lambda m: "_" * len(m.group(0)), path)
    out: list[str] = []
    depth = 0
    for i, ch in enumerate(masked):
        if ch == "[":
            if depth == 0 and out:  # only once a "." ended the first component
                out.append(path[:i])
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == "." and depth == 0 and i > 0:
            out.append(path[:i])
    out.append(path)
    return out if path else []  # prefixes end at ever later places: all different, none empty


def module_chain(node: Node) -> list[tuple[str, str]]:
    """(path, module type) of every group ``node`` sits in, outermost first. See Note [Module paths nest by prefix]."""
    return list(_chain_of(node))


def _chain_of(node: Node) -> tuple[tuple[str, str], ...]:
    """:func:`module_chain` as the cached tuple (one object per distinct chain while the cache holds it)."""
    # A backward node of an AOT graph has no stack of its own; it belongs with its forward op.
    stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack") or _logged(node) or []
    key: list[tuple[str, str]] = []
    for entry in stack:
        try:
            key.append((str(entry[0]), str(entry[1])))
        except (IndexError, TypeError, KeyError):
            continue
    return _chain(tuple(key))


# Note [Groups inferred from a log]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A graph loaded from a TORCH_TRACE log has no nn_module_stack; the loader records the module a node
# provably ran in as ``meta["log_module"]`` (Note [Module groups from a log] in
# tracer/trace_log/modules.py), without the module's class. Such a group's type reads INFERRED, so
# every box and the inspector say the group was inferred from the log. In an AOT graph (forward,
# joint, backward) from a log, the nodes the log leaves without a module show in the "no module"
# group's runs (Note [Runs of the no-module group], viz/backward_groups.py), never in a neighbour's box.
# A Dynamo graph where the log placed under LOG_GROUP_MIN_SHARE of the computing nodes is drawn as
# without module stacks (placed nodes keep their module in the inspector).
INFERRED = "inferred from log"
LOG_GROUP_MIN_SHARE = 0.5


def _logged(node: Node) -> list[tuple[str, str]]:  # Note [Groups inferred from a log]
    lm = node.meta.get("log_module")
    path = lm.get("path") if isinstance(lm, dict) else None
    return [(path, INFERRED)] if isinstance(path, str) and path else []


# One entry per distinct nn_module_stack: a layout calls module_chain several times per node, so the cache
# holds a whole graph's stacks (viz.synthetic.chain_graph(16000) has 6k: 4096 made it 2x slower).
@functools.lru_cache(maxsize=1 << 16)
def _chain(stack: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    chain: list[tuple[str, str]] = []
    seen: set[str] = set()
    for path, typ in stack:
        for p in split_path(path):
            if p not in seen:
                seen.add(p)
                chain.append((p, typ if p == path or typ == INFERRED else ""))  # an inferred group says so at every level
    return tuple(chain)


# Note [Equal chains shared]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most nodes of a graph share their chain with others (a layer's few dozen nodes sit in a handful of
# modules), and the grouping reads each node's chain again at every level the report opens (Note
# [Folding in the report] in viz/report_graphs.py): ~150k chain walks for the distinct-frames log's
# 57k nodes. So :func:`graph_chains` gives nodes with equal module chains one list object, and what is
# a sum over nodes (a path's node count, the module tree, a node's box) is worked out once per
# distinct chain (:func:`distinct_chains`, by identity) and counted by its nodes: the same sums.
# Callers never change a chain (they never could: place_unmoduled already shares one per run).
@per_graph  # Note [Computed once per graph] in viz/per_graph.py: an explorer build asks 9 times
def graph_chains(graph: Graph) -> list[list[tuple[str, str]]]:
    """:func:`module_chain` of every node of ``graph`` in order, with Note [Backward nodes without a forward
    node] (viz/backward_groups.py) applied; computed once per graph: callers must not change the lists."""
    return _placed(graph, _own_chains(graph))


@per_graph
def _own_chains(graph: Graph) -> list[list[tuple[str, str]]]:
    """:func:`module_chain` of every node, equal chains one list (Note [Equal chains shared])."""
    shared: dict[int, tuple[tuple[tuple[str, str], ...], list[tuple[str, str]]]] = {}
    chains = []
    for n in graph.nodes:
        key = _chain_of(n)
        got = shared.get(id(key))
        if got is None or got[0] is not key:
            got = shared[id(key)] = (key, list(key))  # the key held: its id names no other tuple meanwhile
        chains.append(got[1])
    return chains


# Note [Parts of a graph]
# ~~~~~~~~~~~~~~~~~~~~~~~
# The report lays out, for each module box, the graph of the nodes folded in it (Note [Folding in the
# report] in viz/report_graphs.py), and again for each box inside that: a node's own module chain
# (read from its meta) was worked out once per level. A node's own chain depends on the node alone, so
# :func:`part_chains` takes the part's from the whole graph's (read once per node), then places the
# module-less nodes as graph_chains does on the part itself (that depends on the part: its runs, its
# share of placed nodes), and remembers the answer as ``graph_chains(part)``: the very same value.
def part_chains(part: Graph, whole: Graph, at: list[int]) -> list[list[tuple[str, str]]]:
    """``graph_chains(part)`` for ``part``, whose nodes are ``whole.nodes[i]`` for ``i`` in ``at``, from
    ``whole``'s nodes' own chains (Note [Parts of a graph]); later ``graph_chains(part)`` calls get it."""
    own = _own_chains(whole)
    out = _placed(part, [own[i] for i in at])
    graph_chains.remember(part, out)  # type: ignore[attr-defined]
    return out


def _placed(graph: Graph, chains: list[list[tuple[str, str]]]) -> list[list[tuple[str, str]]]:
    logged = _log_groups(graph, chains)
    if logged and not graph.name:  # Note [Groups inferred from a log]: a sparse Dynamo graph
        return [[] for _ in chains]
    return place_unmoduled(graph, chains, runs=logged is not None and bool(graph.name))  # AOT graphs from a log


def _log_groups(graph: Graph, chains: list[list[tuple[str, str]]]) -> Optional[bool]:
    """None unless some chain is placed and all are inferred from a log; then: under LOG_GROUP_MIN_SHARE of ops placed?"""
    if not any(chains) or any(c[-1][1] != INFERRED for c in chains if c):
        return None
    ops = [c for n, c in zip(graph.nodes, chains, strict=True) if n.op not in ("placeholder", "output")]
    return sum(1 for c in ops if c) < LOG_GROUP_MIN_SHARE * len(ops)


@per_graph
def distinct_chains(graph: Graph) -> list[tuple[list[tuple[str, str]], int]]:
    """Each chain object of :func:`graph_chains` once, in order of first appearance, with how many
    nodes hold it (Note [Equal chains shared]).

    >>> from viz.synthetic import chain_graph
    >>> [(c[-1][0] if c else "", k) for c, k in distinct_chains(chain_graph(6, layers=1))]  # input and output: no module
    [('', 2), ("L['self'].layers.0.self_attn", 4)]
    """
    seen: dict[int, list[Any]] = {}
    for c in graph_chains(graph):
        got = seen.get(id(c))
        if got is None:
            seen[id(c)] = [c, 1]  # the chain held by ``chains``: its id names no other list meanwhile
        else:
            got[1] += 1
    return [(c, k) for c, k in seen.values()]


def module_tree(graph: Graph) -> dict[str, list[str]]:
    """Children of each module path ("" is the graph itself), in order of first appearance."""
    children: dict[str, list[str]] = {"": []}
    for chain, _ in distinct_chains(graph):
        parent = ""
        for path, _ in chain:
            if path not in children:
                children[path] = []
                children[parent].append(path)  # the parent came first in the chain (or is "")
            parent = path
    return children
