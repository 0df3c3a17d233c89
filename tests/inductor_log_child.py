"""A real TORCH_TRACE log of Inductor compiles, for tests/test_trace_log_inductor.py: run with ``TORCH_TRACE=<dir>``.

``model`` is compiled for inference (no grad) and, with ``train`` on the command line, once more for
training (forward and backward; a recompile on w's requires_grad). The test captures the same ``model`` live, so user lines are equal.
Nothing here imports dynascope.
"""

import sys

import torch


def model(x, w):
    h = torch.sin(x) * 2
    h = h + 1
    m = h @ w
    return torch.relu(m) - 3


def main() -> None:
    torch.manual_seed(0)
    x, w = torch.randn(4, 8), torch.randn(8, 4)
    with torch.no_grad():
        torch.compile(model, backend="inductor")(x, w)
    if "train" in sys.argv[1:]:
        w.requires_grad_(True)
        torch.compile(model, backend="inductor")(x, w).sum().backward()


if __name__ == "__main__":
    main()
