"""Which torch is running, and what of the private names in ``_symbols.py`` it lacks.

Invariant: a capture never fails because torch lacks a hook point. On a release not in
``CHECKED_RELEASES`` the first capture warns once, naming each missing
name and the part of the record it feeds; every hook whose point is missing is left out, and the
capture lists what it could not record in ``Capture.problems`` (Note [Releases nobody checked]).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import warnings
from typing import Any, Callable, Optional

from tracer._torch._symbols import ATTRIBUTES, CHECKED_RELEASES, SYMBOLS, Private

__all__ = ["UncheckedTorchWarning", "MissingHookPoint", "release", "lookup", "hook_point", "missing",
           "class_has", "lacking", "warn_once", "install_or_note"]

# Note [Releases nobody checked]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``pyproject.toml`` lets dynascope install beside any torch >= the oldest checked release, so a user on
# a release newer than the README's table gets it without losing their torch. Such a torch may have
# renamed a private name we read. Import never touches one, so it works; there, the first capture looks
# every listed name up once and warns (``UncheckedTorchWarning``) with the missing ones and what they feed.
# Each hook is installed through ``install_or_note``: a missing hook point (``MissingHookPoint``, or the
# AttributeError/ImportError torch raises) becomes one problem on the capture, the other hooks still
# record, and Dynamo runs as it would without us.


class UncheckedTorchWarning(UserWarning):
    """The running torch is not one the suite passed on, or lacks a private name dynascope reads."""


class MissingHookPoint(AttributeError):
    """A private name from ``_symbols.py`` that the running torch does not have."""

    def __init__(self, name: str) -> None:
        feeds = next((s.feeds for s in (*SYMBOLS, *ATTRIBUTES) if str(s) == name), "part of the record")
        super().__init__(f"{feeds}: not recorded, torch {release()} has no {name}")
        self.name = name
        self.feeds = feeds


def release() -> str:
    """The running torch's release without the local build tag: "2.15.0" for "2.15.0+cu132"."""
    import torch

    return torch.__version__.split("+")[0]


def lookup(name: str) -> Any:
    """The object "module:attr.path" names; ``MissingHookPoint`` when the module or an attribute is absent."""
    module_name, _, path = name.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as e:
        raise MissingHookPoint(name) from e
    for part in path.split(".") if path else ():
        if not hasattr(obj, part):
            raise MissingHookPoint(name)
        obj = getattr(obj, part)
    return obj


def hook_point(module: str, path: str) -> tuple[Any, Any]:
    """(owner, current value) of the hook point ``module:path``: what a hook patches and wraps."""
    owner = lookup(f"{module}:{path.rpartition('.')[0]}" if "." in path else module)
    return owner, lookup(f"{module}:{path}")


def class_has(cls: type, attr: str) -> bool:
    """``attr`` is a class attribute, field, slot, annotation or ``self.attr =`` in the class's own source."""
    if hasattr(cls, attr):
        return True
    assigned = re.compile(rf"\bself\.{re.escape(attr)}\s*(:[^=]*)?=(?!=)")
    for c in cls.__mro__:
        if c is object:
            continue
        if dataclasses.is_dataclass(c) and attr in {f.name for f in dataclasses.fields(c)}:
            return True
        if attr in getattr(c, "_fields", ()) or attr in getattr(c, "__slots__", ()) or attr in vars(c).get(
                "__annotations__", {}):
            return True
        try:
            if assigned.search(inspect.getsource(c)):
                return True
        except (OSError, TypeError):
            continue
    return False


def present(p: Private) -> bool:
    """Whether the running torch has ``p`` (a name, or an attribute of a class)."""
    try:
        obj = lookup(p.name)
    except MissingHookPoint:  # absent, or its module does not import (lookup turns ImportError into this)
        return False
    return not p.attribute or (isinstance(obj, type) and class_has(obj, p.attribute))


def lacking() -> set[str]:
    """The listed names ``_symbols.py`` says the running release lacks; empty on a release nobody checked.

    On such a checked release torch does without them (an older way, or a step it does not take), so an
    adapter uses what it has instead (``since_2_13.py``, ``since_2_12.py``); elsewhere a missing name
    is a problem of the capture (Note [Releases nobody checked]).
    """
    r = release()
    if r not in CHECKED_RELEASES:
        return set()
    return {str(p) for p in (*SYMBOLS, *ATTRIBUTES) if r not in p.releases}


def missing() -> list[Private]:
    """The listed names and attributes the running torch lacks (wrapper attributes: tests only); a name
    only old releases have (the newest checked one does not) is read only there, and not counted."""
    newest = CHECKED_RELEASES[-1]
    return [p for p in (*SYMBOLS, *ATTRIBUTES) if newest in p.releases and not present(p)]


_warned = False


def warn_once(stacklevel: int = 4, checked: tuple[str, ...] = CHECKED_RELEASES) -> Optional[str]:
    """On a release not in ``checked``: warn once per process, naming what it lacks; the text, else None.

    A checked release is not looked at (``tests/test_torch_compat.py`` checks it); on another one, looking
    every name up imports the modules they live in, a few seconds once per process.
    """
    global _warned
    if _warned or release() in checked:
        return None
    _warned = True
    gone = missing()
    if gone:
        listed = "; ".join(f"{p} (feeds {p.feeds})" for p in gone)
        what = f"it lacks {len(gone)} private name(s) dynascope reads: {listed}. Captures record the rest and list " \
               f"what they could not record in Capture.problems"
    else:
        what = "it has every private name dynascope reads"
    text = (f"dynascope was checked on torch {', '.join(CHECKED_RELEASES)}; this is torch {release()} and {what} "
            f"(README, \"Torch releases\").")
    warnings.warn(text, UncheckedTorchWarning, stacklevel=stacklevel)
    return text


def install_or_note(problems: list[str], what: str, install: Callable[..., Any], *args: Any) -> Any:
    """``install(*args)``, or None with one problem when torch lacks its hook point (Note [Releases nobody checked])."""
    try:
        return install(*args)
    except MissingHookPoint as e:
        problems.append(str(e))
    except (AttributeError, ImportError) as e:  # recorded as a problem: torch moved something we did not list
        problems.append(f"{what}: not recorded, its hook did not install on torch {release()}: "
                        f"{type(e).__name__}: {e}"[:500])
    return None
