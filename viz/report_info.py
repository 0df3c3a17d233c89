"""The static report's inspector data: ``viz.node_info`` of every drawn node, per graph, for the
browser code that draws the widget's inspector too (viz/inspector.js, Note [One inspector]).

Invariant: the block holds exactly ``node_info``'s dicts (the same function the explorer calls), in the
order :func:`viz.report_graphs.report_data` numbers the graphs, so the report's ``data-graph`` index
finds them; strings are stored once (Note [Interned node facts]) and come back equal; the block is
:func:`viz.markup.json_block` JSON, read with ``JSON.parse`` and shown as text only.

>>> import json
>>> from tracer.model import Frame
>>> from viz.synthetic import chain_graph
>>> block = json.loads(report_info([Frame("0/0", "f.py:1 in f", graph=chain_graph(3, layers=1))]))
>>> info = unintern(block["graphs"][0]["l_x_"], block["values"])
>>> info["name"], info["graph"], info["users"]
('l_x_', '', ['linear_0'])
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Optional

import msgspec

from tracer._no_gc import no_cyclic_gc
from tracer.model import Frame, Graph
from viz.info import node_info
from viz.markup import json_block
from viz.report_graphs import frame_graphs

__all__ = ["MARK", "Interner", "graph_names", "intern", "report_info", "unintern"]

# Note [Interned node facts]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A node's facts repeat what its neighbours say: the recorded user stack (``meta["stack_trace"]``,
# often 2-4 kB) is the same for every node made by one source line; module stacks, source records and
# an AOT node's ``from`` (twice: as a fact and in its meta) repeat along a layer and across the joint,
# forward and backward graphs. So the block stores each such value once, in its ``values`` table, and
# a node refers to it as MARK + its index: every string longer than ``_SHORT`` characters, every list
# or dict that occurs more than once and whose JSON is longer than ``_SMALL`` (its own parts referred
# to the same way; a value met once stays in place), and any string that starts with MARK itself, so
# that decoding is exact whatever the string (a stored string is taken as written, never followed).
# Dict keys are kept as they are (node_info's and meta's own names, short). zlib (the page's payloads)
# finds most repeats itself; storing repeated lists and dicts once still took a 4-layer T5 training
# step's report from 756,111 to 706,658 bytes (bench/RESULTS.md).

MARK = "\u0001"
_SHORT = 12
_SMALL = 16


_encode = msgspec.json.Encoder(enc_hook=str).encode


def _key(value: Any) -> bytes:
    """A value's identity: its JSON (msgspec: C speed, dict order kept)."""
    return _encode(value)


# Note [Interning in few calls]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The report of a log of many distinct frames interns ~57k nodes' facts, ~450k lists and dicts and
# ~300k long strings: a Python call per value was a quarter of the report's CPU (bench/RESULTS.md,
# 2026-11-27). So, with the same table and the same packed values as one call per value:
#   * a long string is looked up in place, its reference (MARK + index) stored ready-made;
#   * a list or dict whose JSON is at most ``_SMALL`` bytes (a shape, a stride, ``[]``) is never stored
#     (only longer ones are), nor is anything inside it (a part's JSON is a piece of its parent's,
#     and a string of more than ``_SHORT`` characters is more than ``_SMALL`` bytes of JSON); unless
#     its JSON holds a ``\u0001`` (a string starting with MARK may be in it, which is stored), it is
#     copied as it is (``_plain``), and neither counted inside nor walked by ``pack``.
# tests/test_report_info.py checks the packed values and the table against the one-call-per-value
# interner on node facts of real graphs and on nested values.
_MARK_JSON = b"\\u0001"  # how msgspec writes MARK inside a string


