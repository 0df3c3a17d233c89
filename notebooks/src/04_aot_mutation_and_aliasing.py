# %% [markdown]
# # AOTAutograd: mutation and aliasing
#
# Behind Dynamo, AOTAutograd retraces each graph down to ATen ops and **functionalizes** it: the
# graph it hands to the compiler has no in-place ops and no views that escape. But user programs
# mutate their inputs and return views, and those effects must still happen exactly as in eager.
# AOTAutograd first runs the function once to collect a `ViewAndMutationMeta` — which inputs are
# mutated (their data, or only their metadata), which outputs alias an input or an intermediate —
# and then puts each effect back, either inside the graph or in the runtime wrappers around it.
# The Notes at the top of `aot_autograd.py` (seed 001) describe each case; this notebook shows one
# per section, reading the metadata from `frame.aot`.

# %%
import warnings

import torch

import tracer

warnings.filterwarnings("ignore")
_ = torch.manual_seed(0)


def aot_of(cap):
    """The AOTAutograd record of a capture's only frame."""
    (frame,) = cap.frames
    return frame.aot


def outputs_of(graph):
    return graph.output.inputs

# %% [markdown]
# ## Input data mutation
#
# `x.mul_(2)` writes into the caller's tensor. The functional graph computes the new value
# out of place (`mul`) and uses it for everything after; the write itself is a `copy_` into the
# input. The `aot_eager` backend accepts input mutations in its graph
# (`keep_inference_input_mutations`), so when autograd is not involved AOTAutograd keeps the `copy_`
# **inside** the graph, at its very end (`mutation_in_graph`).

# %%
def mutate_data(x):
    x.mul_(2)
    return x + 1


x = torch.ones(3)
a = aot_of(tracer.capture(mutate_data, x))
print(a.inputs[0])
print(a.inference.code)

# %%
inp = a.inputs[0]
assert inp.mutates_data and not inp.mutates_metadata and inp.mutation_in_graph
copy = a.inference.find(target="aten.copy_")
assert len(copy) == 1 and a.inference.nodes.index(copy[0]) == len(a.inference.nodes) - 2  # last op
assert torch.equal(x, torch.full((3,), 2.0))  # the caller's tensor really was doubled, once

# %% [markdown]
# If the mutated input requires grad, the mutation must be visible to autograd, which a graph-internal
# `copy_` would hide. Then the new value becomes an **extra forward output**, ahead of the user's
# outputs, and the runtime epilogue copies it into `x` outside the graph (autograd records that copy:
# `x.grad_fn` is a `CopyBackwards`).

# %%
x = torch.ones(3, requires_grad=True).clone()  # a non-leaf that requires grad
a = aot_of(tracer.capture(mutate_data, x))
print(a.inputs[0])
print("forward returns:", outputs_of(a.forward), "| user outputs:", [o.name for o in a.outputs])

# %%
inp = a.inputs[0]
assert inp.mutates_data and inp.requires_grad and not inp.mutation_in_graph
assert not a.forward.find(target="aten.copy_")
assert outputs_of(a.forward) == ["mul", "add"] and [o.name for o in a.outputs] == ["add"]
assert type(x.grad_fn).__name__ == "CopyBackwards" and torch.equal(x.detach(), torch.full((3,), 2.0))

# %% [markdown]
# ## Input metadata mutation
#
# A metadata mutation changes an input's sizes or strides without touching its data:
# `x.t_()` transposes `x` in place. Dynamo itself refuses `x.t_()` on a graph input (it graph-breaks
# on "an inplace view on a graph input"); calling the ATen op directly slips past that check and lets
# us see what AOTAutograd does. A metadata change can never be expressed inside a functional graph:
# the graph returns the **updated view** (`t`) as an extra output, and the runtime epilogue applies
# its metadata to the real `x` (with `as_strided_`).

# %%
def mutate_metadata(x):
    torch.ops.aten.t_.default(x)
    return x + 1


x = torch.randn(2, 3)
a = aot_of(tracer.capture(mutate_metadata, x))
print(a.inputs[0])
print("graph outputs:", outputs_of(a.inference), "| user outputs:", [o.name for o in a.outputs])

