# %% [markdown]
# # Wrap semantics: body outputs vs graph outputs
#
# **You are here if** `TORCH_LOGS=graph_code` shows a `wrap` or `tag_activation_checkpoint` call
# whose body graph returns more values than your function did, and you want to know which ones the
# caller reads. PyTorch's page: the [Dynamo Deep-Dive](https://pytorch.org/docs/main/torch.compiler_dynamo_deepdive.html); the design is in torch's source,
# the docstring of `speculate_subgraph_with_auto_output_flattening` and Note [Return subgraph
# intermediates as subgraph outputs].
#
# Some HOPs just *run their body*: `wrap`, activation checkpointing
# (`torch.utils.checkpoint.checkpoint`), `autograd.Function`, `nested_compile_region`. Control-flow
# HOPs (`torch.cond`, `while_loop`, `map`) do something else with theirs, and are traced with
# `speculate_subgraph`. Dynamo traces the first family with
# `speculate_subgraph_with_auto_output_flattening` (in `torch/_dynamo/variables/higher_order_ops.py`;
# its docstring is this notebook in short), whose key idea is to **disentangle** two things that a
# HOP call used to tie together:
#
# - what the body *returns* to the Python program — any object, which Dynamo keeps tracing with, and
# - what the body *graph outputs* — only the tensors and SymInts inside that object.
#
# This notebook shows the difference on three small bodies.

# %%
import warnings

import torch

import tracer

warnings.filterwarnings("ignore")
_ = torch.manual_seed(0)
wrap = torch.ops.higher_order.wrap


def outputs_of(graph):
    """Names of the values a graph returns (the args of its output node)."""
    return graph.output.inputs

# %% [markdown]
# ## A body that returns a user object
#
# `body` returns a `Pair`, a plain Python class holding two tensors. A graph cannot return a `Pair`.
# Dynamo keeps the `Pair` as a variable it traces with, and makes the body graph return only the two
# tensors inside it; after the call, `p.a` and `p.b` read the HOP's outputs.

# %%
class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


def f(x):
    def body(y):
        return Pair(y.sin(), y.cos())

    p = wrap(body, x)
    return p.a + p.b


cap = tracer.capture(f, torch.randn(3))
frame = cap.frames[0]
print(frame.graph.code)

# %%
body = frame.subgraphs["wrap_body_0"]
print("body graph returns:", outputs_of(body.graph))
call = frame.graph.node(body.call_node)

# %% tags=["remove-input"]
assert outputs_of(body.graph) == ["sin", "cos"]
readers = [frame.graph.node(u) for u in call.users]
assert call.role == "hop" and call.calls == ["wrap_body_0"]
assert [n.target for n in readers] == ["operator.getitem", "operator.getitem"]

# %% [markdown]
# Two graph outputs for one Python return value: the body graph returns the flat list of tensors
# (`sin`, `cos`), the root graph unpacks them with `getitem`, and the `Pair` itself never enters any
# graph.
#
# ## An output nobody reads
#
# The graph outputs of a body are decided when the body is traced — before Dynamo knows what the
# caller will do with them. Here the caller drops the second result: the body still returns both
# tensors, and the root graph simply reads one of them.

# %%
def g(x):
    def body(y):
        return y.sin(), y.cos()

    a, _ = wrap(body, x)
    return a


frame = tracer.capture(g, torch.randn(3)).frames[0]
body = frame.subgraphs["wrap_body_0"]
call = frame.graph.node(body.call_node)
print("body graph returns:", outputs_of(body.graph), "| readers in root:", call.users)

# %% tags=["remove-input"]
assert outputs_of(body.graph) == ["sin", "cos"]
assert len(call.users) == 1  # only wrap[0] is read

# %% [markdown]
# ## Checkpoint bodies return intermediates as extra outputs
#
# Activation checkpointing is a wrap-semantics HOP too (`tag_activation_checkpoint`). A checkpointed
# function sometimes leaks a tensor through a side effect — below, `gn` appends an intermediate to a
# list owned by the caller, who returns it. That tensor is not a return value of `gn`, so with plain
# wrap semantics the root graph would have no way to reach it.
#
# Like `wrap`, checkpoint refuses such side effects in its body — the speculation fails and the
# checkpoint call runs eagerly behind a graph break — unless Dynamo is told that it is fine not to
# replay them in the backward (`skip_fwd_side_effects_in_bwd_under_checkpoint`, which
# `CheckpointHigherOrderVariable` copies into its `allow_side_effects`). (`invoke_subgraph` allows
# side effects always: notebook 07.) With that option, Dynamo **returns
# every intermediate tensor of a checkpoint body as an extra output** (Note [Return subgraph
# intermediates as subgraph outputs]); the ones the root graph never reads are dropped again, so the
# body below returns exactly `cos` and `out`. This is safe for checkpoint because AOTAutograd
# inlines the body later, so the subgraph boundary (and its extra outputs) disappears.

