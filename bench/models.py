"""The models every benchmark measures, built fresh and seeded: same name, same model and input.

Invariant: ``make(name, size)`` is a pure function of its arguments (fixed seed), so a capture and a
plain ``torch.compile`` in one run see the same module and the same input.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.utils.checkpoint

from tracer._torch.bench_support import wrap_hop

__all__ = ["MODELS", "SIZES", "big_mlp", "make"]

SIZES = ("full", "tiny")


class MLP(torch.nn.Module):
    """A small MLP: Linear/ReLU x3."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(width, 2 * width), torch.nn.ReLU(),
            torch.nn.Linear(2 * width, 2 * width), torch.nn.ReLU(),
            torch.nn.Linear(2 * width, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Transformer(torch.nn.Module):
    """A stack of ``nn.TransformerEncoderLayer`` (dropout 0 so runs are deterministic)."""

    def __init__(self, layers: int, hidden: int, heads: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(hidden, heads, dim_feedforward=4 * hidden, dropout=0.0,
                                             batch_first=True)
            for _ in range(layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class HopLayer(torch.nn.Module):
    """One layer using every HOP dynascope shows: ``wrap``, ``torch.cond`` and a checkpoint."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.a = torch.nn.Linear(hidden, hidden)
        self.b = torch.nn.Linear(hidden, hidden)
        self.c = torch.nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = wrap_hop()(lambda t: self.a(t).relu(), x)
        y = torch.cond(y.sum() > 0, lambda t: self.b(t).sin(), lambda t: self.b(t).cos(), (y,))
        return torch.utils.checkpoint.checkpoint(lambda t: self.c(t).tanh(), y, use_reentrant=False)


class HopStack(torch.nn.Module):
    """``HopLayer`` repeated: a wrap, a cond and a checkpoint in every layer."""

    def __init__(self, layers: int, hidden: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(HopLayer(hidden) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def _mlp(size: str) -> tuple[torch.nn.Module, tuple]:
    w = 64 if size == "full" else 8
    return MLP(w), (torch.randn(8, w),)


def _transformer12(size: str) -> tuple[torch.nn.Module, tuple]:
    layers, hidden, heads, seq = (12, 256, 4, 16) if size == "full" else (1, 16, 2, 4)
    return Transformer(layers, hidden, heads), (torch.randn(2, seq, hidden),)


def _hops(size: str) -> tuple[torch.nn.Module, tuple]:
    layers, hidden = (4, 64) if size == "full" else (1, 8)
    return HopStack(layers, hidden), (torch.randn(4, hidden),)


MODELS: dict[str, Callable[[str], tuple[torch.nn.Module, tuple]]] = {
    "mlp": _mlp,
    "transformer12": _transformer12,
    "hops": _hops,
}


def make(name: str, size: str = "full") -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """``(model, args)`` for a benchmark model, seeded; ``size="tiny"`` for smoke tests."""
    if name not in MODELS:
        raise ValueError(f"unknown benchmark model {name!r} (must be one of {list(MODELS)})")
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r} (must be one of {list(SIZES)})")
    torch.manual_seed(0)
    return MODELS[name](size)


def big_mlp(param_bytes: int, width: int = 2048) -> tuple[torch.nn.Module, tuple]:
    """An MLP with at least ``param_bytes`` bytes of float32 parameters (square layers of ``width``)."""
    per_layer = (width * width + width) * 4
    layers = max(1, -(-param_bytes // per_layer))
    torch.manual_seed(0)
    mods: list[torch.nn.Module] = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods), (torch.randn(4, width),)
