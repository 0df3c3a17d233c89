# %% [markdown]
# # Partition and saved tensors
#
# For a graph that needs gradients, AOTAutograd traces forward and backward together into one
# **joint graph**, then a **partitioner** cuts it in two: a forward graph, which runs now, and a
# backward graph, which runs at `.backward()`. Every value the backward reads from the forward
# crosses the cut: the forward returns it as an extra output and autograd keeps it alive until the
# backward runs. These are the **saved tensors** (activations), and their bytes are the memory cost
# of training. Which values cross is the partitioner's choice.

# %%
import warnings

import torch

import tracer

warnings.filterwarnings("ignore")
_ = torch.manual_seed(0)


def outputs_of(graph):
    return graph.output.inputs

# %% [markdown]
# ## From the joint graph to forward and backward
#
# A small activation, `a * sigmoid(a) * tanh(a)` after a matmul. The inputs require grad, so
# `tracer.capture` also runs `.backward()`: the backward graph is really compiled.

# %%
def f(x, w):
    a = x @ w
    return a * torch.sigmoid(a) * torch.tanh(a)


x = torch.randn(64, 32, requires_grad=True)
w = torch.randn(32, 32, requires_grad=True)
cap = tracer.capture(f, x, w)
a = cap.frames[0].aot
print(a.mode, "| backward compiled:", a.backward_ran, "| partitioner:", a.partitioner)
joint_ops = [n for n in a.joint.nodes if n.op == "call_function"]
print("joint:", {p: sum(n.meta.get("partition") == p for n in joint_ops) for p in ("forward", "backward")})

# %% [markdown]
# Each op of the joint graph is tagged with the side it went to. The forward graph returns the user's
# output first, then the saved values; the backward takes the saved values first, then the incoming
# gradient (`tangents_1`).

# %%
saved = [s.name for s in a.saved]
print("forward returns:", outputs_of(a.forward))
print("backward takes: ", [n.name for n in a.backward.placeholders])

# %%
assert a.mode == "training" and a.backward_ran
assert outputs_of(a.forward)[1:] == saved
assert [n.name for n in a.backward.placeholders] == saved + ["tangents_1"]
assert {n.name for n in a.forward.find(op="call_function")} <= {n.name for n in joint_ops}

# %% [markdown]
# ## What is saved, and what it costs
#
# `a.saved` lists each saved value with its shape, dtype and size (`nbytes`, as the partitioner
# counts it: a view such as `t` — a transpose of an input — shares storage with its base, so the
# memory really held is less).

# %%
for s in a.saved:
    print(f"{s.name:8} {a.forward.node(s.name).target:24} {str(s.shape):10} {s.nbytes:6} B")
print("total:", a.saved_bytes, "B")

# %%
assert all(s.nbytes == s.shape[0] * s.shape[1] * 4 for s in a.saved)  # float32
assert a.saved_bytes == sum(s.nbytes for s in a.saved)

# %% [markdown]
# The explorer's partition view draws the forward and backward graphs side by side, with the saved
# values highlighted on both sides and their sizes:

# %%
cap

# %% [markdown]
# ## Min-cut vs the default partitioner
#
# The **default** partitioner saves every forward value the backward reads. The **min-cut**
# partitioner (`aot_eager`'s and Inductor's choice) solves a min-cut problem on the joint graph: it
# may *recompute* cheap ops in the backward if that makes fewer bytes cross the cut.

# %%
default = tracer.capture(f, x, w, partitioner="default").frames[0].aot
for name, p in (("min_cut", a), ("default", default)):
    print(f"{name:8} {p.saved_bytes:6} B  saves {[s.name for s in p.saved]}")

# %% [markdown]
# The default partitioner saves `mul` (`a * sigmoid(a)`), the `detach`es of the activations that
# autograd's formulas use, and the inputs themselves. Min-cut saves `mm`, `sigmoid` and `tanh` and
# recomputes `a * sigmoid(a)` in the backward from `mm` and `sigmoid`: a multiplication instead of
# 8 KiB kept alive until the backward, and 24 KiB less in all.

# %%
assert a.saved_bytes < default.saved_bytes
assert "mul" in [s.name for s in default.saved] and "mul" not in saved
recomputed = [n for n in a.backward.find(target="aten.mul.Tensor") if set(n.inputs) == {"mm", "sigmoid"}]
assert recomputed, "min-cut recomputes a * sigmoid(a) in the backward"

# %% [markdown]
# ## Saved-tensor hooks, inlined
#
# `torch.autograd.graph.saved_tensors_hooks(pack, unpack)` transforms every tensor autograd saves:
# `pack` when it is saved, `unpack` when the backward needs it. When `pack` and `unpack` are
# `GraphModule`s, AOTAutograd does not call them at runtime: it **inlines** `pack` into the forward's
# epilogue and `unpack` into the backward's prologue, so the compiler sees — and can fuse — them
# (`maybe_inline_graph_saved_tensors_hooks` in `torch/_functorch/_aot_autograd/graph_compile.py`).
# Here the hooks keep saved activations in bfloat16, halving their size.

# %%
def pack(t):
    return t.to(torch.bfloat16)


def unpack(t):
    return t.to(torch.float32)


pack_gm, unpack_gm = torch.fx.symbolic_trace(pack), torch.fx.symbolic_trace(unpack)


def g(x, w):
    return (x @ w).sin().cos()


x, w = torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
plain = tracer.capture(g, x, w).frames[0].aot
with torch.autograd.graph.saved_tensors_hooks(pack_gm, unpack_gm):
    hooked = tracer.capture(g, x, w).frames[0].aot
print("without hooks:", plain.saved, plain.saved_bytes, "B")
print("with hooks:   ", hooked.saved, hooked.saved_bytes, "B")
print("packed:", hooked.saved_tensor_hooks.applied_to)

# %% [markdown]
# Only `mm` was packed. `t` and `t_1` are transposes of the *inputs*: they alias tensors the caller
# holds anyway, so packing them would cost a copy and save nothing. AOTAutograd applies the hooks
# only to "donated" saved values — intermediates nothing else keeps alive
# (`torch._functorch.config.saved_tensors_hooks_filtering_mode`, default `"donated"`).
#
# The packed value `mm_hook_0` is the inlined `pack` graph's output, a bfloat16 copy at the end of the
# forward; the backward starts by unpacking it back to float32. (torch's readable code also has comment
# lines naming the user line above groups of nodes; which backward nodes get one differs between torch
# releases — 2.15 marks them `# Backward of forward node: …` — so this cell prints the node lines only.
# Where each AOT node comes from is recorded in its `meta["from"]`, the same on every release.)

# %%
def node_lines(code):
    """torch's readable graph code without its own comment lines (they differ between releases)."""
    return "\n".join(line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("# "))


print(node_lines(hooked.forward.code))
print(node_lines(hooked.backward.code))

# %%
hooks = hooked.saved_tensor_hooks
assert hooks.applied_to == ["mm"]
packed = next(s for s in hooked.saved if s.name == "mm_hook_0")
plain_mm = next(s for s in plain.saved if s.name == "mm")
assert packed.dtype == "bfloat16" and packed.nbytes * 2 == plain_mm.nbytes
assert hooked.saved_bytes == plain.saved_bytes - packed.nbytes
first_bw_op = hooked.backward.find(op="call_function")[0]
assert first_bw_op.target == "aten._to_copy.default" and first_bw_op.inputs == ["mm_hook_0"]
