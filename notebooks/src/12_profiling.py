# %% [markdown]
# # Where the run time goes: profile the compiled function, find the line, change it
#
# **You are here if** your compiled model is slower than you hoped and `torch.profiler` shows you op
# and kernel names (`aten::mm`, the fused kernels Inductor generates) but not which line of your model
# they came from.
# PyTorch's page: [torch.profiler](https://docs.pytorch.org/docs/stable/profiler.html).
#
# Under `torch.compile` your lines do not run one by one: Dynamo turns them into a graph, AOTAutograd
# splits it into a forward and a backward graph, and the backend runs those (`aot_eager` op by op,
# Inductor as generated kernels). The profiler sees only what ran: ops, kernels, and the compiled
# function's wrappers. `tracer.profile` captures the function, then calls the *same* compiled code
# under `torch.profiler` and puts each event's self time on the graph node (or Inductor kernel) it ran
# in, using torch's own profiler markers; each node goes to your source line through the provenance the
# capture recorded. Time spent on no node stays unattributed, by event name, never spread by guess.
# Times change from run to run, so this notebook prints rankings, never numbers.

# %%
import logging
import warnings

import torch

import tracer
import viz

warnings.filterwarnings("ignore")
# A CUDA build of torch on a machine with no GPU warns, when Inductor first compiles C++ for the CPU,
# that it found no CUDA runtime (torch/utils/cpp_extension.py): true, and not what this notebook is about.
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
_ = torch.manual_seed(0)

# %% [markdown]
# ## A model whose time is one line
#
# `model` computes a feature `h` per row and the mean similarity of every pair of rows,
# `(h @ h.T).mean()`: a `4096 x 4096` matrix for one number. With `requires_grad` inputs the profile
# covers the forward and the backward of each step.

# %%
def model(x, w):
    h = torch.tanh(x @ w)
    sim = (h @ h.T).mean()
    return h.sum() + sim


x, w = torch.randn(4096, 64, requires_grad=True), torch.randn(64, 64, requires_grad=True)
before = tracer.profile(model, x, w, steps=5)
top = before.by_line()[0]
print("first:", top.code)
print("in graphs:", sorted({n.split()[1].split(".")[0] for n in top.nodes}))

# %% [markdown]
# `by_line()` ranks your lines by time, forward and backward together, largest first (`before.table()`
# prints the same ranking with milliseconds per step, and what no node holds). The pairwise line is
# first, in the forward graph (its matrix product) and in the backward (the two products of its
# gradient).

# %% tags=["remove-input"]
assert top.code == "sim = (h @ h.T).mean()" and top.forward_us > 0 and top.backward_us > 0
assert abs(before.attributed_us + sum(before.unattributed.values()) - before.total_us) <= 1e-6 * before.total_us

# %% [markdown]
# ## On the graph
#
# `viz.ProfileExplorer(before)` is the explorer of the profiled capture with its Dynamo graph coloured
# by time; evaluate it in a cell to see it, and click a node for its time and the AOT nodes that ran
# it. `viz.export_html(before, "profile.html")` writes the same as one file, with the forward and
# backward graphs coloured too. The hottest node of the drawing is the product `h @ h.T`, run as one
# matrix product in the forward graph and two in the backward:

# %%
ex = viz.ProfileExplorer(before)
heat = ex.heat()  # node -> [share of the hottest, µs]
hottest = max(heat, key=lambda node: heat[node][1])
info = ex.node_info(hottest)
print(hottest, "=", info["target"], "->", info["value"])
print("ran as:", sorted(op.split(":")[0] for op in info["ops"] if "aten::mm" in op))

# %% tags=["remove-input"]
assert hottest == "matmul_1" and heat[hottest][0] == 1.0 and info["users"] == ["sim"]

# %% [markdown]
# ## Change it, profile again
#
# The mean of all pairwise dot products is the squared norm of the summed rows over `N**2`: no
# `N x N` matrix, the same number.

# %%
def model_fixed(x, w):
    h = torch.tanh(x @ w)
    sim = (h.sum(0) ** 2).sum() / h.shape[0] ** 2
    return h.sum() + sim


