# %% [markdown]
# # Guards, recompiles and dynamic shapes
#
# **You are here if** `TORCH_LOGS=recompiles` printed something like `Recompiling function
# normalize ... triggered by the following guard failure(s): - 0/0: tensor 'v' size mismatch at
# index 0. expected 3, actual 5`, and you want to know what the new compile did differently and how
# to avoid it. PyTorch's pages: [Dealing with Recompilations](https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html),
# [Dynamic Shapes](https://docs.pytorch.org/docs/main/torch.compiler_dynamic_shapes.html) and [debugging with tlparse and TORCH_LOGS=dynamic](https://docs.pytorch.org/docs/main/compile/dynamic_shapes_debugging_tlparse_torch_logs.html).
#
# Dynamo traces a frame once, for the inputs it saw, and caches the result. Everything it assumed
# about those inputs — dtypes, sizes, the value of a Python number — is written down as **guards**.
# (Which backend compiled the frame is not a guard in the releases dynascope supports, 2.11 on: each
# cache entry stores its backend, and the cache lookup compares it; see BACKEND_MATCH below.) On every later call the
# guards run first: if they all pass, the cached code runs; if one fails, the frame is
# **recompiled** (a new compile id `N/1`, `N/2`, ...) and the failed guard is the recompile's reason. **Dynamic shapes** are how Dynamo avoids recompiling for
# every new size: sizes become symbols (`s77`), and the guards become conditions on those symbols.

# %%
import warnings

import torch

import tracer

warnings.filterwarnings("ignore")
_ = torch.manual_seed(0)

# %% [markdown]
# ## The guards of a frame
#
# `f` reads a tensor, a Python float, and branches on the tensor's size.

# %%
def f(x, scale):
    if x.shape[0] > 2:
        x = x[:2]
    return x * scale


cap = tracer.capture(f, torch.randn(4, 3), 0.5)
frame = cap.frames[0]
by_source = {g.source: g for g in frame.guards if g.source}
for source in ("L['x']", "L['scale']"):
    print(f"{by_source[source].kind:15} {source}")
print(by_source["L['scale']"].code)

# %% [markdown]
# - `x` gets a `TENSOR_MATCH`: dtype, device, `requires_grad`, and — shapes being static on a first
#   compile — its exact sizes and strides (checked in C++ by the guard manager). The branch on
#   `x.shape[0]` needs no guard of its own: with static sizes, `4 > 2` is simply true for every
#   input that passes `TENSOR_MATCH`.
# - `scale` is a Python float: on this first compile Dynamo specializes on its value (it is burnt
#   into the graph as a constant), so it is guarded by `CONSTANT_MATCH`, `L['scale'] == 0.5`. Only
#   on the first compile: see "A float that changes" below.
# - Most guards with no source protect global state the graph depends on: grad mode, default
#   device, deterministic algorithms, the torch function mode stack, saved-tensor hooks. Not all:
#   `SHAPE_ENV` has no source either, yet it guards the inputs — the `ShapeEnv`'s conditions on
#   symbolic sizes and numbers, relations between the shapes of inputs included. With static shapes it is
#   empty here; the dynamic sections below fill it. (`BACKEND_MATCH`, also without a source, is
#   the backend check on the cache entry: next section.)
#
# The explorer's guards tab lists the same guards grouped by kind, with a text filter.

# %%
cap

# %% tags=["remove-input"]
assert by_source["L['x']"].kind == "TENSOR_MATCH"
assert by_source["L['scale']"].kind == "CONSTANT_MATCH"
assert by_source["L['scale']"].code == ["L['scale'] == 0.5"]
assert {"GRAD_MODE", "SHAPE_ENV"} <= {g.kind for g in frame.guards}
assert next(g for g in frame.guards if g.kind == "SHAPE_ENV").code == []  # static shapes: nothing to check yet

