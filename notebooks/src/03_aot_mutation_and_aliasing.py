# %% [markdown]
# # AOTAutograd: mutation and aliasing
#
# **You are here if** the graph AOTAutograd produced (`TORCH_LOGS=aot_graphs`) ends with a `copy_`
# into an input, or returns more values than your function, and you want to know which mutation or
# view caused it. PyTorch's page: the [torch.compile FAQ](https://docs.pytorch.org/docs/stable/torch.compiler_faq.html) (how training is captured with
# AOTAutograd); the design is in the Notes of `torch/_functorch/aot_autograd.py`.
#
# Behind Dynamo, AOTAutograd retraces each graph down to ATen ops and **functionalizes** it: the
# graph it hands to the compiler is functional — except for input mutations it may keep at the end
# of the graph as `copy_`, and outputs that are views, which the graph returns and runtime wrappers
# around it turn back into real views. User programs mutate their inputs and return views, and
# those effects must still happen exactly as in eager. AOTAutograd first runs the function once to
# collect a `ViewAndMutationMeta` — which inputs are mutated (their data, or only their metadata),
# which outputs alias an input or an intermediate — and then puts each effect back, either inside
# the graph or in the runtime wrappers. The Notes near the top of
# `torch/_functorch/aot_autograd.py` describe each case (Note [AOT Autograd: input data mutations]
# predates keeping mutations in the graph); this notebook shows one per section, reading the
# metadata from `frame.aot`.

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
# (`keep_inference_input_mutations`), so AOTAutograd keeps this `copy_` **inside** the graph, at its
# very end (`mutation_in_graph`). Whether it may is decided per input, by
# `_check_if_mutation_can_be_in_graph` in `torch/_functorch/_aot_autograd/functional_utils.py`: a
# data mutation stays in the graph when that input does not require grad and its metadata is not
# mutated too, or when autograd cannot see the mutation (done under `no_grad`, or hidden from
# autograd) — in training graphs too.

# %%
def mutate_data(x):
    x.mul_(2)
    return x + 1


x = torch.ones(3)
a = aot_of(tracer.capture(mutate_data, x))
print(a.inputs[0])
print(a.inference.code)

# %% tags=["remove-input"]
inp = a.inputs[0]
assert inp.mutates_data and not inp.mutates_metadata and inp.mutation_in_graph
copy = a.inference.find(target="aten.copy_")
assert len(copy) == 1 and a.inference.nodes.index(copy[0]) == len(a.inference.nodes) - 2  # last op
assert torch.equal(x, torch.full((3,), 2.0))  # the caller's tensor really was doubled, once

# %% [markdown]
# Torch's own view, on a machine without dynascope: the same function under plain
# `torch.compile(backend="aot_eager")` in a fresh process, with `TORCH_LOGS=aot_graphs`. Its graph ends
# with the same `copy_` of the new value `mul` into the input, just before `return`:

# %%
import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

script = pathlib.Path(tempfile.mkdtemp()) / "mutation.py"
script.write_text(
    "import torch\n\n\n@torch.compile(backend='aot_eager')\ndef mutate_data(x):\n    x.mul_(2)\n"
    "    return x + 1\n\n\nmutate_data(torch.ones(3))\n"
)
run = subprocess.run([sys.executable, str(script)], env={**os.environ, "TORCH_LOGS": "aot_graphs"},
                     capture_output=True, text=True, timeout=120)
code = [re.sub(r"^[A-Z]\d{4} [\d:.]+ \d+ \S+\] \[\S+\] \[__aot_graphs\] ", "", line) for line in run.stderr.splitlines()]
ops = [line.split(";")[0].strip() for line in code if re.match(r"\s+\w+: \"|\s+return ", line)]
torch_says = [re.sub(r': "[^"]*"', "", line) for line in ops]  # drop the shape annotations
print("\n".join(torch_says))

