"""One program captured live while ``TORCH_TRACE`` logs the same compile: ``python log_modules_child.py NAME OUT.json``.

The live capture (with torch's own ``nn_module_stack``) is written as JSON; the log of the very same
compile is what ``TORCH_TRACE`` names, so tests/test_trace_log_modules.py compares one run with itself.
"""

import sys

import torch

import tracer


class TiedReused(torch.nn.Module):
    """A head tied to the embedding (GPT-2's lm_head/wte) and a Linear called twice with a relu between."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(16, 8)
        self.lin = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.head = torch.nn.Linear(8, 16, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.lin(self.emb(ids)).relu()
        x = self.norm(self.lin(x))
        return self.head(x)


class Scale(torch.nn.Module):
    """A user module run once: its line is traced in it only (Note [Backward groups from a log])."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


class Lines(torch.nn.Module):
    """Each user line runs in one module: the log places backward nodes by the line they differentiate."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = Scale()
        self.out = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.scale(x).tanh()
        return self.out(y)


def program(name: str):
    torch.manual_seed(0)
    if name == "gpt2":
        import transformers

        cfg = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=32)
        model = transformers.GPT2LMHeadModel(cfg)
        ids = torch.randint(0, 100, (2, 16))
        return (lambda ids: model(ids, labels=ids).loss), (ids,)
    if name == "lines":
        return Lines(), (torch.randn(3, 8, requires_grad=True),)
    if name == "tied_reused":
        return TiedReused(), (torch.randint(0, 16, (2, 5)),)
    from bench import models

    model, args = models.resnet18("tiny") if name == "resnet18" else models.make(name, "tiny")
    return model, args


if __name__ == "__main__":
    fn, args = program(sys.argv[1])
    cap = tracer.capture(fn, *args)
    with open(sys.argv[2], "w") as fh:
        fh.write(cap.to_json())
