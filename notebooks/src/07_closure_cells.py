# %% [markdown]
# # Closure cells
#
# **You are here if** your compiled function is a closure or writes a variable of an enclosing
# function (`nonlocal`), and `TORCH_LOGS=graph_breaks` reports a graph break at a write to such a
# variable inside a HOP body. PyTorch's pages: the [Dynamo Deep-Dive](https://pytorch.org/docs/main/torch.compiler_dynamo_deepdive.html) and
# [common graph breaks](https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.common_graph_breaks.html).
#
# A *cell* is how Python shares a variable between a function and the functions nested in it: a
# local that an inner function reads is stored in a cell (`co_cellvars`), and the inner function
# carries that cell in its `__closure__` (`co_freevars`). Dynamo meets cells in two situations:
#
# - cells **created by the frame being traced** — `f` defines `h`, and a nested `body` reads it;
# - cells that **existed before tracing** — the compiled `f` is itself a closure returned by a
#   factory, and reads its factory's variable.
#
# In torch 2.13 both are one kind of `VariableTracker`, `CellVariable` (in
# `torch/_dynamo/variables/misc.py`), and every write to a cell is a buffered side effect
# (`SideEffects.store_cell`, in `torch/_dynamo/side_effects.py`). This notebook looks at both kinds
# of cell from inside a paused trace, and at what Dynamo refuses.

# %%
import warnings

import torch

import tracer

warnings.filterwarnings("ignore")
_ = torch.manual_seed(0)
wrap = torch.ops.higher_order.wrap

# %% [markdown]
# ## Both kinds of cell, seen from a pause
#
# `make_scaler(w)` returns `f`, which closes over `w` (a pre-existing cell). Inside, `f` creates `h`,
# which its nested `body` closes over (a cell created by the root frame). We pause the trace just
# before the `wrap` call.

# %%
def make_scaler(w):
    def f(x):
        h = x * w

        def body(a):
            return a + h

        tracer.pause("before wrap")
        return wrap(body, x)

    return f


f = make_scaler(torch.randn(3))
s = tracer.trace(f, torch.randn(3))
st = s.start().wait(timeout=60)
for v in st.locals.values():
    print(v)

# %% [markdown]
# - `x` is an ordinary local: a `TensorVariable` backed by the graph input `l_x_`.
# - `h` is a cell `f` created: a `CellVariable` whose contents are the tensor node `h`.
# - `w` is the pre-existing cell from `make_scaler`. It is a `CellVariable` too, and its contents
#   became a **graph input** of the root graph, `L_w_`: a value reached through a closure is an input
#   to the compiled code like an argument (its source reads the cell, so it is guarded like one).
# - `body` is a `NestedUserFunctionVariable`: a function Dynamo saw being created, with `h`'s cell as
#   its closure.
#
# The panel shows the same locals table, with cells marked as cells:

# %%
st

# %%
s.resume()
assert s.wait(timeout=60) is None

# %% tags=["remove-input"]
loc = st.locals
assert not loc["x"].is_cell and loc["x"].node == "l_x_"
assert loc["h"].is_cell and loc["h"].kind == "CellVariable" and loc["h"].cell_contents.node == "h"
assert loc["w"].is_cell and loc["w"].kind == "CellVariable" and loc["w"].cell_contents.node == "l_w_"
assert [n.target for n in st.graph.placeholders] == ["L_x_", "L_w_"]
assert loc["body"].kind == "NestedUserFunctionVariable"

# %% [markdown]
# ## Writing to a cell from the traced frame
#
# Because a write to a cell is a buffered side effect, the traced frame may write to a pre-existing
# cell: Dynamo records the new value and the code it generates stores it into the real cell after
# the graph runs. No graph break, and eager semantics are kept.

# %%
def make_counter():
    calls = 0

    def step(x):
        nonlocal calls
        calls += 1
        return x.sin()

    return step, lambda: calls


step, calls = make_counter()
cap = tracer.capture(step, torch.randn(3))
print(cap.graph_breaks, "calls =", calls())

