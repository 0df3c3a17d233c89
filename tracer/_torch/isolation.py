"""Capture isolation: fresh code objects per capture, Dynamo cache clean-up, scoped configs.

Invariant: after a capture, no code object the user owns holds a cache entry the capture made
(unless it held entries before, see Note [Which cache entries a capture removes]), and every
config value the capture changed is back to what it was.
"""

from __future__ import annotations

import contextlib
import functools
import types
from typing import Any, Callable, Iterator

import torch

__all__ = ["CodeTracker", "code_location", "code_state_scope", "describe_callable", "dynamo_config", "fresh_callable"]


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


def _trampoline(target: Callable[..., Any]) -> Callable[..., Any]:
    def dynascope_call(*args: Any, **kwargs: Any) -> Any:
        return target(*args, **kwargs)

    return dynascope_call


def _in_torch(fn: types.FunctionType) -> bool:
    """Code torch ships (nn.Linear.forward): Dynamo would wrap it in its shared ``wrap_inline`` frame."""
    import os

    root = os.path.dirname(torch.__file__) + os.sep
    return fn.__code__.co_filename.startswith(root)


def fresh_callable(fn: Any) -> tuple[Callable[..., Any], list[types.CodeType]]:
    """A callable equivalent to ``fn`` whose frames run fresh code objects (Note [Fresh code per capture]).

    Returns it and the code objects made for it (the ones :class:`CodeTracker` may always reset).
    An ``nn.Module`` is called through a fresh copy of its class's ``forward`` bound to the
    same instance (module hooks are not run, as with ``module.forward(...)``).
    """
    made: list[types.CodeType] = []
    fn = _uncompiled(fn)
    if isinstance(fn, types.FunctionType) and not _in_torch(fn):
        return _copy_function(fn, made), made
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType) and not _in_torch(fn.__func__):
        return types.MethodType(_copy_function(fn.__func__, made), fn.__self__), made
    if isinstance(fn, torch.nn.Module):
        forward = type(fn).forward
        if isinstance(forward, types.FunctionType):
            if _in_torch(forward):  # torch's own module: trampoline into a fresh copy of its forward
                fn = types.MethodType(_copy_function(forward, made), fn)
            else:
                return types.MethodType(_copy_function(forward, made), fn), made
    # torch's own functions and modules, functools.partial, callable objects, builtins: a fresh
    # trampoline frame ("isolation.py:... in dynascope_call") that calls them; Dynamo inlines them.
    call = _trampoline(fn)
    return _copy_function(call, made), made


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


def code_location(code: types.CodeType) -> str:
    """"file.py:LINE in fn" for a code object (basename, so output is the same on every machine)."""
    import os

    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno} in {code.co_name}"


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
    from torch._C._dynamo.eval_frame import _get_total_cache_entry_count

    try:
        return int(_get_total_cache_entry_count(code))
    except Exception:
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
