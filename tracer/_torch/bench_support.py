"""Private torch entry points the benchmarks need, so ``bench/`` imports no ``torch._*`` module.

Invariant: ``structured_trace_to`` leaves ``torch.__trace`` exactly as it found it (handlers, level)
when it exits, also on error; nothing here is used by the library itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any, Callable

__all__ = ["raise_recompile_limits", "structured_trace_to", "wrap_hop"]


# Note [TORCH_TRACE without the environment variable]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``TORCH_TRACE=dir`` makes ``torch._logging._internal._init_logs`` attach a ``LazyTraceHandler(dir)``
# with ``TorchLogsFormatter(trace=True)`` to the ``torch.__trace`` logger at DEBUG. Setting the
# variable after ``import torch`` does nothing, so the benchmark attaches the same handler itself, for
# one compile: ``trace_structured`` then formats every payload (graph dumps, guards, metrics) and
# writes it to a file, which is exactly what a tlparse user pays.
@contextlib.contextmanager
def structured_trace_to(directory: str | os.PathLike[str]) -> Iterator[None]:
    """Write Dynamo's structured trace (what ``TORCH_TRACE=directory`` writes) while the block runs."""
    from torch._logging._internal import LazyTraceHandler, TorchLogsFormatter, trace_log

    os.makedirs(directory, exist_ok=True)
    handler = LazyTraceHandler(os.fspath(directory))
    handler.setFormatter(TorchLogsFormatter(trace=True))
    old_level = trace_log.level
    trace_log.setLevel(logging.DEBUG)
    trace_log.addHandler(handler)
    try:
        yield
    finally:
        trace_log.removeHandler(handler)
        trace_log.setLevel(old_level)
        handler.close()


def wrap_hop() -> Callable[..., Any]:
    """The ``wrap`` higher-order operator (``torch._higher_order_ops.wrap.wrap``)."""
    from torch._higher_order_ops.wrap import wrap

    return wrap


def raise_recompile_limits(limit: int = 100_000) -> None:
    """Let Dynamo recompile one code object up to ``limit`` times in this process (``recompile_limit`` and
    ``accumulated_recompile_limit`` of ``torch._dynamo.config``), for a bench child that compiles one
    class at many sizes on purpose; set for good, so call it only in a process of its own."""
    import torch._dynamo.config as dynamo_config

    dynamo_config.recompile_limit = dynamo_config.accumulated_recompile_limit = limit
