"""Graph alignment: which node of one fx graph (as data) is which node of another, by structure.

Invariant: ``align(ga, gb)`` pairs each node with at most one partner of the same op and target,
names only nodes of ``ga`` / ``gb``, and pairs every node of a graph with itself (empty diff);
its cost is near-linear in the graphs' sizes. See Note [Graph alignment].
"""

from __future__ import annotations

import bisect
import operator
import re
from typing import Optional

from tracer.model.diff import GraphDiff, NodePair
from tracer.model.graph import Graph, Node, format_meta

__all__ = ["align"]

# Note [Graph alignment]
# ~~~~~~~~~~~~~~~~~~~~~~
# Node names are no key: fx names a node after its target and a counter, so one node added early
# renames every later ``add_3`` (and AOT's ``primals_N`` shift when a symbol input appears). Nodes
# are matched by structure instead. fx graphs are topologically ordered (torch/fx/graph.py keeps
# ``nodes`` in a valid execution order), so when ``b``'s node is reached its inputs have already
# been matched, and one pass over ``b`` suffices:
#   1. exact: a node of ``a`` with the same (op, target) whose inputs are exactly the partners of
#      this node's inputs (a hash lookup; among equals the first unmatched one, preferring equal
#      constant args among the first _PREFER unmatched ones);
#   2. near: otherwise (an input has no partner, or its inputs differ) the unmatched node of ``a``
#      with the same (op, target) that shares most mapped inputs and lies closest to where the
#      previous match leaves off (ties: the earlier node), searched among at most _WINDOW
#      candidates on either side;
#   3. none: the node is "added"; nodes of ``a`` never matched are "removed".
# Placeholders have no inputs and are matched by a stable key first (the guarded source
# ``graph_arg_source``, AOTAutograd's descriptor, or the target when it is not positional), then
# in order by their value's signature (kind, dtype, rank), then by kind alone (a dtype changed).
# Each lookup is O(1) or O(_WINDOW), so a graph pair costs O((n + m) * _WINDOW) at worst, and
# O(n + m) when little changed (bench/diff_speed.py measures it). A full LCS
# (difflib, Myers) is O(n * m) in the worst case and aligns *names in sequence*, which FX may
# reorder freely between independent nodes; hashing on aligned inputs matches the dataflow itself.
_WINDOW = 32
_PREFER = 4
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_POSITIONAL = re.compile(r"^(primals|tangents|arg\d+|fwd_rng_state|bwd_rng_state)_\d+$")


# Note [Equal graphs aligned at once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most graph pairs a job compares are equal: every rank compiles the same code (load_job aligns each
# rank's frames with the reference rank's), and a recompile often leaves an AOT graph as it was. The
# walk of Note [Graph alignment] pairs every node of two equal node lists with its twin: placeholders
# by key, then in order, and each later node by the exact lookup, whose first free candidate is its
# twin (every earlier node of the same key already took its own), with equal arguments and meta, so
# no changes. ``align`` answers that at once, without the walk, when the node lists are equal (the
# same list, as read-only graphs with equal texts share, Note [Read-only graphs] in
# tracer/trace_log/deferred.py, or equal Nodes: every field the walk reads compared) and their names
# unique, as fx makes them (a list with a repeated name is walked: its pairs follow ``pos_a``, not
# twins). Same answer, without the walk's per-node work (the tokenizing ``_rename``, ``format_meta``
# of both sides); tests/test_graph_align.py checks the shortcut against the walk on every graph of
# real logs.
def align(ga: Graph, gb: Graph, name_a: str = "", name_b: str = "") -> GraphDiff:
    """Match the nodes of two graphs by structure; see Note [Graph alignment]."""
    nodes_a, nodes_b = ga.nodes, gb.nodes
    if (nodes_a is nodes_b or nodes_a == nodes_b) and len({n.name for n in nodes_b}) == len(nodes_b):
        return GraphDiff(a=name_a, b=name_b, pairs=[NodePair(n.name, n.name, []) for n in nodes_b])  # Note [Equal graphs aligned at once]
    return _walk(ga, gb, name_a, name_b)


