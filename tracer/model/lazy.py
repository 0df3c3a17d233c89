"""Dataclass fields that run registered work on their first read (a loaded log's graphs parse then).

Invariant: a lazy field reads and writes like the plain dataclass field it replaces (``__init__``,
``dataclasses.fields``, msgspec decoding, ``==`` and JSON see its value); work registered with
:func:`on_first_read` runs once, before the first read of that field returns, and an assignment
drops work still pending for it (the assigned value wins).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from tracer._no_gc import no_cyclic_gc

__all__ = ["lazy_fields", "on_first_read", "peek", "pending"]

_LOCK = threading.RLock()  # held while work runs (Note [Fields filled on first read])
_RUNNING = object()  # the entry of a field whose work is running

# Note [Fields filled on first read]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``lazy_fields(cls, "nodes")`` replaces the class attribute of dataclass field ``nodes`` with a
# property over the instance attribute ``_nodes``. The dataclass machinery is untouched: the
# generated ``__init__`` assigns ``self.nodes`` (the setter), ``dataclasses.fields`` still lists
# it, msgspec's ``convert`` sets it through the setter, ``==`` and ``to_plain`` read it through
# the getter. The getter first runs whatever :func:`on_first_read` registered for that field of
# that instance (kept in the instance's ``_pending`` dict, absent on every object nobody deferred,
# so a plain read costs one dict lookup). While the work runs its entry says so: a read of the
# field from within the work returns the value as it is (the work may read or assign its own
# field), and a read from another thread waits on the lock until the work is done, so no thread
# ever sees the empty value a deferred field starts with. A copy (``copy``, ``deepcopy``) runs
# pending work first: the work's closures name the original object, so a copy must not inherit it.


def lazy_fields(cls: type, *names: str) -> type:
    """Make dataclass fields ``names`` of ``cls`` lazy (Note [Fields filled on first read]); returns ``cls``."""
    for name in names:
        setattr(cls, name, _property(name, cls.__dataclass_fields__[name]))  # type: ignore[attr-defined]
    cls.__getstate__ = _getstate  # type: ignore[attr-defined]
    return cls


def _getstate(self: Any) -> dict[str, Any]:
    """``copy``/``deepcopy`` state: pending work done first (its closures name this very object)."""
    for name in list(self.__dict__.get("_pending") or ()):
        getattr(self, name)
    return {k: v for k, v in self.__dict__.items() if k != "_pending"}


def _property(name: str, spec: Any) -> property:
    slot = "_" + name

    def get(self: Any) -> Any:
        todo = self.__dict__.get("_pending")
        if todo and name in todo:  # See Note [Fields filled on first read]
            with _LOCK:
                works = todo.get(name)
                if works is not None and works is not _RUNNING:
                    todo[name] = _RUNNING
                    try:
                        with no_cyclic_gc():  # See Note [No cyclic GC while a log is read] in tracer/_no_gc.py
                            for work in works:
                                work()
                    finally:
                        todo.pop(name, None)
        return self.__dict__[slot]

    def set_(self: Any, value: Any) -> None:
        todo = self.__dict__.get("_pending")
        if todo:
            todo.pop(name, None)
        self.__dict__[slot] = value

    return property(get, set_, doc=f"dataclass field {name!r} ({spec.type}), read through Note [Fields filled on first read]")


def on_first_read(obj: Any, name: str, work: Callable[[], None]) -> None:
    """Run ``work()`` before the next read of lazy field ``name`` of ``obj`` returns (after earlier work)."""
    obj.__dict__.setdefault("_pending", {}).setdefault(name, []).append(work)


def pending(obj: Any, name: str) -> bool:
    """Whether work is still waiting for (or running for) the first read of ``obj.name``."""
    return name in (obj.__dict__.get("_pending") or ())


def peek(obj: Any, name: str) -> Any:
    """The value of lazy field ``name`` of ``obj`` as it is now, running no work (for the work itself:
    a graph's parse appends to its frame's problems without parsing the frame's other graphs)."""
    return obj.__dict__["_" + name]
