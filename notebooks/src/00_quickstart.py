# %% [markdown]
# # Quickstart: see what `torch.compile` did
#
# **You are here if** you wrapped a model in `torch.compile` and want to know what it did with it:
# how many graphs, where and why it broke the graph, what it checks before reusing its work. Torch
# prints that as text with `TORCH_LOGS=graph_breaks,guards`, and as an HTML report with tlparse
# (`TORCH_TRACE=dir`). PyTorch's guide: [the torch.compile programming model](https://docs.pytorch.org/docs/stable/compile/programming_model.html) and
# [tlparse / TORCH_TRACE](https://docs.pytorch.org/docs/stable/compile/programming_model.observability.html).
#
# `tracer.capture(fn, *args)` runs `fn` once through the **real** `torch.compile` front half —
# Dynamo's bytecode tracing, and AOTAutograd behind it — with a recording backend, and hands back a
# `Capture`: plain data describing every graph Dynamo produced, why it stopped, and what it must
# re-check before reusing its work. Evaluate a capture in a cell and the explorer opens.
#
# In two minutes: capture a small model, open the explorer, find the graph break and a guard.

# %%
import warnings

import torch
from torch import nn

import tracer

warnings.filterwarnings("ignore")
_ = torch.manual_seed(0)

# %% [markdown]
# ## A model with a graph break in it
#
# A two-layer MLP with one line Dynamo cannot put in a graph: `if h.sum() > 0:` branches in Python
# on the *value* of a tensor. While tracing, Dynamo only knows `h`'s shape and dtype (it runs on
# fake tensors), so it cannot decide the branch. It ends the graph there, lets Python run the `if`,
# and starts tracing again afterwards: a **graph break**.

# %%
class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if h.sum() > 0:  # data-dependent control flow: a graph break
            h = h * 2
        return self.fc2(h)


model = TinyMLP()
x = torch.randn(3, 4)
cap = tracer.capture(model, x)
print(cap)

# %% [markdown]
# The printout is the capture's tree: one entry per **compile attempt**, named by its compile id as
# `TORCH_LOGS` prints it, with what became of it. A break inside a call makes Dynamo restart its
# analysis (`break_graph_if_unsupported` in `torch/_dynamo/symbolic_convert.py`), which shows as
# `0/0` [restarted] followed by `0/0_1`; a break at a data-dependent jump like this `if` compiles
# the partial graph at once (`jump_graph_break`), so there is no restart here. `0/0` is `forward` up to the break; `1/0` is the *resume function* Dynamo generated for
# the rest of `forward`: Python evaluated the `if`, and tracing resumed in the branch it took. Each
# line ends with torch's own measure of the compile's time (`cap.times()` splits it by phase). Each frame's
# graph then went through AOTAutograd (the `aot:` line: a training graph, since the parameters
# require grad — notebooks 03 and 04 open it up). The capture also kept the model's own result, so
# you can check it is what eager mode computes.

# %%
torch.testing.assert_close(cap.result, model(x))

# %% tags=["remove-input"]
assert [(f.compile_id, f.status) for f in cap.frames] == [("0/0", "compiled"), ("1/0", "compiled")]
assert len(cap.graph_breaks) == 1

# %% [markdown]
# ## The explorer
#
# Evaluating the capture renders the explorer: the overview (frames, graph breaks, recompiles), the
# tree of (sub)graphs, the graph canvas (click a node to inspect its shape, source line and users),
# the guards table and, when AOTAutograd ran, the forward/backward partition. Without a live kernel —
# on GitHub, or before you run the notebook — the cell shows a static HTML version of the same.

# %%
cap

# %% [markdown]
# ## The graph break
#
# Each `GraphBreak` carries Dynamo's reason and the user line that caused it: the `if` in `forward`.
# The reason is Dynamo's whole message: the kind of break on its first line, then an explanation,
# hints and a link to the break's page on PyTorch's graph-break site. Past the first line it is
# torch's wording, which moves between releases: from torch 2.12 on the explanation also shows how
# the branch condition was computed (`gt = gt(sum_1, 0)`, the graph's comparison), and 2.12 and 2.13
# each lead the hints with a different one of their own. The explorer above shows the message in full.

# %%
brk = cap.graph_breaks[0]
print(brk.code_line.strip())
print(brk.reason.splitlines()[0])

# %% [markdown]
# Torch reports the same without dynascope: `torch._dynamo.explain(model)(x)` compiles the model
# again and counts its graphs and graph breaks, with the user line of each break, and
# `TORCH_LOGS=graph_breaks` prints each break with Dynamo's explanation and hints (PyTorch's
# [Working with Graph Breaks](https://docs.pytorch.org/docs/stable/compile/programming_model.graph_breaks_index.html)).

# %%
explained = torch._dynamo.explain(model)(x)
print("graphs:", explained.graph_count, "| graph breaks:", explained.graph_break_count)
print("at:", explained.break_reasons[0].user_stack[-1].line)

