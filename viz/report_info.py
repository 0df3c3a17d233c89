"""The static report's inspector data: ``viz.node_info`` of every drawn node, per graph, for the
browser code that draws the widget's inspector too (viz/inspector.js, Note [One inspector]).

Invariant: the block holds exactly ``node_info``'s dicts (the function the explorer calls; here
:func:`viz.info.graph_info`, the same per graph), in the order :func:`viz.report_graphs.report_data`
numbers the graphs, so the report's ``data-graph`` index finds them; strings are stored once (Note
[Interned node facts]) and come back equal; the block is the JSON :func:`viz.markup.json_block` writes
(Note [Blocks written by msgspec]), read with ``JSON.parse`` and shown as text only.

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
import operator
from typing import Any, Callable, Optional

import msgspec

from tracer._no_gc import no_cyclic_gc
from tracer.model import Frame, Graph
from tracer.model.read_only import read_only_dict, read_only_list
from viz.info import graph_info
from viz.markup import json_block, script_json
from viz.report_graphs import frame_graphs

__all__ = ["MARK", "Interner", "graph_names", "intern", "report_info", "resolve", "unintern"]

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


# Note [Interning in one walk]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The report of a log of many distinct frames interns ~57k nodes' facts, ~400k lists and dicts and
# ~300k long strings: Python work per value is most of the facts' CPU (bench/RESULTS.md, 2026-11-27).
# Whether a list or dict is stored depends on how often it occurs in the whole block, and its place
# in ``values`` on what was stored before it, so neither is known while the facts are walked. So
# :class:`Interner` walks each value once, in the order (and with the same table) as counting every
# value and then packing each would, and leaves a :class:`_Slot` where the table decides:
#   * a long string (or one starting with MARK) becomes its string's one slot, met again or not;
#   * a list or dict met for the first time becomes a new slot holding its packed parts (``inner``),
#     one met again the same slot (counted), never walked again;
#   * a list or dict whose JSON is at most ``_SMALL`` bytes (a shape, a stride, ``[]``) is never
#     stored, nor is anything inside it (a part's JSON is a piece of its parent's, and a string of more
#     than ``_SHORT`` characters is more than ``_SMALL`` bytes of JSON); unless its JSON holds a
#     ``\u0001`` (a string starting with MARK may be in it, which is stored) it is written as it is.
# :meth:`Interner.json` then numbers the slots in the order they were made, leaving out the lists and
# dicts met once (written in place), and writes the block with each slot as its ``out`` (its reference,
# or its parts in place): the JSON encoder asks for it (``default``), so no second walk builds the
# packed values. tests/test_report_info.py checks the block against the one-call-per-value interner.

# Note [Blocks written by msgspec]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# json.dumps was a fifth of the facts' CPU on the distinct-frames log; msgspec writes the same block
# ~4x faster and, for str (any code point that UTF-8 can hold), int, bool, None, exact lists and
# dicts with str keys (and the read-only ones of a loaded graph, which read as they do: tracer/model/read_only.py),
# the same bytes as ``json.dumps(separators=(",", ":"), ensure_ascii=False)``
# (tests/test_report_info.py checks every character up to U+0800 and beyond). It writes some floats
# differently (``1e16`` for ``1e+16``, NaN as ``null``) and writes objects json.dumps refuses (an Enum's
# value): so the walk notes any value of another type (a float, a subclass: ``_PLAIN``), and
# such a block, or one msgspec cannot write (a lone surrogate), is written by json.dumps as before.
_MARK_JSON = b"\\u0001"  # how msgspec writes MARK inside a string
_CONTAINERS = (dict, list, tuple)
_CONTAINER_TYPES = frozenset({*_CONTAINERS, read_only_list, read_only_dict})  # a loaded graph's are read-only
_SCALARS = frozenset({int, bool, type(None)})  # exact types written as they are (a float is too: Note [Blocks written by msgspec])
_PLAIN = frozenset({int, bool, type(None), str, *_CONTAINER_TYPES})  # types msgspec writes as json.dumps does
_FLAT = frozenset({int, bool, type(None), str})


class _Slot:
    """A long string, list or dict whose written form the whole table decides (Note [Interning in one walk]):
    ``out`` is its reference when it is stored, else its packed parts; set by :meth:`Interner.finish`."""

    __slots__ = ("inner", "count", "out")

    def __init__(self, inner: Any, count: int = 1) -> None:
        self.inner, self.count, self.out = inner, count, None


_out = operator.attrgetter("out")  # how the JSON encoder writes a slot
_write = msgspec.json.Encoder(enc_hook=_out).encode


def _default(value: Any) -> Any:
    """json.dumps's ``default``: a slot as its ``out``; anything else refused as json.dumps refuses it."""
    if type(value) is _Slot:
        return value.out
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class Interner:
    """The block's ``values`` table: :meth:`add` each value (packed in one walk, slots left where the
    table decides), then :meth:`finish` the table and :meth:`json` the block. See Note [Interning in one walk]."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._slots: list[_Slot] = []  # in the order storing them would number them
        self._strings: dict[str, _Slot] = {}
        self._at: dict[bytes, _Slot] = {}  # a list's or dict's JSON -> its slot
        self._plain_only = True  # nothing but _PLAIN types added: Note [Blocks written by msgspec]

    def add(self, value: Any) -> Any:
        """``value`` packed: long strings and lists and dicts (not small ones) as slots."""
        if type(value) not in _PLAIN:  # a float, a subclass, anything else (the walk's rare case)
            self._plain_only = False
        if isinstance(value, str):
            if len(value) <= _SHORT and not value.startswith(MARK):
                return value
            return self._strings.get(value) or self._string(value)
        if isinstance(value, _CONTAINERS):
            return self._container(value)
        return value

    def _string(self, value: str) -> _Slot:
        slot = self._strings[value] = _Slot(value, 2)  # a string is stored when first met, however often it occurs
        self._slots.append(slot)
        return slot

    def _container(self, value: Any) -> Any:
        if not value:
            return value  # [] or {} (a tuple's JSON is a list's)
        key = _encode(value)
        if len(key) <= _SMALL:
            if _MARK_JSON in key:
                return self._parts(value)  # never stored, but a string starting with MARK in it is
            if not isinstance(value, dict) and _FLAT.issuperset(map(type, value)):
                return value  # a list or tuple of ints, bools, None and short strings: JSON as it is
            return self._plain(value)  # keys made str, nested tuples made lists
        slot = self._at.get(key)
        if slot is not None:
            slot.count += 1
            return slot
        slot = self._at[key] = _Slot(self._parts(value))
        self._slots.append(slot)  # after its parts: they are numbered first
        return slot

    def _plain(self, value: Any) -> Any:
        """A small list or dict as packing writes it: lists for tuples, str keys."""
        if isinstance(value, dict):
            out: Any = {str(k): self._plain(v) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
        else:
            out = [self._plain(v) if isinstance(v, _CONTAINERS) else v for v in value]
        if not _PLAIN.issuperset(map(type, out.values() if isinstance(out, dict) else out)):
            self._plain_only = False
        return out

    def _parts(self, value: Any) -> Any:
        add, container, strings, string = self.add, self._container, self._strings, self._string
        # a number, None or short string is itself, a long string its slot: no call (most of a node's facts)
        return ({str(k): v if (t := type(v)) in _SCALARS or (t is str and len(v) <= _SHORT and v[:1] != MARK)
                 else (strings.get(v) or string(v)) if t is str else container(v) if t in _CONTAINER_TYPES
                 else add(v) for k, v in value.items()}
                if isinstance(value, dict)
                else [v if (t := type(v)) in _SCALARS or (t is str and len(v) <= _SHORT and v[:1] != MARK)
                      else (strings.get(v) or string(v)) if t is str else container(v) if t in _CONTAINER_TYPES
                      else add(v) for v in value])

    def finish(self) -> list[Any]:
        """Number the slots, storing every string and each list or dict met more than once; ``values``."""
        values = self.values
        for slot in self._slots:
            if slot.count > 1:
                slot.out = MARK + str(len(values))
                values.append(slot.inner)
            else:
                slot.out = slot.inner
        self._slots = []
        return values

    def json(self, graphs: Any) -> str:
        """The block ``{"values": ..., "graphs": graphs}``, finished: ``graphs`` is :meth:`add`'s results
        in lists and in dicts keyed by str (node names)."""
        block = {"values": self.finish(), "graphs": graphs}
        if self._plain_only:
            try:
                return script_json(_write(block).decode("utf-8"))  # Note [Blocks written by msgspec]
            except (msgspec.EncodeError, TypeError, ValueError):  # a lone surrogate (no UTF-8): json.dumps writes it
                pass
        return json_block(block, default=_default)


def resolve(value: Any) -> Any:
    """A finished :class:`Interner`'s packed value as plain data (slots as what the block writes)."""
    if isinstance(value, _Slot):
        return resolve(value.out)
    if isinstance(value, dict):
        return {k: resolve(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [resolve(v) for v in value]
    return value


def intern(value: Any) -> tuple[Any, list[Any]]:
    """``value`` packed on its own and its ``values`` table, as plain data (tests; see :class:`Interner`)."""
    table = Interner()
    packed = table.add(value)
    values = table.finish()
    return resolve(packed), resolve(values)


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
            facts = {} if name is None else graph_info(frame, name)  # node_info of each node
            graphs.append({k: info | extra(frame, kind, k) for k, info in facts.items()} if extra else facts)
    add = table.add
    return table.json([{k: add(info) for k, info in facts.items()} for facts in graphs])
