# %% [markdown]
# # Pause Dynamo from a cell
#
# **You are here if** you want to stop Dynamo in the middle of tracing your function and look at
# what it sees — what `torch._dynamo.comptime` offers through a callback or `breakpoint()` — from a
# notebook cell. PyTorch's page: the [Dynamo Deep-Dive](https://pytorch.org/docs/main/torch.compiler_dynamo_deepdive.html) (how Dynamo interprets bytecode
# into `VariableTracker`s and an FX graph).
#
# `comptime` (`torch/_dynamo/comptime.py`) lets user code run a callback *while Dynamo traces it*:
# the callback gets a `ComptimeContext` with the locals as Dynamo models them, the partial graph and
# the guards so far — and can drop into `breakpoint()`. dynascope makes that notebook-native: `tracer.trace(fn, *args)`
# runs the capture in a worker thread, the trace **pauses** at a marker or a breakpoint, and the
# notebook stays live, so the next cell can look at the paused compiler, step it line by line, and
# resume it.
#
# The example: a `wrap` body closing over a tensor, so the pause shows a nested `SubgraphTracer` at
# work, with the free variables it has lifted so far.

# %%
import warnings

import torch

import tracer

warnings.filterwarnings("ignore")
_ = torch.manual_seed(0)
wrap = torch.ops.higher_order.wrap

# %% [markdown]
# ## A pause marker in a HOP body
#
# `tracer.pause(label)` is a no-op in eager mode and in plain `torch.compile`; under a session,
# Dynamo stops right there (it is a comptime call: no graph break, nothing in the graph).

# %%
def f(x):
    y = x.cos()

    def body(a):
        b = a * y
        tracer.pause("in body")
        c = b.sin()
        return c + 1

    return wrap(body, x)


x = torch.randn(3)
s = tracer.trace(f, x)
st = s.start().wait(timeout=60)  # returns once the trace is paused (or finished: None)
print(st.location, "|", st.location.code)
print([str(loc) for loc in st.frames])

# %% [markdown]
# `wait` returned a `PausedState`: a snapshot, in plain data, of where Dynamo is. It is inside
# `body`, which it reached from the `wrap(body, x)` line of `f` — `st.frames` is the inlining stack,
# root frame first.
#
# ## The SubgraphTracer stack
#
# The interesting part is `st.tracers`: the stack of `SubgraphTracer`s, root first. The root tracer
# builds `f`'s graph; the `wrap` opened a second one for the body.

# %%
for t in st.tracers:
    print(t)

# %% [markdown]
# The body tracer has lifted two free variables so far, `l_x_` and `y`, each from the root graph
# node of the same name:
#
# - `y` is a true free variable: a tensor of the root graph that the body closes over.
# - `l_x_` is the *operand* `a`. `wrap` creates its body's inputs lazily ("automatic" subgraph
#   inputs): an argument becomes a placeholder the first time the body uses it, through the same
#   lifting path as a closure. Once the body is done, Dynamo knows which ones the user passed —
#   that is why a capture classifies body inputs by what was passed, not by how they were created.

# %%
root, body = st.tracers
print(body.lifted, "<-", body.lifted_from)

# %% tags=["remove-input"]
assert (root.depth, root.hop) == (0, "")
assert (body.depth, body.hop) == (1, "wrap")
assert st.graph is body.graph  # st.graph: the innermost tracer's partial graph
assert body.lifted == ["l_x_", "y"]
assert body.lifted_from == ["l_x_", "y"]

# %% [markdown]
# ## Locals, as Dynamo models them
#
# `st.locals` is the body frame's `symbolic_locals`: each local's `VariableTracker` kind, its fake
# tensor meta, and the graph node behind it. `y` is a **closure cell** (`f` created it for `body`),
# so it shows as a cell whose contents are the tensor — see
# [07 — closure cells](07_closure_cells.ipynb).

# %%
for v in st.locals.values():
    print(v)

# %% [markdown]
# Displaying the paused state renders the session panel: the source with the paused line, the tracer
# stack, the partial graph and the locals, with Resume / Step / Abort buttons.

# %%
st

# %% tags=["remove-input"]
assert st.locals["a"].kind == "TensorVariable" and st.locals["a"].node == "l_x_"
assert st.locals["b"].node == "b" and st.locals["b"].value == "f32[3]"
assert st.locals["y"].is_cell and st.locals["y"].cell_contents.kind == "TensorVariable"

# %% [markdown]
# Torch's own view, on a machine without dynascope: the same `f` under plain `torch.compile` in a
# fresh process, with torch's `comptime` callback where the pause marker was, printing the partial
# graph and the locals. The body graph takes the same lifted inputs, `l_x_` and `y`, and `y` is a cell.
# A tensor local is a fake tensor, which releases print differently: from torch 2.13 on as
# `Tensor(shape=(3,), dtype=torch.float32)`, before as `FakeTensor(..., size=(3,))`; only its shape is
# kept here.

# %%
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

script = pathlib.Path(tempfile.mkdtemp()) / "comptime_in_body.py"
script.write_text(
    "import torch\nfrom torch._dynamo.comptime import comptime\n\nwrap = torch.ops.higher_order.wrap\n\n\n"
    "@torch.compile(backend='eager')\ndef f(x):\n    y = x.cos()\n\n    def body(a):\n        b = a * y\n"
    "        comptime(lambda ctx: (ctx.print_graph(verbose=False), ctx.print_locals()))\n"
    "        c = b.sin()\n        return c + 1\n\n    return wrap(body, x)\n\n\nf(torch.randn(3))\n"
)
run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
printed = [line.split(";")[0].strip() for line in run.stdout.splitlines() if line.strip()]
torch_says = [re.sub(r" : [\w.]+", "", line) for line in printed]  # drop the FakeTensor annotations
torch_says = [re.sub(r"= (?:Fake)?Tensor\((?:\.\.\., )?(?:shape|size)=(\(.*?\)).*\)$", r"= a tensor of shape \1", line)
              for line in torch_says]