# %% tags=["remove-input"]
assert run.returncode == 0, run.stderr[-2000:]
assert torch_says[-2:] == ["copy_ = torch.ops.aten.copy_.default(arg0_1, mul)", "return (add,)"], torch_says
assert copy[0].inputs == [a.inference.placeholders[0].name, "mul"]  # dynascope's record: the same copy_

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

# %% tags=["remove-input"]
inp = a.inputs[0]
assert inp.mutates_data and inp.requires_grad and not inp.mutation_in_graph
assert not a.forward.find(target="aten.copy_")
assert outputs_of(a.forward) == ["mul", "add"] and [o.name for o in a.outputs] == ["add"]
assert type(x.grad_fn).__name__ == "CopyBackwards" and torch.equal(x.detach(), torch.full((3,), 2.0))

# %% [markdown]
# The rule is per input, not per graph. Below, both graphs are **training** graphs (`w` requires
# grad), and both keep their `copy_` in the forward: in `update_buffer` the mutated `buf` does not
# require grad; in `update_under_no_grad` the mutated `w` does, but it is mutated under `no_grad`.

# %%
def update_buffer(w, buf):
    buf.add_(1)
    return (w * buf).sum()


def update_under_no_grad(w):
    with torch.no_grad():
        w.mul_(2)
    return (w * 3).sum()


buffered = aot_of(tracer.capture(update_buffer, torch.randn(3, requires_grad=True), torch.zeros(3)))
no_grad = aot_of(tracer.capture(update_under_no_grad, torch.randn(3, requires_grad=True)))
for name, a in (("update_buffer", buffered), ("update_under_no_grad", no_grad)):
    mutated = [i for i in a.inputs if i.mutates_data][0]
    copy_in_forward = bool(a.forward.find(target="aten.copy_"))
    print(f"{name:21} {a.mode}  mutated input requires grad: {mutated.requires_grad}  "
          f"in graph: {mutated.mutation_in_graph}  copy_ in forward: {copy_in_forward}")
for a in (buffered, no_grad):
    (mutated,) = [i for i in a.inputs if i.mutates_data]
    assert a.mode == "training" and mutated.mutation_in_graph and a.forward.find(target="aten.copy_")

# %% tags=["remove-input"]
assert [i.requires_grad for i in buffered.inputs if i.mutates_data] == [False]
assert [i.requires_grad for i in no_grad.inputs if i.mutates_data] == [True]

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

# %% tags=["remove-input"]
inp = a.inputs[0]
assert inp.mutates_metadata and not inp.mutates_data and not inp.mutation_in_graph
assert outputs_of(a.inference) == ["t", "add"] and [o.name for o in a.outputs] == ["add"]
assert a.inference.node("t").target == "aten.t.default"
assert x.shape == (3, 2)  # the caller's x is transposed, as in eager

# %% [markdown]
# Data and metadata together: an input that does not require grad, but whose data *and* metadata
# are mutated, is not kept in the graph either — `_check_if_mutation_can_be_in_graph` keeps a data
# mutation in the graph only when the metadata is untouched (or autograd cannot see the mutation).
# There is no `copy_`: the graph returns the updated value `t` as an extra output, and the runtime
# epilogue gives the real `x` its metadata (`as_strided_`) and then its data (`copy_`).

# %%
def mutate_both(x):
    x.mul_(2)
    torch.ops.aten.t_.default(x)
    return x + 1


x = torch.ones(2, 3)
a = aot_of(tracer.capture(mutate_both, x))
print(a.inputs[0])
print("graph outputs:", outputs_of(a.inference), "| copy_ in graph:", bool(a.inference.find(target="aten.copy_")))

# %% tags=["remove-input"]
inp = a.inputs[0]
assert inp.mutates_data and inp.mutates_metadata and not inp.requires_grad and not inp.mutation_in_graph
assert not a.inference.find(target="aten.copy_") and outputs_of(a.inference) == ["t", "add"]
assert x.shape == (3, 2) and torch.equal(x, torch.full((3, 2), 2.0))  # both effects reached the caller

