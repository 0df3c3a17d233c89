"""``ProfileDiff``: two profiles of the same function (eager and compiled, or two backends) per source line and module.

Plain data like the rest of the model (what ``tracer.diff(profile_a, profile_b)`` returns). Times are
per step (each side's sums divided by its own ``steps``), in microseconds; a row holds side a's time,
side b's, and ``b - a`` (negative: b is faster there). Every row is one side's own number, never
spread: a side's rows add up to its attributed time (a fused Inductor kernel's time is counted whole
on each line it computes, marked shared, as in ``tracer.model.profile``), and what a side could not
attribute is its ``unattributed_*_us``, so ``attributed + unattributed == total`` on each side.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ProfileDiff", "TimeDelta"]


@dataclass
class TimeDelta:
    """One source line or module: its time per step on side a and side b."""

    key: str  # "file:line" for a line ("" file: line unknown), the module path for a module
    label: str  # the line's code, or the module's type
    a_us: float = 0.0  # per step, forward + backward; 0 when side a spent nothing there
    b_us: float = 0.0
    a_backward_us: float = 0.0  # of a_us, backward
    b_backward_us: float = 0.0
    shared_b_us: float = 0.0  # of b_us, time of fused kernels also counted on other lines
    shared_a_us: float = 0.0

    @property
    def difference_us(self) -> float:
        """``b_us - a_us``: negative where side b is faster."""
        return self.b_us - self.a_us


@dataclass
class ProfileDiff:
    """Where two profiles of one function spend their time, per source line and per module; ``print`` it."""

    fn: str
    a: str  # side a's backend: "eager", "aot_eager", "inductor"
    b: str
    steps_a: int
    steps_b: int
    total_a_us: float  # per step: the profiler's total of side a
    total_b_us: float
    unattributed_a_us: float  # per step: what side a could not put on a line (and so on no module)
    unattributed_b_us: float
    lines: list[TimeDelta] = field(default_factory=list)  # every line of both sides, by max(a, b), largest first
    modules: list[TimeDelta] = field(default_factory=list)  # every module of both sides, likewise
    problems: list[str] = field(default_factory=list)  # both profiles' problems, and what could not be compared

    @property
    def attributed_a_us(self) -> float:
        return self.total_a_us - self.unattributed_a_us

    @property
    def attributed_b_us(self) -> float:
        return self.total_b_us - self.unattributed_b_us

    def table(self, top: int = 10) -> str:
        """The ``top`` lines and modules with both sides' ms per step and the difference."""
        out = [f"{self.a} → {self.b} for {self.fn or '?'}: {self.total_a_us / 1000:.3f} → {self.total_b_us / 1000:.3f} "
               f"ms per step (not on a line: {self.unattributed_a_us / 1000:.3f} → {self.unattributed_b_us / 1000:.3f} ms)",
               f"{self.a + ' ms':>14} {self.b + ' ms':>14} {'diff ms':>9}  line"]
        for rows, what in ((self.lines, "line"), (self.modules, "module")):
            if what == "module" and rows:
                out.append(f"{'':>14} {'':>14} {'':>9}  module")
            for r in rows[:top]:
                where = (f"{r.key.rsplit('/', 1)[-1]}  {r.label}" if what == "line" and not r.key.startswith(":")
                         else f"{r.key}  {r.label}".strip())
                out.append(f"{r.a_us / 1000:>14.3f} {r.b_us / 1000:>14.3f} {r.difference_us / 1000:>+9.3f}  {where}")
        out.extend(f"? {p}" for p in self.problems)
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return (f"ProfileDiff({self.fn!r}, {self.a} → {self.b}: {self.total_a_us / 1000:.3f} → "
                f"{self.total_b_us / 1000:.3f} ms/step, {len(self.lines)} lines)")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from tracer import display

        return display.mimebundle(self, include=include, exclude=exclude)

    def to_json(self) -> str:
        """JSON text; ``ProfileDiff.from_json`` reads it back."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "ProfileDiff":
        try:
            data: dict[str, Any] = json.loads(text)
            rows = {k: [TimeDelta(**r) for r in data.pop(k, [])] for k in ("lines", "modules")}
            return cls(**data, **rows)
        except (ValueError, TypeError, AttributeError) as e:
            raise ValueError(f"not a dynascope profile diff: {e}") from None
