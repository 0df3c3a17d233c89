# %% [markdown]
# # Post-mortem of a multi-rank job
#
# **You are here if** a multi-rank job hangs in a collective after compiling, or tlparse warns that
# the ranks' compile ids differ. PyTorch's pages: [tlparse / TORCH_TRACE](https://docs.pytorch.org/docs/stable/compile/programming_model.observability.html) (one trace per
# rank) and the [torch.compile FAQ](https://docs.pytorch.org/docs/stable/torch.compiler_faq.html) (`DistributedDataParallel` under `torch.compile`).
#
# A `torchrun` job runs one Python process per rank, and each one compiles on its own. By default
# Dynamo does not consult the other ranks while it compiles: the opt-in
# `torch._dynamo.config.enable_compiler_collectives` (default `False`) makes ranks exchange, with
# collectives during compilation, what automatic dynamic shapes needs, and then requires that no
# rank diverges with a graph break. Dynamo does know DDP: when it compiles inside a
# `DistributedDataParallel` module, DDPOptimizer (below) splits the graph at DDP's buckets. When one
# rank takes a different path — a graph break only rank 1
# hits, a different input shape — the ranks compile different frames, and a collective that one rank
# reaches and another does not hangs the whole job. `tlparse` warns about this when the compile ids
# of the ranks' `TORCH_TRACE` logs differ. dynascope reads the same records and says *what* differs,
# frame by frame.
#
# The job in this notebook is a small script the next cell writes to a temporary directory: a
# 3-layer MLP in `DistributedDataParallel` on CPU (gloo). Each rank runs one training step under
# `tracer.capture` and saves the capture as `rank<N>.json`. In `forward`, rank 1 calls
# `torch._dynamo.graph_break()` — the rank-dependent path.

# %%
import math
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import warnings

import tracer
import viz

warnings.filterwarnings("ignore")
JOB = """\
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import tracer


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 512)
        self.fc2 = nn.Linear(512, 512)
        self.fc3 = nn.Linear(512, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if dist.get_rank() == 1:  # the rank-dependent path: rank 1 breaks the graph here
            torch._dynamo.graph_break()
        h = torch.relu(self.fc2(h))
        return self.fc3(h)


dist.init_process_group("gloo")
torch.manual_seed(0)
model = DistributedDataParallel(MLP(), bucket_cap_mb=1)  # 1 MiB buckets: DDPOptimizer splits at them
cap = tracer.capture(model, torch.randn(8, 64), backward=True)
cap.save(os.path.join(sys.argv[1], f"rank{dist.get_rank()}.json"))
dist.destroy_process_group()
"""
job_py = pathlib.Path(tempfile.mkdtemp(prefix="ddp_job_src_")) / "ddp_job.py"
_ = job_py.write_text(JOB)

# %% [markdown]
# `torchrun` (here `python -m torch.distributed.run`) starts two ranks on this machine, with
# `TORCH_TRACE` set so that torch writes its own log per rank beside the captures.

# %%
out = pathlib.Path(tempfile.mkdtemp(prefix="ddp_job_"))
with socket.socket() as s:  # a free port for the loopback rendezvous
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--nnodes=1",
       f"--rdzv_endpoint=127.0.0.1:{port}", "--rdzv_backend=c10d", str(job_py), str(out)]
dynascope = pathlib.Path(tracer.__file__).resolve().parent.parent  # where the ranks import tracer from
env = {**os.environ, "TORCH_TRACE": str(out / "trace"), "PYTHONPATH": str(dynascope), "OMP_NUM_THREADS": "1"}
done = subprocess.run(cmd, env=env, cwd=job_py.parent, capture_output=True, text=True, timeout=180)
assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
print(sorted(p.name for p in out.glob("*.json")), len(list((out / "trace").glob("*.log"))), "TORCH_TRACE logs")

# %% [markdown]
# ## Load the job
#
# `tracer.load_job(dir)` reads a directory of per-rank capture JSON files (or a `TORCH_TRACE`
# directory, through `tracer.load_trace`) into a `Job`: `job.ranks` maps each rank to a summary of
# its frames (compile id, code, status, graph size), and `job.divergence` lists what differs between
# the ranks, each finding with its kind, the ranks and, per rank, the compile id of the frame
# concerned. `job.rank(r)` opens rank `r`'s whole `Capture`, reading its file again; the job keeps at
# most one open, so a job of many big ranks needs the memory of about one.

# %%
job = tracer.load_job(str(out))
for d in job.divergence:
    print(d.kind, d.compile_ids, "|", d.message)
for line in job.checked:
    print("checked:", line)

# %% [markdown]
# Two findings, both about rank 1's graph break:
#
# - **frames**: the ranks made different compile attempts. On rank 1, Dynamo stopped at the break,
#   restarted analysis and compiled the partial graph (attempt `_1`), then compiled the rest of
#   `forward` as a resume function `torch_dynamo_resume_in_forward_at_…` — two frames rank 0 never
#   made. This is the compile-id divergence tlparse warns about.
# - **status**: the same frame, `forward`, compiled whole on rank 0 and was restarted on rank 1.
#
# Collectives are compared too, in the order they appear in the graphs — and here there are none:
# DDP's gradient allreduce runs in its C++ reducer's autograd hooks, not in the compiled graphs, so
# the job says so instead of reporting the order as equal.

# %%
forward0 = [f for f in job.ranks[0].frames if f.code.endswith(" in forward")]
forward1 = [f for f in job.ranks[1].frames if f.code.endswith(" in forward")]
print([(f.compile_id, f.status) for f in forward0], [(f.compile_id, f.status) for f in forward1])