# %% [markdown]
# ## BACKEND_MATCH
#
# Compiled code is only valid for the backend that compiled it: a frame compiled with `"eager"`
# must not be reused by `torch.compile(fn, backend="inductor")`. Older Dynamo had a `BACKEND_MATCH`
# guard for this. In torch 2.11 and later there is no such guard (`GuardBuilder` has no `BACKEND_MATCH`): the
# check happens in the cache lookup itself — each cache entry stores its backend — and a mismatch
# is reported as a "BACKEND_MATCH failure" recompile reason (`get_guard_fail_reason_helper` in
# `torch/_dynamo/guards.py`). dynascope lists it with the frame's guards so the guards view shows
# everything a cache hit depends on; its code says where the check really happens.

# %%
backend_guard = next(g for g in frame.guards if g.kind == "BACKEND_MATCH")
print(backend_guard.code)

# %% tags=["remove-input"]
assert backend_guard.source == ""
assert "eval_frame" in backend_guard.code[0]
assert not hasattr(torch._dynamo.guards.GuardBuilder, "BACKEND_MATCH")  # not a guard function in 2.11 on
assert hasattr(torch._dynamo.guards.GuardBuilder, "TENSOR_MATCH")

# %% [markdown]
# ## A recompile after a shape change
#
# To see a recompile, the same compiled frame must be entered again with inputs that fail its guards.
# `more_calls` calls the compiled function again inside the same capture: here `normalize` runs on
# vectors of length 3, then 5, then 7.

# %%
def normalize(v):
    return v / v.norm()


cap = tracer.capture(normalize, torch.randn(3), more_calls=[(torch.randn(5),), (torch.randn(7),)])
print(cap)

# %% [markdown]
# Torch's own view of the same three calls, on a machine without dynascope: a script that compiles
# `normalize` with plain `torch.compile`, run with `TORCH_LOGS=recompiles` (each log line's prefix —
# time, process, torch's file and line — is cut off here):

# %%
import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

script = pathlib.Path(tempfile.mkdtemp()) / "normalize.py"
script.write_text(
    "import torch\n\n\n@torch.compile(backend='eager')\ndef normalize(v):\n    return v / v.norm()\n\n\n"
    "for n in (3, 5, 7):\n    normalize(torch.randn(n))\n"
)
run = subprocess.run([sys.executable, str(script)], env={**os.environ, "TORCH_LOGS": "recompiles"},
                     capture_output=True, text=True, timeout=120)
torch_says = [re.sub(r"^[A-Z]\d{4} [\d:.]+ \d+ \S+\] ", "", line) for line in run.stderr.splitlines() if "[__recompiles]" in line]
print("\n".join(torch_says))

# %% [markdown]
# - Frame `0/0` was compiled for a length-3 vector, with the static size in its `TENSOR_MATCH`.
# - The length-5 call failed that guard. The recompile's reason names the failed check — which size
#   of which input changed — and Dynamo recompiled `normalize` as compile id `0/1`.
# - This time it compiled **dynamically** ("automatic dynamic shapes"): a size that changed once is
#   likely to change again, so the length became a symbol. The length-7 call then reused `0/1`:
#   there is no third compile.

# %%
static, dynamic = cap.frames
rec = cap.recompiles[0]
print(rec.compile_id, "<-", rec.reason)
print("0/0:", tracer.model.format_meta(static.graph.placeholders[-1].meta))
print("0/1:", tracer.model.format_meta(dynamic.graph.placeholders[-1].meta))

# %% [markdown]
# The dynamic frame has a new guard in its `SHAPE_ENV`: the length must be at least 2. Dynamo
# specializes sizes 0 and 1 (they behave differently, e.g. under broadcasting), so a symbolic size
# is assumed to be neither — a length-1 vector would compile again.

# %%
shape_env = next(g for g in dynamic.guards if g.kind == "SHAPE_ENV")
print(shape_env.code)

