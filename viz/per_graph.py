"""A function of a graph computed once per graph: :func:`per_graph` remembers the last few answers.

Invariant: an answer is returned again only for the same live Graph object still holding the very same
nodes in the same order; otherwise it is computed again. An answer is either computed by the function
or handed in by ``remember`` from a caller that worked out the very same value another way (Note [Parts
of a graph] in viz/module_paths.py). The cache keeps no graph alive, and no dropped graph's nodes: an
entry goes with its graph.
"""

from __future__ import annotations

import collections
import functools
import threading
import weakref
from typing import Any, Callable, TypeVar

from tracer.model import Graph

__all__ = ["per_graph"]

T = TypeVar("T")

# Note [Computed once per graph]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# One explorer build asked for a graph's module chains 9 times (the grouping threshold, the module
# tree, the auto-opened groups, the first view, each box's target, the search index, ...): 144k
# ``module_chain`` calls for a 16k-node graph (bench/RESULTS.md). Threading one chain list through
# every layout function would change all their signatures, so the function keeps the last KEPT
# graphs' answers instead, by graph identity, and trusts one only while the graph is alive (a weak
# reference: an id may be reused) and still holds the very same nodes in the same order (the way
# Note [Graph node index] in tracer/model/graph.py trusts its index). An entry goes when its graph
# does (the weak reference's callback), so a dropped capture is not kept alive through its nodes. A
# node's ``meta`` is the record, written while capturing or loading, before anything is drawn, so it
# is not compared. The answer is shared: callers read it and never change it.
KEPT = 8


def per_graph(fn: Callable[[Graph], T]) -> Callable[[Graph], T]:
    """``fn`` (a pure function of a graph's nodes) computed once per graph (Note [Computed once per graph]).

    >>> from viz.synthetic import chain_graph
    >>> calls = []
    >>> count = per_graph(lambda g: calls.append(1) or len(g.nodes))
    >>> g = chain_graph(3, layers=1)
    >>> count(g) == count(g), len(calls)
    (True, 1)
    >>> g.nodes.pop() and count(g) == len(g.nodes), len(calls)
    (True, 2)
    """
    kept: collections.OrderedDict[int, tuple[weakref.ref, tuple[Any, ...], T]] = collections.OrderedDict()
    lock = threading.RLock()

    def forget(key: int, ref: weakref.ref) -> None:  # no lock: it may run while one is held; dict ops are atomic
        entry = kept.get(key)
        if entry is not None and entry[0] is ref:
            kept.pop(key, None)

    @functools.wraps(fn)
    def once(graph: Graph) -> T:
        nodes, key = tuple(graph.nodes), id(graph)
        with lock:
            hit = kept.get(key)
            if hit is not None and hit[0]() is graph and hit[1] == nodes:
                kept.move_to_end(key)
                return hit[2]
        out = fn(graph)
        with lock:
            kept[key] = (weakref.ref(graph, functools.partial(forget, key)), nodes, out)
            kept.move_to_end(key)
            while len(kept) > KEPT:
                kept.popitem(last=False)
        return out

    def remember(graph: Graph, value: T) -> None:
        """Keep ``value`` as ``fn(graph)``'s answer: a caller that worked it out another way, exactly
        (Note [Parts of a graph] in viz/module_paths.py), saves the next call the work."""
        key = id(graph)
        with lock:
            kept[key] = (weakref.ref(graph, functools.partial(forget, key)), tuple(graph.nodes), value)
            kept.move_to_end(key)
            while len(kept) > KEPT:
                kept.popitem(last=False)

    once.remember = remember  # type: ignore[attr-defined]
    return once
