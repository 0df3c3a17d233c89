"""Capture isolation: what a capture compiles (torch.compile's own frame, with fresh code),
Dynamo cache clean-up, scoped configs, and how a frame's code is named.

Invariant: a capture compiles the frame ``torch.compile`` would compile for the same callable
(Note [Compile what torch.compile compiles]); after it, no code object the user owns holds a
cache entry the capture made (unless it held entries before, see Note [Which cache entries a
capture removes]), torch's shared ``wrap_inline`` frame never gets one, and every config value
or module attribute the capture changed is back to what it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import types
import warnings
from typing import Any, Callable, Iterator, Optional

import torch

from tracer._torch.since_2_13 import cache_entry_count
from tracer._torch.unknowns import unknown

__all__ = ["CodeTracker", "Target", "code_location", "code_state_scope", "compile_target", "describe_callable", "dynamo_config",
           "fresh_callable"]


# Note [Fresh code per capture]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo keeps its compiled entries on the code object (the "extra" slot) and counts recompiles
# per code object. A notebook re-running ``tracer.capture(f, x)`` would pile entries onto
# ``f.__code__`` (each capture has its own backend, so BACKEND_MATCH fails and Dynamo
# recompiles) until the recompile limit makes the 9th capture run eagerly and record nothing.
# So each capture compiles a *copy* of the function whose code object (and every code object
# nested in its constants: closures, HOP bodies, which may become frames after a graph break)
# is new. Same file, line numbers, names and globals, so graphs, guards and user stacks read
# exactly as for the original. The copies die with the capture.


def _fresh_code(code: types.CodeType, made: list[types.CodeType]) -> types.CodeType:
    consts = tuple(_fresh_code(c, made) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    new = code.replace(co_consts=consts)
    made.append(new)
    return new


def _copy_function(fn: types.FunctionType, made: list[types.CodeType]) -> types.FunctionType:
    new = types.FunctionType(_fresh_code(fn.__code__, made), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__dict__.update(fn.__dict__)
    return new


# Note [Compile what torch.compile compiles]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``torch.compile(obj)`` decides which frame Dynamo starts from (torch/_dynamo/eval_frame.py):
#   - an nn.Module becomes an ``OptimizedModule`` whose ``forward`` compiles ``module.__call__``
#     (so forward pre-hooks and hooks run inside the compile), or, when the module's forward is
#     skipped by trace_rules (torch's own modules: nn.Linear), ``external_utils.wrap_inline(module)``;
#   - a function is compiled as its own frame, unless it is a builtin, in-graph torch function,
#     polyfilled or skipped callable (torch.sin, functools.partial, callable objects): then
#     ``wrap_inline(fn)``, a frame ``inner`` (external_utils.py) that calls it.
# We do not re-implement that choice: ``compile_target`` asks torch, by applying an uncompiled
# ``torch._dynamo.optimize`` context to the callable (construction compiles nothing) and reading
# what it wrapped. Then it hands Dynamo the same frame with a fresh code object (Note [Fresh code
# per capture]): a copy of the function, of ``wrap_inline``'s ``inner`` (same file, line, name
# and closure variable ``fn``, so placeholders read ``l_fn_...``/``l_args_0_`` and guards
# ``L['fn']`` exactly as torch's), or, for a user module, ``module.__call__`` with the
# instance's ``forward`` pointing to a fresh copy of its class's forward for the capture. So
# torch's shared ``inner`` never gets a cache entry from a capture.


@dataclasses.dataclass
class Target:
    """What a capture hands ``torch._dynamo.optimize``, and how it calls the compiled result."""

    fn: Callable[..., Any]  # the callable Dynamo compiles (Note [Compile what torch.compile compiles])
    made: list[types.CodeType]  # code objects made for this capture (CodeTracker may always reset them)
    module: Optional[torch.nn.Module] = None  # the module compiled like OptimizedModule, if any
    forward: Optional[types.MethodType] = None  # fresh forward set on ``module`` during the capture

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Point ``module.forward`` at the fresh copy for the capture; restored on exit, also on error."""
        if self.module is None or self.forward is None:
            yield
            return
        d = self.module.__dict__
        had, old = "forward" in d, d.get("forward")
        d["forward"] = self.forward
        try:
            yield
        finally:
            if had:
                d["forward"] = old
            else:
                d.pop("forward", None)

    def call(self, compiled: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``compiled`` as ``OptimizedModule.__call__`` / ``_call_lazy_check`` would."""
        if self.module is None:
            return compiled(*args, **kwargs)
        from torch._dynamo.eval_frame import _set_in_optimized_module

        mod = self.module
        if hasattr(mod, "_initialize_hook") and callable(getattr(mod, "_infer_parameters", None)):
            mod._infer_parameters(mod, args, kwargs)  # a lazy module initializes eagerly first, as torch does
        with _set_in_optimized_module():
            return compiled(*args, **kwargs)


def compile_target(fn: Any) -> Target:
    """The frame ``torch.compile(fn)`` would compile, with fresh code (Note [Compile what torch.compile compiles]).

    Call it under the capture's Dynamo config (``wrap_top_frame`` changes torch's choice).
    """
    made: list[types.CodeType] = []
    fn = _uncompiled(fn)
    if getattr(fn, "_torchdynamo_disable", False):
        return Target(fn, made)  # torch.compiler.disable: torch runs it eagerly; so do we
    chosen = _torch_choice(fn)
    if _is_wrap_inline(chosen):
        return Target(_copy_function(chosen, made), made, module=fn if isinstance(fn, torch.nn.Module) else None)
    if isinstance(fn, torch.nn.Module):
        forward = type(fn).forward
        fresh = None
        if "forward" not in fn.__dict__ and isinstance(forward, types.FunctionType):
            fresh = types.MethodType(_copy_function(forward, made), fn)
        return Target(chosen, made, module=fn, forward=fresh)
    if isinstance(chosen, types.FunctionType):
        return Target(_copy_function(chosen, made), made)
    if isinstance(chosen, types.MethodType) and isinstance(chosen.__func__, types.FunctionType):
        return Target(types.MethodType(_copy_function(chosen.__func__, made), chosen.__self__), made)
    return Target(chosen, made)


def fresh_callable(fn: Any) -> tuple[Callable[..., Any], list[types.CodeType]]:
    """``compile_target(fn)`` as (callable, made codes), for callers that need no module handling."""
    t = compile_target(fn)
    return t.fn, t.made


def _torch_choice(fn: Any) -> Any:
    """The callable whose frame ``torch.compile(fn)`` starts Dynamo on (eval_frame.py), unchanged."""
    import torch._dynamo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped = torch._dynamo.optimize("eager")(fn)
    if isinstance(fn, torch.nn.Module):  # an OptimizedModule: forward (or _forward, lazy) is the compiled entry
        entry = wrapped.__dict__.get("_forward", wrapped.__dict__.get("forward"))
    else:
        entry = wrapped
    return getattr(entry, "_torchdynamo_orig_callable", fn)


def _is_wrap_inline(fn: Any) -> bool:
    from torch._dynamo import external_utils

    return isinstance(fn, types.FunctionType) and fn.__code__ is _wrap_inline_code(external_utils)


@functools.lru_cache(maxsize=1)
def _wrap_inline_code(external_utils: Any) -> types.CodeType:
    return external_utils.wrap_inline(len).__code__


def _uncompiled(fn: Any) -> Any:
    """The user's own callable behind a ``torch.compile`` result (capture compiles it itself)."""
    for _ in range(4):
        if getattr(fn, "_torchdynamo_disable", False):
            return fn  # torch.compiler.disable: keep it disabled
        if isinstance(fn, torch.nn.Module) and type(fn).__name__ == "OptimizedModule":
            inner = getattr(fn, "_orig_mod", None)
        else:
            inner = getattr(fn, "_torchdynamo_orig_callable", None)
        if inner is None or inner is fn:
            return fn
        fn = inner
    return fn


