"""Modules the torch.export tests export: HOPs (cond, while_loop, scan, map, no_grad, autocast), a
mutated buffer, and exports that fail (a data-dependent branch, a dynamic dimension the program
specializes, a graph break under strict export). Kept apart from the tests so a saved ``.pt2`` can be
opened in a process that cannot import this file."""

from __future__ import annotations

import torch
from torch._higher_order_ops.map import map as hop_map
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop


class CondLoop(torch.nn.Module):
    """A mutated buffer, a cond reading it from a closure, a while_loop, a Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        self.count.add_(1)

        def true_fn(x):
            return x.sin() + self.count

        def false_fn(x):
            return x.cos()

        y = torch.cond(x.sum() > 0, true_fn, false_fn, (x,))
        _, y = while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 2), (torch.tensor(0), y))
        return self.lin(y)


class MoreHops(torch.nn.Module):
    """scan, map, a no_grad region (wrap_with_set_grad_enabled) and an autocast region (wrap_with_autocast)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        def combine(c, xi):
            return c + xi, (c * xi).sum(0, keepdim=True).squeeze(0)

        c, ys = scan(combine, torch.zeros(4), x)
        m = hop_map(lambda r, w: r @ w, x, self.w)
        with torch.no_grad():
            b = m * 2
        with torch.autocast("cpu", dtype=torch.bfloat16):
            d = b @ self.w
        return c, ys, d.float()


class InputMutation(torch.nn.Module):
    """Writes into its input: after run_decompositions a USER_INPUT_MUTATION output."""

    def forward(self, x):
        x.mul_(2)
        return x + 1


class DataDependent(torch.nn.Module):
    """Branches on a tensor's value: export cannot guard on it."""

    def forward(self, x):
        n = x.sum().int().item()
        if n > 2:  # the data-dependent line
            return x * n
        return x + 1


class Reshape4(torch.nn.Module):
    """Specializes a dimension dynamic_shapes says is free: it must be a multiple of 4."""

    def forward(self, x):
        return x.reshape(4, -1) + 1  # the constraint line


class Breaks(torch.nn.Module):
    """A graph break, which strict export cannot have."""

    def forward(self, x):
        torch._dynamo.graph_break()  # the break line
        return x + 1


@torch.compiler.nested_compile_region
def region(x, w):
    return torch.relu(x @ w)


class Region(torch.nn.Module):
    """A nested_compile_region: an invoke_subgraph body (kept when Dynamo's single-use inlining is off)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return region(x, self.w) + 1


class ShapeChecks(torch.nn.Module):
    """Two shape guards, each added by a user line."""

    def forward(self, x, y):
        z = x[: y.shape[0] * 2]  # the slice guard
        torch._check(x.shape[0] % 2 == 0)  # the divisibility guard
        return z.sum() + y.sum()


@torch.library.custom_op("dynascope_tests::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    """A custom operator with no fake kernel: export cannot trace it."""
    return x * 2


class NoFakeKernel(torch.nn.Module):
    def forward(self, x):
        return no_fake(x) + 1  # the custom op line


class LoopCheck(torch.nn.Module):
    """Shape guards added inside a while_loop body and a cond branch, where torch logs its own frames too."""

    def forward(self, x, y):
        def body(i, z):
            torch._check(z.shape[0] >= 4)  # the loop's check
            return i + 1, z * 2 + y[: z.shape[0]].sum()  # the loop's slice

        _, z = while_loop(lambda i, z: i < 3, body, (torch.tensor(0), x))
        return torch.cond(z.sum() > 0, lambda a, b: a + b, lambda a, b: a - b, (z, y))  # the branch's add


_LIB = torch.library.Library("dynascope_tests", "FRAGMENT")  # an operator defined the low-level way
_LIB.define("no_kernel_for_fakes(Tensor x) -> Tensor")
_LIB.impl("no_kernel_for_fakes", lambda x: x * 2, "CPU")  # a CPU kernel only: no fake (Meta) kernel


class NoMetaKernel(torch.nn.Module):
    """An operator with neither a fake impl nor a Meta kernel: fake tensors cannot run it."""

    def forward(self, x):
        y = x.cos()
        return torch.ops.dynascope_tests.no_kernel_for_fakes(y) + 1  # the unsupported op line


class TensorBranch(torch.nn.Module):
    """Branches on a tensor: strict export's Dynamo stops there, with the graph traced so far."""

    def forward(self, x):
        y = x.sin() * 2
        if y.sum() > 0:  # the tensor branch line
            return y + 1
        return y - 1
