"""The tokens and expressions of one line of fx's printed code, for tracer/trace_log/fx_code.py.

Invariant: :class:`Tokens` reads a line only as Python reads it, or raises :class:`HandOver`: the
tokens of fx's code (names, keywords, numbers, strings without escapes, operators, a trailing comment),
and by recursive descent the expressions fx writes for a node's arguments (see Note [A hand-written
reader of fx code] in fx_code.py for what is read and why it is hand-written).
"""

from __future__ import annotations

import keyword
import re
from typing import Any

__all__ = ["BINOPS", "CMP", "UNARY", "KEYWORDS", "Expr", "HandOver", "Tokens", "dotted", "names_of"]

# one token after optional spaces; the last alternative takes any other character, so that no character
# is skipped over (a character no token starts with is a text this reader hands over)
_TOKEN = re.compile(r"( *)(?:(\d+\.?\d*(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|('[^'\\\n]*'|\"[^\"\\\n]*\")"
                    r"|(\*\*|//|<<|>>|==|!=|<=|>=|[-+*/%@&|^~<>()\[\],.:;=#])|(.))")
KEYWORDS = frozenset(keyword.kwlist)
_CONSTANTS = frozenset(("None", "True", "False"))
_KIND = {**{k: "k" for k in KEYWORDS}, **{c: "c" for c in _CONSTANTS}}  # other names: "i"
_OPEN = {"(": 1, "[": 1, ")": -1, "]": -1}
BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow",
           "@": "matmul", "&": "and_", "|": "or_", "^": "xor", "<<": "lshift", ">>": "rshift"}
CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
UNARY = {"-": "neg", "+": "pos", "~": "invert"}

# an expression: (kind, start, end, payload); kinds "name" (payload: the id), "const" (the text), "attr"
# (base, attr), "call" (func, args, [(key, value)]), "sub" (base, index), "list"/"tuple" (items),
# "unary" (op, operand), "bin"/"cmp" (op, left, right)
Expr = tuple[str, int, int, Any]


class HandOver(Exception):
    """The text holds something this reader does not read: the ``ast`` path reads it."""


