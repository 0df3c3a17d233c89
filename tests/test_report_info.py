"""viz.report_info: the static report's inspector data is exactly ``viz.node_info`` of every drawn node,
numbered as the report numbers its graphs, its strings stored once and restored exactly."""

from __future__ import annotations

import collections
import json

import pytest
import torch

import tracer
from viz.info import node_info
from viz.markup import json_block
from viz.report_graphs import frame_graphs, report_data
from viz.report_info import MARK, Interner, intern, report_info, resolve, unintern


@pytest.fixture(scope="module")
def cap() -> tracer.Capture:
    def f(x, w):
        y = x.cos()
        return torch.ops.higher_order.wrap(lambda a: (a.sin() + y) @ w, x).sum()

    return tracer.capture(f, torch.randn(3, 3), torch.randn(3, 3, requires_grad=True))


def test_every_drawn_node_has_node_infos_facts(cap):
    frames = [f for f in cap.frames if f.has_graph]
    block = json.loads(report_info(frames))
    _, per_frame = report_data(frames)
    names = [g for f in frames for g in frame_graphs(f)]
    assert len(block["graphs"]) == sum(len(rows) for rows in per_frame) == len(names)
    kinds = [kind for rows in per_frame for kind, _, _, _ in rows]
    assert {"root", "body", "forward", "backward"} <= set(kinds)  # a HOP body and AOT graphs are among them
    checked = 0
    for frame, rows in zip(frames, per_frame, strict=True):
        for (kind, _, index, _), (_, _, graph, _) in zip(rows, frame_graphs(frame), strict=True):
            facts = block["graphs"][index]
            assert sorted(facts) == sorted(n.name for n in graph.nodes)
            name = {"root": ""}.get(kind, f"aot.{kind}")
            if kind == "body":
                name = next(k for k, sg in frame.subgraphs.items() if sg.graph is graph)
            for n in graph.nodes:
                got = unintern(facts[n.name], block["values"])
                assert got == json.loads(json.dumps(node_info(frame, name, n.name), default=str)), (kind, n.name)
                checked += 1
    assert checked >= 20
    saved = [s.name for f in frames if f.aot is not None for s in f.aot.saved]
    assert saved and any("saved_for_backward" in unintern(g.get(saved[0], {}), block["values"])
                         for g in block["graphs"])


@pytest.mark.parametrize("value", ["", "short", "x" * 13, MARK, MARK + "3", "é ∂ 😀 \u2028 \x00" * 3, [], {},
                                   {"k": ["a" * 40, 1, 2.5, None, True, {"n": MARK * 2}], "j": ["a" * 40, 1, 2.5, None, True, {"n": MARK * 2}]},
                                   [{"node": "x", "line": 3}, {"node": "x", "line": 3}, ["p", "q"], "[\"p\",\"q\"]"]])
def test_interning_is_exact(value):
    packed, values = json.loads(json.dumps(intern(value)))
    assert unintern(packed, values) == value
    assert all(len(v) > 12 or v.startswith(MARK) for v in values if isinstance(v, str))  # short plain strings stay
    assert len(values) == len({json.dumps(v) for v in values})  # each stored once


def test_repeated_values_are_stored_once():
    source = {"file": "/site-packages/transformers/models/t5/modeling_t5.py", "line": 307, "code": "h = self.ln(h)"}
    facts = [{"name": f"n{i}", "from": dict(source), "meta": {"from": dict(source), "shape": [2, i]}} for i in range(50)]
    table = Interner()
    packed = [table.add(f) for f in facts]
    values = resolve(table.finish())
    packed = resolve(packed)
    assert [unintern(p, values) for p in packed] == facts
    assert len(values) == 3  # the source dict and its two long strings, once; not 100 copies
    assert len(json.dumps(packed)) < len(json.dumps(facts)) / 3


def test_a_repeated_frame_reuses_its_block_and_a_changed_one_does_not(cap):
    import copy

    frame = max(cap.frames, key=lambda f: len(f.graph.nodes))
    cache: dict = {}
    first = report_info([frame], cache)
    twin = copy.deepcopy(frame)
    twin.compile_id, twin.times = "9/0", {}  # another copy of the same compile: same facts
    assert report_info([twin], cache) == first == report_info([twin]) and len(cache) == 1
    changed = copy.deepcopy(frame)
    changed.aot.saved = changed.aot.saved[1:]  # one saved value fewer: a fact differs, so no reuse
    assert report_info([changed], cache) == report_info([changed]) != first and len(cache) == 2


