"""What torch 2.12 brought that dynascope reads, and how torch 2.11 tells the same facts.

Invariant: one function per difference, each with the PyTorch PR that made it; the branch for 2.11
is the one marked ``# before 2.12``, so dropping 2.11 is deleting those lines (and the ``_symbols.py``
entries listed for 2.11 only).
"""

from __future__ import annotations

from typing import Any, Callable

from tracer._torch.releases import MissingHookPoint, lookup, release

__all__ = ["optimization_hint", "prepare_worker_compile"]

_SHAPES = "torch.fx.experimental.symbolic_shapes"


# Note [Size hints before torch 2.12]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch 2.12 split the hint of a symbolic size into ``guarding_hint_or_throw`` and
# ``optimization_hint`` (pytorch/pytorch#175497, relanded as #177570) and dropped the module-level
# ``size_hint``. Both read the hint without adding a guard and take a fallback for an unbacked
# symbol, which is all ``aot_meta._hint`` asks (Note [Unbacked sizes in saved bytes]); 2.12 also
# hints unbacked symbols from user-provided hints first, which a capture never sets.
def optimization_hint() -> Callable[..., Any]:
    """``fn(symint, fallback=...)``: the int hint of a symbolic size, adding no guard."""
    try:
        return lookup(f"{_SHAPES}:optimization_hint")
    except MissingHookPoint:  # before 2.12
        return lookup(f"{_SHAPES}:size_hint")


# Note [A compile on a worker thread, before torch 2.12]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# On torch 2.11, in a process where CUDA is unavailable (a CPU machine, also with the registry's CUDA
# build), a compile on the main thread crashes the process (a segmentation fault in
# ``FakeTensorMode.__enter__``) when the process's first compile ran on another thread. Entering the
# fake mode calls ``torch._C._ensureCUDADeviceGuardSet()`` there (torch/_subclasses/fake_tensor.py: a
# no-op CUDA device guard when no device is available, pytorch/pytorch#160532), and on 2.11 the guard
# set first from a worker thread breaks the next thread's; a plain ``torch.compile`` in a
# ``threading.Thread`` followed by one on the main thread shows it, and 2.12 does not crash. A Session
# (``tracer.trace``) compiles on a worker thread, so before starting one we make that call on the
# calling thread, exactly as the fake mode would.
def prepare_worker_compile() -> None:
    """Before a compile on a new thread: what torch 2.11 needs done on the calling thread first."""
    import torch

    if not release().startswith("2.11."):  # 2.12 and later: nothing to do
        return
    if not torch.cuda.is_available():  # the condition FakeTensorMode.avoid_device_init checks for CUDA
        lookup("torch._C:_ensureCUDADeviceGuardSet")()
