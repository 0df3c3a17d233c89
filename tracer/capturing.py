"""capture(): install the recording hooks, run torch.compile once, tear down, return a Capture.

Invariant: nothing ``capture`` installs or changes outlives the call (hooks, configs, Dynamo
cache entries on the user's code), also when the function or the compile raises; the partial
Capture then rides on the exception as ``err.capture``.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterable, Optional

from tracer.active_session import raise_if_tracing
from tracer.model import Capture
from tracer.options import CUDAGRAPH_MODES, CaptureOptions, split_options

__all__ = ["capture"]

# One capture at a time: Dynamo's compile is process-global and our hooks are too.
_ACTIVE = threading.Lock()


def capture(
    fn: Callable[..., Any],
    *args: Any,
    fullgraph: bool = False,
    dynamic: Optional[bool] = None,
    more_calls: Iterable[tuple] = (),
    partitioner: str = "min_cut",
    backward: Optional[bool] = None,
    capture_scalar_outputs: Optional[bool] = None,
    dynamo_config: Optional[dict[str, Any]] = None,
    backend: str = "aot_eager",
    mode: Optional[str] = None,
    options: Optional[CaptureOptions] = None,
    **kwargs: Any,
) -> Capture:
    """Run ``fn(*args, **kwargs)`` once through ``torch.compile`` with a recording backend.

    Returns a :class:`tracer.Capture`: one Frame per compiled frame (Dynamo graph, HOP subgraph
    tree with lifted inputs, speculations, guards, the AOTAutograd graphs), the graph breaks and
    the recompiles; ``cap.result`` is the function's own return value, with its tensors detached
    so the Capture never keeps the compiled autograd graph (and the model's weights) alive.

    Options (every other keyword argument is passed to ``fn``):

    - ``fullgraph``, ``dynamic``: as for ``torch.compile``.
    - ``more_calls``: argument tuples to call the *same* compiled function with afterwards,
      inside this capture, e.g. ``more_calls=[(torch.randn(5),)]`` after a call with a 3-element
      tensor: the guards fail, Dynamo recompiles, and ``cap.recompiles`` gets the failed guard
      (``"0/1"`` with reason ``size mismatch ...``). ``kwargs`` are passed to these calls too.
    - ``partitioner``: ``"min_cut"`` (aot_eager's default) or ``"default"``.
    - ``backward``: run ``.backward()`` on the sum of the outputs so the backward graph really
      compiles. ``None`` (default): only when an input tensor requires grad.
    - ``capture_scalar_outputs``: set ``torch._dynamo.config.capture_scalar_outputs`` for this
      capture (``.item()`` becomes an unbacked symbol ``u0`` instead of a graph break).
    - ``dynamo_config``: other ``torch._dynamo.config`` values for this capture only.
    - ``backend``: ``"aot_eager"`` (default: AOTAutograd's graphs in ``frame.aot``) or ``"inductor"``
      (Inductor compiles, with its post-grad graphs, output code and kernel provenance in ``frame.inductor``).
    - ``mode``: as for ``torch.compile`` with Inductor (``"reduce-overhead"``: CUDA graphs; ``"max-autotune"``,
      ``"max-autotune-no-cudagraphs"``, ``"default"``); needs ``backend="inductor"``. Recorded in ``cap.meta["options"]``.
    - ``options``: all of the above as one :class:`tracer.CaptureOptions` (then pass none of them
      by name). The options used are recorded in ``cap.meta["options"]``.

    A callable is compiled exactly as ``torch.compile`` compiles it: an ``nn.Module`` through its
    ``__call__`` (forward pre-hooks and hooks included), torch's own modules and functions through
    torch's ``wrap_inline`` frame (see Note [Compile what torch.compile compiles]). Each capture
    compiles a fresh copy of that code (see Note [Fresh code per capture]), so capturing the same
    function many times gives complete captures and leaves no cache entries.

    >>> import torch, tracer
    >>> cap = tracer.capture(lambda x: torch.sin(x) + 1, torch.randn(3))
    >>> [f.compile_id for f in cap.frames]
    ['0/0']
    """
    given = {"fullgraph": fullgraph, "dynamic": dynamic, "more_calls": more_calls, "partitioner": partitioner,
             "backward": backward, "capture_scalar_outputs": capture_scalar_outputs, "dynamo_config": dynamo_config, "backend": backend, "mode": mode}
    if options is not None:  # a keyword conflicts with options= only when the caller changed it
        given = {k: v for k, v in given.items() if not _is_default(k, v)}
    opts, _ = split_options(given, options)
    raise_if_tracing()  # a paused tracer.trace() holds Dynamo's compile lock: fail fast, don't wait
    return _run_capture(fn, args, kwargs, opts)


def _is_default(name: str, value: Any) -> bool:
    """Whether ``capture``'s keyword ``name`` still has its default (``more_calls`` and ``dynamo_config``: empty)."""
    if name in ("more_calls", "dynamo_config"):
        return not value
    default = getattr(CaptureOptions, name)
    return value is default or (isinstance(value, str) and value == default)


def _run_capture(
    fn: Callable[..., Any],
    args: tuple,
    kwargs: dict[str, Any],
    options: Optional[CaptureOptions] = None,
    *,
    extra_hooks: Iterable[Callable[[], Any]] = (),
    then: Optional[Callable[[Callable[[], None]], None]] = None,
) -> Capture:
    """The capture pipeline; ``extra_hooks`` are context-manager factories (called with no
    arguments) entered after the recording hooks, around the compiled call(s), and exited after
    them, even on error. Used by ``tracer.trace`` to run the same pipeline with a pause hook.
    ``then(step)``, after the calls, is given ``step()``: one more call of the same compiled function
    (and its backward, as for the first call), still inside the hooks (``tracer.profile`` times steps)."""
    if not callable(fn):
        raise TypeError(f"tracer.capture() needs a callable (a function or an nn.Module), got {type(fn).__name__}")
    options = options if options is not None else CaptureOptions()
    if not _ACTIVE.acquire(blocking=False):
        raise_if_tracing("tracer.capture()")  # a tracer.trace Session holds the capture: name it
        raise RuntimeError(
            "tracer.capture() is already running (a capture inside a captured function, or two threads): "
            "one capture at a time; call it again after the running one returns"
        )
    try:
        import torch

        from tracer._torch.backend import Recorder
        from tracer._torch.isolation import code_state_scope, compile_target, describe_callable
        from tracer._torch.isolation import dynamo_config as scoped_config
        from tracer._torch.releases import warn_once

        warn_once()  # a torch release nobody checked: Note [Releases nobody checked] in tracer/_torch/releases.py
        with scoped_config(**options.config()):  # torch's choice of frame depends on the config (wrap_top_frame)
            target = compile_target(fn)  # See Note [Compile what torch.compile compiles]
        rec = Recorder(partitioner=options.partitioner, fresh_codes=target.made, backend=options.backend,
                       mode=options.mode, dynamic=options.dynamic)
        cap = Capture(fn=describe_callable(fn), meta={"torch": torch.__version__, "options": options.to_meta()})
        try:
            try:
                with contextlib.ExitStack() as stack:
                    stack.enter_context(scoped_config(**options.config()))
                    stack.enter_context(code_state_scope())
                    stack.enter_context(rec.hooks())
                    for factory in extra_hooks:
                        stack.enter_context(factory())
                    stack.enter_context(target.installed())
                    compiled = rec.compile(target.fn, fullgraph=options.fullgraph, dynamic=options.dynamic)
                    result = target.call(compiled, *args, **kwargs)
                    cap.meta["backward_ran"] = _maybe_backward(result, options.backward, (args, kwargs))
                    if options.more_calls and options.mode in CUDAGRAPH_MODES:
                        result = _detached(result, clone=True)  # See Note [CUDA-graph outputs are overwritten]
                    for call_args in options.more_calls:
                        target.call(compiled, *call_args, **kwargs)
                    if then is not None:
                        then(lambda: _step(target, compiled, args, kwargs, options.backward))
                cap.result = _detached(result)  # See Note [The result holds no autograd graph]
            except BaseException as e:  # except: re-raises
                rec.interrupted = e  # a compile cut short by it ends "failed" with this reason
                raise
            finally:
                _safely(cap, "finish", rec.finish, cap)  # also on error: the partial capture
        except BaseException as e:  # except: re-raises
            _attach(e, cap)
            raise
        finally:
            cap.meta["reset_codes"] = _safely(cap, "reset", rec.codes.reset) or []
            _safely(cap, "forget backend", rec.forget)  # See Note [Dynamo keeps every backend]
        return cap
    finally:
        _ACTIVE.release()


def _step(target: Any, compiled: Any, args: tuple, kwargs: dict[str, Any], backward: Optional[bool]) -> None:
    _maybe_backward(target.call(compiled, *args, **kwargs), backward, (args, kwargs))


def _safely(cap: Capture, stage: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run a recording step; a failure becomes a problem on the capture, never raised over the user's error."""
    try:
        return fn(*args)
    except Exception as e:  # except: records a problem (recording must not hide what the user's function did)
        cap.problems.append(f"recording step {stage!r} failed: {type(e).__name__}: {e}"[:500])
        return None


def _attach(e: BaseException, cap: Capture) -> None:
    try:
        e.capture = cap  # type: ignore[attr-defined]
        e.add_note(
            f"tracer.capture({cap.fn}): raised while capturing; the partial capture "
            f"({len(cap.frames)} frame(s), {len(cap.graph_breaks)} graph break(s)) is on err.capture"
        )
    except Exception:  # except: display text only (an exception type that refuses attributes keeps its message)
        pass


def _tensors(obj: Any, depth: int = 0) -> list[Any]:
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if depth > 4:
        return []
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _tensors(x, depth + 1)]
    if isinstance(obj, dict):
        return [t for x in obj.values() for t in _tensors(x, depth + 1)]
    return []


# Note [The result holds no autograd graph]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The compiled function's output carries a ``grad_fn`` (CompiledFunctionBackward) that keeps the
# compiled autograd graph and every tensor the forward saved for the backward alive, and those
# include parameters (a Linear saves its weight): a Capture kept in a notebook would pin the whole
# model after ``del model`` (measured: 100% of a 256 MB model; bench/memory.py). The backward has
# already run when it was wanted (``_maybe_backward``), so ``cap.result`` keeps the values only:
# tensors are detached (same storage, same subclass), containers are rebuilt around them.
#
# Note [CUDA-graph outputs are overwritten]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# With CUDA graphs (mode="reduce-overhead" or "max-autotune") the compiled function's outputs live in
# the graph's memory pool, and the next replay overwrites them: reading the first call's result after
# ``more_calls`` raises torch's "accessing tensor output of CUDAGraphs that has been overwritten by a
# subsequent run" (seen on an H200, torch 2.11). Torch's advice is to clone outside torch.compile, so
# the capture clones the first call's tensors before it makes the later calls (only then).
def _detached(obj: Any, depth: int = 0, clone: bool = False) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach().clone() if clone else obj.detach()
    if depth > 8:
        return obj
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_detached(v, depth + 1, clone) for v in obj))
    if isinstance(obj, tuple) and hasattr(type(obj), "n_fields"):  # structseq: torch.return_types.max
        return type(obj)([_detached(v, depth + 1, clone) for v in obj])
    if type(obj) in (list, tuple):
        return type(obj)(_detached(v, depth + 1, clone) for v in obj)
    if type(obj) is dict:
        return {k: _detached(v, depth + 1, clone) for k, v in obj.items()}
    return obj


def _maybe_backward(result: Any, backward: Optional[bool], inputs: Any = ()) -> bool:
    """Run ``sum(outputs).backward()`` so the compiled backward graph really gets compiled.

    When ``backward`` is True, or None and an input tensor requires grad, and the result holds
    tensors requiring grad. Returns whether backward ran.
    """
    if backward is False:
        return False
    if backward is None and not any(t.requires_grad for t in _tensors(inputs)):
        return False
    outs = [t for t in _tensors(result) if t.requires_grad and t.is_floating_point()]
    if not outs:
        if backward:
            raise ValueError("backward=True but the result holds no tensor that requires grad")
        return False
    total = sum(o.sum() for o in outs)
    total.backward()
    return True
