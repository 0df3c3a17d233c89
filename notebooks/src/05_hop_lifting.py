# %% [markdown]
# # Lifting: what a HOP body reads from outside
#
# **You are here if** `TORCH_LOGS=graph_code` shows a submodule such as `wrap_body_0` taking inputs
# you never passed it, or an `s77` / `u0` placeholder you did not expect. PyTorch's pages: the
# [Dynamo Deep-Dive](https://pytorch.org/docs/main/torch.compiler_dynamo_deepdive.html) and, for the
# control-flow operators, [torch.cond](https://docs.pytorch.org/docs/stable/cond.html).
#
# A *higher-order operator* (HOP) takes a function as an argument: `wrap(body, x)`, `torch.cond`,
# `torch.utils.checkpoint`. Dynamo turns the body into **its own graph**, which the HOP calls. Such a
# graph must have no free variables: every tensor the body reads from outside becomes an extra input
# of the body graph. Dynamo calls this **lifting**. This notebook shows it with `wrap`, the simplest
# HOP: `wrap(body, *args)` just runs `body(*args)`.

# %%
import hashlib
import warnings

import torch

import tracer

warnings.filterwarnings("ignore")
_ = torch.manual_seed(0)
wrap = torch.ops.higher_order.wrap

# %% [markdown]
# ## Three kinds of free variable
#
# The body below reads three things it was not passed: `y`, a tensor computed in the enclosing
# function; `w`, a global tensor Dynamo has not seen before; and `scale`, a global Python number.

# %%
w = torch.randn(3)  # a global tensor
scale = 2.0  # a global number


def f(x):
    y = x.cos()

    def body(a):
        return a * y * w * scale

    return wrap(body, x)


cap = tracer.capture(f, torch.randn(3))
frame = cap.frames[0]
print(frame.graph.code)

# %% [markdown]
# Read the root graph's signature and the `wrap` call:
#
# - `w` became an input of the **root** graph (`G_w_`, from the source `G['w']`) the moment the body
#   touched it: the root tracer registers every global tensor it meets as a graph input, and only
#   then can the nested tracer lift it.
# - The `wrap` call passes `l_x_` — the operand the user gave — and then `y` and `g_w_`, the two
#   lifted free variables.
# - `scale` is nowhere in the signature: a Python number is not a tensor to lift. On this first
#   compile Dynamo burns its value into the body as the constant `2.0`, and guards on it with a
#   `CONSTANT_MATCH`: a call with another `scale` fails that guard. (What the recompile then does
#   with a float — it makes it dynamic — is in notebook 01.)

# %%
body = frame.subgraphs["wrap_body_0"]
for i in body.inputs:
    print(f"{i.name:6} {i.kind:15} <- {i.source}")

# %% [markdown]
# The explorer draws the same thing: in the subgraph tree open `wrap_body_0`; lifted inputs are
# styled apart from the operand, and the inspector of a lifted placeholder names the parent node that
# feeds it.

# %%
cap

# %% tags=["remove-input"]
assert [n.target for n in frame.graph.placeholders] == ["L_x_", "G_w_"]
assert [(i.kind, i.source) for i in body.inputs] == [
    ("operand", "l_x_"),
    ("lifted_freevar", "y"),
    ("lifted_freevar", "g_w_"),
]
assert body.lifted == ["y", "g_w_"]
assert any("2.0" in n.args for n in body.graph.nodes)  # scale: a constant, not an input
assert any(g.kind == "CONSTANT_MATCH" and g.source == "G['scale']" for g in frame.guards)

# %% [markdown]
# Torch's own view, on a machine without dynascope: the same `f` under plain `torch.compile` in a
# fresh process, with `TORCH_LOGS=graph_code`, which prints the root graph with each body as a nested
# module (only the signatures, the `wrap` call and the constant are kept here):

# %%
import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