# %% tags=["remove-input"]
assert [f.compile_id for f in cap.frames] == ["0/0", "0/1"] and len(cap.recompiles) == 1
assert rec.compile_id == "0/1"
assert "size mismatch at index 0" in rec.reason and "expected 3, actual 5" in rec.reason
assert static.graph.placeholders[-1].meta["shape"] == [3]
sym = dynamic.graph.placeholders[-1].meta["shape"][0]
assert isinstance(sym, str) and sym.startswith("s")  # a symbol, not a number
assert "2 <= L['v'].size()[0]" in shape_env.code
assert run.returncode == 0 and sum("Recompiling function normalize" in line for line in torch_says) == 1
assert any(rec.reason in line for line in torch_says)  # torch's log line and dynascope's reason: one text

# %% [markdown]
# ## What the recompile did differently: `tracer.diff`
#
# The reason names the guard that failed — and that is where `TORCH_LOGS=recompiles` stops. What
# you want next is what the new compile did *differently*. Every recompile carries that answer:
# `rec.diff` compares it with the compile it replaced (`rec.replaced`, the id in front of the
# reason). `print` gives a text diff:

# %%
print(rec.diff)

# %% tags=["remove-input"]
d = rec.diff
assert (rec.replaced, d.a, d.b) == ("0/0", "0/0", "0/1")
assert [(i.source, i.what, i.dim, i.before, i.after) for i in d.inputs] == [("L['v']", "dynamic", 0, "3", sym)]
assert d.symbols_added == [sym]
assert [(g.kind, g.change, g.after) for g in d.guards] == [("SHAPE_ENV", "changed", ["2 <= L['v'].size()[0]"])]
root = d.graph("")
assert root.added == [sym] and {p.a for p in root.changed} == {"l_v_", "truediv"}
assert tracer.diff(static, static).summary == "no difference"  # a frame against itself

# %% [markdown]
# Read it top to bottom:
# - **inputs**: `L['v']` went dynamic in dim 0: the static `3` became the symbol `s33` — a new
#   free symbol of the graph.
# - **guards** are matched by kind and source, so a check whose value changed shows as one `~`
#   line, not a removal plus an addition. Here `SHAPE_ENV` gained `2 <= L['v'].size()[0]`, the
#   0/1 specialization from above. (`TENSOR_MATCH` checks sizes in C++, so its recorded code is
#   the same in both compiles; the size change shows in the inputs instead.)
# - **graphs** are aligned by structure — op, target and aligned inputs — not by name: the root
#   graph gained the symbol's placeholder, and two nodes changed type. In the AOT graph the names
#   shifted (`arg0_1` is now the symbol, the vector became `arg1_1`), and the diff still pairs the
#   vector with the vector.
#
# `tracer.diff(a, b)` takes any two frames — of one capture, of two captures, of two ranks, or of
# a capture saved to JSON and loaded back (`FrameDiff` round-trips JSON with the capture). The
# explorer's **Recompiles** tab shows the two graphs side by side, added nodes green, removed red,
# changed amber; selecting a node marks its partner in the other graph.

# %% [markdown]
# ## A float that changes
#
# Automatic dynamic applies to Python floats too. Call `f` (as in the first section, its first
# compile burns `scale=0.5` in) with `0.5`, then `0.7`, then `0.9`: the `0.7` call fails
# `L['scale'] == 0.5` and recompiles — and the recompile makes `scale` dynamic (a graph input), so
# the `0.9` call reuses it.

# %%
x = torch.randn(4, 3)
cap = tracer.capture(f, x, 0.5, more_calls=[(x, 0.7), (x, 0.9)])
first, second = cap.frames
print(cap.recompiles[0].compile_id, "<-", cap.recompiles[0].reason.splitlines()[0].split("#")[0].strip())
print("0/0 scale guards:", [g.kind for g in first.guards if g.source == "L['scale']"])
print("0/1 inputs:", [n.name for n in second.graph.placeholders])

# %% [markdown]
# The diff says the same in one line: the constant `scale` became a graph input.

# %%
print(cap.recompiles[0].diff.inputs[0])

