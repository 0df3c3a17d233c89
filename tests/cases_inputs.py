"""HOP calls whose body inputs are not a flat list of tensors: pytree operands, non-tensor operands,
inputs the HOP makes itself, and a body called from several places.

``INPUT_CASES[name]()`` returns ``(fn, args)``: ``tracer.capture(fn, *args)`` (``dynamic=True`` for
the names in ``DYNAMIC``), and the same
``fn`` compiled with an oracle backend sees the same Dynamo graph. Written the way PyTorch's own
HOP tests are (test/dynamo/test_higher_order_ops.py, test/functorch/test_control_flow.py,
test/higher_order_ops/test_invoke_subgraph.py): small functions, small shapes, closures.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree
from torch._higher_order_ops.map import map as hop_map
from torch._higher_order_ops.scan import scan as hop_scan
from torch._higher_order_ops.while_loop import while_loop as hop_while_loop
from torch._higher_order_ops.wrap import wrap

__all__ = ["DYNAMIC", "INPUT_CASES", "Pair"]

DYNAMIC = {"wrap_symint"}  # cases compiled (and captured) with dynamic=True


def _t(*shape: int, seed: int = 0, requires_grad: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).requires_grad_(requires_grad)


@dataclasses.dataclass
class Pair:
    """A pytree dataclass (``register_dataclass``): both fields are leaves."""

    a: torch.Tensor
    b: torch.Tensor


pytree.register_dataclass(Pair)


def wrap_dict() -> tuple:
    def f(x, y):
        w = x.cos()

        def body(d):
            return d["x"].sin() + d["y"] * w

        return wrap(body, {"x": x, "y": y})

    return f, (_t(3), _t(3, seed=1))


def wrap_nested() -> tuple:
    def f(x, y, z):
        def body(t):
            (a, (b, [c])) = t
            return a + b * c

        return wrap(body, (x, (y, [z.cos()])))

    return f, (_t(3), _t(3, seed=1), _t(3, seed=2))


def wrap_dataclass() -> tuple:
    def f(x, y):
        def body(p):
            return p.a.sin() + p.b

        return wrap(body, Pair(x, y.cos()))

    return f, (_t(3), _t(3, seed=1))


def wrap_dataclass_argument() -> tuple:
    """The pytree object is a frame argument: its leaves become graph inputs of the root."""

    def f(p):
        def body(q):
            return q.a.sin() + q.b

        return wrap(body, p)

    return f, (Pair(_t(3), _t(3, seed=1)),)


def wrap_constants() -> tuple:
    def f(x, y):
        def body(a, k, b, s, c):
            return a * k + b * s + c

        return wrap(body, x, 3, y, 0.5, x.sin())

    return f, (_t(3), _t(3, seed=1))


def wrap_symint() -> tuple:
    """``n`` is a SymInt under dynamic=True: a non-tensor operand with a graph node."""

    def f(x, n, y):
        def body(a, m, b):
            return a * m + b

        return wrap(body, x, n, y)

    return f, (_t(3), 4, _t(3, seed=1))


def cond_dict() -> tuple:
    def f(x, y):
        c = y.sum()

        def t(d):
            return d["a"].sin() + c

        def e(d):
            return d["b"].cos()

        return torch.cond(x.sum() > 0, t, e, ({"a": x, "b": y},))

    return f, (_t(3), _t(3, seed=1))


def map_nested() -> tuple:
    def f(xs, y):
        c = y.exp()

        def body(x, other):
            (p, q) = x
            return p * other["y"] + q + c

        return hop_map(body, (xs, xs.cos()), {"y": y})

    return f, (_t(2, 3), _t(3, seed=1))


def scan_tuple() -> tuple:
    def f(init, xs, w):
        def combine(carry, x):
            (c0, c1) = carry
            y = c0 + x * w + c1
            return (y, c1.clone()), y.clone()

        return hop_scan(combine, (init, init.cos()), xs)

    return f, (_t(3), _t(4, 3, seed=1), _t(3, seed=2))


def while_loop_dict() -> tuple:
    def f(x, n):
        c = x.sum()

        def cond_fn(i, d):
            return i < n

        def body_fn(i, d):
            return i + 1, {"y": d["y"] + c, "z": d["z"] * 2}

        return hop_while_loop(cond_fn, body_fn, (torch.tensor(0), {"y": x, "z": x.cos()}))

    return f, (_t(3), torch.tensor(3))


def flex_attention() -> tuple:
    from torch.nn.attention.flex_attention import create_block_mask
    from torch.nn.attention.flex_attention import flex_attention as flex

    def f(q, k, v, bias):
        def score_mod(score, b, h, q_idx, kv_idx):
            return score + bias[q_idx]

        def causal(b, h, q_idx, kv_idx):
            return q_idx >= kv_idx

        mask = create_block_mask(causal, 1, 1, 8, 8, device="cpu")
        return flex(q, k, v, score_mod=score_mod, block_mask=mask)

    shape = (1, 1, 8, 16)
    return f, (_t(*shape), _t(*shape, seed=1), _t(*shape, seed=2), _t(8, seed=3))


class _Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, g * x


def autograd_function() -> tuple:
    def f(x, w):
        return _Mul.apply(x, w.cos()).sum()

    return f, (_t(3, requires_grad=True), _t(3, seed=1, requires_grad=True))


def compile_region_three_calls() -> tuple:
    @torch.compiler.nested_compile_region
    def block(a, b):
        return (a * b).sin()

    def f(x, y):
        return block(x, y) + block(x.cos(), y) + block(y, x + 1)

    return f, (_t(3), _t(3, seed=1))


def map_constant() -> tuple:
    """A constant extra operand: the body gets a placeholder for it that no parent node feeds."""

    def f(xs, y):
        return hop_map(lambda x, k, b: x * k + b, xs, 2, y)

    return f, (_t(2, 3), _t(3, seed=1))


def while_loop_int_carry() -> tuple:
    def f(x):
        return hop_while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 2), (0, x))

    return f, (_t(3),)


INPUT_CASES: dict[str, Callable[[], tuple[Callable[..., Any], tuple]]] = {
    "wrap_dict": wrap_dict,
    "wrap_nested": wrap_nested,
    "wrap_dataclass": wrap_dataclass,
    "wrap_dataclass_argument": wrap_dataclass_argument,
    "wrap_constants": wrap_constants,
    "wrap_symint": wrap_symint,
    "cond_dict": cond_dict,
    "map_nested": map_nested,
    "scan_tuple": scan_tuple,
    "while_loop_dict": while_loop_dict,
    "flex_attention": flex_attention,
    "autograd_function": autograd_function,
    "compile_region_three_calls": compile_region_three_calls,
    "map_constant": map_constant,
    "while_loop_int_carry": while_loop_int_carry,
}
