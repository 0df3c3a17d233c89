"""A capture compiles a callable exactly as ``torch.compile`` does, and records the graphs the backend got.

Each test compiles the same callable with plain ``torch.compile(fn, backend=oracle)``: the oracle
backend reads the GraphModule torch hands it, ``guard_filter_fn`` (a torch.compile option) sees
the guards, and torch's bytecode hook names the code objects Dynamo compiled. The capture must
equal that recording: placeholders, op/target sequence, guard sources and frame code location.
See Note [Compile what torch.compile compiles] and Note [Dynamo passes after the output graph
is logged].
"""

from __future__ import annotations

import re

import pytest
import torch
from torch._dynamo import external_utils
from torch._dynamo.convert_frame import register_bytecode_hook

import tracer
from tracer._torch.fx_graph import target_str
from tracer._torch.isolation import code_location
from tracer._torch.since_2_13 import cache_entry_count  # every region's entries, on each release


class Oracle:
    """What plain ``torch.compile`` did: one entry per graph the backend received."""

    def __init__(self) -> None:
        self.graphs: list[list[tuple[str, str, str]]] = []  # (op, name, target) per node
        self.guards: list[set[str]] = []  # guard sources per compiled frame
        self.codes: list[str] = []  # code_location of each code object Dynamo transformed

    def backend(self, gm: torch.fx.GraphModule, example_inputs: list) -> object:
        self.graphs.append([(n.op, n.name, target_str(n)) for n in gm.graph.nodes])
        return gm.forward

    def guard_filter(self, entries: list) -> list[bool]:
        self.guards.append({str(e.orig_guard.name) for e in entries if e.orig_guard.name})
        return [True] * len(entries)

    def run(self, fn, *args):
        handle = register_bytecode_hook(lambda code, new: self.codes.append(code_location(code)))
        try:
            torch._dynamo.reset()
            compiled = torch.compile(fn, backend=self.backend, options={"guard_filter_fn": self.guard_filter})
            return compiled(*args)
        finally:
            handle.remove()
            torch._dynamo.reset()


def _sources(names) -> set[str]:
    # Dynamo installs the builtins dict as a global named by a process-wide counter
    # (``__builtins_dict___<n>``): the same guard, renumbered by every compile
    # (``__builtins_dict___<n>``): the same guard, renumbered by every compile. The ID_MATCH on
    # ``__import__('torch')`` that pytree's registry guards go through is added by whichever of
    # two compiles in a process comes first, so it is left out of the comparison.
    return {re.sub(r"__builtins_dict___\d+", "__builtins_dict___N", n) for n in names if n and n != "__import__('torch')"}


def _graph(frame) -> list[tuple[str, str, str]]:
    return [(n.op, n.name, n.target) for n in frame.graph.nodes]


def assert_same_as_torch_compile(fn, *args) -> tracer.Capture:
    oracle = Oracle()
    expected = oracle.run(fn, *args)
    cap = tracer.capture(fn, *args)
    frames = [f for f in cap.frames if f.graph.nodes]
    assert [_graph(f) for f in frames] == oracle.graphs
    assert [f.code for f in frames] == oracle.codes
    ours = [_sources(g.source for g in f.guards if g.kind != "BACKEND_MATCH") for f in frames]
    assert ours == [_sources(g) for g in oracle.guards]
    torch.testing.assert_close(cap.result, expected)
    return cap


def _hooked_linear() -> torch.nn.Linear:
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    lin.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    lin.register_forward_hook(lambda mod, args, out: out.relu())
    return lin


def test_module_hooks_are_compiled_like_torch_compile():
    lin = _hooked_linear()
    x = torch.randn(2, 3)
    cap = assert_same_as_torch_compile(lin, x)
    (frame,) = cap.frames
    ops = [n.target for n in frame.graph.nodes if n.op.startswith("call")]
    assert ops == ["operator.mul", "torch._C._nn.linear", "relu"]  # pre-hook, forward, hook
    torch.testing.assert_close(cap.result, lin(x))  # not forward(x): the hooks ran


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x) + 1


def test_user_module_with_hooks_compiles_its_call():
    torch.manual_seed(0)
    mod = Scaled()
    mod.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    mod.register_forward_hook(lambda m, args, out: out.relu())
    x = torch.randn(2, 3)
    cap = assert_same_as_torch_compile(mod, x)
    # torch.compile(module) compiles module.__call__: the hooks run, each one its own frame
    assert [f.code.split(" in ")[1] for f in cap.frames] == ["<lambda>", "forward", "<lambda>"]
    torch.testing.assert_close(cap.result, mod(x))
    assert "forward" not in mod.__dict__  # the fresh forward was only set for the capture
    assert cache_entry_count(Scaled.forward.__code__) == 0