# %% tags=["remove-input"]
assert [fr.compile_id for fr in cap.frames] == ["0/0", "0/1"] and len(cap.recompiles) == 1  # 0.9: no third
assert "scale == 0.5" in cap.recompiles[0].reason
assert any(g.kind == "CONSTANT_MATCH" and g.source == "L['scale']" for g in first.guards)
assert not any(g.kind == "CONSTANT_MATCH" for g in second.guards)
assert "l_scale_" in [n.name for n in second.graph.placeholders]  # a graph input now, not a constant
assert cap.recompiles[0].diff.inputs[0].what == "constant_to_input"

# %% [markdown]
# ## Dynamic shapes and their symbols
#
# Asking for `dynamic=True` skips the static first compile. Every size becomes a symbol with a
# placeholder of its own (a `SymInt` input the runtime fills in from the tensor), and branching on a
# size — `f`'s `if x.shape[0] > 2` — no longer holds for free: it becomes a guard on the symbol,
# recorded by the `ShapeEnv` and checked as part of `SHAPE_ENV`.

# %%
cap = tracer.capture(f, torch.randn(4, 3), 0.5, dynamic=True)
frame = cap.frames[0]
for n in frame.graph.placeholders:
    print(f"{n.name:9} {tracer.model.format_meta(n.meta):12} from {n.meta.get('graph_arg_source')}")
shape_env = next(g for g in frame.guards if g.kind == "SHAPE_ENV")
print([c for c in shape_env.code if "scale" not in c])  # the sizes' guards; those on `scale` below

# %% tags=["remove-input"]
x_ph = frame.graph.node("l_x_")
s0, s1 = x_ph.meta["shape"]
sym_inputs = [n.meta["value"] for n in frame.graph.placeholders if n.meta["kind"] == "symint"]
assert sym_inputs == [s0, s1]
assert "3 <= L['x'].size()[0]" in shape_env.code and shape_env.source == ""
assert "L['x'].stride()[0] == L['x'].size()[1]" in shape_env.code  # a relation between x's sizes
assert frame.graph.node("l_scale_").meta["dtype"] == "float64"
assert not any(g.kind == "CONSTANT_MATCH" for g in frame.guards)
assert [g.kind for g in frame.guards if g.source == "L['scale']"] == ["TYPE_MATCH"]
release = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
on_scale = [c for c in shape_env.code if "scale" in c]
if release >= (2, 12):
    assert on_scale == ["not math.isnan(L['scale'])"], on_scale
else:  # torch 2.11 reads the float back from the tensor it became
    assert on_scale == ["L['scale'] == ___as_tensor(L['scale']).item()", "not math.isnan(___as_tensor(L['scale']).item())"], on_scale

# %% [markdown]
# - `x`'s two sizes are the symbols `s77` and `s27`, each a graph input of its own, each with the
#   source it is read from (`L['x'].size()[0]`). The first line of `SHAPE_ENV` relates two of them:
#   the stride of dim 0 must equal the size of dim 1 (`x` is contiguous) — a guard on the inputs'
#   shapes, with no source of its own.
# - The branch became `3 <= L['x'].size()[0]` (the integer form of `size > 2`). Taking the other
#   branch would fail this guard and recompile.
# - `scale` is no longer a constant: with `dynamic=True` a Python float is passed in as a 0-d
#   `float64` tensor and read back with `.item()`, so changing it does not recompile. Two guards
#   on it remain: a `TYPE_MATCH` (it must still be a `float`) and, in `SHAPE_ENV`, that it is not
#   NaN. Releases write that one differently: from torch 2.12 on it is `not math.isnan(L['scale'])`;
#   torch 2.11 checks the value read back from the tensor, `not math.isnan(___as_tensor(L['scale']).item())`,
#   and adds `L['scale'] == ___as_tensor(L['scale']).item()` (the tensor holds the float's value).

