# %% [markdown]
# # torch.export: why an export failed, the exported program's signature, and a `.pt2` without the model
#
# **You are here if** `torch.export.export` raised *Could not guard on data-dependent expression*, if
# you want to read an exported program's graph signature (which input is a parameter, which output
# writes a buffer back), or if you have a `.pt2` file but not the code of the model that made it.
# PyTorch's pages: [torch.export](https://docs.pytorch.org/docs/stable/export.html) and
# [torch.cond](https://docs.pytorch.org/docs/stable/cond.html).
#
# `torch.export.export(mod, args, dynamic_shapes=..., strict=False)` traces `forward` once, ahead of
# time, into **one graph with no Python left in it**: no graph break is allowed, and nothing is
# checked by Python when the program runs. What the trace assumed about sizes is either stated on the
# program (its *range constraints*) or asserted inside the graph. Non-strict export (the default) runs
# `forward` as ordinary Python on fake tensors; `strict=True` traces it with Dynamo, as
# `torch.compile` does. `tracer.export` calls the real `torch.export.export` and records the result as
# the same `Capture` the explorer shows for a compile: frame `0/0` is the exported program.

# %%
import contextlib
import io
import logging
import os
import subprocess
import sys
import tempfile
import warnings

import torch
from torch.export import Dim

import tracer

warnings.filterwarnings("ignore")
torch._logging.set_logs(all=logging.ERROR)  # no torch warnings in the outputs (saving a .pt2 logs some)
_ = torch.manual_seed(0)

# %% [markdown]
# ## A model with a `cond`, a `while_loop` and a buffer it writes
#
# `forward` counts its calls in a buffer (`self.calls.add_(1)`), keeps the first `k` rows of `x` (`k`
# is a tensor: the count is data), branches with `torch.cond` on the sign of the result and halves it
# three times in a `while_loop`. Both control-flow operators are higher-order operators: each takes
# functions, which export turns into graphs of their own.

# %%
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x, k):
        self.calls.add_(1)
        n = k.item()
        if n > x.shape[0]:
            n = x.shape[0]
        h = self.lin(x[:n]).sum(0)
        h = torch.cond(h.sum() > 0, lambda h: h.relu(), lambda h: -h, (h,))
        _, h = torch.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, h * 0.5), (k.new_zeros(()), h))
        return h


x, k = torch.randn(6, 4), torch.tensor(3)
with contextlib.redirect_stderr(io.StringIO()) as partial:
    cap = tracer.export(Model(), (x, k), draft=False)
failure = cap.export.failure
print(cap.export.status, failure.kind, failure.error_type)
print(f"line {failure.user_line.line - Model.forward.__code__.co_firstlineno} of forward: {failure.user_line.code}")
print(failure.message.splitlines()[0])

# %% [markdown]
# ## Why the first export failed
#
# `k.item()` is a number torch knows only when the program runs. Export gives it an **unbacked
# symbol**, `u0`: a size with no example value behind it. `x[:n]` then has `u0` rows, a
# data-dependent shape, and that alone is fine: the graph carries the symbol. What export cannot do
# is the Python `if n > x.shape[0]:` on line 3 of `forward`: Python needs a yes or no *now*, at trace
# time, and the answer depends on data export does not have. It would have to guard on `u0 > 6`, so it
# raises `GuardOnDataDependentSymNode` instead. Before raising, torch prints the graph it had traced so
# far to stderr (the exception's `partial_fx_graph`; caught in `partial` above): it ends at the
# comparison `item > 6`. The record keeps torch's own message, the user line torch named and that
# partial graph (`failure.partial_graph`), and `cap` shows them in the explorer's overview; with `draft=True` (the default)
# `tracer.export` also runs `torch.export.draft_export`, which lists such failures with the assumption
# it made in their place.

# %% tags=["remove-input"]
try:
    with contextlib.redirect_stderr(io.StringIO()):
        torch.export.export(Model(), (x, k))
except Exception as e:  # what torch itself raises for this module
    torch_error = e
graph_so_far = torch_error.partial_fx_graph.strip()
assert graph_so_far and graph_so_far in partial.getvalue()
assert graph_so_far.splitlines()[-1].strip().startswith('gt: "Sym(u0 > 6)" = item > 6')  # it stops at the `if`
assert type(torch_error).__name__ == "GuardOnDataDependentSymNode" == failure.error_type
assert failure.message == str(torch_error) and failure.kind == "data_dependent"
assert failure.partial_graph == torch_error.partial_fx_graph
assert failure.user_line.code == "if n > x.shape[0]:" and "u0 > 6" in failure.message
assert cap.frames[0].status == "failed"