def describe_callable(fn: Any) -> str:
    """"mod.fn" / "Linear" (a module's class) / the type name: ``Capture.fn``."""
    fn = _uncompiled(fn)
    if isinstance(fn, torch.nn.Module):
        return type(fn).__qualname__
    if isinstance(fn, functools.partial):
        return f"partial({describe_callable(fn.func)})"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return str(name) if name else type(fn).__qualname__


# Note [Naming notebook code]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A notebook cell's code is compiled under a name the kernel makes up (ipykernel:
# "/tmp/ipykernel_<pid>/<hash>.py"; IPython: "<ipython-input-3-...>"). IPython's tracebacks
# show it as "Cell In[3], line 2": its caching compiler maps the name back with the public
# ``InteractiveShell.compile.format_code_name(filename) -> ("Cell", "In[3]") | None``
# (IPython/core/tbtools.py ``_tokens_filename``). We ask the running shell the same way, so a
# frame reads as the user's traceback would; anything else is "file.py:LINE in fn".
def code_location(code: types.CodeType) -> str:
    """"file.py:LINE in fn" for a code object (basename, so output is the same on every machine);
    "Cell In[3], line 2 in fn" for code of a notebook cell (Note [Naming notebook code])."""
    import os

    cell = _cell_name(code.co_filename)
    if cell is not None:
        return f"{cell}, line {code.co_firstlineno} in {code.co_name}"
    return f"{os.path.basename(code.co_filename) or code.co_filename}:{code.co_firstlineno} in {code.co_name}"