print("\n".join(torch_says))

# %% tags=["remove-input"]
assert run.returncode == 0, run.stderr[-2000:]
assert torch_says[0] == f"def forward(self, {', '.join(body.lifted)}):"  # l_x_, y: the lifted inputs
assert torch_says[1] == "b = l_x_ * y" and "b" in [n.name for n in body.graph.nodes]
shown = dict(line.split(" = ", 1) for line in torch_says[2:])
assert list(shown) == list(st.locals) and shown["y"] == "CellVariable()" and st.locals["y"].kind == "CellVariable"
assert shown["a"] == shown["b"] == "a tensor of shape (3,)"
release = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
fake = "a = Tensor(shape=(3,), dtype=torch.float32)" if release >= (2, 13) else "a = FakeTensor(..., size=(3,))"
assert fake in printed, printed

# %% [markdown]
# ## Step
#
# `s.step()` lets Dynamo run until it reaches the next source line. Stepping twice traces
# `c = b.sin()`: the body's partial graph grows by exactly that line's op.

# %%
before = [n.name for n in st.graph.nodes]
s.step()
st = s.wait(timeout=60)
s.step()
st = s.wait(timeout=60)
after = [n.name for n in st.graph.nodes]
print(st.location, "|", st.location.code)
print("new nodes:", after[len(before):])

# %% tags=["remove-input"]
assert after[: len(before)] == before
assert after[len(before):] == ["c"] and st.graph.node("c").target == "sin"
assert st.location.code == "return c + 1"

# %% [markdown]
# ## Resume
#
# `s.resume()` runs to the next breakpoint or to the end; `wait` returns `None` once the trace has
# finished, and the session holds the same `Capture` that `tracer.capture` would have produced.

# %%
s.resume()
assert s.wait(timeout=60) is None
print(s)

# %% [markdown]
# In the finished capture, the body's inputs are classified by what the user passed: `l_x_`, lifted
# lazily during the trace, is the `operand`; `y` is the lifted free variable.

# %%
body_sg = s.capture.frames[0].subgraphs["wrap_body_0"]
print(body_sg.inputs)

# %% tags=["remove-input"]
assert s.status == "finished" and s.error is None
assert [(i.name, i.kind) for i in body_sg.inputs] == [("l_x_", "operand"), ("y", "lifted_freevar")]

# %% [markdown]
# ## Breakpoints without touching the code
#
# `break_at("file.py:LINE")` pauses before Dynamo traces that line — in any frame, inlined function
# or HOP body — and `break_on_hop("wrap")` pauses whenever a body speculation of that HOP starts.
# Here, a breakpoint in the *inner* body of two nested `wrap`s shows a stack of three tracers, and
# how far lifting has got: the outer body has lifted what it used so far, the inner one nothing yet.

# %%
def g(x):
    y = x.cos()

    def outer(a):
        z = a + 1

        def inner(b):
            return b * y * z

        return wrap(inner, a)

    return wrap(outer, x)


line = g.__code__.co_firstlineno + 7  # `return b * y * z`
s = tracer.trace(g, x).break_at(f"{g.__code__.co_filename}:{line}")
st = s.start().wait(timeout=60)
print(st.location.code)
for t in st.tracers:
    print(t)

# %%
s.resume()
assert s.wait(timeout=60) is None

# %% tags=["remove-input"]
assert st.reason == "break_at" and st.location.code == "return b * y * z"
assert [t.depth for t in st.tracers] == [0, 1, 2]
assert [t.hop for t in st.tracers] == ["", "wrap", "wrap"]

# %% [markdown]
# Sessions never leave a thread behind: a pause times out (10 minutes by default, `pause_timeout=`),
# `s.abort()` stops the trace with a clear `TraceAborted` error, and only one session may be paused
# at a time (Dynamo compiles under one process-wide lock).

# %%
s = tracer.trace(f, x)
st = s.start().wait(timeout=60)
s.abort()
print(type(s.error).__name__, "-", s.error)

# %% tags=["remove-input"]
assert s.status == "finished" and type(s.error).__name__ == "TraceAborted"

# %% [markdown]
# ## Recap
#
# - `tracer.trace` runs the capture in a worker thread; `tracer.pause`, `break_at` and `break_on_hop`
#   stop Dynamo mid-trace, and a `PausedState` shows tracers, lifted inputs, locals and graph.
# - `step`, `resume` and `abort` drive the paused trace from the next cell; a finished session holds
#   the same `Capture` as `tracer.capture`.
#
# **Try this.** Move the pause marker in `f`'s body *before* `b = a * y` (call the function
# `f_early`). What has the body tracer lifted when Dynamo stops there? Write it as `answer`; the next
# cell holds it (collapsed), the cell after it checks yours.

# %% tags=["hide-input"]
# One solution (try your own first).
def f_early(x):
    y = x.cos()

    def body(a):
        tracer.pause("before the first use")
        b = a * y
        return b.sin()

    return wrap(body, x)


answer = []  # nothing yet: wrap lifts an input, operand or closure, when the body first reads it

# %% tags=["remove-input"]
s = tracer.trace(f_early, x)
st = s.start().wait(timeout=60)
lifted = st.tracers[-1].lifted
s.resume()
assert s.wait(timeout=60) is None and s.error is None
assert answer == lifted, lifted
print("check passed: lifted at the pause:", lifted)
