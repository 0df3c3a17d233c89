# %% [markdown]
# # Partition and saved tensors
#
# **You are here if** training a compiled model holds more memory than you expected, or its forward
# graph (`TORCH_LOGS=aot_graphs`) returns values your function never returned: the tensors saved for
# the backward. PyTorch's page: the [torch.compile FAQ](https://docs.pytorch.org/docs/stable/torch.compiler_faq.html) (AOTAutograd and min-cut
# partitioning); the partitioner is `min_cut_rematerialization_partition` in
# `torch/_functorch/partitioners.py`.
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
print("forward returns:", outputs_of(a.forward))
print("backward takes: ", [n.name for n in a.backward.placeholders])

# %% tags=["remove-input"]
saved = [s.name for s in a.saved]
assert a.mode == "training" and a.backward_ran
assert outputs_of(a.forward)[1:] == saved
assert [n.name for n in a.backward.placeholders] == saved + ["tangents_1"]
assert {n.name for n in a.forward.find(op="call_function")} <= {n.name for n in joint_ops}

# %% [markdown]
# Torch's own view, on a machine without dynascope: the same `f` under plain
# `torch.compile(backend="aot_eager")` in a fresh process, with `TORCH_LOGS=aot_graphs`. The forward
# graph's `return` and the backward graph's signature list the same saved values, in the same order:

# %%
import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

script = pathlib.Path(tempfile.mkdtemp()) / "partition.py"
script.write_text(
    "import torch\n\n\n@torch.compile(backend='aot_eager')\ndef f(x, w):\n    a = x @ w\n"
    "    return a * torch.sigmoid(a) * torch.tanh(a)\n\n\n"
    "f(torch.randn(64, 32, requires_grad=True), torch.randn(32, 32, requires_grad=True)).sum().backward()\n"
)
run = subprocess.run([sys.executable, str(script)], env={**os.environ, "TORCH_LOGS": "aot_graphs"},
                     capture_output=True, text=True, timeout=120)
code = [re.sub(r"^[A-Z]\d{4} [\d:.]+ \d+ \S+\] \[\S+\] \[__aot_graphs\] ", "", line) for line in run.stderr.splitlines()]
graphs = [line.strip() for line in code if re.match(r"\s*(===== \w+ graph|def forward|return )", line)]
torch_says = [re.sub(r': "[^"]*"', "", line) for line in graphs]  # drop the shape annotations
print("\n".join(torch_says))

# %% tags=["remove-input"]
assert run.returncode == 0, run.stderr[-2000:]
fw, bw = torch_says.index("===== Forward graph 0 ====="), torch_says.index("===== Backward graph 0 =====")
assert torch_says[fw + 2] == f"return ({', '.join(outputs_of(a.forward))})", torch_says
assert torch_says[bw + 1] == f"def forward(self, {', '.join(saved + ['tangents_1'])}):", torch_says

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

# %% [markdown]
# The explorer's partition view draws the forward and backward graphs side by side, with the saved
# values highlighted on both sides and their sizes:

# %%
cap

# %% tags=["remove-input"]
assert all(s.nbytes == s.shape[0] * s.shape[1] * 4 for s in a.saved)  # float32
assert a.saved_bytes == sum(s.nbytes for s in a.saved)

# %% [markdown]
# ## Min-cut vs the default partitioner
#
# The **default** partitioner saves every forward value the backward reads. The **min-cut**
# partitioner (`aot_eager`'s and Inductor's choice) solves a min-cut problem on the joint graph: it
# may *recompute* cheap ops in the backward if that makes fewer bytes cross the cut.

# %%
default = tracer.capture(f, x, w, partitioner="default").frames[0].aot
for name, p in (("min_cut", a), ("default", default)):
    print(f"{name:8} {p.saved_bytes:6} B summed, {p.activation_bytes:6} B activations  saves {[s.name for s in p.saved]}")
for s in default.saved:
    print(f"  default {s.name:10} {s.origin:10} {'view of ' + s.alias_of if s.alias_of else ''}")

# %% tags=["remove-input"]
assert default.saved_bytes - a.saved_bytes == 24 * 1024
assert (default.activation_bytes, a.activation_bytes) == (32 * 1024, 24 * 1024)
assert {s.name: s.alias_of for s in default.saved if s.alias_of} == {"detach": "sigmoid", "detach_1": "tanh"}
assert [s.name for s in default.saved if s.origin == "input"] == ["primals_1", "primals_2"]
assert [s.name for s in a.saved if s.origin == "input"] == ["t", "t_1"]  # transposes of the inputs
assert "mul" in [s.name for s in default.saved] and "mul" not in saved
recomputed = [n for n in a.backward.find(target="aten.mul.Tensor") if set(n.inputs) == {"mm", "sigmoid"}]
assert recomputed, "min-cut recomputes a * sigmoid(a) in the backward"

# %% [markdown]
# Both save `mm`, `sigmoid` and `tanh`. The default partitioner also saves `mul` (`a * sigmoid(a)`),
# the `detach`es of `sigmoid` and `tanh` that autograd's formulas use — views sharing their storage —
# and the inputs `primals_1`, `primals_2` themselves, which the caller holds anyway. Min-cut saves
# the transposes `t` and `t_1` of the inputs instead (views of the caller's tensors again), and
# recomputes `a * sigmoid(a)` in the backward from `mm` and `sigmoid`.
#
# The summed `nbytes` (`saved_bytes`) differ by 24 KiB, but that sum counts views and the caller's
# inputs. The memory kept alive only for the backward is `activation_bytes` — saved values of
# origin "activation", each storage once: 32 KiB against 24 KiB. Min-cut's gain here is the 8 KiB of
# `mul`, for one multiplication in the backward.

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

# %% tags=["remove-input"]
hooks = hooked.saved_tensor_hooks
assert hooks.applied_to == ["mm"]
packed = next(s for s in hooked.saved if s.name == "mm_hook_0")
plain_mm = next(s for s in plain.saved if s.name == "mm")
assert packed.dtype == "bfloat16" and packed.nbytes * 2 == plain_mm.nbytes
assert hooked.saved_bytes == plain.saved_bytes - packed.nbytes
first_bw_op = hooked.backward.find(op="call_function")[0]
assert first_bw_op.target == "aten._to_copy.default" and first_bw_op.inputs == ["mm_hook_0"]

# %% [markdown]
# ## Recap
#
# - The partitioner cuts AOTAutograd's joint graph into a forward and a backward; the saved values
#   cross the cut and stay alive until the backward runs.
# - Count their memory with `activation_bytes` (activations, each storage once), not summed `nbytes`;
#   min-cut recomputes cheap ops to save less, and saved-tensor hooks given as GraphModules are inlined.
#
# **Try this.** How many bytes of activations does min-cut keep for `f` with a batch of 128
# (`x` of shape `[128, 32]`, `w` as before)? Write the number as `answer`; the next cell holds it
# (collapsed), the cell after it checks yours.

# %% tags=["hide-input"]
# One solution (try your own first).
answer = 3 * 128 * 32 * 4  # mm, sigmoid and tanh, each [128, 32] float32; t and t_1 are views of inputs

# %% tags=["remove-input"]
big = tracer.capture(f, torch.randn(128, 32, requires_grad=True), torch.randn(32, 32, requires_grad=True)).frames[0].aot
assert answer == big.activation_bytes, big.activation_bytes
print("check passed:", big.activation_bytes, "B of activations:", [s.name for s in big.saved if s.origin == "activation"])