# %% [markdown]
# ## Outputs that alias an input or an intermediate
#
# An output that is a view must come back as a *view* — of the same base as in eager — or
# in-place ops on it, and autograd's view tracking, would behave differently. The graph still
# computes and returns the view, but the caller does not get that tensor: views returned from an
# `autograd.Function`'s forward — which is how the compiled graph runs — cannot later be mutated.
# So AOTAutograd records, per output, what it aliases (`OutputType`), and a runtime wrapper
# regenerates the user-facing view from the real base by replaying the graph output's views on it
# (`gen_alias_from_base`; Note [AOT Autograd: outputs aliasing inputs or intermediates!]).

# %%
def views(x):
    y = x * 2
    return x.view(-1), y.view(-1), y


a = aot_of(tracer.capture(views, torch.randn(2, 3, requires_grad=True)))
for o in a.outputs:
    print(f"{o.name:7} {o.alias:45} base {o.base_index}")
print("forward graph returns:", outputs_of(a.forward))

# %% [markdown]
# - `x.view(-1)` is an `alias_of_input`: its base is graph input 0. The graph returns it (`view`),
#   and the runtime wrapper (`AliasOfInputHandler` in
#   `torch/_functorch/_aot_autograd/runtime_wrappers.py`) regenerates a view of the real `x` from
#   it; that regenerated view is what the caller gets.
# - `y.view(-1)` aliases an intermediate, `y`, which is itself a user output (number 2):
#   `alias_of_intermediate_base_is_user_output`. The graph returns it too (`view_1`), and the view
#   handed to the caller is regenerated from output 2.
# - `y` is an ordinary output.

# %%
def storage(t):
    return t.untyped_storage().data_ptr()


x = torch.randn(2, 3, requires_grad=True)
out = tracer.capture(views, x).result

# %% tags=["remove-input"]
kinds = [(o.alias, o.base_index) for o in a.outputs]
assert kinds == [
    ("alias_of_input", 0),
    ("alias_of_intermediate_base_is_user_output", 2),
    ("none", None),
]
assert outputs_of(a.forward)[:2] == ["view", "view_1"]  # the views are graph outputs
assert storage(out[0]) == storage(x) and storage(out[1]) == storage(out[2])  # real views, as in eager

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

# %% tags=["remove-input"]
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

# %% [markdown]
# The explorer's partition tab shows the same tables — input mutations and output aliases — next to
# the graph:

# %%
tracer.capture(views, torch.randn(2, 3, requires_grad=True))

# %% tags=["remove-input"]
assert a.effect_tokens == 1
(call,) = a.inference.find(target="with_effects")
token = a.inference.placeholders[0]
assert call.inputs[0] == token.name and token.meta["shape"] == [0]  # the token: an empty tensor

# %% [markdown]
# ## Recap
#
# - AOTAutograd records each input mutation and output alias (`ViewAndMutationMeta`) and puts each
#   effect back: in the graph when `_check_if_mutation_can_be_in_graph` allows, else at runtime.
# - Aliased outputs are regenerated from their base at runtime; inputs that overlap in memory and
#   are mutated become one synthetic base; effectful ops thread a token through the graph.
#
# **Try this.** For each function below, predict whether AOTAutograd keeps the input mutation inside
# the graph (`mutation_in_graph`). Write `predicted`; the next cell holds the answer (collapsed), the
# cell after it checks yours.

# %% tags=["hide-input"]
# One solution (try your own first).
def add_one(x):
    x.add_(1)
    return x + 0


cases = {
    "plain input": (add_one, lambda: torch.ones(3)),
    "input that requires grad": (add_one, lambda: torch.ones(3, requires_grad=True).clone()),
    "data and metadata mutated": (mutate_both, lambda: torch.ones(2, 3)),
}
predicted = {"plain input": True, "input that requires grad": False, "data and metadata mutated": False}

# %% tags=["remove-input"]
real = {name: aot_of(tracer.capture(fn, make())).inputs[0].mutation_in_graph for name, (fn, make) in cases.items()}
assert predicted == real, real
print("check passed:", real)
