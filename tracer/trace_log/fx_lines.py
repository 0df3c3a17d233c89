"""One regular expression for the lines fx prints most, ahead of fx_tokens.py's token-by-token reading.

Invariant: :func:`read_line` answers for a line only what ``fx_tokens.Tokens(...).statements()`` answers
for it -- the same statements, built of the same expression tuples -- or None, and then the line is
read token by token (which reads it, or hands the text over to ``ast``). It answers only for a line that
is one of these, wholly (``$``), with every name checked not to be a keyword:

- ``name: "ann"`` with an optional comment: a placeholder of a flattened signature;
- ``name[: "ann"] = a.b.c(args)`` where each argument is ``[key = ]`` a name, a number (optionally
  negated), a string without escapes, or a list of those; then optionally ``;  a = b = None`` (fx freeing
  values: statements the builder skips, so none is returned for them) and a comment.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from tracer.trace_log.fx_tokens import KEYWORDS, Expr

__all__ = ["Line", "read_line"]

# Note [One regex per line first]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The token reader (a Python loop per token, a call per grammar rule) read the 8-rank job's graph texts no
# faster than ``ast`` (bench/RESULTS.md). Nine lines in ten of a logged graph are a call of an op on names
# and small constants, ``add: "f32[4, 8]" = torch.ops.aten.add.Tensor(x, 1);  x = None``: one C-speed
# match reads it, and the arguments are split by a second regex over the matched span. Anything else is
# left to the token reader, so this regex only has to be right about what it accepts.

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_NUM = r"\d+(?:\.\d+)?(?:e[-+]?\d+)?"
_STR = r"'[^'\\]*'|\"[^\"\\]*\""
_DOTTED = rf"{_NAME}(?:\.{_NAME})*"
_ATOM = rf"{_DOTTED}|-?{_NUM}|{_STR}"
_LIST = rf"\[(?:(?:{_ATOM})(?:, (?:{_ATOM}))*)?\]"
_ARG = rf"(?:{_NAME} ?= ?)?(?:{_LIST}|{_ATOM})"
_LINE = re.compile(
    rf"({_NAME})(?:: (\"[^\"\\]*\"))?(?: = (?:({_NAME}(?:\.{_NAME})*)\(((?:{_ARG})(?:, {_ARG})*)?\)|({_NAME})\[(\d+)\]))?"
    rf"((?: *; *{_NAME}(?: = {_NAME})* = None)*)(?:  *#.*)? *", re.ASCII)
_ARGS = re.compile(rf"(?:({_NAME}) ?= ?)?(?:(\[[^\]]*\])|(-?{_NUM})|({_STR})|({_DOTTED}))(?:, |$)", re.ASCII)
_ITEMS = re.compile(rf"(?:(-?{_NUM})|({_STR})|({_NAME}))(?:, |$)", re.ASCII)
_CONSTS = frozenset(("None", "True", "False"))


class Line:
    """What the builder reads of a statement's tokens: its text and (0-based) line index."""

    __slots__ = ("line", "last")

    def __init__(self, line: str, last: int) -> None:
        self.line, self.last = line, last


# Note [Each distinct line read once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Logged graphs repeat their lines: a joint graph's forward nodes are printed again, letter for letter, in
# the forward graph, its backward nodes in the backward graph, and a model's layers and recompiles repeat
# them across frames (64 % of the statement lines of the 84-distinct-frames log of bench/RESULTS.md
# 2026-11-27 occur earlier in it). What ``read_line`` answers is a function of (line, pos) alone, so the
# statements are kept for the last ``_SEEN_MAX`` distinct lines (the key is the text itself: a hit is an
# equal line) and an equal line gets the same statements back; only its ``Line`` (which names the line's
# index in its text) is new. They are shared, so nothing changes them: the builder (fx_code.py) reads
# the statements and their lists and builds every node field anew.
_SEEN_MAX = 4096  # 8192 held ~5 MB more at the peak for about the same time (bench/RESULTS.md 2026-11-27)
_seen: dict[tuple[str, int], Optional[list[Any]]] = {}