class _OneCallPerValue:
    """The interner before Note [Interning in one walk]: every value counted, then one ``pack`` call per
    list, dict and long string."""

    def __init__(self) -> None:
        import collections

        self.values: list = []
        self._strings: dict = {}
        self._at: dict = {}
        self._counts: collections.Counter = collections.Counter()
        self._keys: dict = {}

    def count(self, value):
        if isinstance(value, (dict, list, tuple)):
            self._count(value)

    def _count(self, value):
        from viz.report_info import _key

        key = self._keys[id(value)] = _key(value)
        self._counts[key] += 1
        if self._counts[key] == 1:
            for v in (value.values() if isinstance(value, dict) else value):
                if isinstance(v, (dict, list, tuple)):
                    self._count(v)

    def pack(self, value):
        from viz.report_info import _key

        if isinstance(value, str):
            if len(value) <= 12 and not value.startswith(MARK):
                return value
            at = self._strings.get(value)
            if at is None:
                at = self._strings[value] = len(self.values)
                self.values.append(value)
            return MARK + str(at)
        if isinstance(value, (dict, list, tuple)):
            key = self._keys.get(id(value)) or _key(value)
            if key in self._at:
                return MARK + str(self._at[key])
            inner = ({str(k): self.pack(v) for k, v in value.items()} if isinstance(value, dict)
                     else [self.pack(v) for v in value])
            if self._counts[key] > 1 and len(key) > 16:
                self._at[key] = len(self.values)
                self.values.append(inner)
                return MARK + str(self._at[key])
            return inner
        return value


def _both(facts: list) -> tuple[str, str]:
    """The block of ``facts`` from :class:`Interner` and from the one-call-per-value interner."""
    table = Interner()
    fast = table.json([table.add(f) for f in facts])
    slow = _OneCallPerValue()
    for f in facts:
        slow.count(f)
    packed = [slow.pack(f) for f in facts]
    return fast, json_block({"values": slow.values, "graphs": packed})


def test_interning_equals_one_call_per_value_on_real_node_facts(cap):
    from viz.report_info import graph_names

    facts = []
    for frame in cap.frames:
        names = graph_names(frame)
        for _, _, g, _ in frame_graphs(frame):
            if id(g) in names:
                facts += [node_info(frame, names[id(g)], n.name) for n in g.nodes]
    assert len(facts) >= 20
    fast, slow = _both(facts + facts[:5])  # some whole facts repeated too
    assert fast == slow


@pytest.mark.parametrize("seed", range(20))
def test_interning_equals_one_call_per_value_on_nested_values(seed):
    import random

    rng = random.Random(seed)
    leaves = [None, True, 0, 7, 2.5, "", "a", "x" * 12, "y" * 13, MARK, MARK + "1", "é" * 7, "[\"p\"]", "\\u0001",
              "a/long/path/to/modeling.py", (1, 2), [64], {"k": 1}, {3: "v"}]

    def value(depth: int):
        if depth > 3 or rng.random() < 0.3:
            return rng.choice(leaves)
        if rng.random() < 0.5:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {rng.choice(["a", "shape", "from", "meta", MARK]): value(depth + 1) for _ in range(rng.randrange(4))}

    facts = [value(0) for _ in range(40)]
    facts += [rng.choice(facts) for _ in range(10)]
    fast, slow = _both(facts)
    assert fast == slow


class _Colour(__import__("enum").Enum):
    RED = "red"


class _Text(str):
    pass


@pytest.mark.parametrize("value", [
    ["".join(map(chr, range(0x800))), "\u2028\u2029\ufeff\uffff😀\U0010ffff", {"k": "\x7f\x00\x1f\"\\/"}],
    [2**70, -(2**63) - 1, True, None, (1, "a" * 13), {"t": (1, 2)}],
    [1e16, 1e-05, 0.1, {"t": 1e16}, {"u": [1e16]}, [float("nan")], {"inf": float("inf")}, "x" * 20],
    [{"small": [2.5]}, {"small": {"k": 1e16}}, {"small": [[1e16]]}, {"a": [3, {"b": 1e-7}], "c": "y" * 20}],
    [_Text("a subclass of str"), {"k": _Text("short")}, {"k": [_Text("x")]}],
    [{"k": collections.OrderedDict({True: 1}), "long": "z" * 20}, collections.OrderedDict({2: "v", None: (1,)}), {"t": (1, "a")}],
])
def test_a_block_is_what_json_dumps_writes(value):
    """Note [Blocks written by msgspec]: the same bytes whichever encoder writes the block."""
    fast, slow = _both([value, value, {"n": value}])
    assert fast == slow