script = pathlib.Path(tempfile.mkdtemp()) / "lifting.py"
script.write_text(
    "import torch\n\nwrap = torch.ops.higher_order.wrap\nw = torch.randn(3)\nscale = 2.0\n\n\n"
    "@torch.compile(backend='eager')\ndef f(x):\n    y = x.cos()\n\n    def body(a):\n"
    "        return a * y * w * scale\n\n    return wrap(body, x)\n\n\nf(torch.randn(3))\n"
)
run = subprocess.run([sys.executable, str(script)], env={**os.environ, "TORCH_LOGS": "graph_code"},
                     capture_output=True, text=True, timeout=120)
code = [re.sub(r"^[A-Z]\d{4} [\d:.]+ \d+ \S+\] \[\S+\] \[__graph_code\] ", "", line) for line in run.stderr.splitlines()]
keep = ("def forward", "class wrap_body_0", "wrap = torch.ops.higher_order.wrap", "mul_2")
torch_says = [line.split(";")[0].rstrip() for line in code if line.strip().startswith(keep)]
print("\n".join(torch_says))

# %% tags=["remove-input"]
assert run.returncode == 0, run.stderr[-2000:]
assert any("def forward(self, l_x_" in line and ", y:" in line and ", g_w_:" in line for line in torch_says)
assert any("higher_order.wrap(wrap_body_0, l_x_, y, g_w_)" in line for line in torch_says)

# %% [markdown]
# > **Where in torch.** The design is Note [HigherOrderOperator tracing design] in
# > `torch/_dynamo/output_graph.py`: `OutputGraph` owns a root `SubgraphTracer`, which builds the
# > frame's graph; each HOP body gets a nested `SubgraphTracer` that *speculates* the body into a fresh
# > graph (`speculate_subgraph_with_auto_output_flattening` for `wrap`, checkpoint and the other HOPs
# > that just run their body; `speculate_subgraph` for control flow). A free variable is lifted by
# > `lift_tracked_freevar_to_input`.

# %% [markdown]
# ## Nested bodies: lifting is recursive
#
# Now put a `wrap` inside a `wrap`. The inner body reads `y` (bound in the root graph), `z` (bound in
# the *outer body*) and `w` (a global). While the inner tracer runs, a free variable is looked up
# through the stack of tracers until the one that owns it, and lifted into **every body in between**
# — but no further than where it is bound.

# %%
def g(x):
    y = x.cos()

    def outer(a):
        z = a + 1

        def inner(b):
            return b * y * z * w

        return wrap(inner, a)

    return wrap(outer, x)


cap = tracer.capture(g, torch.randn(3))
frame = cap.frames[0]
print(list(frame.subgraphs))

# %% [markdown]
# Bodies are numbered in the order they are *installed*, and the inner one finishes first: the outer
# body is `wrap_body_1` and the inner one, nested inside it, is `wrap_body_1.wrap_body_0`. The
# speculations, though, are listed in the order they *started*: outer (depth 1), then inner (depth 2).

# %%
for s in frame.speculations:
    print(s.hop, s.depth, s.ok, s.subgraph, s.lifted)

# %% [markdown]
# A speculation's `lifted` is `SubgraphTracer.lifted_freevars` exactly as Dynamo filled it, and it
# starts with `l_x_`, the *operand*. `wrap` creates its body's inputs lazily: an argument becomes a
# placeholder the first time the body uses it, through the same lifting path as a closure. The
# capture classifies the body inputs by what the user passed, so `l_x_` is an `operand` in the tables below.

# %% [markdown]
# Follow each free variable of the inner body back to where it is bound:

# %%
outer = frame.subgraphs["wrap_body_1"]
inner = frame.subgraphs["wrap_body_1.wrap_body_0"]
for i in inner.inputs:
    print(f"inner {i.name:6} {i.kind:15} <- outer's {i.source}")
for i in outer.inputs:
    print(f"outer {i.name:6} {i.kind:15} <- root's  {i.source}")