def read_line(line: str, pos: int, j: int) -> Optional[tuple[Line, list[Any]]]:
    """Line ``j`` (``line``, its statement from ``pos``) as (Line, statements), or None: read it token by token.
    An equal line's statements are the same objects (Note [Each distinct line read once])."""
    key = (line, pos)
    got = _seen.get(key, _seen)
    if got is _seen:
        if len(_seen) >= _SEEN_MAX:
            _seen.clear()
        got = _seen[key] = _statements(line, pos)
    return None if got is None else (Line(line, j), got)


def _statements(line: str, pos: int) -> Optional[list[Any]]:
    m = _LINE.fullmatch(line, pos)
    if m is None:
        return None
    target, ann, func, args, base, index, tail = m.groups()
    if (ann is None and func is None and base is None) or target in KEYWORDS:
        return None
    if tail and any(t in KEYWORDS for part in tail.split(";")[1:] for t in part.strip().split(" = ")[:-1]):
        return None  # "None = None": not a target (KEYWORDS holds None, True, False)
    if base is not None:  # "getitem = x[0]"
        if base in KEYWORDS or (index[0] == "0" and index.strip("0")):
            return None
        b, i = m.start(5), m.start(6)
        value: Expr = ("sub", b, m.end(6) + 1, (("name", b, m.end(5), base), ("const", i, m.end(6), index)))
        return [("assign", [target], value) if ann is None else ("ann", target, ann[1:-1], value)]
    if func is None:
        return [("ann", target, ann[1:-1], None)]
    parts = func.split(".")
    s = m.start(3)
    e: Expr = ("name", s, s + len(parts[0]), parts[0])
    end = e[2]
    for p in parts:
        if p in KEYWORDS:
            return None
    for p in parts[1:]:
        end += 1 + len(p)
        e = ("attr", s, end, (e, p))
    values = _arguments(line, m.start(4), m.end(4)) if args is not None else ([], [])
    if values is None:
        return None
    call: Expr = ("call", s, m.end(4) + 1 if args is not None else m.end(3) + 2, (e, *values))
    if ann is None:
        return [("assign", [target], call)]
    return [("ann", target, ann[1:-1], call)]


def _arguments(line: str, start: int, end: int) -> Optional[tuple[list[Expr], list[tuple[str, Expr]]]]:
    args: list[Expr] = []
    kwargs: list[tuple[str, Expr]] = []
    pos = start
    for a in _ARGS.finditer(line, start, end):
        if a.start() != pos:
            return None  # the regex skipped something: read it token by token
        pos = a.end()
        key, bracket, num, string, name = a.groups()
        s = a.start(2) if bracket else a.start(3) if num else a.start(4) if string else a.start(5)
        if bracket:
            items = _items(line, s + 1, a.end(2) - 1)
            if items is None:
                return None
            v: Expr = ("list", s, a.end(2), items)
        else:
            v = _atom(num, string, name, s)  # type: ignore[assignment]
            if v is None:
                return None
        if key is not None:
            if key in KEYWORDS or any(key == k for k, _ in kwargs):
                return None
            kwargs.append((key, v))
        elif kwargs:
            return None
        else:
            args.append(v)
    return (args, kwargs) if pos == end else None


def _items(line: str, start: int, end: int) -> Optional[list[Expr]]:
    items: list[Expr] = []
    pos = start
    for a in _ITEMS.finditer(line, start, end):
        v = _atom(*a.groups(), a.start())
        if v is None or a.start() != pos:
            return None
        pos = a.end()
        items.append(v)
    return items if pos == end else None


def _atom(num: Optional[str], string: Optional[str], name: Optional[str], s: int) -> Optional[Expr]:
    if num is not None:
        digits = num.lstrip("-")
        if digits.isdigit() and digits[0] == "0" and digits.strip("0"):
            return None  # "01": not Python
        if num[0] == "-":
            return ("unary", s, s + len(num), ("-", ("const", s + 1, s + len(num), digits)))
        return ("const", s, s + len(num), num)
    if string is not None:
        return ("const", s, s + len(string), string)
    assert name is not None
    if "." in name:  # "torch.contiguous_format": an attribute of a name
        parts = name.split(".")
        if any(p in KEYWORDS for p in parts):
            return None
        e: Expr = ("name", s, s + len(parts[0]), parts[0])
        for p in parts[1:]:
            e = ("attr", s, e[2] + 1 + len(p), (e, p))
        return e
    if name in _CONSTS:
        return ("const", s, s + len(name), name)
    if name in KEYWORDS:
        return None
    return ("name", s, s + len(name), name)
