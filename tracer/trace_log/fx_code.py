"""A hand-written reader of the code fx's ``print_readable`` generates, the fast path of ``parse_readable``.

Invariant: :func:`parse_readable` returns what tracer/trace_log/graph_text.py's ``parse_readable`` (``ast``)
returns for the same text, or is that function's answer: :func:`parse_fast` reads only the statement forms
fx writes (below), every one checked to be valid Python as it is read, and answers ``None`` ("hand over")
for anything else, a statement the ``ast`` path would record as an error included.
"""

from __future__ import annotations

import re
from sys import intern
from typing import Any, Optional

from tracer.model.graph import Graph, Node
from tracer.trace_log.fx_lines import read_line
from tracer.trace_log.fx_tokens import BINOPS, CMP, KEYWORDS, UNARY, Expr, HandOver, Tokens, dotted, names_of
from tracer.trace_log.graph_text import (
    ParsedModule,
    body_text,
    function_target,
    meta_of_annotation,
    source_after,
)
from tracer.trace_log.graph_text import parse_readable as parse_readable_ast

__all__ = ["parse_fast", "parse_readable"]

# Note [A hand-written reader of fx code]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``ast.parse`` of the distinct graph texts and the walk of its tree were about 37 % of the CPU of a
# read-only fully read load of a real 8-rank job's logs (bench/RESULTS.md, 2026-11-26). No library reads
# this subset faster: ``ast`` builds a positioned node for every token of all of Python, ``tokenize`` is
# pure Python and slower than ``ast``, and parser generators (lark, parso) are pure Python too. fx writes
# one simple statement per node (torch/fx/graph.py ``_gen_python_code``): ``name: "ann" = target(args);
# a = b = None``, ``l_x_ = L_x_``, ``add = a + b``, ``getitem = x[0]``, ``return (a,)``, its "# File:"
# comments, a long signature or return one item a line, and
# ``print_readable`` nests HOP bodies as classes. This module reads exactly those forms: first one regex
# per line (fx_lines.py), else a regex tokenizer and a small recursive descent (fx_tokens.py), and builds the nodes as graph_text.py's
# ``_GraphBuilder`` does. It is not a Python parser: what it does not know it hands over to ``ast``
# (the whole text, so no text is read half by each), and each form it accepts is accepted only where
# Python would parse it the same way (keywords, number forms, strings without escapes, one comparison,
# no operator precedence beyond one binary operator of unary operands). Equality with the ``ast``
# reading is tested on every graph the tests log (tests/test_trace_log_fx_code.py) and fuzzed
# (tests/test_trace_log_fx_code_fuzz.py).

