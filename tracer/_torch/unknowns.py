"""Where a value torch would not give us is said to be unknown: the problems list of what is being recorded.

Invariant: a helper that cannot read a value from a torch object calls :func:`unknown` and leaves the
field out (or "unknown"), never a plausible stand-in; the sentence lands in the problems of the frame
being recorded (``recording_into(frame.problems)``), else of the capture (the Recorder's hooks), else
in a list :func:`take_loose` hands to the next capture's finish. See Note [No silent fallback].
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator, Optional

__all__ = ["recording_into", "said", "take_loose", "unknown"]

# Note [No silent fallback]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# Recording must never break the user's compile, so reads of torch objects are guarded; but a guard
# that puts a plausible value in the record (a shape [] that reads as 0-d, itemsize 0, in_graph False,
# no parameter names) is a silent wrong answer. Every broad ``except`` in tracer/ and viz/ therefore
# does one of three things, and says which in a comment on its line (tests/test_except_lint.py checks
# both the comment and that the handler does it): "re-raises", "records a problem" (here, or into a
# problems/errors list), or "display text only" (a label or message nobody reads as data).
_SINK: contextvars.ContextVar[Optional[list[str]]] = contextvars.ContextVar("dynascope_unknowns", default=None)
_LOOSE: list[str] = []
_SAID = [0]  # how many times unknown() was called in this process: ``said``


@contextlib.contextmanager
def recording_into(problems: list[str]) -> Iterator[None]:
    """:func:`unknown` appends to ``problems`` inside this block (innermost block wins)."""
    token = _SINK.set(problems)
    try:
        yield
    finally:
        _SINK.reset(token)


def unknown(what: str, e: BaseException) -> None:
    """Say that ``what`` is unknown because reading it raised ``e``."""
    text = f"{what}: unknown ({type(e).__name__}: {e})"[:300]
    sink = _SINK.get()
    (sink if sink is not None else _LOOSE).append(text)
    _SAID[0] += 1


def said() -> int:
    """How many sentences :func:`unknown` said so far: a read that said one is not reused (its problem
    would be said once instead of once per read; Note [Values read once per conversion])."""
    return _SAID[0]


def take_loose() -> list[str]:
    """The sentences said outside any ``recording_into`` block since the last call."""
    out = list(_LOOSE)
    _LOOSE.clear()
    return out