def test_a_lone_surrogate_is_written_as_before():
    fast, slow = _both(["\ud800 lone surrogate", "\udfff"])  # UTF-8 cannot hold it; in a list or dict, neither interner can
    assert fast == slow


def test_a_block_json_cannot_write_is_refused_as_before():
    for bad in ([_Colour.RED], {"k": [_Colour.RED]}, {"k": _Colour.RED, "s": "z" * 20}):
        with pytest.raises(TypeError, match="not JSON serializable"):
            _both([bad])
        with pytest.raises(TypeError, match="not JSON serializable"):
            table = Interner()
            table.json([table.add(bad)])


def test_graph_info_is_node_info_of_every_node(cap):
    """viz.info.graph_info (the report's way, lookups made once per graph) gives node_info of each node,
    also where a kernel, a saved value or a body's input is listed twice (the first one counts)."""
    import copy
    import dataclasses

    from tracer.model import Aot, InductorGraph, Kernel, SavedValue, ShapeSymbol
    from viz.info import frame_graph, graph_info
    from viz.report_info import graph_names

    frames = [f for f in cap.frames if f.has_graph]
    odd = copy.deepcopy(max(frames, key=lambda f: len(f.graph.nodes)))
    root = [n.name for n in odd.graph.nodes]
    odd.inductor = [InductorGraph(aot_id="0_forward", kernels=[Kernel(name="k0", handle=0, dynamo_nodes=[root[1], root[1]]),
                                                               Kernel(name="k1", handle=1, dynamo_nodes=root[:3])]),
                    InductorGraph(aot_id="0_backward", kernels=[Kernel(name="k2", handle=2, dynamo_nodes=[root[2]])])]
    aot = odd.aot if odd.aot is not None else Aot(mode="training")
    names = [n.name for n in aot.forward.nodes]
    aot.saved = [SavedValue(names[1], "tensor", nbytes=4, origin="first"), SavedValue(names[1], "tensor", nbytes=8, origin="second"),
                 *aot.saved]
    odd.aot = aot
    body_name, body = next(iter(odd.subgraphs.items()))
    kinds = {i.name: i.kind for i in body.inputs}
    body.inputs = [*body.inputs, *(dataclasses.replace(i, kind="hop_supplied") for i in body.inputs)]  # each name twice
    odd.symbols = [ShapeSymbol(name="s0", source="L['x'].size()[0]")]
    odd.graph.nodes[1].meta["shape"] = ["s0", 3]
    checked = 0
    for frame in [*frames, odd]:
        for name in graph_names(frame).values():
            graph = frame_graph(frame, name)
            assert graph_info(frame, name) == {n.name: node_info(frame, name, n.name) for n in graph.nodes}
            checked += len(graph.nodes)
    facts = graph_info(odd, "")
    assert facts[root[1]]["kernels"] == ["k0 (0_forward)", "k1 (0_forward)"] and facts[root[2]]["kernels"][-1] == "k2 (0_backward)"
    assert "s0 = L['x'].size()[0]" in facts[root[1]]["symbols"]
    assert graph_info(odd, "aot.forward")[names[1]]["saved_for_backward"].endswith("first")
    assert {k: v["input_kind"] for k, v in graph_info(odd, body_name).items() if k in kinds} == kinds
    assert checked >= 40


def test_a_block_of_a_loaded_graphs_values_is_written_by_msgspec(monkeypatch):
    """Note [Blocks written by msgspec]: a loaded graph's read-only lists and dicts are plain values (the
    report's case), written by msgspec with json.dumps's bytes."""
    import viz.report_info
    from tracer.model.read_only import freeze

    value = freeze({"k": ["a" * 20, 1, True, None, {"n": "é ∂ 😀 \u2028 \x00" * 3, "s": [2, "s0"]}], "e": [], "d": {}})
    facts = [{"name": f"n{i}", "graph": "", "meta": dict(value, i=i)} for i in range(3)]
    slow = _both(facts)[1]
    monkeypatch.setattr(viz.report_info, "json_block", lambda *a, **k: pytest.fail("written by json.dumps"))
    table = Interner()
    assert table.json([table.add(f) for f in facts]) == slow
