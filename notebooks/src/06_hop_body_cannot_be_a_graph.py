# %% [markdown]
# # When a HOP body cannot be a graph: fall back, raise, restart
#
# **You are here if** `torch.cond` (or a `torch.compiler.nested_compile_region`) failed with
# `UncapturedHigherOrderOpError`, or `TORCH_LOGS=graph_breaks` reports a break inside a `wrap` or
# checkpoint body and tlparse lists a second compile attempt such as `0/0_1`. PyTorch's pages:
# [torch.cond](https://docs.pytorch.org/docs/stable/cond.html) and
# [Working with Graph Breaks](https://docs.pytorch.org/docs/stable/compile/programming_model.graph_breaks_index.html).
#
# Dynamo turns a higher-order operator's body into a graph of its own by tracing it on the side
# (*speculating* it; notebook 05 shows what the body graph then receives). This notebook is about
# the case where that fails — the body graph-breaks — and what it costs.

# %%
import warnings

import torch

import tracer

warnings.filterwarnings("ignore")
_ = torch.manual_seed(0)
wrap = torch.ops.higher_order.wrap

# %% [markdown]
# ## Two outcomes: fall back, or raise
#
# What happens when a body graph-breaks depends on the HOP:
#
# - **fall back** is the default (`TorchHigherOrderOperatorVariable._ALLOW_FALLBACK_TO_EAGER` is
#   `True`): `wrap`, checkpoint, `flex_attention`, `wrap_with_set_grad_enabled`, `wrap_with_autocast`,
#   `out_dtype` and others. The graph break is raised on the HOP call, so the HOP runs eagerly — body
#   included — and Dynamo graphs around it.
# - **raise** is the exception, for HOPs that must be captured whole: the control-flow HOPs
#   (`torch.cond`, `torch.while_loop`, `scan`, `associative_scan`, `map`), `hints_wrapper`,
#   `strict_mode`, and `invoke_subgraph`, which is what `torch.compiler.nested_compile_region`
#   calls. The failure becomes a `torch._dynamo.exc.UncapturedHigherOrderOpError`: compilation fails.
#
# Both, with a body that calls `torch._dynamo.graph_break()`:

# %%
def body_that_breaks(a):
    torch._dynamo.graph_break()
    return a.sin()


def with_wrap(x):
    return wrap(body_that_breaks, x)


def with_cond(x):
    return torch.cond(x.sum() > 0, body_that_breaks, torch.cos, (x,))


x = torch.randn(3)
cap = tracer.capture(with_wrap, x)
failed = [sp for f in cap.frames for sp in f.speculations if not sp.ok]
print("wrap:", failed[0].hop, "speculation failed | graph break at", cap.graph_breaks[0].code_line.strip())
print("      ran eagerly, result correct:", torch.equal(cap.result, x.sin()))
try:
    tracer.capture(with_cond, x)
except torch._dynamo.exc.UncapturedHigherOrderOpError as e:
    err = e
print("cond:", type(err).__name__, "|", str(err).splitlines()[0])

# %% tags=["remove-input"]
assert failed[0].hop == "wrap" and cap.graph_breaks and torch.equal(cap.result, x.sin())
assert isinstance(err, torch._dynamo.exc.UncapturedHigherOrderOpError)
assert [sp.hop for f in err.capture.frames for sp in f.speculations if not sp.ok] == ["cond"]

# %% [markdown]
# Torch's own view of the `wrap` case, on a machine without dynascope: the same function under plain
# `torch.compile` in a fresh process, with `TORCH_LOGS=graph_breaks` (each line's prefix cut off, and
# only the lines that say where, what, inside which HOP, and the hint):

# %%
import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

script = pathlib.Path(tempfile.mkdtemp()) / "with_wrap.py"
script.write_text(
    "import torch\n\nwrap = torch.ops.higher_order.wrap\n\n\ndef body_that_breaks(a):\n"
    "    torch._dynamo.graph_break()\n    return a.sin()\n\n\n@torch.compile(backend='eager')\n"
    "def with_wrap(x):\n    return wrap(body_that_breaks, x)\n\n\nwith_wrap(torch.randn(3))\n"
)
run = subprocess.run([sys.executable, str(script)], env={**os.environ, "TORCH_LOGS": "graph_breaks"},
                     capture_output=True, text=True, timeout=120)