# %% tags=["remove-input"]
status = next(d for d in job.divergence if d.kind == "status")
assert status.compile_ids == {0: forward0[0].compile_id, 1: forward1[0].compile_id}
assert [f.status for f in forward1] == ["restarted", "compiled"] and forward0[0].status == "compiled"

# %% [markdown]
# ## DDPOptimizer's split
#
# With `torch._dynamo.config.optimize_ddp` on (the default), `convert_frame.py` wraps the backend in
# `DDPOptimizer` (`torch/_dynamo/backends/distributed.py`) when it compiles inside a DDP module: the
# graph is cut at DDP's bucket boundaries with `split_module`, and each piece is compiled by the real
# backend on its own, so a bucket's allreduce can start while the rest of the backward still runs.
# dynascope keeps the attempt as one Frame and records every piece the backend got in `Frame.pieces`,
# each with its own AOTAutograd record.
#
# The job's buckets hold 1 MiB (`bucket_cap_mb=1`: 1,048,576 bytes). `DDPOptimizer.compile_fn` walks
# the graph from the output back, adding each node's parameters to the current bucket; a new bucket
# is opened only when it reaches another node (not a placeholder, not the output) while the
# current bucket is already at the cap and has a value used outside it. On rank 0, `fc3` and `fc2`
# (1,058,832 bytes of weights and biases) fill the first bucket, and the next node back, the ReLU
# of `fc1`'s output, opens another: `forward` reaches the backend in two pieces, in call order:
# `fc1` first, then `fc2` and `fc3`. Rank 1's resume graph holds the same `fc2` and `fc3`, over the
# cap too, but no operation comes before `fc2`'s linear in it: no node finds the bucket full, so it
# stays one bucket and is not split. Its first graph, `fc1` alone, is under the cap.

# %%
whole = job.rank(0).frame(forward0[0].compile_id)  # the whole frame, from rank 0's capture
for i, piece in enumerate(whole.pieces):
    print(f"piece {i}:", [n.target for n in piece.graph.nodes if n.op == "call_function"], piece.aot.mode)
print("rank 1:", [f.pieces for f in job.ranks[1].frames if f.nodes])


def param_bytes(graph):  # float32 parameters the graph reads (its placeholders read from _parameters)
    return sum(4 * math.prod(n.meta["shape"]) for n in graph.placeholders if "_parameters" in n.meta["graph_arg_source"])


resume = next(f for f in job.rank(1).frames if "resume_in_forward" in f.code)
first_op = next(n for n in resume.graph.nodes if n.op not in ("placeholder", "output"))
print("rank 1 resume graph:", param_bytes(resume.graph), "B of parameters; first op:", first_op.target, first_op.inputs)

# %% tags=["remove-input"]
log0 = next((out / "trace").glob("*rank_0*.log")).read_text()
assert log0.count('"optimize_ddp_split_child"') == len(whole.pieces) == 2  # torch's own log of the split
assert param_bytes(resume.graph) == 1_058_832 > 1024 * 1024 and resume.pieces == []
assert "l_self_modules_fc2_parameters_weight_" in first_op.inputs  # nothing before fc2's linear

# %% [markdown]
# ## The same job from torch's own logs
#
# The `TORCH_TRACE` directory holds one log per rank, written by torch itself, with no dynascope in
# the ranks. `load_job` on it reads each log with `tracer.load_trace` and finds the same divergence —
# this is the post-mortem path when the job ran without dynascope.

# %%
from_logs = tracer.load_job(str(out / "trace"))
print([(d.kind, d.compile_ids) for d in from_logs.divergence])

# %% tags=["remove-input"]
assert [(d.kind, d.compile_ids) for d in from_logs.divergence] == [(d.kind, d.compile_ids) for d in job.divergence]

# %% [markdown]
# ## The job view
#
# Evaluating a `Job` shows a grid of ranks × frames with the divergent cells marked, then the
# findings; a button per rank opens that rank's capture in the explorer, at its first divergent frame.
# A finding opens the two ranks' frames side by side, rendered when it is opened. `viz.export_job_html`
# writes the same page as one HTML file, where each finding's view and each rank's frame is stored
# compressed and decoded by the browser when opened.

# %%
view = viz.JobView(job)
view.open(1)
print(view, "->", view.explorer.frame.compile_id)
page = viz.export_job_html(job, out / "job.html")
print(page.name, "ds-divergent" in page.read_text())

# %%
job

# %% [markdown]
# ## Recap
#
# - Each rank compiles on its own; `tracer.load_job` reads the per-rank captures, or torch's own
#   `TORCH_TRACE` logs, and lists where the ranks diverge, frame by frame.
# - Under DDP, DDPOptimizer splits a graph at bucket boundaries, counted backwards from the output;
#   `Frame.pieces` holds each piece the backend got.
#
# **Try this.** Which compile ids exist on rank 1 only? Write them as `answer`, a sorted list. The
# next cell holds it (collapsed); the cell after it checks yours against the two ranks' frames.

# %% tags=["hide-input"]
# One solution (try your own first).
answer = ["4/0_1", "5/0"]  # the restarted attempt that stopped at the break, and the resume function

# %% tags=["remove-input"]
only_rank1 = sorted({f.compile_id for f in job.ranks[1].frames} - {f.compile_id for f in job.ranks[0].frames})
assert answer == only_rank1, only_rank1
print("check passed:", only_rank1)