def _walk(ga: Graph, gb: Graph, name_a: str, name_b: str) -> GraphDiff:
    """``align`` node by node: Note [Graph alignment]."""
    nodes_a = ga.nodes
    exact: dict[tuple, list[int]] = {}
    near: dict[tuple[str, str], list[int]] = {}
    for i, n in enumerate(nodes_a):  # placeholders too: never looked up (they are matched first, below)
        exact.setdefault((n.op, n.target, tuple(n.inputs)), []).append(i)
        near.setdefault((n.op, n.target), []).append(i)
    for cands in exact.values():
        cands.reverse()  # _first_free takes from the end: the first unmatched in graph order
    taken: list[Optional[str]] = [None] * len(nodes_a)
    b2a: dict[str, str] = _placeholders(ga, gb, taken)
    pos_a = {n.name: i for i, n in enumerate(nodes_a)}
    out = GraphDiff(a=name_a, b=name_b)
    expect = 0  # where a near match is looked for: right after the previous match
    for nb in gb.nodes:
        hit: Optional[int] = None
        args_b = None  # nb's args renamed, when the exact lookup renamed them (nb never names itself)
        if nb.op == "placeholder":
            if nb.name in b2a:
                hit = pos_a[b2a[nb.name]]
        else:
            mapped = [b2a.get(i) for i in nb.inputs]
            if None not in mapped:
                hit, args_b = _first_free(exact.get((nb.op, nb.target, tuple(mapped))), taken, nodes_a, nb, b2a)
            if hit is None:
                hit = _nearest(near.get((nb.op, nb.target)), taken, nodes_a, mapped, expect)
            if hit is not None:
                taken[hit] = nb.name
                b2a[nb.name] = nodes_a[hit].name
        if hit is None:
            out.added.append(nb.name)
            continue
        expect = hit + 1
        out.pairs.append(NodePair(nodes_a[hit].name, nb.name, _node_changes(nodes_a[hit], nb, b2a, args_b)))
    out.removed = [n.name for i, n in enumerate(nodes_a) if taken[i] is None]
    return out


def _placeholders(ga: Graph, gb: Graph, taken: list[Optional[str]]) -> dict[str, str]:
    """Placeholders of ``gb`` -> their partner in ``ga`` (stable key first, then signature in order);
    marks the partners in ``taken``."""
    pa = [(i, n) for i, n in enumerate(ga.nodes) if n.op == "placeholder"]
    by_key = {}
    for i, n in pa:
        by_key.setdefault(_stable_key(n), i)
    b2a: dict[str, str] = {}
    rest = []
    for n in gb.placeholders:
        i = by_key.get(_stable_key(n))
        if _stable_key(n) is not None and i is not None and taken[i] is None:
            taken[i] = n.name
            b2a[n.name] = ga.nodes[i].name
        else:
            rest.append(n)
    for sig in (_signature, _loose_signature):  # equal values first, then equal kinds (a dtype changed)
        free = [(i, n) for i, n in pa if taken[i] is None]
        left, cursor = [], 0
        for n in rest:
            want = sig(n)
            for k in range(cursor, min(len(free), cursor + _WINDOW)):
                i, m = free[k]
                if taken[i] is None and sig(m) == want:
                    taken[i] = n.name
                    b2a[n.name] = m.name
                    cursor = k + 1
                    break
            else:
                left.append(n)
        rest = left
    return b2a


def _stable_key(n: Node) -> Optional[str]:
    src = n.meta.get("graph_arg_source")
    if src:
        return f"source:{src}"
    desc = str(n.meta.get("desc", ""))
    if desc and not desc.startswith("PlainAOTInput") and not desc.startswith("TangentAOTInput"):
        return f"desc:{desc}"
    if _POSITIONAL.match(n.target) is None:
        return f"target:{n.target}"
    return None


