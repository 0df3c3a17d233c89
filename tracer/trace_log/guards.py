"""Guards from a TORCH_TRACE log: the leaves of the C++ guard tree, or ``dynamo_guards``' code parts.

Invariant: a guard is what the log's text says, nothing added: a source is the one its enclosing
manager line names ("" where none does), a user stack only what the verbose code part prints after
the user's line (Note [Reading the C++ guard tree]); torch 2.13's formats (Note [Guards from a log]).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, Optional

from tracer.model.frame import Frame
from tracer.model.guards import Guard
from tracer.model.lazy import on_first_read
from tracer.model.read_only import read_only_guard
from tracer.trace_log.deferred import loading_read_only
from tracer.trace_log.events import AttemptLog, LogState

__all__ = ["cpp_tree", "fill_guards", "guards_of", "shared_guards_of"]


# Note [Guards from a log]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# Torch 2.13 logs a frame's guards twice at most: ``dynamo_cpp_guards_str``, the C++ guard tree with
# every guard installed (torch/_dynamo/guards.py, ``GuardManager`` ``__str__``), logged for every
# compile with guards; and ``dynamo_guards``, one ``{"code", "stack", "user_stack"}`` per code part
# ``add_code_part`` is given, which in 2.13 are only AOTAutograd's input aliasing and storage-overlap
# checks (the builder's code lists are never filled), each also installed in the tree. So the tree is
# read when it is logged; the JSON list only when no tree is, each entry a Guard with its code and
# user stack, its kind and source unknown ("": torch logs none).
def fill_guards(frame: Frame, a: AttemptLog, st: LogState) -> None:
    """Frame.guards by Note [Guards from a log]."""
    if a.cpp_guards:  # read on first access, like the graphs (Note [Problems of deferred parses])
        text = a.cpp_guards
        read = shared_guards_of if loading_read_only() else guards_of  # Note [Read-only graphs] in deferred.py
        on_first_read(frame, "guards", lambda: frame.guards.extend(read(text)))
    elif a.guards_json is not None:
        frame.guards.extend(_guard_json(g, st) for g in a.guards_json if isinstance(g, dict))


def _guard_json(g: dict[str, Any], st: LogState) -> Guard:
    code = g.get("code")
    return Guard(kind="", source="", code=[code] if isinstance(code, str) else [], user_stack=st.stack(g.get("user_stack")))


# Note [One read per distinct guard tree]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Like graph texts (Note [One parse per distinct graph text] in deferred.py), a log repeats equal
# guard trees (every rank, every step compiled again): the leaves of the last ``_TREES_MAX`` distinct
# texts are kept as tuples of strings, and each frame gets its own Guard objects and lists. Eight: the
# repeats found are a step's copy of the frame just before; 32 held 1.7 MB more at the peak of the
# distinct-frames log's report and read no tree fewer there, in the 106 MB repeated log or in a real
# 8-rank DDP job (whose ranks' trees all differ; bench/RESULTS.md, 2026-11-27).
_TREES_MAX = 8
_Leaf = tuple[str, str, tuple[str, ...], tuple[str, ...]]  # a leaf's (kind, source, code, user_stack), as read
_trees: OrderedDict[str, list[_Leaf]] = OrderedDict()


def guards_of(text: str) -> list[Guard]:
    """``cpp_tree(text)``, read once per distinct text (Note [One read per distinct guard tree])."""
    kept = _trees.get(text)
    if kept is None:
        kept = _trees[text] = _leaves_of(text)
        if len(_trees) > _TREES_MAX:
            _trees.popitem(last=False)
    return [Guard(kind, source, list(code), list(stack)) for kind, source, code, stack in kept]


_shared_trees: OrderedDict[str, tuple[Guard, ...]] = OrderedDict()

# Note [One read-only guard per distinct leaf]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A job's ranks log guard trees that differ only where a guard names a per-process object id
# (``___check_type_id(L['fn'], 94029564857968)``, ``ID_MATCH``): no two ranks' trees are equal, so
# sharing by tree shares nothing between ranks, though most leaves are equal (bench/RESULTS.md: 90 of
# a 588-line tree's lines name an id). A read-only capture's trees are still read each on its own
# (``cpp_tree`` of the rank's own text, so every guard is exactly that text's), and then each leaf
# is the one read-only Guard of its fields, ``(kind, source, code, user_stack)``, kept for every
# equal leaf of any tree: an id guard stays the rank's own (its code differs), every other guard is
# shared. Guards are immutable there, so sharing an equal one is seen only by ``is``; each frame
# still has its own ``guards`` list. The table forgets everything at ``_LEAVES_MAX`` leaves.
_LEAVES_MAX = 1 << 16
_leaves: dict[_Leaf, Guard] = {}


def shared_guards_of(text: str) -> tuple[Guard, ...]:
    """``guards_of(text)`` for a read-only capture: the same read-only Guards for every equal text, and
    for every equal leaf of any text (Note [Read-only graphs] in deferred.py, Note [One read-only guard
    per distinct leaf]; at most ``_TREES_MAX`` texts kept)."""
    kept = _shared_trees.get(text)
    if kept is None:
        kept = _shared_trees[text] = tuple(map(_leaf, _leaves_of(text)))
        if len(_shared_trees) > _TREES_MAX:
            _shared_trees.popitem(last=False)
    return kept


def _leaf(key: _Leaf) -> Guard:
    """The one read-only Guard of the leaf ``key`` (Note [One read-only guard per distinct leaf]): looked up
    by the fields as read, a Guard made only for a leaf not seen before."""
    kept = _leaves.get(key)
    if kept is None:
        if len(_leaves) >= _LEAVES_MAX:
            _leaves.clear()
        kind, source, code, stack = key
        kept = _leaves[key] = read_only_guard(kind, source, code, stack)
    return kept


# Note [Reading the C++ guard tree]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``GuardManagerWrapper.__str__`` (torch/_dynamo/guards.py) writes one line per manager and per leaf
# guard, indented by "| " per level under "+- ". A manager line is "<Kind>Manager: source=S,
# accessed_by=A, type=T, tag_safe=(..)" (``get_manager_line``); a dict's keys and values are
# "KeyManager: GuardManager: source=S, type=T, ..." and "ValueManager: ..." (no accessor) under a
# "KeyValueManager pair at index=N" line; the root is "RootGuardManager". A leaf is "KIND: check"
# followed, when the guard has a user stack, by "  # <user's source line>  # file:LINE in fn" (only
# "  # file:LINE in fn", torch's own frame, when it has Dynamo's stack only: no user stack); a
# relational guard shared by several managers is written whole once, then as its bare KIND (its
# check is not repeated: code []). Each leaf takes the source of the nearest manager above it.
_MANAGER_SOURCE = re.compile(r"source=(?P<source>.*?)(?:, accessed_by=.*)?, type=")


def cpp_tree(text: str) -> list[Guard]:
    """Leaf guards of the C++ guard tree text, by Note [Reading the C++ guard tree]."""
    return [Guard(kind, source, list(code), list(stack)) for kind, source, code, stack in _leaves_of(text)]


# Note [Guard tree lines read once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What a line of a guard tree says -- its depth, and a manager's source or a leaf's kind, check and
# user stack -- depends on that line alone; only the source a leaf takes depends on the lines above it
# (the nearest manager). A job's ranks log trees whose lines are mostly equal (they differ where a guard
# names an object id, Note [One read-only guard per distinct leaf]), and a log repeats trees, so each
# distinct line is read once, kept for the last ``_LINES_MAX`` distinct lines, and each tree's walk
# only keeps the stack of managers' sources. A line read from the table is what reading it again would
# give, so a tree reads exactly as if each line were read on its own.
_LINES_MAX = 1 << 14
_lines: dict[str, Any] = {}  # line -> (depth, kind or None for a manager or "" for neither, check or source, stack)
_NO_LINE = (-1, "", (), ())  # a line of no tree ("+- " nowhere in it)


def _line(line: str) -> tuple[int, Optional[str], Any, tuple[str, ...]]:
    """What one line of a guard tree says (Note [Reading the C++ guard tree])."""
    bar = line.find("+- ")
    if bar < 0:
        return _NO_LINE
    depth = line[:bar].count("|")
    head, _, rest = line[bar + 3:].partition(": ")
    if head.endswith("Manager"):
        m = _MANAGER_SOURCE.search(rest)
        return depth, None, m.group("source") if m else "", ()
    if not head.isupper():  # "KeyValueManager pair at index=N", or no line of the tree
        return depth, "", (), ()
    check, _, comment = rest.partition("  # ")
    check = check.strip()
    return depth, head, (check,) if check else (), tuple([c.strip() for c in comment.split("  # ")[1:]])


def _leaves_of(text: str) -> list[_Leaf]:
    """``cpp_tree(text)`` as (kind, source, code, user_stack) tuples, no Guard made; each distinct line
    read once (Note [Guard tree lines read once])."""
    out: list[_Leaf] = []
    sources: list[tuple[int, str]] = []  # (depth, source) of the enclosing managers
    lines = _lines
    for line in text.split("\n"):
        said = lines.get(line)
        if said is None:
            if len(lines) >= _LINES_MAX:
                lines.clear()
            said = lines[line] = _line(line)
        depth, kind, what, stack = said
        if depth < 0:
            continue
        while sources and sources[-1][0] >= depth:
            sources.pop()
        if kind is None:
            sources.append((depth, what))
        elif kind:
            out.append((kind, sources[-1][1] if sources else "", what, stack))
    return out