@pytest.mark.parametrize("make", [
    lambda: (torch.nn.Linear(3, 2), (torch.randn(4, 3),)),
    lambda: (torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()), (torch.randn(4, 3),)),
    lambda: (torch.sin, (torch.randn(3),)),
], ids=["Linear", "Sequential", "sin"])
def test_torch_callables_without_a_trampoline(make):
    torch.manual_seed(0)
    fn, args = make()
    cap = assert_same_as_torch_compile(fn, *args)
    (frame,) = cap.frames
    assert frame.code.startswith("external_utils.py:") and frame.code.endswith(" in inner")
    # the shared wrap_inline frame torch uses for these got no cache entry from the capture
    assert cache_entry_count(external_utils.wrap_inline(fn).__code__) == 0


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_flex_attention_is_its_own_frame():
    from torch.nn.attention.flex_attention import flex_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, 8, 4) for _ in range(3))
    cap = assert_same_as_torch_compile(flex_attention, q, k, v)  # torch compiles flex_attention's own frame
    (frame,) = cap.frames
    assert frame.code.endswith(" in flex_attention")
    assert [n.name for n in frame.graph.placeholders][0] == "l_query_"
    assert cache_entry_count(flex_attention.__code__) == 0


@torch.compiler.nested_compile_region
def _region(x):
    return x.sin() * 2


def _once(x):
    return _region(x) + 1


def _twice(x):
    return _region(_region(x)) + 1


def test_single_use_region_is_inlined_as_dynamo_does():
    cap = assert_same_as_torch_compile(_once, torch.randn(3))
    (frame,) = cap.frames
    if not hasattr(torch._dynamo.config, "inline_single_use_invoke_subgraph"):
        # torch 2.11 and 2.12 have no such pass (torch 2.13 added it: pytorch/pytorch#180674): the call stays
        assert len(frame.graph.find(target="invoke_subgraph")) == 1 and frame.passes == []
        return
    assert not frame.graph.find(target="invoke_subgraph")
    forward = frame.graph.code.split("\n    class ")[0]
    assert "invoke_subgraph" not in forward  # the text is of the graph the backend got
    for n in frame.graph.nodes:
        if n.op.startswith("call"):
            assert f"{n.name}:" in forward or f"{n.name} =" in forward
    (p,) = frame.passes
    assert p.name == "inline_single_use_invoke_subgraph"
    assert p.nodes_after == len(frame.graph.nodes) and p.nodes_before > p.nodes_after


def test_region_used_twice_is_kept():
    cap = assert_same_as_torch_compile(_twice, torch.randn(3))
    (frame,) = cap.frames
    assert len(frame.graph.find(target="invoke_subgraph")) == 2
    assert frame.passes == []
    assert "torch.ops.higher_order.invoke_subgraph" in frame.graph.code


def test_function_compiled_from_a_string():
    ns: dict = {"torch": torch}
    exec(compile("def f(x):\n    return x.cos() + 1\n", "<string>", "exec"), ns)
    cap = assert_same_as_torch_compile(ns["f"], torch.randn(3))
    import inspect

    from torch._dynamo import eval_frame

    if "inspect.isfunction(fn)" in inspect.getsource(eval_frame):
        assert cap.frames[0].code == "<string>:1 in f"
    else:  # before torch 2.13 (pytorch/pytorch#181531) an exec'd function is compiled through wrap_inline's inner
        assert cap.frames[0].code.startswith("external_utils.py:") and cap.frames[0].code.endswith(" in inner")


def test_notebook_cell_is_named_as_ipython_names_it():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("import torch, tracer", store_history=True)
        result = shell.run_cell(
            "def f(x):\n    return x.sin() * 2\ncap = tracer.capture(f, torch.randn(3))", store_history=True
        )
        result.raise_error()
        cell = shell.execution_count - 1
        frame = shell.user_ns["cap"].frames[0]
        assert frame.code == f"Cell In[{cell}], line 1 in f"
        # the same label IPython's own traceback uses for that code
        label, name = shell.compile.format_code_name(shell.user_ns["f"].__code__.co_filename)
        assert frame.code.startswith(f"{label} {name}, ")
    finally:
        InteractiveShell.clear_instance()
