"""The HOP subgraph tree of one output graph: every body Dynamo installed (nested ones too), its
inputs (kind, source, what the HOP supplies, constants), its call sites, and the HOP nodes' roles.

Invariant: one torch-free walk builds the tree for a live capture and for a loaded log alike. A
:class:`GraphReader` says what a graph holds (its HOP calls, their bodies, what each call passes:
fx objects live in tracer/_torch/subgraphs.py, the parsed graph text of a log in
tracer/trace_log/assemble.py); how a HOP feeds its bodies is the table of tracer/hop_feeds.py;
whether an input the HOP does not supply is an operand or lifted is the :class:`KindPolicy` of the
source. What a source cannot tell is "" / kind "unknown" and a problem, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol

from tracer.hop_feeds import Feed
from tracer.model.graph import Graph
from tracer.model.subgraph import CallSite, Subgraph, SubgraphInput

__all__ = ["Body", "GraphReader", "HopCall", "HopTree", "KindPolicy", "build_subgraphs", "subgraph_tree", "walk"]


@dataclass(frozen=True)
class HopCall:
    """One call of a higher-order operator in a graph, as its reader found it."""

    node: str  # name of the HOP node in its graph
    hop: str  # the HOP's name: "wrap", "cond", "invoke_subgraph", ...
    bodies: tuple[str, ...]  # attribute names of the bodies it calls, in argument order (may be none)
    ref: Any = None  # the reader's own object for the call (an fx Node live), handed back to ``feeds``


class GraphReader(Protocol):
    """One graph of the tree as its source holds it."""

    @property
    def placeholders(self) -> list[str]:
        """Names of the graph's placeholders, in order (read during the walk)."""
        ...

    @property
    def graph(self) -> Graph:
        """The graph as model data (read after the walk; a reader may build it then)."""
        ...

    def hop_calls(self) -> list[HopCall]:
        """The graph's HOP calls, in graph order (called once per graph)."""
        ...

    def body(self, attr: str, name: str) -> GraphReader:
        """The reader of the body this graph holds as attribute ``attr``; ``name`` is its qualified name."""
        ...

    def feeds(self, call: HopCall, index: int, body: str, n: int) -> tuple[list[Feed], list[str]]:
        """Feeds of the ``n`` placeholders of body number ``index`` of ``call``, and problems; no
        Feeds when they are unknown (See Note [How each HOP calls its bodies] in tracer/hop_feeds.py)."""
        ...

    def leaf_name(self, leaf: Any) -> str:
        """Name of the node of this graph that a ``Feed.node`` of one of its calls is."""
        ...


@dataclass(eq=False)
class Body:
    """One HOP body found by the walk, before its inputs have kinds."""

    name: str  # qualified name: the attribute names from the root down, joined by "."
    hop: str  # the HOP of its first call
    parent: str  # qualified name of the graph that calls it, "" for the root graph
    reader: GraphReader  # its own graph
    feeds: list[Feed]  # per placeholder at the first call; [] when unknown (a problem says why)
    sites: list[tuple[str, list[Feed]]] = field(default_factory=list)  # (call node, its Feeds), every call in graph order


@dataclass(eq=False)
class HopTree:
    """What the walk found: every body, parents before children, and the HOP calls of each graph."""

    root: GraphReader
    bodies: list[Body]  # breadth first: parents before children
    calls: dict[str, list[HopCall]]  # qualified graph name ("" for the root) -> its HOP calls, in graph order


@dataclass(frozen=True)
class KindPolicy:
    """How a source tells an operand from a lifted input (the kind of an input the HOP does not supply).

    ``kind(body, position, fed_from)`` is the kind of placeholder number ``position`` of ``body``, or
    None when the source cannot tell; ``fed_from`` is the chain of leaves behind it, innermost first
    (Note [Where a body input comes from]). ``unknown(body, names)`` is the problem naming the inputs
    of ``body`` whose kind is unknown, or "" when the source says that once elsewhere (a log's limits).
    """

    kind: Callable[[Body, int, list[Any]], Optional[str]]
    unknown: Callable[[Body, list[str]], str]


def _qualified(parent: str, attr: str) -> str:
    return f"{parent}.{attr}" if parent else attr


def walk(root: GraphReader, problems: list[str]) -> HopTree:
    """Every body reachable from ``root``, breadth first, with what each of its calls feeds it.

    A body called from several nodes (``invoke_subgraph`` of one ``nested_compile_region``) is one
    Body with several sites. Problems of the feeds (a call that does not give one value per
    placeholder) are appended to ``problems``, one per call.
    """
    bodies: list[Body] = []
    by_name: dict[str, Body] = {}
    calls: dict[str, list[HopCall]] = {}
    queue: list[tuple[str, GraphReader]] = [("", root)]
    while queue:
        qual, reader = queue.pop(0)
        calls[qual] = reader.hop_calls()
        for call in calls[qual]:
            for index, attr in enumerate(call.bodies):
                name = _qualified(qual, attr)
                known = by_name.get(name)
                sub = known.reader if known is not None else reader.body(attr, name)
                feeds, why = reader.feeds(call, index, name, len(sub.placeholders))
                problems.extend(why)
                if known is not None:
                    known.sites.append((call.node, feeds))
                    continue
                by_name[name] = b = Body(name, call.hop, qual, sub, feeds, [(call.node, feeds)])
                bodies.append(b)
                queue.append((name, sub))
    return HopTree(root, bodies, calls)


