"""One rank of a small transformer training job under ``torch.compile`` that ``torchrun`` runs (gloo, CPU).

Each rank builds the same 2-block transformer (``nn.TransformerEncoderLayer``, d_model 64), wraps it
in DistributedDataParallel (``--wrap ddp``) or shards each block and the whole model with FSDP2's
public ``torch.distributed.fsdp.fully_shard`` (``--wrap fsdp2``), compiles it with
``torch.compile(backend=...)`` and runs ``--steps`` training steps (forward, backward, SGD). Rank
``--odd-rank`` takes a rank-dependent path: a graph break between the two blocks, so its compile
ids diverge from the other ranks' on purpose. What the job records is torch's own: set
``TORCH_TRACE=<dir>`` in the job's environment for one log per rank. ``--capture`` also saves one
``tracer.capture`` of the wrapped model per rank as ``<out>/rank<RANK>.json`` (as ddp_job.py does).

Usage: ``torchrun --nproc_per_node=8 --standalone tests/ranks/transformer_job.py <out_dir> --wrap ddp``.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
from torch import nn

D_MODEL, HEADS, FF, VOCAB, SEQ, BATCH = 64, 4, 128, 256, 16, 4


class TinyTransformer(nn.Module):
    def __init__(self, odd_rank: int) -> None:
        super().__init__()
        self.odd_rank = odd_rank
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0, batch_first=True)
                                    for _ in range(2))
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        h = self.blocks[0](h)
        if dist.get_rank() == self.odd_rank:  # the rank-dependent path: this rank breaks the graph here
            torch._dynamo.graph_break()
        h = self.blocks[1](h)
        return self.head(h)


def wrapped(model: nn.Module, wrap: str) -> nn.Module:
    """``model`` under DDP, or each block and then the whole model under FSDP2 (public API only)."""
    if wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model)
    from torch.distributed.fsdp import fully_shard

    for block in model.blocks:
        fully_shard(block)
    return fully_shard(model)


def train(model: nn.Module, backend: str, steps: int) -> None:
    torch.manual_seed(1 + dist.get_rank())  # each rank its own batch, as a data-parallel job has
    compiled = torch.compile(model, backend=backend)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        tokens = torch.randint(0, VOCAB, (BATCH, SEQ))
        loss = nn.functional.cross_entropy(compiled(tokens).flatten(0, 1), tokens.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--wrap", choices=("ddp", "fsdp2"), required=True)
    p.add_argument("--backend", default="aot_eager", help="torch.compile backend (default aot_eager: no C++ build)")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--odd-rank", type=int, default=5, help="the rank that takes the graph break")
    p.add_argument("--capture", action="store_true", help="also save tracer.capture of the model as rank<N>.json")
    a = p.parse_args(argv)
    dist.init_process_group("gloo")
    torch.manual_seed(0)  # the same weights on every rank
    model = wrapped(TinyTransformer(a.odd_rank), a.wrap)
    train(model, a.backend, a.steps)
    if a.capture:
        from ddp_job import save_capture  # the per-rank capture, saved as that job saves it

        save_capture(model, torch.randint(0, VOCAB, (BATCH, SEQ)), a.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