def _cell_name(filename: str) -> Optional[str]:
    import sys

    if "IPython" not in sys.modules:  # never import IPython ourselves
        return None
    try:
        from IPython import get_ipython

        shell = get_ipython()
        data = shell.compile.format_code_name(filename) if shell is not None else None
    except (AttributeError, TypeError):  # a shell without IPython's caching compiler: the file name is exact
        return None
    if not data:
        return None
    label, name = data
    return f"{label} {name}"


# Note [Which cache entries a capture removes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A bytecode hook sees every code object Dynamo transforms during the capture. After the
# capture we ``reset_code`` (drop all Dynamo cache entries and frame state of) each one that we
# made ourselves or that had no cache entry when the capture first compiled it: those entries
# can only be ours. A shared code object that already had entries (a helper the user also
# compiles elsewhere) keeps them; ours on it live in the capture's own isolate_recompiles
# region, so they never count against the user's recompile limit. We never call
# ``torch._dynamo.reset()``: other compiled functions keep their caches.
class CodeTracker:
    """Context manager recording the code objects Dynamo compiles, and resetting ours on exit."""

    def __init__(self, made: list[types.CodeType]) -> None:
        self.made = {id(c): c for c in made}
        self.seen: dict[int, tuple[types.CodeType, int]] = {}  # id -> (code, entries before first compile)
        self._handle: Any = None

    def _hook(self, code: types.CodeType, new_code: types.CodeType) -> None:
        if id(code) not in self.seen:
            self.seen[id(code)] = (code, _entry_count(code))
        return None

    def codes(self) -> list[types.CodeType]:
        return [c for c, _ in self.seen.values()]

    def __enter__(self) -> CodeTracker:
        from torch._dynamo.convert_frame import register_bytecode_hook

        self._handle = register_bytecode_hook(self._hook)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def reset(self) -> list[str]:
        """Drop the cache entries this capture left; return "file:line in fn" of each code reset."""
        from torch._C._dynamo.eval_frame import reset_code

        done = []
        for code, before in list(self.seen.values()):
            if id(code) in self.made or before == 0:
                reset_code(code)
                done.append(code_location(code))
        for code in self.made.values():  # copies never compiled may still carry a SKIP marker
            reset_code(code)
        return done


def _entry_count(code: types.CodeType) -> int:
    """Cache entries of ``code`` now; -1 when torch cannot say (its code is then never reset by us)."""
    try:  # Dynamo calls this hook mid-compile: a torch without the function must not break the compile
        return cache_entry_count(code)
    except Exception as e:  # except: records a problem (-1: the count before the capture is unknown)
        unknown(f"the cache entries of {code.co_name} before the capture", e)
        return -1


@contextlib.contextmanager
def dynamo_config(**changes: Any) -> Iterator[None]:
    """``torch._dynamo.config.patch`` for the capture only; unknown names raise naming the valid ones."""
    import torch._dynamo.config as config

    known = set(config._config.keys()) if hasattr(config, "_config") else set(dir(config))
    bad = sorted(k for k in changes if k not in known)
    if bad:
        raise ValueError(f"unknown torch._dynamo.config option(s) {bad} (see torch._dynamo.config for the valid names)")
    with config.patch(**changes):
        yield


# Note [Automatic-dynamic state is per capture]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# When a frame recompiles after a size change, Dynamo remembers "this dimension is dynamic" in
# its PGO code state (torch/_dynamo/pgo.py), keyed by file, line and name, not by code object.
# Left alone, one capture with ``more_calls`` would make the next capture (and the user's own
# torch.compile of the same function) start dynamic. We snapshot the code state before the
# capture and put every entry back afterwards, so each capture starts like a fresh process.
@contextlib.contextmanager
def code_state_scope() -> Iterator[None]:
    """Restore Dynamo's automatic-dynamic (PGO) code state after the capture."""
    import copy

    from torch._dynamo.pgo import get_code_state

    state = get_code_state()
    before = copy.deepcopy(dict(state))
    try:
        yield
    finally:
        for key in list(state.keys()):
            if key not in before:
                del state[key]
        for key, value in before.items():
            state[key] = value