# %% [markdown]
# ## The fix: tell export what you know
#
# `torch._check(n <= x.shape[0])` states a fact about the symbols. Export records it (and asserts it
# in the graph, so a call that breaks it fails loudly instead of computing something else); with
# `u0 <= rows` known, `n > x.shape[0]` is decided at trace time (false) and the branch is gone from the
# program. `dynamic_shapes` makes the number of rows a symbol too, with the range `[2, 64]`, instead
# of the constant 6 of the example: the program then accepts any row count in that range, and the
# check relates two symbols instead of a symbol and a number.

# %%
class Fixed(Model):
    def forward(self, x, k):
        self.calls.add_(1)
        n = k.item()
        torch._check(n <= x.shape[0])
        if n > x.shape[0]:
            n = x.shape[0]
        h = self.lin(x[:n]).sum(0)
        h = torch.cond(h.sum() > 0, lambda h: h.relu(), lambda h: -h, (h,))
        _, h = torch.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, h * 0.5), (k.new_zeros(()), h))
        return h


shapes = {"x": {0: Dim("rows", min=2, max=64)}, "k": None}
cap = tracer.export(Fixed(), (x, k), dynamic_shapes=shapes, decompose=True)
program = cap.frames[0]
print(cap.export.status)
rows = [r for r in program.export.range_constraints if not r.symbol.startswith("u")]
print("input dimensions:", [(r.symbol, f"[{r.lower}, {r.upper}]") for r in rows])
asserts = program.graph.find(target="aten._assert_scalar.default")
print(len(asserts) > 0, "runtime asserts in the graph, one of them from torch._check")

# %% tags=["remove-input"]
ep = torch.export.export(Fixed(), (x, k), dynamic_shapes=shapes)
assert [(r.symbol, r.lower, r.upper) for r in program.export.range_constraints] == [
    (str(s), str(vr.lower), str(vr.upper)) for s, vr in ep.range_constraints.items()]
assert [(r.lower, r.upper) for r in rows] == [("2", "64")]
asserted = " ".join(str(n.args) for n in asserts)
assert f"u0 <= {rows[0].symbol}" in asserted  # torch._check's fact, asserted when the program runs
# the `if` was decided at trace time: no `n > rows` comparison is left in the graph (the failed trace had
# one, `operator.gt` on u0, the node torch's error shows); the `operator.le` nodes feed the asserts
assert not [n for n in program.graph.nodes if n.target == "operator.gt"]

# %% [markdown]
# ## The graph signature: what each input and output is
#
# An exported program's graph takes **everything** as an input: parameters, buffers and constants
# come first, then the user's inputs. `ep.graph_signature` says which is which, each input with an
# `InputKind` and each output with an `OutputKind`. Frame `0/0` is the program `torch.export.export`
# returned (the training IR), frame `0/1` the same program after `ep.run_decompositions()`
# (`decompose=True`).

# %%
for i in program.export.inputs:
    print(f"{i.name:14} {i.kind:12} {i.target}")
decomposed = cap.frames[1]
print("outputs, training IR:  ", [(o.name, o.kind, o.target) for o in program.export.outputs])
print("outputs, decomposed:   ", [(o.name, o.kind, o.target) for o in decomposed.export.outputs])

# %% [markdown]
# The buffer write is where the two differ. In the training IR the `add_` on `b_calls` is still in the
# graph, an in-place op as in `forward`, and the signature has only the user's output. After
# `run_decompositions()` the graph is functional: it computes the new value (`add`) and returns it as
# a `BUFFER_MUTATION` output whose target is `calls`; whoever runs the program copies it back into the
# buffer. `cap.export.decomposition` is `tracer.diff(cap.frames[0], cap.frames[1])`, the graph's
# changes; the explorer's *Signature* tab shows these tables for the chosen frame, and its
# *Decompositions* tab (a section of the report) the mutations that became outputs above the two
# graphs side by side.

# %% tags=["remove-input"]
sig = ep.graph_signature
assert [(i.name, i.kind, i.target) for i in program.export.inputs] == [
    (s.arg.name, s.kind.name.lower(), s.target or "") for s in sig.input_specs]