def _signature(n: Node) -> tuple:
    return (n.role, n.meta.get("kind"), n.meta.get("dtype"), len(n.meta.get("shape") or ()))


def _loose_signature(n: Node) -> tuple:
    return (n.role, n.meta.get("kind"))


def _first_free(cands: Optional[list[int]], taken: list, nodes_a: list[Node], nb: Node,
                b2a: dict) -> tuple[Optional[int], Optional[list[str]]]:
    """The exact match (Note [Graph alignment], step 1) and ``nb``'s args renamed, if it renamed them."""
    if not cands:
        return None, None
    while cands and taken[cands[-1]] is not None:  # matched ones leave the end for good
        cands.pop()
    free = [i for i in reversed(cands[-_PREFER:]) if taken[i] is None]
    if not free:
        return None, None
    args = [_rename(s, b2a) for s in nb.args]
    for i in free:  # prefer equal constant args: add(x, 1) vs add(x, 2) with the same input
        if args == nodes_a[i].args:
            return i, args
    return free[0], args


def _nearest(cands: Optional[list[int]], taken: list, nodes_a: list[Node], mapped: list, expect: int) -> Optional[int]:
    if not cands:
        return None
    mid = bisect.bisect_left(cands, expect)
    best, best_score = None, None
    for k in range(max(0, mid - _WINDOW), min(len(cands), mid + _WINDOW)):
        i = cands[k]
        if taken[i] is not None:
            continue
        score = (sum(map(operator.eq, mapped, nodes_a[i].inputs)), -abs(i - expect))  # inputs shared, nearness
        if best_score is None or score > best_score:
            best, best_score = i, score
    return best


def _rename(text: str, b2a: dict[str, str]) -> str:
    """A display arg of ``b`` with node names replaced by their partners' names in ``a``."""
    return _TOKEN.sub(lambda m: b2a.get(m.group(0), m.group(0)), text)


def _same_type_text(ma: dict, mb: dict) -> bool:
    """True only where ``format_meta(ma) == format_meta(mb)`` surely: every field it reads equal and of
    the same type, element by element for a shape (``1 == 1.0 == True`` but their texts differ); False
    means "format both and compare" (a tuple's items are compared that way unless they are one object)."""
    for k in ("kind", "dtype", "value"):
        x, y = ma.get(k), mb.get(k)
        if x is not y and (type(x) is not type(y) or x != y):
            return False
    x, y = ma.get("shape"), mb.get("shape")
    if x is not y and (not isinstance(x, list) or not isinstance(y, list) or x != y
                       or any(type(p) is not type(q) for p, q in zip(x, y, strict=True))):
        return False
    return ma.get("items") is mb.get("items")


def _node_changes(na: Node, nb: Node, b2a: dict[str, str], args_b: Optional[list[str]] = None) -> list[str]:
    """What differs between partners ``na`` and ``nb``; ``args_b``: ``nb``'s args renamed, if known."""
    out = []
    ma, mb = na.meta, nb.meta
    if not _same_type_text(ma, mb):  # equal fields: equal texts, neither formatted
        ta, tb = format_meta(ma), format_meta(mb)
        if ta != tb:
            out.append(f"type {ta or '?'} → {tb or '?'}")
    for key in ("requires_grad", "device"):
        if ma.get(key) != mb.get(key):
            out.append(f"{key} {ma.get(key)} → {mb.get(key)}")
    if na.op != "placeholder":
        if args_b is None:
            args_b = [_rename(s, b2a) for s in nb.args]
        kwargs_b = {k: _rename(v, b2a) for k, v in nb.kwargs.items()}
        if args_b != na.args or kwargs_b != na.kwargs:
            fmt = lambda args, kw: ", ".join([*args, *(f"{k}={v}" for k, v in kw.items())])  # noqa: E731
            out.append(f"args ({fmt(na.args, na.kwargs)}) → ({fmt(nb.args, nb.kwargs)})")
    return out