_BAD = re.compile("[\t\r\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # splitlines() and ast would disagree
_CLASS = re.compile(r"class ([A-Za-z_][A-Za-z0-9_]*)\([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\): *")


def parse_readable(text: str, name: str = "") -> ParsedModule:
    """graph_text.py's ``parse_readable``, faster on what fx prints; same result, same exceptions."""
    return parse_fast(text, name) or parse_readable_ast(text, name)


def parse_fast(text: str, name: str = "") -> Optional[ParsedModule]:
    """The ``ast`` path's ParsedModule of ``text``, or None where this reader hands over."""
    text = text.lstrip("\n")
    if not text.startswith("class ") or _BAD.search(text):
        return None
    lines = text.splitlines()
    try:
        out, i, _ = _Reader(lines).module(1, 0, name)
    except HandOver:
        return None
    # a statement after the top class: ast reads the class alone, or fails on the statement (See Note
    # [One indentation walk])
    return out if i == len(lines) else None


# Note [One indentation walk]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A class body and a forward body are walked by one function with one rule, Python's for the
# blocks fx prints: blank and comment-only lines are no statements; a block's first statement sits
# right of its header, and every other one at that same column; the block ends at the first statement
# at or left of its header's column (the next statement of an enclosing block, or the end of the
# text); a line between the two columns, right of the block's, or not ASCII is handed over. The lines
# a bracketed statement continues on are its tokenizer's, not the walk's. The top class is the only
# block with no enclosing one: what ends it at column 0 is a statement after the class, which the
# ``ast`` path ignores if it parses and raises on if not, so ``parse_fast`` hands it over. (The class
# and forward bodies once had one walk each, and only the class one handed that line over;
# tests/test_trace_log_fx_code_fuzz.py pins it.)


class _Reader:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def statement(self, i: int, outer: int, indent: int) -> tuple[int, int]:
        """The next statement of a block from 0-based line ``i`` on, as (its line, its indentation), or as
        (that line, -1) where the block ends. ``outer``: the header's indentation; ``indent``: the block's,
        -1 before its first statement. See Note [One indentation walk]."""
        lines = self.lines
        while i < len(lines):
            line = lines[i]
            s = line.lstrip(" ")
            if s and s[0] != "#":
                ind = len(line) - len(s)
                if ind <= outer and indent >= 0:
                    return i, -1
                if ind <= outer or indent >= 0 and ind != indent or not line.isascii():
                    raise HandOver
                return i, ind
            i += 1
        if indent < 0:  # a header with no body
            raise HandOver
        return i, -1

    def module(self, i: int, outer: int, name: str) -> tuple[ParsedModule, int, int]:
        """The class whose body starts at 0-based line ``i`` (header at indentation ``outer``)."""
        out = ParsedModule(Graph(name=name))
        lines, end, fwd = self.lines, 0, None
        i, indent = self.statement(i, outer, -1)
        ind = indent
        while ind >= 0:
            s = lines[i][ind:]
            m = _CLASS.fullmatch(s)
            if m:
                sub = m.group(1)
                if sub in KEYWORDS or sub in out.children:
                    raise HandOver
                first = i + 1
                child, i, end = self.module(i + 1, ind, f"{name}.{sub}" if name else sub)
                child.graph.code = body_text(lines, first, end)
                out.children[sub] = child
            elif s.startswith("def forward(") and fwd is None:
                fwd = i
                i, end = self.forward(out, i, ind)
            else:
                raise HandOver
            i, ind = self.statement(i, outer, indent)
        if fwd is None:
            raise HandOver
        return out, i, end

    def forward(self, out: ParsedModule, i: int, outer: int) -> tuple[int, int]:
        """Reads ``def forward(...):`` on line ``i`` and its body into ``out``: (next line, last line read)."""
        lines = self.lines
        toks = Tokens(lines, i, outer + len("def forward"))  # fx writes a long signature a parameter a line
        params: list[tuple[str, str]] = []
        toks.take("(")
        last = i + 1  # the line of the last parameter: the comments before the first statement follow it
        while toks.kind() != ")":
            t = toks.take("i")
            ann = toks.string() if toks.kind() == ":" and toks.skip() else ""
            if t[3] in (q for q, _ in params):
                raise HandOver
            params.append((t[3], ann))
            last = toks.toks[toks.i - 1][4] + 1
            if toks.kind() != ",":
                break
            toks.skip()
        toks.take(")")
        toks.take(":")
        toks.end()
        stmts: list[tuple[int, Tokens, list[Any]]] = []  # (line number, its tokens, statements)
        j, indent = self.statement(toks.last + 1, outer, -1)
        ind = indent
        while ind >= 0:
            line = lines[j]
            fast = read_line(line, ind, j)  # See Note [One regex per line first]
            if fast is None:
                t = Tokens(lines, j, ind)
                stmts.append((j + 1, t, t.statements()))
                j = t.last
            else:
                stmts.append((j + 1, *fast))
            j, ind = self.statement(j + 1, outer, indent)
        _Builder(out, lines).build(params, last, stmts)
        return j, stmts[-1][1].last + 1


class _Builder:
    """graph_text.py's ``_GraphBuilder`` on these statements; where it would record an error, hands over."""

    def __init__(self, out: ParsedModule, lines: list[str]) -> None:
        self.out, self.lines = out, lines
        self.nodes: dict[str, Node] = {}
        self.order: list[Node] = []
        self.by_target: dict[str, Node] = {}
        self.source: Optional[dict[str, Any]] = None
        self.line = ""

    def build(self, params: list[tuple[str, str]], def_line: int, stmts: list[tuple[int, Tokens, list[Any]]]) -> None:
        if not any(s[0] == "ann" and s[3] is None for _, _, ss in stmts for s in ss):
            for p, ann in params[1:]:
                self._add(Node(p, "placeholder", p, role="operand", meta=_meta(ann)))
                self.by_target[p] = self.order[-1]
        prev = def_line
        for lineno, toks, ss in stmts:
            if prev < lineno - 1:  # comment or blank lines between: they may set the source
                self.source = source_after(self.lines[prev:lineno - 1], self.source)
            prev = toks.last + 1
            self.line = toks.line
            for s in ss:
                self._stmt(s)
        for n in self.order:
            for i in n.inputs:
                self.nodes[i].users.append(n.name)
        self.out.graph.nodes = self.order

    def _add(self, n: Node) -> None:
        if n.name in self.nodes:
            raise HandOver
        n.name = intern(n.name)  # as ast's identifiers: one string per name, however many edges name it
        if n.op == "placeholder":
            n.target = n.name
        self.nodes[n.name] = n
        self.order.append(n)

    def _stmt(self, s: list[Any]) -> None:
        kind = s[0]
        if kind == "ann":
            if s[3] is None:
                self._add(Node(s[1], "placeholder", s[1], role="operand", meta=_meta(s[2])))
            else:
                self._node(s[1], s[3], _meta(s[2]))
        elif kind == "assign":
            value = s[2]
            if value[0] == "const" and value[3] == "None":
                return
            if len(s[1]) != 1:
                raise HandOver
            target = s[1][0]
            if value[0] == "name" and value[3] in self.by_target and target not in self.nodes:
                ph = self.by_target.pop(value[3])
                del self.nodes[ph.name]
                ph.name = intern(target)
                self.nodes[target] = ph
                return
            self._node(target, value, {})
        elif kind == "return":
            value = s[1]
            if value is not None and value[0] == "call" and value[3][1] and dotted(value[3][0]).endswith("tree_unflatten"):
                value = value[3][1][0]
            out = Node("output", "output", "output", role="output")
            read: list[str] = []
            out.args = [self._display(value, read)] if value is not None else []
            out.inputs = self._inputs(read)
            self._add(out)

    def _node(self, name: str, value: Expr, meta: dict[str, Any]) -> None:
        if self.source is not None:
            meta["source"] = dict(self.source)
        op, target, args, kwargs = self._op(value)
        read: list[str] = []  # the names the arguments read, in source order (``_inputs``)
        shown = [self._display(a, read) for a in args]
        self._add(Node(name, op, target, shown, {k: self._display(v, read) for k, v in kwargs}, self._inputs(read),
                       [], "param" if op == "get_attr" else "op", [], meta))

    def _op(self, e: Expr) -> tuple[str, str, list[Expr], list[tuple[str, Expr]]]:
        kind, _, _, p = e
        if kind == "attr" and dotted(e).startswith("self."):
            return "get_attr", dotted(e)[len("self."):], [], []
        if kind == "call":
            func, args, kwargs = p
            name = dotted(func)
            if not name:
                raise HandOver
            if name.startswith("self."):
                return "call_module", name[len("self."):], args, kwargs
            if func[0] == "attr" and name.split(".")[0] in self.nodes:
                return "call_method", func[3][1], [func[3][0], *args], kwargs
            return "call_function", function_target(name), args, kwargs
        if kind == "bin":
            return "call_function", f"operator.{BINOPS[p[0]]}", [p[1], p[2]], []
        if kind == "cmp":
            return "call_function", f"operator.{CMP[p[0]]}", [p[1], p[2]], []
        if kind == "unary":
            return "call_function", f"operator.{UNARY.get(p[0], 'not_')}", [p[1]], []
        if kind == "sub":
            return "call_function", "operator.getitem", [p[0], p[1]], []
        if kind == "name":
            return "call_function", "identity", [e], []
        raise HandOver

    def _display(self, e: Expr, read: list[str]) -> str:
        """fx's text of an argument, as graph_text.py's ``_display``: its source segment, or on more than
        one line ``ast.unparse``'s text (only of what fx splits over lines: tuples and lists of names);
        the names it reads appended to ``read``."""
        if e[0] == "name":
            read.append(e[3])
            return intern(e[3])
        if e[0] != "const":  # a constant reads no name
            names_of(e, read)
        text = self.line[e[1]:e[2]]
        return text if "\n" not in text else _unparse(e)

    def _inputs(self, read: list[str]) -> list[str]:
        """The nodes among the names ``read`` (by the arguments, in order), once each."""
        nodes = self.nodes
        names = [n for n in read if n in nodes]
        if not names:
            return []
        pop = self.by_target.pop
        for n in names:
            pop(n, None)
        return [intern(n) for n in dict.fromkeys(names)]


_METAS: dict[str, dict[str, Any]] = {}  # annotation -> its meta: a graph repeats a few shapes many times


def _meta(ann: str) -> dict[str, Any]:
    """``meta_of_annotation(ann)``, a new dict with new lists each time (a node's meta is its own)."""
    m = _METAS.get(ann)
    if m is None:
        if len(_METAS) > 4096:
            _METAS.clear()
        m = _METAS[ann] = meta_of_annotation(ann)
    return {k: v[:] if type(v) is list else v for k, v in m.items()}


def _unparse(e: Expr) -> str:
    if e[0] == "name" or e[0] == "const" and e[3] == "None":
        return e[3]
    if e[0] == "tuple" and len(e[3]) == 1:
        return f"({_unparse(e[3][0])},)"
    if e[0] == "tuple" or e[0] == "list":
        inner = ", ".join(_unparse(a) for a in e[3])
        return f"({inner})" if e[0] == "tuple" else f"[{inner}]"
    raise HandOver