# %% tags=["remove-input"]
assert cap.graph_breaks == []
assert calls() == 1  # the cell was really written, once

# %% [markdown]
# ## What Dynamo graph-breaks on: a cell written inside a HOP body
#
# A HOP body is speculated into a *separate graph* that may be run, re-run or never run by the HOP
# (`checkpoint` replays its body in the backward). Whether a side effect on state outside the body —
# like writing a cell of the enclosing function — is allowed depends on the HOP, through its
# `allow_side_effects` (in `torch/_dynamo/variables/higher_order_ops.py`):
#
# - `wrap` refuses it (`WrapHigherOrderVariable.allow_side_effects` is `False`), and so does
#   checkpoint unless Dynamo's `skip_fwd_side_effects_in_bwd_under_checkpoint` option is on
#   (notebook 08). The body's speculation fails, and since `wrap` may fall back to eager (notebook
#   06), Dynamo graph-breaks on the whole HOP call.
# - `invoke_subgraph` — what `torch.compiler.nested_compile_region` calls — allows it
#   (`InvokeSubgraphHigherOrderVariable.allow_side_effects` is `True`); the last section shows it.
#
# Let us watch `wrap` refuse: pause in the body, then step over the write.

# %%
def g(x):
    count = 0

    def body(a):
        nonlocal count
        tracer.pause("in body")
        count += 1
        return a.sin()

    return wrap(body, x), count


s = tracer.trace(g, torch.randn(3))
st = s.start().wait(timeout=60)
print(st.location.code, "| tracers:", [t.hop or "root" for t in st.tracers])
print(st.locals["count"])

# %% [markdown]
# `count` is a cell the root frame created, holding the constant `0`. Now step over `count += 1`:

# %%
s.step()
st = s.wait(timeout=60)  # at `count += 1`
s.step()
st = s.wait(timeout=60)  # the write failed the speculation: where are we now?
print(st.location, "|", st.location.code, "| tracers:", [t.hop or "root" for t in st.tracers])

# %% [markdown]
# The next pause is back at the first line of `g`, with only the root tracer and an empty graph:
# the speculation of `body` failed, and Dynamo **restarted the analysis of the frame**, this time
# knowing it must break the graph at the `wrap` call.

# %%
s.resume()
while s.wait(timeout=60) is not None:  # later passes do not enter the body again
    s.resume()

# %% [markdown]
# A capture keeps every attempt: `0/0`, **restarted**, holds the failed speculation with Dynamo's
# reason and the graph break it caused; `0/0_1` is the attempt that stopped at the `wrap` call —
# nothing comes before the call, so it hands no graph to the backend (`no_graph`), and neither does
# the resume function `1/0`, which only builds the returned tuple.

# %%
cap = tracer.capture(g, torch.randn(3))
failed = [sp for sp in cap.frames[0].speculations if not sp.ok]
brk = cap.graph_breaks[0]
print([(f.compile_id, f.status) for f in cap.frames])
print(failed[0].hop, "|", failed[0].reason.splitlines()[0])
print(brk.code_line, "|", brk.user_stack)

# %% [markdown]
# The graph break points at the write, `count += 1`, reached from the `wrap(...)` call in `g`: the
# break is on the HOP call, and its reason is why the body could not be a graph. `g` then runs the
# `wrap` eagerly, and the body with it — so the cell really is written, exactly once.
#
# In the explorer, the frame's speculations list the failed one, marked with its reason, and the
# overview shows the graph break with its source line.

# %%
cap

# %% tags=["remove-input"]
assert st.location.function == "g" and [t.hop for t in st.tracers] == [""]
assert st.graph.nodes == []
assert s.error is None
assert [(f.compile_id, f.status) for f in cap.frames] == [("0/0", "restarted"), ("0/0_1", "no_graph"), ("1/0", "no_graph")]
assert failed and failed[0].hop == "wrap" and brk.compile_id == "0/0"
assert "side effect" in failed[0].reason.lower()
assert brk.code_line.strip() == "count += 1"
assert [loc.rsplit(" in ", 1)[1] for loc in brk.user_stack] == ["g", "body"]
assert cap.result[1] == 1