after = tracer.profile(model_fixed, x, w, steps=5)
ranking = after.by_line()
now = next(row for row in ranking if row.code.startswith("sim ="))
print("the similarity line is first:", ranking[0] is now)
print("it takes under a quarter of its time before:", now.total_us < top.total_us / 4)

# %% [markdown]
# The similarity line is no longer first. The lines left are close to each other (a small matrix
# product, a sum, their gradients), so which of them leads changes from run to run: print
# `after.table()` to see them with their milliseconds.

# %% tags=["remove-input"]
assert ranking[0] is not now and now.total_us < top.total_us / 4
assert torch.allclose(before.capture.result, after.capture.result, rtol=1e-4)

# %% [markdown]
# ## Eager against compiled, line by line
#
# Did compiling help, and where? `tracer.profile(..., eager=True)` runs the same function without
# `torch.compile`, under the same profiler, and puts each op's time on the line of yours that ran it
# (and its backward ops on the line of the forward op that made them). `tracer.diff` of the two
# profiles lines them up per source line and per module: each side's milliseconds per step and the
# difference (negative where the compiled code is faster). Time a side could not put on a line is
# only in that side's total, never spread over the rows.

# %%
eager = tracer.profile(model, x, w, steps=5, eager=True)
d = tracer.diff(eager, before)
print(d.a, "->", d.b)
print("first line, eager:", eager.by_line()[0].code)
print("first line in the comparison:", d.lines[0].label)
print("eager's lines:", sorted(row.code for row in eager.by_line()))
print("every line of both sides compared:", {r.label for r in d.lines} == {r.code for p in (eager, before) for r in p.by_line()})

# %% [markdown]
# Both sides rank the pairwise line first: compiling with `aot_eager` runs the same aten ops, so it
# cannot make the `4096 x 4096` product cheaper, only the rewrite above does. Evaluate `d` in a cell
# for the table (compiled faster in green, slower in red), or `viz.export_html(d, "compare.html")`.

# %% tags=["remove-input"]
assert eager.backend == "eager" and eager.by_line()[0].code == top.code == d.lines[0].label
assert d.lines[0].a_us > 0 and d.lines[0].b_us > 0 and eager.by_line()[0].backward_us > 0
assert {r.label for r in d.lines} == {r.code for p in (eager, before) for r in p.by_line()}
for side, prof in (("a", eager), ("b", before)):
    assert abs(getattr(d, f"unattributed_{side}_us") * prof.steps - sum(prof.unattributed.values())) <= 1e-6 * prof.total_us

# %% [markdown]
# ## Recap
#
# - `tracer.profile(fn, *args, steps=N)` runs the function's own compiled code under
#   `torch.profiler` and puts every event's self time on a graph node and your source line; what ran
#   on no node stays in `prof.unattributed`, by event name.
# - `prof.by_line()` ranks your lines, forward and backward together; `viz.ProfileExplorer(prof)`
#   and `viz.export_html(prof, ...)` colour the graphs by the same times;
#   `tracer.profile(fn, *args, eager=True)` profiles the uncompiled function, and
#   `tracer.diff(eager, compiled)` compares the two per line and per module.
#
# **Try this.** Profile `model_fixed` with `backend="inductor"`. Inductor fuses the elementwise ops
# of several lines into one kernel: which lines share a kernel's time? The next cell holds one
# solution (collapsed); the cell after it checks it.

# %% tags=["hide-input"]
# One solution (try your own first): a fused kernel's time is shown on each line it computes.
compiled = tracer.profile(model_fixed, x, w, steps=2, backend="inductor")
shared = sorted(row.code for row in compiled.by_line() if row.shared_us > 0)
print(shared)

# %% tags=["remove-input"]
assert compiled.backend == "inductor" and compiled.nodes and not compiled.problems
assert any(len(n.lines()) > 1 for n in compiled.nodes), "no kernel computes two lines"
print("check passed:", len(shared), "lines share a fused kernel's time")