# %% tags=["remove-input"]
assert inner.parent == "wrap_body_1" and outer.parent == ""
assert [(s.depth, s.subgraph) for s in frame.speculations] == [
    (1, "wrap_body_1"),
    (2, "wrap_body_1.wrap_body_0"),
]
assert frame.speculations[0].lifted[0] == "l_x_" and outer.input("l_x_").kind == "operand"
inner_src = {i.name: i.source for i in inner.inputs}
outer_src = {i.name: i.source for i in outer.inputs}
# y and w: lifted through both levels, each level reading the level above
assert inner_src["y"] == "y" and outer.input("y").kind == "lifted_freevar" and outer_src["y"] == "y"
assert inner_src["g_w_"] == "g_w_" and outer_src["g_w_"] == "g_w_"
# z is bound in the outer body (node "add"): lifted one level only
assert inner.input("add").kind == "lifted_freevar"
assert outer.graph.node("add").op == "call_function" and "add" not in outer_src
assert set(inner.lifted) == {"y", "add", "g_w_"} and set(outer.lifted) == {"y", "g_w_"}

# %% [markdown]
# - `y` is bound in the root graph, so it is lifted into the outer body *and* into the inner one:
#   the inner body's `y` comes from the outer body's `y` placeholder.
# - `z` (the node `add`) is bound in the outer body: it is lifted into the inner body only.
# - `w` is a root graph input (`G_w_`), lifted through both bodies, like `y`.
#
# > **Where in torch.** Note [Nested SubgraphTracer and free_variable handling] in
# > `torch/_dynamo/output_graph.py`.

# %% [markdown]
# ## Lifted symbols and placeholder order
#
# With dynamic shapes a tensor's sizes are symbols (`s77`), and a value read with `.item()` is an
# *unbacked* symbol (`u0`): Dynamo does not know it at trace time. A body that receives a tensor of
# shape `[u0, 1]` must also receive `u0` itself, or its graph would mention a symbol nobody binds.
# Whenever a SubgraphTracer creates a graph input it also **binds the free symbols** of its example
# value, lifting them as inputs of their own.
#
# `.item()` only stays in the graph with Dynamo's `capture_scalar_outputs` option on (otherwise it
# graph-breaks); `tracer.capture` sets it for this one capture.

# %%
def h(x, lengths):
    n = lengths.max().item()  # an unbacked SymInt: u0
    c = x.new_zeros(n, 1)  # shape [u0, 1], created outside the body

    def body(a):
        return a.sin(), c + 1

    return wrap(body, x)


cap = tracer.capture(h, torch.randn(5), torch.tensor([2, 4, 3]), dynamic=True, capture_scalar_outputs=True)
body = cap.frames[0].subgraphs["wrap_body_0"]
for i in body.inputs:
    print(f"{i.name:6} {i.kind:15} <- {i.source:6} {tracer.model.format_meta(i.meta)}")

# %% tags=["remove-input"]
kinds = [(i.name, i.kind) for i in body.inputs]
assert kinds == [
    ("s77", "lifted_symbol"),
    ("l_x_", "operand"),
    ("u0", "lifted_symbol"),
    ("c", "lifted_freevar"),
], kinds
assert body.input("u0").source == "item"
assert cap.frames[0].graph.node("item").meta["value"] == "u0"
assert body.input("c").meta["shape"] == ["u0", 1]
assert int(hashlib.sha256(b"L['x'].size()[0]").hexdigest(), 16) % 100 == 77  # where s77 comes from

# %% [markdown]
# Four placeholders for a body that was passed one argument:
#
# 1. `s77`, the symbol in the operand's shape `[s77]` (its number comes from a hash of its source,
#    `L['x'].size()[0]`, so it is the same in every run: see the box below);
# 2. `l_x_`, the operand;
# 3. `u0`, the unbacked symbol in `c`'s shape, fed by the root graph's `item` node;
# 4. `c`, the closure.
#
# Each symbol comes right *before* the tensor that mentions it: it is bound when that tensor's
# placeholder is created, just ahead of it.
#
# And the order of the pairs? It is the order of **first use**. `wrap` creates even its operand's
# placeholder lazily (we saw `l_x_` in the speculation's `lifted` list above), so every input is
# created when the body first reads it. Swap the body's two expressions and the placeholders swap
# too — although the user passed `a` and never passed `c`. That is why a capture classifies body
# inputs by what the user passed, never by position.

# %%
def h_swapped(x, lengths):
    n = lengths.max().item()
    c = x.new_zeros(n, 1)

    def body(a):
        return c + 1, a.sin()  # c first now

    return wrap(body, x)


