"""A small real TORCH_TRACE log for the loader's CLI and fuzz tests: run with ``TORCH_TRACE=<dir>``.

HOP body (wrap), a graph break (restart + resume frame), a recompile on a new shape (dynamic symbols),
and a training compile (joint/forward/backward graphs). Nothing here imports dynascope.
"""

import torch
from torch._higher_order_ops.wrap import wrap


def hop_and_break(x, w):
    y = wrap(lambda a: (a @ w).sin(), x)
    torch._dynamo.graph_break()
    return y.cos()


def main() -> None:
    f = torch.compile(hop_and_break, backend="aot_eager")
    f(torch.randn(2, 3), torch.randn(3, 3))
    g = torch.compile(lambda x: x * 2, backend="aot_eager")
    g(torch.randn(3))
    g(torch.randn(5))
    lin = torch.nn.Linear(3, 3)
    torch.compile(lin, backend="aot_eager")(torch.randn(2, 3)).sum().backward()


if __name__ == "__main__":
    main()
