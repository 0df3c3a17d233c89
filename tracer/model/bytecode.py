"""Dynamo's rewritten bytecode for one compile attempt: original and transformed code, resume functions.

Invariant: ``source`` is a decompilation (depyf) of the code object Dynamo made or ran, or "" with
the failure in ``problem``; ``dis`` (the ``dis`` listing) is always there, so the record never
loses the code when decompilation fails. A live capture keeps the code object's bytes (``code``)
and fills ``source``, ``dis`` and ``problem`` from them the first time one is read, so
``to_json`` always writes them: see Note [Decompiled when first read].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = ["Bytecode", "CodeText", "set_resolver"]

# Note [Decompiled when first read]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Decompiling a code object with depyf takes 5-50 ms, and a capture has two or more per frame (the
# transformed code and each resume function): most of the fixed cost of a small Inductor capture
# (bench/RESULTS.md), spent on text most captures never show. So the capture keeps each code
# object as ``marshal`` bytes (base64 in ``code``: plain data, nothing of the compile kept alive)
# and leaves ``dis`` and ``source``/``problem`` unset (the user's own source of an original
# code object is cheap and set at once). The first read of any of them (a view, ``==``,
# ``validate``, ``to_json`` via ``to_plain``) runs the resolver that tracer/_torch/bytecode.py
# registers with :func:`set_resolver` (depyf needs torch, which the model does not import) and
# stores the result on the object: it runs once per code object. ``save()``/``to_json()`` read the
# fields, so a saved capture always carries the decompiled text and the listing, and a capture
# loaded from JSON never needs depyf, torch, or the same Python version (marshal bytes are
# version-specific). A CodeText whose text was never filled and that no resolver can fill (a
# hand-made document without them) reads as "" with ``pending`` True; the views show the listing
# or say it was not decompiled.

_RESOLVER: Optional[Callable[["CodeText"], None]] = None


def set_resolver(fn: Optional[Callable[["CodeText"], None]]) -> None:
    """Register the function that fills a pending CodeText's source/dis/problem from its ``code``."""
    global _RESOLVER
    _RESOLVER = fn


class _Filled:
    """A CodeText text field: the stored value, or, while the listing is not made yet and the code's
    bytes are kept, what the resolver fills in (Note [Decompiled when first read])."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: type) -> str:
        if obj is None:
            return ""  # the dataclass default
        if obj.pending and _RESOLVER is not None:
            obj.__dict__["_resolving"] = True  # a resolver failing half-way must not loop
            try:
                _RESOLVER(obj)
            finally:
                obj.__dict__["_resolving"] = False
        return obj.__dict__.get(self.slot, "")

    def __set__(self, obj: Any, value: str) -> None:
        obj.__dict__[self.slot] = value


@dataclass
class CodeText:
    """One code object as text."""

    name: str  # co_name, e.g. "f" or "torch_dynamo_resume_in_f_at_12"
    source: str = _Filled()  # type: ignore[assignment]  # decompiled Python (or the user's source); "" when decompilation failed
    dis: str = _Filled()  # type: ignore[assignment]  # dis.Bytecode(code).dis()
    problem: str = _Filled()  # type: ignore[assignment]  # why ``source`` is empty, when it is
    code: str = ""  # base64 of marshal.dumps(code object), when kept; see Note [Decompiled when first read]

    @property
    def pending(self) -> bool:
        """Whether the listing (and the source, unless set) are still to be made from ``code``."""
        d = self.__dict__
        return bool(self.code) and not d.get("_dis") and not d.get("_resolving")

    def __repr__(self) -> str:
        state = ", pending" if self.pending else (", failed" if self.problem else "")
        return f"CodeText({self.name}{state})"


@dataclass
class Bytecode:
    """What Dynamo turned the frame's code into."""

    original: CodeText  # the code Dynamo compiled: the user's source, or a resume function decompiled
    transformed: CodeText  # the code Dynamo installed instead (calls __compiled_fn_N and __resume_at_*)
    resume_functions: list[CodeText] = field(default_factory=list)  # resume functions created in this attempt
    guard_function: str = ""  # the guard manager tree, as Dynamo logs it (dynamo_cpp_guards_str)

    def __repr__(self) -> str:
        from tracer._text import plural

        return f"Bytecode({self.original.name}, {plural(len(self.resume_functions), 'resume function')})"