# Note [Where a body input comes from]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A body input's ``source`` is the parent node its first call feeds it (Note [How each HOP calls
# its bodies] in tracer/hop_feeds.py); each CallSite lists the same per call. A value lifted into a
# nested body went through every enclosing body on its way (Dynamo lifts a free variable into each
# SubgraphTracer up to the one where it is bound), so the kind policy also gets the chain behind
# an input: the parent node feeding it, then, while that node is a placeholder of a body, the
# node feeding that one at the body's first call, and so on outward; the chain ends at a node that
# is no body's placeholder, at the root graph, or where a call's Feeds are unknown. An input the
# HOP makes itself is "hop_supplied" whatever the policy says (Note [Inputs the HOP supplies] in
# tracer/hop_feeds.py).
def build_subgraphs(tree: HopTree, policy: KindPolicy, problems: list[str]) -> dict[str, Subgraph]:
    """The Subgraphs of ``tree`` by qualified name (parents first); sets the roles of their
    placeholders (their kinds) and of every HOP node ("hop", with the bodies it calls in ``calls``)."""
    readers: dict[str, GraphReader] = {"": tree.root, **{b.name: b.reader for b in tree.bodies}}
    by_name = {b.name: b for b in tree.bodies}
    _mark_hops(tree.root.graph, "", tree.calls[""])
    out: dict[str, Subgraph] = {}
    for b in tree.bodies:
        parent = readers[b.parent]
        names = b.reader.placeholders
        feeds: list[Optional[Feed]] = list(b.feeds) if b.feeds else [None] * len(names)
        kinds: list[str] = []
        for i, feed in enumerate(feeds):
            kind = "hop_supplied" if feed is not None and feed.supplied else policy.kind(
                b, i, _fed_from(b, feed, by_name, readers))
            kinds.append(kind or "unknown")
        unknown = [names[i] for i, k in enumerate(kinds) if k == "unknown"]
        why = policy.unknown(b, unknown) if unknown else ""
        if why:
            problems.append(why)
        graph = b.reader.graph
        if [ph.name for ph in graph.placeholders] != names:
            raise ValueError(f"body {b.name!r}: its graph has placeholders {[ph.name for ph in graph.placeholders]}, "
                             f"its reader said {names}")
        inputs = []
        for i, ph in enumerate(graph.placeholders):
            kind, feed = kinds[i], feeds[i]
            ph.role = kind
            meta = {k: v for k, v in ph.meta.items() if k not in ("stack_trace", "source")}
            if feed is not None and feed.constant:
                meta["constant"] = feed.constant  # the call passes this value, not a node
            inputs.append(SubgraphInput(name=ph.name, kind=kind, source=_source(parent, feed), meta=meta,
                                        supplied=feed.supplied if feed is not None else ""))
        _mark_hops(graph, b.name, tree.calls[b.name])
        sites = [CallSite(node=node, sources=[_source(parent, f) for f in fs] if fs else [""] * len(names))
                 for node, fs in b.sites]
        out[b.name] = Subgraph(name=b.name, hop=b.hop, parent=b.parent, call_node=b.sites[0][0], graph=graph,
                               inputs=inputs, call_sites=sites)
    return out


def subgraph_tree(root: GraphReader, policy: KindPolicy, problems: list[str]) -> dict[str, Subgraph]:
    """:func:`walk` then :func:`build_subgraphs`: the Subgraphs under ``root`` by qualified name."""
    return build_subgraphs(walk(root, problems), policy, problems)


def _source(parent: GraphReader, feed: Optional[Feed]) -> str:
    return parent.leaf_name(feed.node) if feed is not None and feed.node is not None else ""


def _fed_from(b: Body, feed: Optional[Feed], by_name: dict[str, Body], readers: dict[str, GraphReader]) -> list[Any]:
    """The chain of leaves behind an input of ``b`` fed by ``feed`` (Note [Where a body input comes from])."""
    out: list[Any] = []
    node, graph = (feed.node if feed is not None else None), b.parent
    while node is not None:
        out.append(node)
        outer = by_name.get(graph)
        if outer is None or not outer.feeds:
            break
        name = readers[graph].leaf_name(node)
        if name not in outer.reader.placeholders:
            break
        node, graph = outer.feeds[outer.reader.placeholders.index(name)].node, outer.parent
    return out


def _mark_hops(graph: Graph, qual: str, calls: list[HopCall]) -> None:
    for call in calls:
        n = graph.node(call.node)
        n.role = "hop"
        n.calls = [_qualified(qual, attr) for attr in call.bodies]