# %% [markdown]
# Torch's own view, on a machine without dynascope: the same `g` under plain `torch.compile` in a
# fresh process, with `TORCH_LOGS=graph_breaks`. Torch reports the same break — a mutated
# `CellVariable` in the `wrap` body — at the same source line, `count += 1`, reached from `g`
# through `body`:

# %%
import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

script = pathlib.Path(tempfile.mkdtemp()) / "cell_write.py"
script.write_text(
    "import torch\n\nwrap = torch.ops.higher_order.wrap\n\n\n@torch.compile(backend='eager')\ndef g(x):\n"
    "    count = 0\n\n    def body(a):\n        nonlocal count\n        count += 1\n        return a.sin()\n\n"
    "    return wrap(body, x), count\n\n\ng(torch.randn(3))\n"
)
run = subprocess.run([sys.executable, str(script)], env={**os.environ, "TORCH_LOGS": "graph_breaks"},
                     capture_output=True, text=True, timeout=120)
log = [re.sub(r"^[A-Z]\d{4} [\d:.]+ \d+ \S+\] \[\S+\] \[__graph_breaks\] ", "", line) for line in run.stderr.splitlines()]
log = [line.replace(str(script), script.name) for line in log]
keep = ("Graph break in user code", "Higher Order Operator:", "Developer debug context:")
stack = [i for i, line in enumerate(log) if re.match(r'\s+File "cell_write.py", line \d+, in (g|body)$', line)]
torch_says = [line.strip() for line in log if line.strip().startswith(keep)]
torch_says += [log[i + j].strip() for i in stack for j in (0, 1)]  # each frame and its source line
print("\n".join(torch_says))

# %% tags=["remove-input"]
assert run.returncode == 0, run.stderr[-2000:]
assert "Developer debug context: Attempted to mutate CellVariable()" in torch_says
assert "Higher Order Operator: torch.ops.higher_order.wrap" in torch_says
assert [line.rsplit(" in ", 1)[1] for line in torch_says if line.startswith("File ")] == ["g", "body"]  # brk.user_stack
assert torch_says[-1] == brk.code_line.strip()  # count += 1

# %% [markdown]
# ## A HOP that allows the side effect: `nested_compile_region`
#
# The same kind of body under `torch.compiler.nested_compile_region` — it appends an intermediate to
# the caller's list — speculates fine: `invoke_subgraph` allows side effects. Dynamo keeps the
# `append` as a side effect of the frame and makes the appended tensor `s` an extra output of the
# body graph (`return (cos, s)`), which the caller reads for `seen[0]`. No graph break.
#
# Look at the root graph the backend got, though: from torch 2.13 on, there is no `invoke_subgraph`
# call in it. A region called only once gains nothing from being a separate graph, so Dynamo inlines
# it before handing the graph to the backend (`torch._dynamo.config.inline_single_use_invoke_subgraph`,
# default `True`; the pass is `inline_single_use_invoke_subgraph` in
# `torch/_higher_order_ops/passes/inline_invoke_subgraph.py`). The body's ops land in the root graph,
# whose `return (cos, s)` is the user's result and `seen[0]`; the module `subgraph_0` is still
# there, but nothing calls it. Torch 2.11 and 2.12 have no such pass and hand the backend the call
# itself, as in the graph below.

# %%
@torch.compiler.nested_compile_region
def region(a, seen):
    s = a.sin()
    seen.append(s)  # a side effect on the caller's list
    return s.cos()


def uses_region(x):
    seen = []
    return region(x, seen), seen[0]


x = torch.randn(3)
cap2 = tracer.capture(uses_region, x)
print([(sp.hop, sp.ok) for f in cap2.frames for sp in f.speculations], "| graph breaks:", cap2.graph_breaks)

