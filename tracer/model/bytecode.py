"""Dynamo's rewritten bytecode for one compile attempt: original and transformed code, resume functions.

Invariant: ``source`` is a decompilation (depyf) of the code object Dynamo made or ran, or "" with
the failure in ``problem``; ``dis`` (the ``dis`` listing) is always there, so the record never
loses the code when decompilation fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Bytecode", "CodeText"]


@dataclass
class CodeText:
    """One code object as text."""

    name: str  # co_name, e.g. "f" or "torch_dynamo_resume_in_f_at_12"
    source: str = ""  # decompiled Python (or the original source of user code); "" when decompilation failed
    dis: str = ""  # dis.Bytecode(code).dis()
    problem: str = ""  # why ``source`` is empty, when it is

    def __repr__(self) -> str:
        return f"CodeText({self.name}{', failed' if self.problem else ''})"


@dataclass
class Bytecode:
    """What Dynamo turned the frame's code into."""

    original: CodeText  # the code Dynamo compiled: the user's source, or a resume function decompiled
    transformed: CodeText  # the code Dynamo installed instead (calls __compiled_fn_N and __resume_at_*)
    resume_functions: list[CodeText] = field(default_factory=list)  # resume functions created in this attempt
    guard_function: str = ""  # the guard manager tree, as Dynamo logs it (dynamo_cpp_guards_str)

    def __repr__(self) -> str:
        return f"Bytecode({self.original.name}, {len(self.resume_functions)} resume functions)"