cap = tracer.capture(h_swapped, torch.randn(5), torch.tensor([2, 4, 3]), dynamic=True, capture_scalar_outputs=True)
body = cap.frames[0].subgraphs["wrap_body_0"]
print([(i.name, i.kind) for i in body.inputs])

# %% tags=["remove-input"]
assert [i.name for i in body.inputs] == ["u0", "c", "s77", "l_x_"]
assert body.input("l_x_").kind == "operand"

# %% [markdown]
# > **Where in torch.** `SubgraphTracer.create_graph_input` calls `_lift_basic_symbols` to bind a new
# > input's free symbols (`torch/_dynamo/output_graph.py`). A size symbol's number:
# > `ShapeEnv._generate_unique_id` (`torch/fx/experimental/symbolic_shapes.py`) takes the SHA-256 of
# > the source modulo 100 — 77 for `L['x'].size()[0]` — and bumps it by one while it is taken, so an
# > earlier symbol of the same compile can push it to `s78`.
# > Note [HigherOrderOperator subgraph input ordering] moves lifted placeholders *behind* the
# > operands for HOPs that create their operands' placeholders up front; with `wrap`'s lazy operands
# > there is nothing to move.

# %% [markdown]
# ## Inputs the HOP supplies
#
# Not every body input comes from a parent node. `torch.while_loop` calls its `cond_fn` and
# `body_fn` with the **carry**: the initial values on the first iteration, the body's previous
# outputs after that (`torch/_higher_order_ops/while_loop.py`). Those placeholders are neither
# operands nor lifted free variables: dynascope marks them `hop_supplied` and says what the HOP
# passes, keeping the parent node of the initial value as `source`. A `scan` step's slice of each
# scanned tensor, flex_attention's `score, b, h, q_idx, kv_idx` and the incoming gradient of an
# `autograd.Function` backward are the same kind.

# %%
def double_until(i, x):
    def cond_fn(i, x):
        return i < 3

    def body_fn(i, x):
        return i + 1, x * 2

    return torch.while_loop(cond_fn, body_fn, (i, x))


x0 = torch.randn(3)
cap = tracer.capture(double_until, torch.tensor(0), x0)
body = cap.frames[0].subgraphs["body_fn_0"]
for i in body.inputs:
    print(f"{i.name:8} {i.kind:13} supplied: {i.supplied:9} from parent node {i.source}")

# %% tags=["remove-input"]
assert list(cap.frames[0].subgraphs) == ["cond_fn_0", "body_fn_0"]
assert [(i.kind, i.supplied, i.source) for i in body.inputs] == [
    ("hop_supplied", "carry[0]", "l_i_"),
    ("hop_supplied", "carry[1]", "l_x_"),
]
assert cap.result[0] == 3 and torch.equal(cap.result[1], x0 * 8)  # three iterations, as in eager

# %% [markdown]
# ## Recap
#
# - Each HOP body is traced by a nested `SubgraphTracer` into a graph of its own; every value it
#   reads from outside becomes an input, lifted through every body up to where it is bound.
# - Lifting is by first use: a body's inputs appear in the order it reads them, each symbol just
#   before the tensor whose shape mentions it; inputs a HOP passes itself are `hop_supplied`.
#
# **Try this.** Without running it, write down the inputs of `k`'s body graph, in order, as
# `(kind, source)` pairs like the table of the first section. The next cell holds the answer
# (collapsed); the cell after it captures `k` and checks yours.

# %% tags=["hide-input"]
# One solution (try your own first).
def k(x):
    t = x.exp()

    def body(a):
        return a * t + w

    return wrap(body, x)


predicted = [("operand", "l_x_"), ("lifted_freevar", "t"), ("lifted_freevar", "g_w_")]  # first use decides the order

# %% tags=["remove-input"]
inputs = tracer.capture(k, torch.randn(3)).frames[0].subgraphs["wrap_body_0"].inputs
assert predicted == [(i.kind, i.source) for i in inputs], [(i.kind, i.source) for i in inputs]
print("check passed:", predicted)
