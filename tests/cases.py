"""Small example functions that exercise one Dynamo mechanism each (torch/_dynamo/variables/higher_order_ops.py
speculate_subgraph and torch/_dynamo/output_graph.py SubgraphTracer).

``CASES[name]()`` returns ``(fn, args, capture_kwargs)``: ``tracer.capture(fn, *args, **capture_kwargs)``.
Shared by the capture tests, the viz tests and the notebooks. Tensors are made fresh per call
with a fixed seed, so every capture of a case sees the same values.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch._higher_order_ops.wrap import wrap

__all__ = ["CASES", "GLOBAL_W", "SCALE"]

GLOBAL_W = torch.ones(3)  # an untracked global tensor: Dynamo lifts it as G['GLOBAL_W']
SCALE = 2.5  # a global number: a constant in the graph, never lifted


def _t(*shape: int, seed: int = 0, requires_grad: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).requires_grad_(requires_grad)


def closure_tracked() -> tuple:
    """A closure over a tensor made in the frame (tracked): lifted into the body."""

    def f(x):
        a = x.cos()

        def body(y):
            return y + a

        return wrap(body, x)

    return f, (_t(3),), {}


def untracked_global() -> tuple:
    """A global tensor read in a body: a root input G['GLOBAL_W'], then lifted into the body."""

    def f(x):
        def body(y):
            return y * GLOBAL_W

        return wrap(body, x)

    return f, (_t(3),), {}


def global_number() -> tuple:
    """A global float read in a body: baked in as a constant, no lifted input."""

    def f(x):
        def body(y):
            return y * SCALE

        return wrap(body, x)

    return f, (_t(3),), {}


def nested_wraps() -> tuple:
    """Seed 003: ``b`` made in the outer body is lifted into each inner body; ``x`` through both levels."""

    def f(x):
        def outer(y):
            b = y.sin()

            def inner1():
                return b + x

            def inner2():
                return b * 2

            return wrap(inner1) + wrap(inner2)

        return wrap(outer, x)

    return f, (_t(3),), {}


def cond_closures() -> tuple:
    """torch.cond whose branches close over different tensors, with a cond nested in the false branch."""

    def f(x, z):
        a = x.cos()

        def true_fn(y):
            return y.sin() + z

        def false_fn(y):
            def t2(w):
                return w + a

            def f2(w):
                return w - z

            return torch.cond(y.sum() > 1, t2, f2, (y,))

        return torch.cond(x.sum() > 0, true_fn, false_fn, (x,))

    return f, (_t(3), _t(3, seed=1)), {}


def map_body() -> tuple:
    """map over the first dimension; ``y`` is an extra operand, ``c`` a closure."""
    from torch._higher_order_ops.map import map as hop_map

    def f(xs, y):
        c = y.exp()

        def body(x, y):
            return x * y + c

        return hop_map(body, xs, y)

    return f, (_t(2, 3), _t(3, seed=1)), {}


class _Lin(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        def body(y):
            return self.lin(y).relu()

        return wrap(body, x)


def module_in_body() -> tuple:
    """An nn.Module called in a body: its parameters are root inputs, lifted into the body."""
    torch.manual_seed(0)
    return _Lin(), (_t(2, 3),), {}


def checkpoint() -> tuple:
    """torch.utils.checkpoint: the body becomes tag_activation_checkpoint; backward runs."""
    import torch.utils.checkpoint

    def f(x, w):
        def body(y):
            return (y @ w).sin()

        return torch.utils.checkpoint.checkpoint(body, x, use_reentrant=False)

    return f, (_t(2, 3, requires_grad=True), _t(3, 3, seed=1, requires_grad=True)), {}


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        return x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2, None


def autograd_function() -> tuple:
    def f(x):
        return _Scale.apply(x, 2.0).sum()

    return f, (_t(3, requires_grad=True),), {}


def nested_compile_region() -> tuple:
    """torch.compiler.nested_compile_region: called twice, one invoke_subgraph body reused."""

    @torch.compiler.nested_compile_region
    def block(x, y):
        return (x * y).sin()

    def f(x, y):
        return block(x, y) + block(x + 1, y)

    return f, (_t(3), _t(3, seed=1)), {}


def dynamic_shapes() -> tuple:
    """dynamic=True: the size symbol of the closed-over tensor is lifted with it."""

    def f(x):
        a = x * 2

        def body(y):
            return y + a

        return wrap(body, x)

    return f, (_t(4),), {"dynamic": True}


def unbacked_symbol() -> tuple:
    """Seed 002 / #138363: ``u0`` from ``.item()`` is lifted into the body as a symbol."""

    def f(x, n):
        u = (n + 1).item()  # of an intermediate: unbacked (``n.item()`` of an input may be backed)

        def body(y):
            return y * u

        return wrap(body, x)

    return f, (_t(3), torch.tensor(3)), {"capture_scalar_outputs": True}


def graph_break_in_body() -> tuple:
    """A graph break inside a wrap body: the speculation fails and the body runs as its own frame."""

    def f(x):
        def body(y):
            torch._dynamo.graph_break()
            return y.sin()

        return wrap(body, x.cos()) + 1

    return f, (_t(3),), {}


def recompile_on_shape() -> tuple:
    """A second call with another shape fails TENSOR_MATCH: Dynamo recompiles (0/1)."""

    def f(x):
        return x.sin() * 2

    return f, (_t(3),), {"more_calls": [(_t(5),)]}


def while_loop() -> tuple:
    """while_loop: both bodies take the carried values plus the closures of either body (merged)."""
    from torch._higher_order_ops.while_loop import while_loop as hop_while_loop

    def f(x, n):
        c = x.sum()

        def cond_fn(i, y):
            return i < n

        def body_fn(i, y):
            return i + 1, y + c

        return hop_while_loop(cond_fn, body_fn, (torch.tensor(0), x))

    return f, (_t(3), torch.tensor(3)), {}


def scan() -> tuple:
    """scan: the combine body takes the carry, one slice of xs, and the closure ``w``."""
    from torch._higher_order_ops.scan import scan as hop_scan

    def f(init, xs):
        w = init.cos()

        def combine(carry, x):
            y = carry + x * w
            return y, y.clone()

        return hop_scan(combine, init, xs)

    return f, (_t(3), _t(4, 3, seed=1)), {}


def plain() -> tuple:
    """The simplest capture: one frame, no HOP."""

    def f(x):
        return torch.sin(x) + 1

    return f, (_t(3),), {}


CASES: dict[str, Callable[[], tuple[Callable[..., Any], tuple, dict[str, Any]]]] = {
    "plain": plain,
    "closure_tracked": closure_tracked,
    "untracked_global": untracked_global,
    "global_number": global_number,
    "nested_wraps": nested_wraps,
    "cond_closures": cond_closures,
    "map": map_body,
    "module_in_body": module_in_body,
    "checkpoint": checkpoint,
    "autograd_function": autograd_function,
    "nested_compile_region": nested_compile_region,
    "dynamic_shapes": dynamic_shapes,
    "unbacked_symbol": unbacked_symbol,
    "graph_break_in_body": graph_break_in_body,
    "recompile_on_shape": recompile_on_shape,
    "while_loop": while_loop,
    "scan": scan,
}