assert [o.kind for o in program.export.outputs] == ["user_output"]
assert program.graph.find(target="aten.add_.Tensor")
dsig = ep.run_decompositions().graph_signature
assert [(o.kind, o.target) for o in decomposed.export.outputs] == [
    (s.kind.name.lower(), s.target or "") for s in dsig.output_specs] == [("buffer_mutation", "calls"), ("user_output", "")]
assert not decomposed.graph.find(target="aten.add_.Tensor")
assert cap.export.decomposition == tracer.diff(program, decomposed)
assert "add_" in cap.export.decomposition.graph("").removed

# %% [markdown]
# ## The control-flow bodies
#
# Each function given to `torch.cond` and `while_loop` is a submodule of the exported program
# (`true_graph_0`, `false_graph_0`, `while_loop_cond_graph_0`, `while_loop_body_graph_0`), called by
# the operator's node in the root graph. They are the frame's subgraphs: `cap` as the last expression
# of a cell opens the explorer, where the subgraph tree lists them and a click on the `cond` node opens
# its first body (not run here: its page shows the graphs' source lines, which name torch's own files).

# %%
for name, body in program.subgraphs.items():
    print(f"{name:26} [{body.hop}]  {len(body.graph.nodes)} nodes")

# %% tags=["remove-input"]
torch_bodies = {n for n, m in ep.graph_module.named_children() if isinstance(m, torch.fx.GraphModule)}
assert set(program.subgraphs) == torch_bodies
assert {b.hop for b in program.subgraphs.values()} == {"cond", "while_loop"}

# %% [markdown]
# ## A `.pt2` file, opened without the model
#
# `torch.export.save(ep, path)` writes the program to a zip archive. `tracer.load_export(path)` opens it
# as the same record, in a process that has never seen `Fixed`; it refuses an archive holding a pickled
# payload rather than unpickle it. Below, a fresh Python process opens the file.

# %%
path = os.path.join(tempfile.mkdtemp(), "model.pt2")
torch.export.save(ep, path)
script = (
    "import sys, tracer\n"
    "cap = tracer.load_export(sys.argv[1])\n"
    "f = cap.frames[0]\n"
    "print(f.export.stage, sorted(f.subgraphs))\n"
    "print([(i.name, i.kind) for i in f.export.inputs])\n"
)
run = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, timeout=120,
                     env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
print(run.stdout)

# %% tags=["remove-input"]
assert run.returncode == 0, run.stderr[-2000:]
loaded = tracer.load_export(path).frames[0]
assert [(i.name, i.kind, i.target) for i in loaded.export.inputs] == [
    (i.name, i.kind, i.target) for i in program.export.inputs]
assert set(loaded.subgraphs) == set(program.subgraphs)
assert f"[{', '.join(repr(s) for s in sorted(program.subgraphs))}]" in run.stdout

# %% [markdown]
# > **Where in torch.** `torch/export/_trace.py` is the export entry point (`_export_to_torch_ir`
# > for strict export, `_non_strict_export` for the default); `torch/export/graph_signature.py` defines
# > `InputKind` and `OutputKind`; a data-dependent guard is raised in
# > `torch/fx/experimental/symbolic_shapes.py` (`GuardOnDataDependentSymNode`), where `torch._check`
# > adds its fact too.

# %% [markdown]
# ## Recap
#
# - A Python decision on a value read from a tensor (`k.item()`) fails export with a data-dependent
#   guard at that line; `torch._check` states the fact that decides it, and `dynamic_shapes` makes a
#   size a symbol with a range the program carries as a range constraint.
# - The graph signature names every input's and output's role; after `run_decompositions()` a buffer
#   written in `forward` is a `BUFFER_MUTATION` output, and a `.pt2` reopens without the model's code.
#
# **Try this.** A module counts its calls in a buffer and also doubles its input in place
# (`x.mul_(2)`) before returning `x.sum()`. Without running it, write down the kinds and targets of the
# decomposed program's outputs, in order. The next cell holds the answer (collapsed); the cell after
# it exports the module and checks yours.

# %% tags=["hide-input"]
# One solution (try your own first): mutations come first, in the order of the inputs they write
# (the buffer is an input before `x`), then the user's output.
predicted = [("buffer_mutation", "calls"), ("user_input_mutation", "x"), ("user_output", "")]

# %% tags=["remove-input"]
class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        x.mul_(2)
        return x.sum()


outputs = tracer.export(Scale(), (torch.ones(3),), decompose=True).frames[1].export.outputs
assert predicted == [(o.kind, o.target) for o in outputs], [(o.kind, o.target) for o in outputs]
print("check passed:", predicted)
