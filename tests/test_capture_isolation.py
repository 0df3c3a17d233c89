"""Capturing leaves no trace in torch: repeated captures are complete, caches stay clean."""

from __future__ import annotations

import re

import torch
from torch._dynamo import external_utils
from torch._higher_order_ops.wrap import wrap

import tracer
from tracer._torch.since_2_13 import cache_entry_count  # every region's entries, on each release


def _entries(fn) -> int:
    return cache_entry_count(fn.__code__)


def shared(x):
    a = x.cos()

    def body(y):
        return y + a

    return wrap(body, x)


def test_twenty_captures_of_the_same_function_are_complete():
    caps = [tracer.capture(shared, torch.randn(3)) for _ in range(20)]
    for cap in caps:
        # Dynamo's recompile limit (8) would turn later captures into eager runs with no frames.
        assert [f.compile_id for f in cap.frames] == ["0/0"]
        (sg,) = cap.frames[0].subgraphs.values()
        assert [i.kind for i in sg.inputs] == ["operand", "lifted_freevar"]
        assert cap.recompiles == []
    first, last = caps[0].frames[0], caps[-1].frames[0]
    timeless = [re.sub(r"compile \S+ s", "compile T s", str(c)) for c in (caps[0], caps[-1])]
    assert timeless[0] == timeless[1]  # same function: the same capture (compile times aside)...
    assert first.graph == last.graph and first.subgraphs == last.subgraphs and first.guards == last.guards
    assert first.dynamo_id != last.dynamo_id  # ...from 20 real compiles
    assert _entries(shared) == 0  # no cache entries left on the user's function
    for code in shared.__code__.co_consts:
        if hasattr(code, "co_code"):
            assert cache_entry_count(code) == 0


def test_other_compiled_functions_keep_their_caches():
    def other(x):
        return x * 3

    compiled = torch.compile(other, backend="eager")
    compiled(torch.randn(2))
    assert _entries(other) == 1
    tracer.capture(shared, torch.randn(3))
    tracer.capture(other, torch.randn(2))  # the same function, captured
    assert _entries(other) == 1
    compiled(torch.randn(2))
    assert _entries(other) == 1  # still a cache hit, no recompile


def test_capture_of_a_user_compiled_function_does_not_touch_its_entries():
    def g(x):
        return x.sin()

    compiled = torch.compile(g, backend="eager")
    compiled(torch.randn(2))
    cap = tracer.capture(g, torch.randn(2))
    assert len(cap.frames) == 1
    assert _entries(g) == 1


def test_configs_are_restored_also_with_options():
    import torch._dynamo.config as config

    before = config.get_config_copy()
    tracer.capture(shared, torch.randn(3), capture_scalar_outputs=True, dynamo_config={"cache_size_limit": 4})
    assert config.get_config_copy() == before


def test_module_capture_repeated():
    lin = torch.nn.Linear(3, 2)
    for _ in range(10):
        cap = tracer.capture(lin, torch.randn(4, 3))
        (f,) = cap.frames
        # torch's own module: compiled as torch.compile does, through a fresh copy of torch's
        # wrap_inline frame (Note [Compile what torch.compile compiles]), forward inlined
        assert f.code.endswith(" in inner")
        linear = f.graph.find(target="linear")[0]
        assert linear.meta["shape"] == [4, 2]
        assert "source" not in linear.meta  # no user line: only torch's frames called it
        assert sorted(n.role for n in f.graph.placeholders) == ["operand", "param", "param"]
    assert _entries(type(lin).forward) == 0
    assert _entries(external_utils.wrap_inline(lin)) == 0  # torch's shared frame got no entry


def test_recompile_limit_is_per_capture():
    # more_calls recompiles inside one capture; the next capture starts from a fresh 0/0
    for _ in range(3):
        cap = tracer.capture(shared, torch.randn(3), more_calls=[(torch.randn(4),)])
        assert [f.compile_id for f in cap.frames] == ["0/0", "0/1"]
        assert len(cap.recompiles) == 1


def test_capture_of_a_torch_compile_result_captures_the_original():
    def h(x):
        return x.cos() + 1

    compiled = torch.compile(h, backend="eager")
    cap = tracer.capture(compiled, torch.randn(2))
    assert cap.fn.endswith("h") and cap.frames[0].code.endswith(" in h")
    assert cap.frames[0].graph.find(target="cos")
    lin = torch.nn.Linear(2, 2)
    cap = tracer.capture(torch.compile(lin, backend="eager"), torch.randn(1, 2))
    assert cap.fn == "Linear" and cap.frames[0].graph.find(target="linear")