# %%
inp = a.inputs[0]
assert inp.mutates_metadata and not inp.mutates_data and not inp.mutation_in_graph
assert outputs_of(a.inference) == ["t", "add"] and [o.name for o in a.outputs] == ["add"]
assert a.inference.node("t").target == "aten.t.default"
assert x.shape == (3, 2)  # the caller's x is transposed, as in eager

# %% [markdown]
# ## Outputs that alias an input or an intermediate
#
# An output that is a view must come back as a *view* — of the same base as in eager — or
# in-place ops on it, and autograd's view tracking, would behave differently. A compiled graph
# cannot return a view of its input, so AOTAutograd records, per output, what it aliases
# (`OutputType`), and regenerates the view outside the graph from its base.

# %%
def views(x):
    y = x * 2
    return x.view(-1), y.view(-1), y


a = aot_of(tracer.capture(views, torch.randn(2, 3, requires_grad=True)))
for o in a.outputs:
    print(f"{o.name:7} {o.alias:45} base {o.base_index}")

# %% [markdown]
# - `x.view(-1)` is an `alias_of_input`: its base is graph input 0, and the runtime builds the view
#   from the real `x` (the graph's own output is discarded).
# - `y.view(-1)` aliases an intermediate, `y`, which is itself a user output (number 2):
#   `alias_of_intermediate_base_is_user_output`. The view is regenerated from that output.
# - `y` is an ordinary output.

# %%
kinds = [(o.alias, o.base_index) for o in a.outputs]
assert kinds == [
    ("alias_of_input", 0),
    ("alias_of_intermediate_base_is_user_output", 2),
    ("none", None),
]

# %% [markdown]
# ## Synthetic bases
#
# If two inputs are views of the *same* storage and one of them is mutated, the functional graph must
# see the mutation through both. AOTAutograd then merges them into one **synthetic base**: the graph
# receives the whole base tensor, regenerates each view inside the graph (`as_strided`), turns
# `a.add_(1)` into an `as_strided_scatter` into the base, and writes the base back.

# %%
def overlapping(a, b):
    a.add_(1)
    return a + b


base = torch.zeros(4)
a = aot_of(tracer.capture(overlapping, base[:3], base[1:]))
print("synthetic bases:", a.synthetic_bases)
print([tracer.model.format_meta(n.meta) for n in a.inference.placeholders])
print(a.inference.code)

# %%
assert a.synthetic_bases == [[0, 1]]
assert [n.meta["shape"] for n in a.inference.placeholders] == [[4]]  # one base instead of two views
assert a.inference.find(target="aten.as_strided_scatter")
assert torch.equal(base, torch.tensor([1.0, 1.0, 1.0, 0.0]))

# %% [markdown]
# ## Effect tokens
#
# Some ops have side effects that are not mutations of a tensor — printing, say. To keep their order
# in a functional graph, AOTAutograd threads a **token** through them (Note [Side-Effectful Tokens in
# AOTAutograd]): the graph takes a token input, each effectful op runs under the `with_effects` HOP
# consuming the previous token and producing the next, and the final token is a graph output.

# %%
# NBVAL_IGNORE_OUTPUT
# (aten._print writes from C++ straight to the kernel process's stdout, which a frontend shows or
# not depending on how the kernel captures file descriptors.)
def effectful(x):
    torch.ops.aten._print("hello from the graph")
    return x.sin()


a = aot_of(tracer.capture(effectful, torch.randn(3)))

# %% [markdown]
# The compiled function ran once, and printed. Its graph threads one token:

# %%
print("effect tokens:", a.effect_tokens)
print(a.inference.code)

# %%
assert a.effect_tokens == 1
(call,) = a.inference.find(target="with_effects")
token = a.inference.placeholders[0]
assert call.inputs[0] == token.name and token.meta["shape"] == [0]  # the token: an empty tensor

# %% [markdown]
# The explorer's partition tab shows the same tables — input mutations and output aliases — next to
# the graph:

# %%
tracer.capture(views, torch.randn(2, 3, requires_grad=True))