# %% [markdown]
# ## Why did my dimension become static?
#
# `mark_dynamic` and automatic dynamic make a size a symbol, but user code can take it back: an
# `if` on the exact size, or an operation with a static tensor, makes the `ShapeEnv` replace the
# symbol by a constant (a *specialization*). A `%` on the size does not: the symbol stays, with a
# divisibility guard on it. Each frame records the symbols the `ShapeEnv` created
# (`frame.symbols`, with their source), the shape guards it added (`frame.shape_guards`), and
# what narrowed a symbol (`frame.specializations`: made static, divisibility, 0/1), all read from the
# events `torch/fx/experimental/symbolic_shapes.py` logs itself (`create_symbol`,
# `guard_added_fast`, `symbolic_shape_specialization`) — each with the user line that caused it.
#
# `maybe_mark_dynamic` asks for a dynamic first dimension without insisting; `g` then compares it
# with 8.

# %%
def g(x):
    y = torch.sin(x)
    if x.shape[0] % 4 == 0:
        y = y - 1
    if x.shape[0] == 8:
        y = y * 3
    return y


x = torch.randn(8, 3)
torch._dynamo.maybe_mark_dynamic(x, 0)
cap = tracer.capture(g, x)
frame = cap.frames[0]
for s in frame.symbols:
    print(f"{s.name} = {s.source}  (hint {s.value}, range {s.range})")
for sp in frame.specializations:
    print(f"{sp.kind:12} {sp.symbol} -> {sp.value:10} guard {sp.guard or '-':18} at line {sp.user_line.line}: {sp.user_line.code}")

# %% tags=["remove-input"]
line = g.__code__.co_firstlineno
kinds = {sp.kind: sp for sp in frame.specializations}
assert [s.source for s in frame.symbols] == ["L['x'].size()[0]"]
assert kinds["static"].value == "8" and kinds["static"].user_line.line == line + 4
assert kinds["divisibility"].value == "4" and kinds["divisibility"].user_line.line == line + 2
assert kinds["zero_one"].value.startswith("[2,")

# %% [markdown]
# - `s77` is `L['x'].size()[0]`, created with range `[2, int_oo]`: sizes 0 and 1 are always
#   specialized (the `zero_one` row), so a batch of 1 would recompile.
# - `x.shape[0] % 4 == 0` did not make the size static, but it is a guard that the size is
#   divisible by 4 (`divisibility`): a size of 6 recompiles.
# - `x.shape[0] == 8` made it static: the guard `Eq(s77, 8)` replaced the symbol by 8, and the row
#   names the `if` line. With `torch._dynamo.mark_dynamic` instead of `maybe_mark_dynamic`, torch
#   raises `ConstraintViolationError` here, and the partial capture on the error carries the same
#   row. The explorer's **Code** tab shows these tables beside Dynamo's transformed code.

# %% [markdown]
# ## Recap
#
# - Guards are what a cached compile assumed (`TENSOR_MATCH`, `CONSTANT_MATCH`, `SHAPE_ENV`, ...): a
#   failed guard recompiles, and `rec.diff` says what the new compile did differently.
# - Automatic dynamic turns a size (or float) that changed into a symbol on the recompile; an `if` on
#   the exact size specializes it again.
#
# **Try this.** Make `normalize` compile only once for vectors of length 3, 5 and 7: choose the
# `torch.compile` option to pass to `tracer.capture`, as `options`. The next cell holds one answer
# (collapsed); the cell after it checks yours.

# %% tags=["hide-input"]
# One solution (try your own first).
options = {"dynamic": True}  # compile dynamic from the first call: no static 0/0 to fail

# %% tags=["remove-input"]
once = tracer.capture(normalize, torch.randn(3), more_calls=[(torch.randn(5),), (torch.randn(7),)], **options)
assert len(once.frames) == 1 and once.recompiles == [], once
print("check passed:", [f.compile_id for f in once.frames], "and no recompile")

# %% [markdown]
# Next: [02 — GPT-2 end to end](02_gpt2_end_to_end.ipynb): the same tools on a real model, its graph
# breaks and a recompile when the sequence length changes.
