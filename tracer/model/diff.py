"""FrameDiff: what differs between two compile attempts (guards, graph inputs, symbols, graphs,
HOP bodies, AOT saved values), as plain data, with its one-line summary and its text form.

Invariant: a FrameDiff names only nodes, graphs and bodies of its two frames (``a`` and ``b``;
:func:`diff_problems` checks it, ``validate()`` runs it on every recompile's diff), and it is
empty (``not d``) exactly when no list of it holds a change, so ``tracer.diff(f, f)`` is empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = [
    "AotDiff",
    "BodyChange",
    "FrameDiff",
    "GraphDiff",
    "GuardChange",
    "InputChange",
    "NodePair",
    "SavedChange",
    "diff_problems",
    "frame_graphs",
]

# CHANGES: every ``change`` field below; INPUT_WHATS: what an InputChange says about a graph input.
CHANGES = ("added", "removed", "changed")
INPUT_WHATS = ("dynamic", "static", "size", "dtype", "requires_grad", "device", "kind", "value",
               "added", "removed", "constant_to_input", "input_to_constant")


@dataclass
class GuardChange:
    """A guard only one frame has, or one whose check differs (matched by kind + source)."""

    change: str  # one of CHANGES
    kind: str  # TENSOR_MATCH, SHAPE_ENV, CONSTANT_MATCH, ...
    source: str  # "L['x']", "" for global guards
    before: list[str] = field(default_factory=list)  # the check(s) in frame a ([] when added)
    after: list[str] = field(default_factory=list)  # the check(s) in frame b ([] when removed)

    def __str__(self) -> str:
        head = f"{self.kind} {self.source}".strip()
        if self.change != "changed":
            code = self.after if self.change == "added" else self.before
            return f"{'+' if self.change == 'added' else '-'} {head}" + "".join(f"\n    {c}" for c in code)
        lines = [f"~ {head}"]
        lines += [f"    - {c}" for c in self.before if c not in self.after]
        lines += [f"    + {c}" for c in self.after if c not in self.before]
        return "\n".join(lines)


@dataclass
class InputChange:
    """What changed about one input of the root graph, matched by its source (``L['x']``)."""

    source: str  # the guarded source ("L['x']"), else the placeholder's target
    what: str  # one of INPUT_WHATS
    before: str  # the value in frame a: "3", "float32", "False", "f32[3]", "0.5", "" when absent
    after: str  # the value in frame b
    dim: Optional[int] = None  # what in ("dynamic", "static", "size"): the dimension
    a: str = ""  # placeholder in frame a's root graph ("" when none)
    b: str = ""  # placeholder in frame b's root graph

    def __str__(self) -> str:
        where = f" in dim {self.dim}" if self.dim is not None else ""
        word = {"dynamic": "went dynamic", "static": "went static", "constant_to_input": "constant became a graph input",
                "input_to_constant": "graph input became a constant"}.get(self.what, f"{self.what} changed")
        if self.what in ("added", "removed"):
            return f"{self.source} input {self.what} ({self.before or self.after})"
        return f"{self.source} {word}{where} ({self.before} → {self.after})"


@dataclass
class NodePair:
    """Two nodes the alignment matched: ``a`` in the first graph, ``b`` in the second."""

    a: str
    b: str
    changes: list[str] = field(default_factory=list)  # what differs ("type f32[3] → f32[s0]", "args ..."); [] = same


@dataclass
class GraphDiff:
    """The alignment of two graphs (root, a HOP body, or an AOT graph). See Note [Graph alignment]."""

    a: str  # qualified graph name in frame a: "" root, "wrap_body_0", "aot.forward", ...
    b: str  # the graph of frame b it is aligned with
    pairs: list[NodePair] = field(default_factory=list)  # every matched node, in b's order
    removed: list[str] = field(default_factory=list)  # nodes of a without partner, in a's order
    added: list[str] = field(default_factory=list)  # nodes of b without partner, in b's order

    @property
    def changed(self) -> list[NodePair]:
        return [p for p in self.pairs if p.changes]

    def partner(self, name: str, side: str = "a") -> Optional[str]:
        """The partner of node ``name`` of side ``side`` ("a" or "b"), None when it has none."""
        for p in self.pairs:
            if (p.a if side == "a" else p.b) == name:
                return p.b if side == "a" else p.a
        return None

    def __bool__(self) -> bool:
        return bool(self.removed or self.added or any(p.changes for p in self.pairs))

    def __repr__(self) -> str:
        return f"GraphDiff({self.a or 'root'!r}, +{len(self.added)} -{len(self.removed)} ~{len(self.changed)})"


@dataclass
class BodyChange:
    """A HOP body only one frame has, or whose graph or inputs differ (matched by call node, then name)."""

    change: str  # one of CHANGES
    a: str  # qualified body name in frame a ("" when added)
    b: str  # in frame b ("" when removed)
    hop: str  # the HOP that calls it
    changes: list[str] = field(default_factory=list)  # "3 nodes changed", "inputs operand,lifted_freevar → ..."


@dataclass
class SavedChange:
    """A value the forward saves for the backward in only one frame, or with another size."""

    change: str  # one of CHANGES
    a: str  # forward node name in frame a ("" when added)
    b: str  # in frame b ("" when removed)
    nbytes_a: int = 0
    nbytes_b: int = 0


@dataclass
class AotDiff:
    """What AOTAutograd did differently: mode, and the saved-for-backward values."""

    mode_a: str  # "training", "inference", "" when the frame has no AOT record
    mode_b: str
    saved: list[SavedChange] = field(default_factory=list)
    saved_bytes_a: int = 0
    saved_bytes_b: int = 0

    def __bool__(self) -> bool:
        return bool(self.mode_a != self.mode_b or self.saved)


@dataclass
class FrameDiff:
    """What differs between frame ``a`` and frame ``b``; ``print`` it for a text diff.

    ``not d`` when nothing differs (``tracer.diff(f, f)``); ``d.summary`` is one line.
    """

    a: str  # compile id of the first frame ("0/0")
    b: str  # compile id of the second frame ("0/1")
    reason: str = ""  # when b recompiled a: the failed guard, as Dynamo reported it (id prefix removed)
    status: list[str] = field(default_factory=list)  # [status_a, status_b] when they differ, else []
    guards: list[GuardChange] = field(default_factory=list)  # in frame b's guard order, then a's removed ones
    inputs: list[InputChange] = field(default_factory=list)  # in frame b's placeholder order
    symbols_added: list[str] = field(default_factory=list)  # free symbols (s0, u0) only frame b's graphs use
    symbols_removed: list[str] = field(default_factory=list)
    graphs: list[GraphDiff] = field(default_factory=list)  # root first, then bodies, then AOT graphs
    bodies: list[BodyChange] = field(default_factory=list)
    aot: Optional[AotDiff] = None  # None when neither frame has an AOT record
    problems: list[str] = field(default_factory=list)  # what could not be compared, and why

    def __bool__(self) -> bool:
        return bool(self.status or self.guards or self.inputs or self.symbols_added or self.symbols_removed
                    or any(self.graphs) or self.bodies or self.aot)

    def graph(self, a: str = "") -> GraphDiff:
        """The GraphDiff of frame a's graph ``a`` ("" root, "aot.forward", a body name)."""
        for g in self.graphs:
            if g.a == a:
                return g
        raise KeyError(f"no graph {a!r} in this diff (graphs: {[g.a for g in self.graphs]})")

    @property
    def summary(self) -> str:
        """One line: why it recompiled (when known) and what changed, or "no difference"."""
        return _summary(self)

    def __repr__(self) -> str:
        return f"FrameDiff({self.a} → {self.b}: {self.summary[:80]!r})"

    def __str__(self) -> str:
        return _text(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        from tracer import display

        return display.mimebundle(self, include=include, exclude=exclude)


def headline(reason: str) -> str:
    """The first line of a guard failure without the source comment Dynamo appends ("  # x = ...")."""
    first = reason.splitlines()[0] if reason else ""
    return re.sub(r"\s{2,}#.*$", "", first).strip()


def _count(n: int, what: str, plural: str = "") -> str:
    return f"{n} {what}" if n == 1 else f"{n} {plural or what + 's'}"


def _summary(d: FrameDiff) -> str:
    if not d:
        return "no difference"
    parts = []
    if d.reason:
        parts.append(f"recompiled because {headline(d.reason)}")
    if d.status:
        parts.append(f"status {d.status[0]} → {d.status[1]}")
    parts += [str(i) for i in d.inputs[:3]]
    if len(d.inputs) > 3:
        parts.append(f"{len(d.inputs) - 3} more input changes")
    root = next((g for g in d.graphs if g.a == "" and g.b == ""), None)
    if root is not None and root:
        parts.append(f"root graph: {_count(len(root.changed), 'node')} changed, {len(root.added)} added, "
                     f"{len(root.removed)} removed")
    if d.bodies:
        parts.append(f"{_count(len(d.bodies), 'HOP body', 'bodies')} differ{'s' if len(d.bodies) == 1 else ''}")
    if d.guards:
        kinds = sorted({g.kind for g in d.guards})
        parts.append(f"{_count(len(d.guards), 'guard')} differ{'s' if len(d.guards) == 1 else ''} ({', '.join(kinds)})")
    if d.aot and d.aot.saved:
        parts.append(f"saved for backward {d.aot.saved_bytes_a} → {d.aot.saved_bytes_b} bytes")
    if d.aot and d.aot.mode_a != d.aot.mode_b:
        parts.append(f"AOT {d.aot.mode_a or 'none'} → {d.aot.mode_b or 'none'}")
    return "; ".join(parts)


def _text(d: FrameDiff) -> str:
    lines = [f"diff {d.a} → {d.b}: {d.summary}"]
    if d.inputs:
        lines.append("inputs:")
        lines += [f"  {i}" for i in d.inputs]
    if d.symbols_added or d.symbols_removed:
        lines.append(f"symbols: +{d.symbols_added} -{d.symbols_removed}")
    if d.guards:
        lines.append("guards:")
        lines += ["  " + str(g).replace("\n", "\n  ") for g in d.guards]
    for g in d.graphs:
        if not g:
            continue
        title = g.a or "root" if g.a == g.b else f"{g.a or 'root'} ↔ {g.b or 'root'}"
        lines.append(f"graph {title}:")
        lines += [f"  - {n}" for n in g.removed]
        lines += [f"  + {n}" for n in g.added]
        lines += [f"  ~ {p.a}" + ("" if p.a == p.b else f" ↔ {p.b}") + f": {'; '.join(p.changes)}" for p in g.changed]
    for bc in d.bodies:
        lines.append(f"body {bc.change}: {bc.a or bc.b} ({bc.hop})" + (f": {'; '.join(bc.changes)}" if bc.changes else ""))
    if d.aot:
        for s in d.aot.saved:
            sign = {"added": "+", "removed": "-", "changed": "~"}[s.change]
            lines.append(f"saved {sign} {s.a or s.b}: {s.nbytes_a} → {s.nbytes_b} bytes")
    lines += [f"problem: {p}" for p in d.problems]
    return "\n".join(lines)


AOT_GRAPHS = ("joint", "forward", "backward", "inference")  # Aot attributes compared, as "aot.<name>"


def frame_graphs(frame: Any) -> dict[str, Any]:
    """Every graph of ``frame`` a GraphDiff may name: ``frame.graphs()`` plus "aot.forward", ..."""
    out = dict(frame.graphs())
    if frame.aot is not None:
        out.update({f"aot.{k}": getattr(frame.aot, k) for k in AOT_GRAPHS if getattr(frame.aot, k) is not None})
    return out


def diff_problems(d: FrameDiff, frame_a: Any, frame_b: Any) -> list[str]:
    """Every name ``d`` uses that is not in ``frame_a`` / ``frame_b`` (Frames). Used by ``validate()``."""
    graphs_a, graphs_b = frame_graphs(frame_a), frame_graphs(frame_b)
    where = f"diff {d.a}→{d.b}"
    out = []
    for g in d.graphs:
        ga, gb = graphs_a.get(g.a), graphs_b.get(g.b)
        if ga is None or gb is None:
            out.append(f"{where}: graph {g.a!r}/{g.b!r} is not in the frames")
            continue
        na, nb = {n.name for n in ga.nodes}, {n.name for n in gb.nodes}
        bad = [x for x in [*(p.a for p in g.pairs), *g.removed] if x not in na]
        bad += [x for x in [*(p.b for p in g.pairs), *g.added] if x not in nb]
        if bad:
            out.append(f"{where}: graph {g.a or 'root'!r} names nodes not in its frames: {bad[:5]}")
    for c in d.bodies:
        if (c.a and c.a not in graphs_a) or (c.b and c.b not in graphs_b):
            out.append(f"{where}: body {c.a or c.b!r} is not in its frame")
    roots_a, roots_b = {n.name for n in frame_a.graph.nodes}, {n.name for n in frame_b.graph.nodes}
    for c in d.inputs:
        if (c.a and c.a not in roots_a) or (c.b and c.b not in roots_b):
            out.append(f"{where}: input {c.source!r} names a node not in the root graphs")
    return out