# %% [markdown]
# Turn the inlining off for one capture (torch 2.11 and 2.12 have nothing to turn off) and the call is
# there on every release: the root graph calls `invoke_subgraph` and reads the body's extra output
# (`getitem_1`, element 1) for `seen[0]`, and its body graph `subgraph_0` returns `(cos, s)`. From torch
# 2.13 on, with the inlining on, the root graph of `cap2` holds exactly the body's ops (the hidden
# check below compares them). A region called twice keeps its calls with the flag on, since both calls
# share one body graph:

# %%
inlines = hasattr(torch._dynamo.config, "inline_single_use_invoke_subgraph")  # the pass came in torch 2.13
kept = tracer.capture(uses_region, x, dynamo_config={"inline_single_use_invoke_subgraph": False} if inlines else {})
print(kept.frames[0].graph.code)


def uses_region_twice(x):
    seen = []
    return region(x, seen) + region(x + 1, seen), seen[0], seen[1]


twice = tracer.capture(uses_region_twice, x)
calls = twice.frames[0].graph.find(target="invoke_subgraph")
root = twice.frames[0].graph
print(len(calls), "calls of", sorted({root.node(c.inputs[0]).target for c in calls}), "| returns", root.output.inputs)

# %% tags=["remove-input"]
assert cap2.graph_breaks == [] and all(sp.ok for f in cap2.frames for sp in f.speculations)
assert [sp.hop for f in cap2.frames for sp in f.speculations] == ["invoke_subgraph"]
ops = lambda graph: [(n.op, n.target) for n in graph.nodes if n.op not in ("placeholder", "get_attr", "output")]  # noqa: E731
body_ops = ops(kept.frames[0].subgraphs["subgraph_0"].graph)
if inlines:
    assert not cap2.frames[0].graph.find(target="invoke_subgraph")  # single use: inlined
    assert cap2.frames[0].graph.output.inputs == ["cos", "s"]  # the body's ops, now in the root graph
    assert ops(cap2.frames[0].graph) == body_ops == [("call_method", "sin"), ("call_method", "cos")]
    assert [p.name for p in cap2.frames[0].passes] == ["inline_single_use_invoke_subgraph"]
else:  # torch 2.11, 2.12: no inlining pass, the backend gets the call as Dynamo logged it
    assert cap2.frames[0].graph.code == kept.frames[0].graph.code and cap2.frames[0].passes == []
assert torch.allclose(cap2.result[1], x.sin())
(call,) = kept.frames[0].graph.find(target="invoke_subgraph")
assert kept.frames[0].graph.output.inputs == ["getitem", "getitem_1"]
assert kept.frames[0].graph.node("getitem_1").inputs == [call.name]  # seen[0]: the body's output 1
assert len(calls) == 2 and {root.node(c.inputs[0]).target for c in calls} == {"subgraph_0"}  # one body, two calls
assert root.output.inputs[1:] == ["getitem_1", "getitem_3"]  # seen[0], seen[1]: output 1 of each call

# %% [markdown]
# ## Recap
#
# - A cell the frame created and a cell from before tracing are both `CellVariable`s; a write to a
#   cell is a buffered side effect, replayed after the graph runs, so the traced frame may write one.
# - In a HOP body the HOP decides: `wrap` refuses the write and graph-breaks on the whole call,
#   `invoke_subgraph` allows it (and a region used once is then inlined into the root graph).
#
# **Try this.** `g` graph-breaks because its `wrap` body writes `count`. Write `g_fixed`, which
# returns the same two values and compiles with no graph break. The next cell holds one solution
# (collapsed); the cell after it checks yours.

# %% tags=["hide-input"]
# One solution (try your own first).
def g_fixed(x):
    count = 0

    def body(a):
        return a.sin()

    out = wrap(body, x)
    count += 1  # the write moved out of the body: a side effect of the frame, not of the body
    return out, count

# %% tags=["remove-input"]
x = torch.randn(3)
fixed = tracer.capture(g_fixed, x)
assert fixed.graph_breaks == [] and fixed.result[1] == 1 and torch.allclose(fixed.result[0], x.sin())
print("check passed: no graph break, count =", fixed.result[1])
