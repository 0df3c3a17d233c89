"""Scoped attribute patches: the one way dynascope hooks into torch.

Invariant: every patch made through :class:`Patches` is undone by ``Patches.restore()`` (called
from ``__exit__``, also on error), in reverse order, and ``ACTIVE`` lists the ones in place, so
a test can prove nothing stays installed after a capture.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ACTIVE", "Patches"]

# (owner, attribute name) of every patch currently installed, by any capture.
ACTIVE: list[tuple[Any, str]] = []

_MISSING = object()
_CALL = object()  # an undo entry that is a function to call (Patches.on_restore)


class Patches:
    """A stack of ``setattr`` patches undone together: ``with Patches() as p: p.set(obj, name, value)``."""

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        """Replace ``owner.name`` by ``value`` until :meth:`restore` (read the original first)."""
        original = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name, _MISSING)
        if original is _MISSING and not isinstance(owner, type):
            raise AttributeError(f"{owner!r} has no attribute {name!r} to patch")
        setattr(owner, name, value)
        self._undo.append((owner, name, original))
        ACTIVE.append((owner, name))

    def on_restore(self, fn: Any) -> None:
        """Call ``fn()`` at :meth:`restore`, in reverse order with the patches set before it."""
        self._undo.append((fn, "", _CALL))

    def restore(self) -> None:
        while self._undo:
            owner, name, original = self._undo.pop()
            if original is _CALL:
                owner()
                continue
            if original is _MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, original)
            try:
                ACTIVE.remove((owner, name))
            except ValueError:
                pass

    def __enter__(self) -> Patches:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()
