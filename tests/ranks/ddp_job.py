"""One rank of a small DDP job that ``torchrun --nproc_per_node=2`` runs (gloo, CPU).

Each rank wraps a 3-layer MLP (about 1.3 MB of parameters) in DistributedDataParallel with a tiny ``bucket_cap_mb`` so that
Dynamo's DDPOptimizer splits the graph at bucket boundaries, captures one training step with
``tracer.capture`` and saves it as ``<out>/rank<RANK>.json``. Rank 1 takes a rank-dependent path:
a graph break in the middle of ``forward``, so the ranks' frames diverge on purpose.

Usage: ``torchrun --nproc_per_node=2 --standalone tests/ranks/ddp_job.py <out_dir>``; set
``TORCH_TRACE=<out_dir>/trace`` in the job's environment for torch's own per-rank logs.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import tracer


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 512)
        self.fc2 = nn.Linear(512, 512)
        self.fc3 = nn.Linear(512, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        if dist.get_rank() == 1:  # the rank-dependent path: rank 1 breaks the graph here
            torch._dynamo.graph_break()
        h = torch.relu(self.fc2(h))
        return self.fc3(h)


def main(out: str) -> None:
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    # 1 MB buckets (DDPOptimizer wants none smaller than DDP's 1 MB first bucket): fc3 + fc2
    # (1 MB of weights) fill the first, counted from the output, fc1 starts another -> two pieces
    model = DistributedDataParallel(MLP(), bucket_cap_mb=1)
    save_capture(model, torch.randn(8, 64), out)
    dist.destroy_process_group()


def save_capture(model: nn.Module, x: torch.Tensor, out: str) -> None:
    """``tracer.capture`` of one training step of ``model`` on ``x``, saved as ``<out>/rank<RANK>.json``
    (also used by transformer_job.py)."""
    cap = tracer.capture(model, x, backward=True)
    os.makedirs(out, exist_ok=True)
    cap.save(os.path.join(out, f"rank{dist.get_rank()}.json"))


if __name__ == "__main__":
    main(sys.argv[1])