class Tokens:
    """The tokens of one statement (a line, or more while a bracket is open), and a recursive descent over them."""

    def __init__(self, lines: list[str], j: int, pos: int) -> None:
        """Line ``j`` from ``pos`` on, and the lines after it while a bracket is open (as one text, joined
        by newlines: ``self.line``; ``self.last``: the index of its last line)."""
        toks: list[tuple[str, int, int, str, int]] = []  # (kind, start, end, text, line index)
        append = toks.append
        depth, base, parts = 0, 0, []
        while True:
            line = lines[j]
            if parts and not line.isascii():
                raise HandOver
            parts.append(line)
            pos += base
            for space, num, ident, string, op, _other in _TOKEN.findall(line, pos - base):
                start = pos + len(space)
                if ident:
                    pos = start + len(ident)
                    append((_KIND.get(ident, "i"), start, pos, ident, j))
                elif op:
                    if op == "#":
                        break
                    pos = start + len(op)
                    if op in _OPEN:
                        depth += _OPEN[op]
                    append((op, start, pos, op, j))
                elif num:
                    if num.isdigit() and num[0] == "0" and num.strip("0"):
                        raise HandOver  # "01": not Python
                    pos = start + len(num)
                    append(("c", start, pos, num, j))
                elif string:
                    pos = start + len(string)
                    append(("c", start, pos, string, j))
                else:
                    raise HandOver  # a character no token starts with
            if depth <= 0 or j + 1 >= len(lines):
                break
            j, pos, base = j + 1, 0, base + len(line) + 1
        self.line, self.last = "\n".join(parts), j
        toks.append(("", len(self.line), len(self.line), "", j))
        self.toks, self.i = toks, 0

    def kind(self) -> str:
        return self.toks[self.i][0]

    def skip(self) -> bool:
        self.i += 1
        return True

    def take(self, kind: str) -> tuple[str, int, int, str, int]:
        t = self.toks[self.i]
        if t[0] != kind:
            raise HandOver
        self.i += 1
        return t

    def string(self) -> str:
        t = self.take("c")
        if t[3][0] not in "'\"":
            raise HandOver
        return t[3][1:-1]

    def end(self) -> None:
        if self.kind():
            raise HandOver

    def statements(self) -> list[Any]:
        """The line's statements: ("ann", name, ann, value or None), ("assign", [targets], value),
        ("flatten",) for fx's pytree unpacking, ("return", value or None)."""
        out: list[Any] = []
        while True:
            k = self.kind()
            if k == "k" and self.toks[self.i][3] == "return":
                self.skip()
                out.append(("return", None if self.kind() in ("", ";") else self.value()))
            elif k == "i" and self.toks[self.i + 1][0] == ":":
                target = self.toks[self.i][3]
                self.i += 2
                ann = self.string()
                out.append(("ann", target, ann, self.value() if self.kind() == "=" and self.skip() else None))
            elif k == "i" and self.toks[self.i + 1][0] == ",":
                while self.kind() == "i" and self.toks[self.i + 1][0] == ",":
                    self.i += 2
                if self.kind() == "i":
                    self.skip()
                self.take("=")
                value = self.value()
                if value[0] != "call" or not dotted(value[3][0]).endswith("tree_flatten_spec"):
                    raise HandOver
                out.append(("flatten",))
            else:
                targets = [self.take("i")[3]]
                self.take("=")
                value = self.value()
                while self.kind() == "=" and value[0] == "name":
                    self.skip()
                    targets.append(value[3])
                    value = self.value()
                out.append(("assign", targets, value))
            if self.kind() == ";":
                self.skip()
            if not self.kind():
                return out
            if self.toks[self.i - 1][0] != ";":
                raise HandOver

    def value(self) -> Expr:
        """A node's expression: an argument, ``not a``, ``a OP b`` or ``a CMP b`` of unary operands."""
        t = self.toks[self.i]
        if t[0] == "k" and t[3] == "not":
            self.skip()
            e = self.unary()
            return ("unary", t[1], e[2], ("not", e))
        left = self.unary()
        op = self.kind()
        if op in BINOPS or op in CMP:
            if op == "**" and left[0] == "unary":
                raise HandOver  # "-a ** b" is -(a ** b)
            self.skip()
            right = self.unary()
            return ("bin" if op in BINOPS else "cmp", left[1], right[2], (op, left, right))
        return left

    def unary(self) -> Expr:
        t = self.toks[self.i]
        if t[0] in UNARY:
            self.skip()
            e = self.unary()
            return ("unary", t[1], e[2], (t[0], e))
        return self.primary()

    def primary(self) -> Expr:
        t = self.toks[self.i]
        self.i += 1
        k = t[0]
        if k == "i":
            e: Expr = ("name", t[1], t[2], t[3])
        elif k == "c":
            e = ("const", t[1], t[2], t[3])
        elif k in ("(", "["):
            close = ")" if k == "(" else "]"
            items, comma = self.items(close)
            end = self.take(close)[2]
            if k == "(" and len(items) == 1 and not comma:
                raise HandOver  # "(a)" is a, not a tuple
            e = ("tuple" if k == "(" else "list", t[1], end, items)
        else:
            raise HandOver
        while True:
            k = self.kind()
            if k == ".":
                self.skip()
                e = ("attr", e[1], self.take("i")[2], (e, self.toks[self.i - 1][3]))
            elif k == "(":
                self.skip()
                args: list[Expr] = []
                kwargs: list[tuple[str, Expr]] = []
                while self.kind() != ")":
                    if self.kind() == "i" and self.toks[self.i + 1][0] == "=":
                        key = self.toks[self.i][3]
                        self.i += 2
                        if any(key == k2 for k2, _ in kwargs):
                            raise HandOver
                        kwargs.append((key, self.unary()))
                    elif kwargs:
                        raise HandOver  # a positional argument after a keyword one
                    else:
                        args.append(self.unary())
                    if self.kind() != ",":
                        break
                    self.skip()
                e = ("call", e[1], self.take(")")[2], (e, args, kwargs))
            elif k == "[":
                self.skip()
                index = self.unary()
                e = ("sub", e[1], self.take("]")[2], (e, index))
            else:
                return e

    def items(self, close: str) -> tuple[list[Expr], bool]:
        items: list[Expr] = []
        comma = False
        while self.kind() != close:
            items.append(self.unary())
            comma = self.kind() == ","
            if not comma:
                break
            self.skip()
        return items, comma


def dotted(e: Expr) -> str:
    parts: list[str] = []
    while e[0] == "attr":
        parts.append(e[3][1])
        e = e[3][0]
    if e[0] != "name":
        return ""
    parts.append(e[3])
    return ".".join(reversed(parts))


def names_of(e: Expr, out: list[str]) -> list[str]:
    """The names ``e`` reads, in source order (as graph_text.py's ``names_of``)."""
    kind, _, _, p = e
    if kind == "name":
        out.append(p)
    elif kind == "attr" or kind == "unary":
        names_of(p[0] if kind == "attr" else p[1], out)
    elif kind == "call":
        names_of(p[0], out)
        for a in p[1]:
            names_of(a, out)
        for _, v in p[2]:
            names_of(v, out)
    elif kind == "sub":
        names_of(p[0], out)
        names_of(p[1], out)
    elif kind == "list" or kind == "tuple":
        for a in p:
            names_of(a, out)
    elif kind == "bin" or kind == "cmp":
        names_of(p[1], out)
        names_of(p[2], out)
    return out