def _plain(value: Any) -> Any:
    """A small list or dict (Note [Interning in few calls]) as ``pack`` returns it: lists for tuples, str keys."""
    if isinstance(value, dict):
        return {str(k): _plain(v) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
    return [_plain(v) if isinstance(v, _CONTAINERS) else v for v in value]


class Interner:
    """Two passes over the same facts: :meth:`count` every one of them, then :meth:`pack` each; ``values``
    is then the block's table. A list or dict is stored once when it occurs more than once (a child
    counted only inside its first parent: the parent's one copy holds it). See Note [Interning in few calls]."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._refs: dict[str, str] = {}  # a stored string -> its reference
        self._at: dict[bytes, str] = {}  # a stored list's or dict's key -> its reference
        self._counts: dict[bytes, int] = {}
        self._keys: dict[int, bytes] = {}  # id of a counted list or dict -> its key (alive until packed)

    def count(self, value: Any) -> None:
        if isinstance(value, _CONTAINERS):
            self._count(value)

    def _count(self, value: Any) -> None:
        key = self._keys[id(value)] = _key(value)
        counts = self._counts
        seen = counts.get(key, 0)
        counts[key] = seen + 1
        if seen == 0 and len(key) > _SMALL:  # a small one's parts are never stored: not counted
            for v in (value.values() if isinstance(value, dict) else value):
                if type(v) not in _SCALARS and isinstance(v, _CONTAINERS):  # a scalar child is not counted
                    self._count(v)

    def _string(self, value: str) -> str:
        ref = self._refs.get(value)
        if ref is None:
            ref = self._refs[value] = MARK + str(len(self.values))
            self.values.append(value)
        return ref

    def pack(self, value: Any) -> Any:
        """``value`` with long strings and repeated lists and dicts as references into ``values``."""
        if isinstance(value, str):
            if len(value) <= _SHORT and not value.startswith(MARK):
                return value
            return self._string(value)
        if not isinstance(value, _CONTAINERS):
            return value
        key = self._keys.get(id(value)) or _key(value)
        ref = self._at.get(key)
        if ref is not None:
            return ref
        if len(key) <= _SMALL and _MARK_JSON not in key:
            return _plain(value)
        pack, refs, string = self.pack, self._refs, self._string
        # a number, None or short string is itself, a long string its reference: no call (most of a node's facts)
        inner: Any = ({str(k): v if (t := type(v)) in _SCALARS or (t is str and len(v) <= _SHORT and v[:1] != MARK)
                       else (refs.get(v) or string(v)) if t is str else pack(v) for k, v in value.items()}
                      if isinstance(value, dict)
                      else [v if (t := type(v)) in _SCALARS or (t is str and len(v) <= _SHORT and v[:1] != MARK)
                            else (refs.get(v) or string(v)) if t is str else pack(v) for v in value])
        if self._counts.get(key, 0) > 1 and len(key) > _SMALL:
            ref = self._at[key] = MARK + str(len(self.values))
            self.values.append(inner)
            return ref
        return inner


_CONTAINERS = (dict, list, tuple)
_SCALARS = frozenset({int, float, bool, type(None)})  # exact types ``pack`` returns as they are


def intern(value: Any, table: Interner) -> Any:
    """``value`` packed by ``table`` after counting it (one value's own repeats; see :class:`Interner`)."""
    table.count(value)
    return table.pack(value)


def unintern(value: Any, values: list[Any]) -> Any:
    """:func:`intern`'s inverse, given its ``values`` (what report.js does in the browser)."""
    if isinstance(value, str):
        if not value.startswith(MARK):
            return value
        stored = values[int(value[1:])]
        return stored if isinstance(stored, str) else unintern(stored, values)  # a stored string is as written
    if isinstance(value, dict):
        return {k: unintern(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [unintern(v, values) for v in value]
    return value


def graph_names(frame: Frame) -> dict[int, str]:
    """id(graph) -> the name node_info knows it by ("" root, a body's qualified name, "aot.<kind>")."""
    names = {id(g): name for name, g in frame.graphs().items()}
    if frame.aot is not None:
        for kind in ("joint", "forward", "backward", "inference"):
            g = getattr(frame.aot, kind)
            if isinstance(g, Graph):
                names.setdefault(id(g), f"aot.{kind}")
    return names


def _facts_key(frames: list[Frame], digest: Optional[Callable[[list[Any]], Optional[bytes]]] = None) -> Optional[bytes]:
    """A digest of everything node_info reads of ``frames`` (graphs, bodies' inputs, symbols and their
    specializations, kernels, saved values), not their ids or times: equal for a repeated frame.
    ``digest``: a node list's digest (Note [One digest per node list] in viz/report_graphs.py), used
    for the nodes instead of encoding them here."""
    parts = []
    for f in frames:
        aot = f.aot
        graphs = [g for _, _, g, _ in frame_graphs(f)]
        if digest is None:
            nodes: list[Any] = [g.nodes for g in graphs]
        else:
            nodes = [digest(g.nodes) for g in graphs]
            if None in nodes:  # a value JSON cannot hold: computed without the cache
                return None
        parts.append([[g.name for g in graphs], nodes,
                      {k: [sg.parent, sg.hop, sg.inputs] for k, sg in f.subgraphs.items()}, f.symbols,
                      f.specializations, [[g.aot_id, [[k.name, k.dynamo_nodes] for k in g.kernels]] for g in f.inductor],
                      aot.saved if aot is not None else None])
    try:
        return hashlib.blake2b(msgspec.json.encode(parts, enc_hook=repr), digest_size=20).digest()
    except (TypeError, msgspec.EncodeError):  # a value JSON cannot hold: computed without the cache
        return None


def report_info(frames: list[Frame], cache: Optional[dict[bytes, str]] = None,
                extra: Optional[Callable[[Frame, str, str], dict[str, Any]]] = None,
                digest: Optional[Callable[[list[Any]], Optional[bytes]]] = None) -> str:
    """The JSON block of every drawn node's facts: ``{"values": [...], "graphs": [{node: facts}]}``,
    one entry per graph in :func:`viz.report_graphs.report_data`'s numbering; ``extra(frame, graph kind,
    node)``: more facts for a node (a profile's time, :func:`viz.profile_view.time_facts`). ``cache``: the last few
    blocks by :func:`_facts_key`, so a repeated frame (the same graph on every rank, a log repeated)
    costs one digest (as Note [Drawings of equal graphs] in viz/report_graphs.py does for drawings);
    ``digest``: see :func:`_facts_key`."""
    key = _facts_key(frames, digest) if cache is not None and extra is None else None
    if key is not None and key in cache:
        return cache[key]
    with no_cyclic_gc(young_first=True):  # Note [No cyclic GC while a report renders] in viz/report_graphs.py
        block = _report_info(frames, extra)
    if key is not None:
        cache[key] = block
        while len(cache) > 4:
            cache.pop(next(iter(cache)))
    return block


def _report_info(frames: list[Frame], extra: Optional[Callable[[Frame, str, str], dict[str, Any]]] = None) -> str:
    table = Interner()
    graphs: list[dict[str, Any]] = []
    for frame in frames:
        names = graph_names(frame)
        for kind, _title, g, _hi in frame_graphs(frame):
            name = names.get(id(g))  # None: not a graph node_info can name, drawn without facts
            graphs.append({} if name is None else {n.name: node_info(frame, name, n.name)
                                                   | (extra(frame, kind, n.name) if extra else {}) for n in g.nodes})
    for facts in graphs:
        for info in facts.values():
            table.count(info)
    packed = [{k: table.pack(info) for k, info in facts.items()} for facts in graphs]
    return json_block({"values": table.values, "graphs": packed})