# %%
def gn(x, z):
    o = torch.matmul(x, x) @ x
    out = x.sin()
    z.append(out)  # the intermediate escapes through the caller's list
    return torch.cos(torch.sin(o))


def fn(x):
    z = []
    out1 = torch.utils.checkpoint.checkpoint(gn, x, z, use_reentrant=False)
    return out1, z[0]


cap = tracer.capture(
    fn,
    torch.randn(4, 4, requires_grad=True),
    dynamo_config={"skip_fwd_side_effects_in_bwd_under_checkpoint": True},  # for this capture only
)
frame = cap.frames[0]
body = frame.subgraphs["wrap_body_0"]
print(body.hop, "returns", outputs_of(body.graph))

# %% [markdown]
# The explorer shows the checkpoint body with its two outputs; click the
# `tag_activation_checkpoint` node in the root graph to open it.

# %%
cap

# %% tags=["remove-input"]
assert body.hop == "tag_activation_checkpoint"
assert outputs_of(body.graph) == ["cos", "out"]  # gn returned one tensor; its graph returns two
assert len(frame.graph.node(body.call_node).users) == 2
# without the option: the same body's speculation fails on the side effect, and the call graph-breaks
plain = tracer.capture(fn, torch.randn(4, 4, requires_grad=True))
refused = [sp for f in plain.frames for sp in f.speculations if not sp.ok]
assert refused[0].hop == "tag_activation_checkpoint" and "side effect" in refused[0].reason.lower()
assert plain.graph_breaks

# %% [markdown]
# Torch's own view, on a machine without dynascope: the same `fn` under plain `torch.compile` in a
# fresh process, with the option set and `TORCH_LOGS=graph_code`. The root graph calls
# `tag_activation_checkpoint` on `wrap_body_0`, whose `return` lists the same two outputs:

# %%
import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

script = pathlib.Path(tempfile.mkdtemp()) / "checkpoint_outputs.py"
script.write_text(
    "import torch\n\ntorch._dynamo.config.skip_fwd_side_effects_in_bwd_under_checkpoint = True\n\n\n"
    "def gn(x, z):\n    o = torch.matmul(x, x) @ x\n    out = x.sin()\n    z.append(out)\n"
    "    return torch.cos(torch.sin(o))\n\n\n@torch.compile(backend='eager')\ndef fn(x):\n    z = []\n"
    "    out1 = torch.utils.checkpoint.checkpoint(gn, x, z, use_reentrant=False)\n    return out1, z[0]\n\n\n"
    "fn(torch.randn(4, 4, requires_grad=True))\n"
)
run = subprocess.run([sys.executable, str(script)], env={**os.environ, "TORCH_LOGS": "graph_code"},
                     capture_output=True, text=True, timeout=120)
code = [re.sub(r"^[A-Z]\d{4} [\d:.]+ \d+ \S+\] \[\S+\] \[__graph_code\] ", "", line) for line in run.stderr.splitlines()]
start = next(i for i, line in enumerate(code) if line.strip().startswith("class wrap_body_0"))
call = [line.split(";")[0].strip() for line in code[:start] if line.strip().startswith("tag_activation_checkpoint =")]
body_return = next(line.strip() for line in code[start:] if line.strip().startswith("return "))
torch_says = call + [code[start].strip(), body_return]
print("\n".join(torch_says))

# %% tags=["remove-input"]
assert run.returncode == 0, run.stderr[-2000:]
assert len(call) == 1 and "higher_order.tag_activation_checkpoint(wrap_body_0, l_x_" in call[0]
assert frame.graph.node(body.call_node).calls == ["wrap_body_0"]  # dynascope: the same body
assert body_return == f"return ({', '.join(outputs_of(body.graph))})"  # return (cos, out)

# %% [markdown]
# ## Recap
#
# - A wrap-semantics body returns any Python object to the program, but its graph returns only the
#   tensors (and SymInts) inside it, flattened; the root graph reads them with `getitem`.
# - With `skip_fwd_side_effects_in_bwd_under_checkpoint`, a checkpoint body also returns the
#   intermediates the caller reads, as extra outputs.
#
# **Try this.** `h`'s body returns a dict holding two tensors, an `int` and a tuple of two more
# tensors. How many values does the body *graph* return? Write the number as `answer`; the next cell
# holds it (collapsed), the cell after it checks yours.

# %% tags=["hide-input"]
# One solution (try your own first).
def h(x):
    def body(y):
        return {"s": y.sin(), "n": 3, "c": (y.cos(), y.tan())}

    d = wrap(body, x)
    return d["s"] + d["c"][1] * d["n"]


answer = 3  # sin, cos and tan: the int is a constant Dynamo keeps tracing with, not a graph output

# %% tags=["remove-input"]
x = torch.randn(3)
hcap = tracer.capture(h, x)
returned = outputs_of(hcap.frames[0].subgraphs["wrap_body_0"].graph)
assert answer == len(returned), returned
assert torch.allclose(hcap.result, x.sin() + x.tan() * 3)
print("check passed: the body graph returns", returned)