# %% tags=["remove-input"]
assert explained.graph_count == sum(f.has_graph for f in cap.frames) == 2
assert explained.graph_break_count == len(cap.graph_breaks) == 1
assert explained.break_reasons[0].user_stack[-1].line == brk.code_line.strip()

# %% [markdown]
# The first graph therefore stops at the value the `if` needs: it runs the first linear layer and
# the ReLU, and returns the comparison `h.sum() > 0` along with `h`. Frame `1/0` holds the taken
# branch (`h * 2`) and the second layer.

# %%
first, second = cap.frames
print([n.target for n in first.graph.find(op="call_function")])
print([n.target for n in second.graph.find(op="call_function")])

# %% tags=["remove-input"]
assert brk.code_line.strip().startswith("if h.sum() > 0:")
assert brk.compile_id == "0/0"
release = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
assert brk.reason.splitlines()[0] == "Data-dependent branching" and "gb0170" in brk.reason
assert ("The branch condition involves a tensor computed as follows" in brk.reason) == (release >= (2, 12))
assert "Hint: Use `torch.cond` to express dynamic control flow." in brk.reason  # a hint every release gives
assert any("relu" in n.target for n in first.graph.nodes)
assert not any("relu" in n.target for n in second.graph.nodes)
assert any(n.target == "operator.mul" for n in second.graph.nodes)  # the branch Python took

# %% [markdown]
# ## A guard
#
# A compiled graph is only valid for inputs like the ones it was traced with. Dynamo records
# **guards** — checks run on every call before the cached code is reused. The input `x` gets a
# `TENSOR_MATCH` guard: same dtype, device, `requires_grad`, and (shapes being static here) the
# same sizes and strides.

# %%
x_guard = next(g for g in first.guards if g.source == "L['x']")
print(x_guard.kind, x_guard.source)
print(sorted({g.kind for g in first.guards if g.kind != "BACKEND_MATCH"}))
backend = next(g for g in first.guards if g.kind == "BACKEND_MATCH")
print(backend.code)

# %% [markdown]
# One entry of `first.guards` is not a guard Dynamo installed: `BACKEND_MATCH`. In the torch releases
# dynascope supports (2.11 on) the backend is not checked by a guard: each cache entry stores the backend that compiled it, and the
# cache lookup compares it (a mismatch is reported as a "BACKEND_MATCH failure" recompile reason,
# `get_guard_fail_reason_helper` in `torch/_dynamo/guards.py`). dynascope reads that backend from
# the frame's real cache entry and lists it with the guards, under the name of that reason, so the
# guards view shows everything a cache hit depends on; the guard counts printed with each frame
# include it. Notebook 01 has more on guards.
#
# In the resume frame the tensor crossing the break, `h`, is an ordinary input, guarded the same way:

# %%
h_guard = next(g for g in second.guards if g.source == "L['h']")
print(h_guard)

# %% tags=["remove-input"]
assert x_guard.kind == "TENSOR_MATCH"
assert [g.kind for g in first.guards].count("BACKEND_MATCH") == 1
assert backend.source == "" and "cache entry" in backend.code[0]  # read from the cache entry, not a guard
assert h_guard.kind == "TENSOR_MATCH"

# %% [markdown]
# ## Keep it, share it
#
# A capture is plain data — no torch objects — so it round-trips through JSON losslessly, and a
# loaded capture renders in the explorer exactly like a live one:

# %%
loaded = tracer.Capture.from_json(cap.to_json())
print(repr(loaded))

# %% tags=["remove-input"]
assert loaded == cap

# %% [markdown]
# ## Recap
#
# - A capture holds every compile attempt of a call — frames, graph breaks with their user line,
#   guards — as plain data that round-trips JSON and opens in the explorer.
# - A branch on a tensor's value ends the graph (a graph break): the rest runs in a resume frame,
#   and guards such as `TENSOR_MATCH` decide when compiled code is reused.
#
# **Try this.** Rewrite `forward` so that the model compiles into one graph with the same result:
# replace the `if` on `h.sum()` by a tensor operation (`torch.where`). Call the fixed model `fixed`,
# with `model`'s weights. The next cell holds one solution (collapsed; try yours first); the cell
# after it checks your `fixed`.

# %% tags=["hide-input"]
# One solution (try your own first).
class OneGraphMLP(TinyMLP):
    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.where(h.sum() > 0, h * 2, h)  # both branches as tensors: no Python `if` on a value
        return self.fc2(h)


fixed = OneGraphMLP()
_ = fixed.load_state_dict(model.state_dict())

# %% tags=["remove-input"]
fixed_cap = tracer.capture(fixed, x)
assert fixed_cap.graph_breaks == [] and [f.status for f in fixed_cap.frames] == ["compiled"]
torch.testing.assert_close(fixed_cap.result, model(x))
print("check passed: one graph, no graph break, the same result as the model with the `if`")

# %% [markdown]
# Next: [01 — guards, recompiles, dynamic shapes](01_guards_recompiles_dynamic.ipynb): when compiled
# code is reused, and why a changed input compiles again.
