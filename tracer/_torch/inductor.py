"""The Inductor backend of a capture: compiled as torch.compile compiles it, with Inductor's provenance on.

Invariant: the graph is compiled exactly as ``torch.compile(backend="inductor")`` compiles it (the
registered "inductor" backend, i.e. ``compile_fx``); the one change is Inductor's provenance
tracking switched on (``config.trace.provenance_tracking_level = 1``) for the capture only, with
``torch._inductor.config.patch`` in a ``with`` — never left set. What is recorded is what
Inductor logs to the structured trace, read by tracer/inductor_events.py (also for a loaded log).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

__all__ = ["compile_caches_off", "compile_inductor", "provenance_tracking"]


# Note [No compile caches during an Inductor capture]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# On an FX-graph-cache (or AOTAutograd-cache) hit Inductor replays the artifacts it stored when the
# entry was made: the kernel stack traces (and node names) of *that* compile. The cache key is the
# graph's structure, not its source lines, so a structurally equal graph from another function or
# file gets the other one's lines (seen: a capture of f in a.py reporting lines of b.py). The record
# must be exact, so the capture compiles with the local FX graph cache (``torch._inductor.config.fx_graph_cache``)
# and AOTAutograd cache (``torch._functorch.config.enable_autograd_cache``) off; the remote caches are off
# by default. Not ``force_disable_caches``: it also turns off Dynamo's PGO profile and warns about it.
# The cost is a cold compile (bench/inductor_overhead.py).
@contextlib.contextmanager
def compile_caches_off() -> Iterator[None]:
    """The local FX-graph and AOTAutograd caches off (see above); also what the bench's plain
    Inductor compile uses, so both sides compile cold."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as config

    with config.patch({"fx_graph_cache": False}), functorch_config.patch({"enable_autograd_cache": False}):
        yield


@contextlib.contextmanager
def provenance_tracking() -> Iterator[None]:
    """Inductor's provenance tracking on and compile caches off, for the capture only."""
    import torch._inductor.config as config

    with config.patch({"trace.provenance_tracking_level": 1}), compile_caches_off():
        yield


def compile_inductor(gm: Any, example_inputs: list[Any], mode: Optional[str] = None,
                     dynamic: Optional[bool] = None) -> Any:
    """What ``torch.compile(backend="inductor", mode=mode)`` does with the Dynamo graph: the registered
    backend, given the mode's Inductor options as ``config_patches`` as torch.compile's Inductor wrapper
    does (``_TorchCompileInductorWrapper`` in torch/__init__.py), so a backward compiled later gets them too."""
    from torch._dynamo.backends.registry import lookup_backend

    if mode is None or mode == "default":
        return lookup_backend("inductor")(gm, example_inputs)
    from torch._inductor import list_mode_options

    return lookup_backend("inductor")(gm, example_inputs, config_patches=list_mode_options(mode, dynamic))
