"""Shape symbols and specializations: what ShapeEnv created and what it made static, as plain data.

Invariant: every ShapeSymbol and Specialization comes from one ShapeEnv structured-trace event of
this compile attempt (``create_symbol``, ``create_unbacked_symbol``, ``symbolic_shape_specialization``,
``guard_added_fast``; torch/fx/experimental/symbolic_shapes.py); a user line torch did not log is
``None``, never guessed. See Note [Where a specialization came from] in tracer/shape_events.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

__all__ = ["SPECIALIZATION_KINDS", "ShapeGuard", "ShapeSymbol", "SourceLine", "Specialization"]

# "static":       ShapeEnv replaced the symbol by a constant (symbolic_shape_specialization)
# "divisibility": a guard that the symbol is divisible by a constant (Eq(Mod(s0, 4), 0))
# "zero_one":     the symbol was created with range [2, oo]: sizes 0 and 1 are specialized (recompile)
SPECIALIZATION_KINDS = ("static", "divisibility", "zero_one")


@dataclass
class SourceLine:
    """One frame of a user stack, as torch logs it (structured.from_traceback)."""

    file: str  # the code's filename, as torch logs it
    line: int  # 1-based line number
    fn: str  # function name
    code: str = ""  # the source line's text, when torch had it

    def __str__(self) -> str:
        import os

        return f"{os.path.basename(self.file)}:{self.line} in {self.fn}" + (f": {self.code}" if self.code else "")


@dataclass
class ShapeSymbol:
    """A symbol ShapeEnv created for a size, a stride or an ``.item()`` value."""

    name: str  # "s0", "u0"
    source: str  # what it stands for, "L['x'].size()[0]"; "" for unbacked symbols (torch logs none)
    value: str = ""  # the hint it was created with ("8"); "" for unbacked symbols
    range: str = ""  # value range as torch logs it, "[2, int_oo]"
    unbacked: bool = False  # created by create_unbacked_symbol (data-dependent)
    user_stack: list[SourceLine] = field(default_factory=list)  # as torch logged it, outermost first
    # the user line that created it: the innermost frame of ``user_stack`` outside torch, as for a ShapeGuard
    # (Note [The user line of a shape guard] in tracer/shape_events.py); None when torch logged only its own frames
    user_line: Optional[SourceLine] = None

    def __repr__(self) -> str:
        return f"ShapeSymbol({self.name} = {self.source or 'unbacked'})"


@dataclass
class ShapeGuard:
    """A guard ShapeEnv added on symbols (``guard_added_fast``), with the user line that asked for it."""

    expr: str  # sympy text, "Eq(Mod(s0, 4), 0)"
    user_stack: list[SourceLine] = field(default_factory=list)  # as torch logged it, outermost first
    # the user line that asked for it: the innermost frame of ``user_stack`` outside torch (Note [The user
    # line of a shape guard] in tracer/shape_events.py); None when torch logged no stack or only torch frames
    user_line: Optional[SourceLine] = None


@dataclass
class Specialization:
    """A symbol made (partly) static, with the user line that caused it when torch logged one."""

    kind: str  # one of SPECIALIZATION_KINDS
    symbol: str  # "s0"
    sources: list[str] = field(default_factory=list)  # ["L['x'].size()[0]"]
    value: str = ""  # "static": the constant; "divisibility": the divisor; "zero_one": "[2, int_oo]"
    reason: str = ""  # torch's own reason ("range_refined_to_singleton", "find") or the guard text
    guard: str = ""  # the shape guard that caused it, "Eq(s0, 8)"; "" when none was logged
    user_line: Optional[SourceLine] = None  # the user line that caused it; None when torch did not log one

    def __str__(self) -> str:
        where = f" at {self.user_line}" if self.user_line is not None else ""
        src = self.sources[0] if self.sources else self.symbol
        return f"{src} ({self.symbol}) {self.kind} {self.value}{where}"
