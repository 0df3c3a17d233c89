"""``tracer.diff(prof_a, prof_b)``: two Profiles of one function (eager and compiled) per source line and module.

Invariant: reads the two Profiles only (no torch), changes neither; each row's numbers are the sides'
own ``by_line()`` / ``by_module()`` totals per step, so a side's unattributed time is never spread
over rows (``tracer.model.profile_diff``). Lines are matched by (file, line), modules by their path
as Dynamo's ``nn_module_stack`` writes it (an eager profile names them the same way).

>>> from tracer.model.profile import NodeTime, Profile
>>> a = Profile("f", "eager", 1, 10.0, [NodeTime("", "forward", "f.py:3", 8.0, file="f.py", line=3, code="y = x @ x")])
>>> b = Profile("f", "inductor", 2, 10.0, [NodeTime("0/0", "forward", "mm", 6.0, file="f.py", line=3, code="y = x @ x")])
>>> [(r.key, r.a_us, r.b_us, r.difference_us) for r in compare_profiles(a, b).lines]
[('f.py:3', 8.0, 3.0, -5.0)]
"""

from __future__ import annotations

from tracer.model.profile import Profile
from tracer.model.profile_diff import ProfileDiff, TimeDelta

__all__ = ["compare_profiles"]


def compare_profiles(a: Profile, b: Profile) -> ProfileDiff:
    """Side ``a`` (say, ``tracer.profile(fn, x, eager=True)``) against side ``b`` (``tracer.profile(fn, x)``)."""
    for name, p in (("a", a), ("b", b)):
        if not isinstance(p, Profile):
            raise TypeError(f"compare_profiles needs two tracer.Profile, got {type(p).__name__} for {name}")
    sa, sb = max(a.steps, 1), max(b.steps, 1)
    d = ProfileDiff(fn=b.fn or a.fn, a=a.backend, b=b.backend, steps_a=a.steps, steps_b=b.steps,
                    total_a_us=a.total_us / sa, total_b_us=b.total_us / sb,
                    unattributed_a_us=sum(a.unattributed.values()) / sa,
                    unattributed_b_us=sum(b.unattributed.values()) / sb)
    if a.fn and b.fn and a.fn != b.fn:
        d.problems.append(f"the profiles are of different functions ({a.fn!r}, {b.fn!r}): rows match by line and module only")
    d.problems += [f"{a.backend}: {p}" for p in a.problems] + [f"{b.backend}: {p}" for p in b.problems]
    lines: dict[str, TimeDelta] = {}
    for side, prof, steps in (("a", a, sa), ("b", b, sb)):
        for r in prof.by_line():
            key = f"{r.file}:{r.line}" if r.file else ":0"
            row = lines.setdefault(key, TimeDelta(key, r.code))
            setattr(row, f"{side}_us", r.total_us / steps)
            setattr(row, f"{side}_backward_us", r.backward_us / steps)
            setattr(row, f"shared_{side}_us", r.shared_us / steps)
    modules: dict[str, TimeDelta] = {}
    for side, prof, steps in (("a", a, sa), ("b", b, sb)):
        for path, typ, fw, bw in prof.by_module():
            row = modules.setdefault(path, TimeDelta(path, typ))
            row.label = row.label or typ
            setattr(row, f"{side}_us", (fw + bw) / steps)
            setattr(row, f"{side}_backward_us", bw / steps)
    d.lines = sorted(lines.values(), key=lambda r: -max(r.a_us, r.b_us))
    d.modules = sorted(modules.values(), key=lambda r: -max(r.a_us, r.b_us))
    return d