lines = [re.sub(r"^[A-Z]\d{4} [\d:.]+ \d+ \S+\] \[\S+\] \[__graph_breaks\] ", "", line) for line in run.stderr.splitlines()]
keep = ("Graph break in user code", "Call to", "Higher Order Operator", "Hint")
torch_says = [re.sub(r"at \S*/", "at ", line.strip()) for line in lines if line.strip().startswith(keep)]
print("\n".join(torch_says))

# %% tags=["remove-input"]
assert run.returncode == 0, run.stderr[-2000:]
assert torch_says[0] == "Graph break in user code at with_wrap.py:7"  # the graph_break() line in the body
assert "Higher Order Operator: torch.ops.higher_order.wrap" in torch_says

# %% [markdown]
# > **Where in torch.** Each HOP's `VariableTracker` class has an `_ALLOW_FALLBACK_TO_EAGER` switch,
# > and `add_hop_context` (in `torch/_dynamo/variables/higher_order_ops.py`) acts on it when the body
# > graph-breaks. Handlers that do not set it inherit the default from
# > `TorchHigherOrderOperatorVariable`; `AutogradFunctionApplyVariable`, which is not a subclass,
# > sets it itself. Note [HigherOrderOperator tracing design] (in `torch/_dynamo/output_graph.py`)
# > still says a failed introspection always makes Dynamo "graph break on the HigherOrderOperator":
# > in torch 2.13 that holds for the default only.
#
# ## What the fallback costs: compile attempts
#
# The fallback is not free. When `wrap`'s speculation fails, Dynamo abandons the whole trace of
# `with_wrap` and **restarts analysis** of the frame: it traces it again, this time stopping at the
# HOP call. `TORCH_LOGS` and tlparse name the attempts `0/0` and `0/0_1`; dynascope keeps one frame
# per attempt, with what became of it. Here the second attempt traced nothing before the call, so it
# hands no graph to the backend at all: the frame runs eagerly with Dynamo's bytecode around it.

# %%
for f in cap.frames:
    print(f.compile_id, f.status, "|", f.status_reason.splitlines()[0])

# %% tags=["remove-input"]
assert [(f.compile_id, f.status) for f in cap.frames] == [("0/0", "restarted"), ("0/0_1", "no_graph")]
assert not cap.frames[0].speculations[0].ok and "graph_break" in cap.frames[0].status_reason
assert cap.graph_breaks[0].compile_id == "0/0"  # the break belongs to the attempt that hit it

# %% [markdown]
# A restart throws away everything traced so far in the frame: a body that breaks late in a large
# function costs a second trace of everything before the HOP call (notebook 02 shows a real model
# paying restarts several frames deep).
#
# > **Where in torch.** The failed speculation is raised as a `RestartAnalysis` (a
# > `SpeculationRestartAnalysis`); the loop in `compile_frame` (`torch/_dynamo/convert_frame.py`)
# > catches it, adds its reason to `restart_reasons` and traces the frame again.

# %% [markdown]
# ## Recap
#
# - When a HOP body graph-breaks, most HOPs fall back: the whole HOP runs eagerly behind a graph
#   break, after Dynamo restarts the frame's analysis (`0/0` restarted, `0/0_1`).
# - The control-flow HOPs, `invoke_subgraph` and a few others raise `UncapturedHigherOrderOpError`
#   instead: their body must become a graph, or the compile fails.
#
# **Try this.** Predict, for `with_checkpoint` and `with_while_loop` below (both bodies call
# `body_that_breaks`), whether compiling falls back or raises: set `predicted` to a dict of
# `"fall back"` or `"raise"`. The next cell holds the answer (collapsed); the cell after it compiles
# both and checks yours.

# %% tags=["hide-input"]
# One solution (try your own first).
def with_checkpoint(x):
    return torch.utils.checkpoint.checkpoint(body_that_breaks, x, use_reentrant=False)


def with_while_loop(x):
    return torch.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, body_that_breaks(a)), (torch.tensor(0), x))


predicted = {"with_checkpoint": "fall back", "with_while_loop": "raise"}  # checkpoint: the default; loops: whole

# %% tags=["remove-input"]
def outcome(fn):
    try:
        got = tracer.capture(fn, torch.randn(3))
    except torch._dynamo.exc.UncapturedHigherOrderOpError:
        return "raise"
    assert got.graph_breaks, "a fall back shows as a graph break"
    return "fall back"


actual = {fn.__name__: outcome(fn) for fn in (with_checkpoint, with_while_loop)}
assert predicted == actual, actual
print("check passed:", actual)
