"""What torch 2.13 brought that dynascope reads, and how torch 2.11 and 2.12 tell the same facts.

Invariant: one function per difference, each with the PyTorch PR that made it; the branch for the
releases before 2.13 is the one marked ``# before 2.13``, so dropping 2.11 and 2.12 is deleting those
lines (and the ``_symbols.py`` entries listed for those releases only). Where an old release cannot
give a fact, the fact is unknown and said so (Note [No silent fallback]); nothing is guessed.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable, Optional

from tracer._torch.patching import Patches
from tracer._torch.releases import MissingHookPoint, lookup, release
from tracer._torch.subtracer import compile_key

__all__ = ["cache_entries", "cache_entry_count", "isolate_recompiles", "strict_export_guards_unread", "tap_skip_log"]

_EVAL_FRAME = "torch._C._dynamo.eval_frame"


# Note [Recompile regions before torch 2.13]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch 2.13 gave ``torch._dynamo.optimize`` an ``isolate_recompiles`` flag (pytorch/pytorch#178351,
# on the per-region cache of #177894): the cache entries of one compiled wrapper live in their own
# region of each code object, so a capture's compiles neither reuse nor count against the entries the
# user's own ``torch.compile`` put on a shared helper. Before 2.13 there are no regions: a code object
# has one list of entries. A capture still compiles fresh copies of the user's function (Note [Fresh
# code per capture]), so only a helper the user compiles elsewhere too shares entries with it; its
# recompiles are then the ones torch made in that shared list, as torch counted them.
def isolate_recompiles() -> dict[str, Any]:
    """The ``torch._dynamo.optimize`` keyword that gives the capture its own recompile region, if any."""
    params = inspect.signature(lookup("torch._dynamo.eval_frame:_optimize")).parameters
    if "isolate_recompiles" in params:
        return {"isolate_recompiles": True}
    return {}  # before 2.13: no regions (Note [Recompile regions before torch 2.13])


def cache_entry_count(code: types.CodeType) -> int:
    """All cache entries of ``code``, in every region (pytorch/pytorch#177894 added the count in 2.13)."""
    try:
        count = lookup(f"{_EVAL_FRAME}:_get_total_cache_entry_count")
    except MissingHookPoint:  # before 2.13: one list per code object, which the debug list returns whole
        return len(lookup(f"{_EVAL_FRAME}:_debug_get_cache_entry_list")(code))
    return int(count(code))


def cache_entries(region: Optional[int]) -> Callable[[types.CodeType], list[Any]]:
    """What lists the cache entries of a code object in the capture's region (all of them where there
    are no regions); ``MissingHookPoint`` when this torch cannot list them."""
    if region is None:  # before 2.13 always (the wrapper has no region id)
        return lookup(f"{_EVAL_FRAME}:_debug_get_cache_entry_list")
    in_region = lookup(f"{_EVAL_FRAME}:_get_cache_entries_for_region")
    return lambda code: in_region(code, region)


# Note [Skip reasons before torch 2.13]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch 2.13 hands every skipped frame's reason to ``CatchErrorsWrapper._handle_skip`` as
# ``ConvertFrameReturn.skip_reason`` (pytorch/pytorch#183596, "add user-friendly reasons for why
# frames are skipped"; Note [Why a frame has no graph] in breaks.py). Before it, a compile that
# traced no ops ends in ``SkipFrame`` too, but ``_compile`` drops the exception; its message is only
# logged, at debug level, by ``convert_frame``'s retry loop while the compile is still running:
# ``log.debug("Received signal to skip frame (without graph break): %s %s %s %s", e, co_name, ...)``.
# For one capture we put a thin stand-in for that module's ``log`` in place, which hands the
# exception's text to the compile running now (``compile_key``) and passes every call on to the
# real logger unchanged, so what torch's logging prints does not change. The reason then reads as
# torch's own exception message, without the sentence 2.13 puts before it.
_SKIP_SIGNAL = "Received signal to skip frame"


class _SkipLogTap:
    """``torch._dynamo.convert_frame.log`` for one capture: the real logger, plus the skip signal."""

    def __init__(self, real: Any, sink: Callable[[Optional[tuple[int, int]], str], None]) -> None:
        self._real = real
        self._sink = sink

    def debug(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(msg, str) and msg.startswith(_SKIP_SIGNAL) and args and isinstance(args[0], BaseException):
            self._sink(compile_key()[0], str(args[0]))
        self._real.debug(msg, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def tap_skip_log(patches: Patches, sink: Callable[[Optional[tuple[int, int]], str], None]) -> None:
    """Before 2.13: ``sink(compile key, reason)`` for each compile that ends in ``SkipFrame``."""
    module = lookup("torch._dynamo.convert_frame")
    real = lookup("torch._dynamo.convert_frame:log")
    patches.set(module, "log", _SkipLogTap(real, sink))


# Note [Strict export's guards before torch 2.13]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The GuardsSet strict export hands ``GraphCaptureOutput.build_guards`` (Note [Strict export's Dynamo
# frame] in export_dynamo.py) was checked against the guard tree torch logs (``dynamo_cpp_guards_str``)
# on 2.13-2.15: every check recorded is one the tree holds. On 2.11 the same reading lists the tensor
# checks of export mode (dtype, device, requires_grad, ndimension: torch/_dynamo/guards.py
# [Note - On Export Tensor Guards]) that 2.11's logged tree does not hold, and 2.12 was not checked.
# Which of them 2.11's guard manager runs is not known here, so before 2.13 the frame's guards stay
# unknown (a problem says so) rather than listing checks torch may not make; the break a strict export
# stops at is read the same way on every release.


def strict_export_guards_unread() -> Optional[str]:
    """Why strict export's Dynamo guards are not recorded on this torch, or None where they are."""
    if release().startswith(("2.11.", "2.12.")):  # before 2.13
        return (f"strict export's Dynamo guards: not recorded on torch {release()} (checked against torch's own "
                "guard tree from 2.13 on; Note [Strict export's guards before torch 2.13])")
    return None
