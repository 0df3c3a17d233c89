"""Guards grouped by the object they guard, for the guards view.

Invariant: pure and total: every guard lands in at least one group (a shape relation in the group of
every input it mentions, a global guard in the one global group), groups and rows keep the order in
which Dynamo installed the guards, and nothing is dropped or invented.

>>> from tracer.model import Guard
>>> gs = [Guard("TENSOR_MATCH", "L['x']"), Guard("SHAPE_ENV", "", ["L['x'].size()[0] == L['y'].size()[0]"]),
...       Guard("GRAD_MODE", ""), Guard("TYPE_MATCH", "L['self'].layers[0]")]
>>> [(g.title, g.count, g.kinds) for g in group_guards(gs)]
[("L['x']", 2, [('TENSOR_MATCH', 1), ('SHAPE_ENV', 1)]), ("L['y']", 1, [('SHAPE_ENV', 1)]), ("L['self']", 1, [('TYPE_MATCH', 1)]), ('global', 1, [('GRAD_MODE', 1)])]
>>> base_of("dict(type(G['F']).__mro__[1].__dict__)"), base_of("L['self']._modules['a']"), base_of("")
("G['F']", "L['self']", '')
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from tracer.model import Guard

__all__ = ["GuardGroup", "bases_in", "base_of", "group_guards", "kind_counts"]

GLOBAL = "global"
# ``L[...]`` / ``G[...]`` up to its first "]", not inside another name ("XL[", "_G[")
_BASE = re.compile(r"(?<!\w)[LG]\[[^\]]*\]")


@dataclass
class GuardGroup:
    """The guards on one local or global variable of the frame (and everything reached from it)."""

    title: str  # "L['x']", "G['torch']", or "global" (guards on interpreter / autograd / backend state)
    rows: list[tuple[Guard, bool]] = field(default_factory=list)  # (guard, True when it only mentions title)

    @property
    def count(self) -> int:
        return len(self.rows)

    @property
    def kinds(self) -> list[tuple[str, int]]:
        """Guard kinds in this group with their counts, most common first."""
        return Counter(g.kind for g, _ in self.rows).most_common()


def bases_in(text: str) -> list[str]:
    """Every ``L['name']`` / ``G['name']`` written in ``text``, in order, without repeats (Dynamo's
    guard sources and guard code name frame locals and globals this way, torch/_guards.py Source.name)."""
    return list(dict.fromkeys(m.group(0) for m in _BASE.finditer(text)))


def base_of(source: str) -> str:
    """The local or global a guard source starts from ("" when it names none)."""
    found = bases_in(source)
    return found[0] if found else ""


def group_guards(guards: list[Guard]) -> list[GuardGroup]:
    """Guards by the variable they guard: locals (``L[...]``) first, then globals (``G[...]``), then the
    global-state guards (``BACKEND_MATCH``, ``GLOBAL_STATE``, grad mode, ...: no source). A guard
    without a source whose code names variables (``SHAPE_ENV`` relations) joins each of their groups."""
    groups: dict[str, GuardGroup] = {}

    def add(key: str, g: Guard, related: bool) -> None:
        groups.setdefault(key, GuardGroup(key)).rows.append((g, related))

    for g in guards:
        base = base_of(g.source)
        if base:
            add(base, g, False)
            continue
        mentioned = [b for line in g.code for b in bases_in(line)]
        for b in dict.fromkeys(mentioned):
            add(b, g, True)
        if not mentioned:
            add(GLOBAL, g, False)
    # locals, then globals, then the global-state group; each in order of first appearance (a stable sort)
    return sorted(groups.values(), key=lambda gr: (gr.title == GLOBAL, gr.title.startswith("G[")))


def kind_counts(guards: list[Guard]) -> list[tuple[str, int]]:
    """Every guard kind of ``guards`` with its count, most common first."""
    return Counter(g.kind for g in guards).most_common()
