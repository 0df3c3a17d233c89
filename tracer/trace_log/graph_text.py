"""``print_readable`` text (as torch logs it) -> ``tracer.model.Graph`` nodes with edges, parsed with ``ast``.

Invariant: every node is read from the code fx generated (torch/fx/graph.py ``_gen_python_code``):
one statement per node, placeholders from ``forward``'s parameters (or the AnnAssign declarations
of a pytree-flattened signature), the ``return`` as the output node; HOP bodies are the nested
classes. A statement we cannot read becomes an error string, never a guessed node.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field
from typing import Any, Optional

from tracer.model.graph import Graph, Node

__all__ = ["ParsedModule", "parse_readable", "meta_of_annotation", "source_after", "function_target", "body_text"]

_BACKWARD_OF = "# Backward of forward node: "  # torch 2.14+ marks an AOT backward node's forward stack so

_ABBR = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
         "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "b8": "bool", "c64": "complex64",
         "c128": "complex128", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}
_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and_", ast.BitOr: "or_",
           ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift"}
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not_"}
_CMP = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}


@dataclass
class ParsedModule:
    """One class of the text: its graph and the classes nested in it (HOP bodies), by attribute name."""

    graph: Graph
    children: dict[str, ParsedModule] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def meta_of_annotation(ann: str) -> dict[str, Any]:
    """Node meta from fx's type annotation: ``"f32[3, s0][s0, 1]cpu"``, ``"Sym(s0)"``, ``"i64[]"``.

    >>> meta_of_annotation("f32[2, s0][s0, 1]cpu")
    {'kind': 'tensor', 'dtype': 'float32', 'shape': [2, 's0'], 'stride': ['s0', 1], 'device': 'cpu'}
    """
    if ann.startswith("Sym(") and ann.endswith(")"):
        return {"kind": "symint", "value": ann[4:-1]}
    head, sep, rest = ann.partition("[")
    if not sep or head not in _ABBR:
        return {"kind": "opaque", "type": ann} if ann else {}
    shape, _, rest = rest.partition("]")
    meta: dict[str, Any] = {"kind": "tensor", "dtype": _ABBR[head], "shape": _sizes(shape)}
    if rest.startswith("["):
        stride, _, rest = rest[1:].partition("]")
        meta["stride"] = _sizes(stride)
    if rest:
        meta["device"] = rest
    return meta


def _sizes(text: str) -> list[Any]:
    return [int(s) if s.strip().lstrip("-").isdigit() else s.strip() for s in text.split(",") if s.strip()]


def parse_readable(text: str, name: str = "") -> ParsedModule:
    """Parse one logged ``print_readable`` text; raises ``SyntaxError``/``ValueError`` when it is not one."""
    text = text.lstrip("\n")
    first, nl, rest = text.partition("\n")
    if not first.startswith("class "):
        raise ValueError("graph text does not start with 'class <name>(torch.nn.Module):'")
    # fx prints the module's class name as is (AOT's "<lambda>" is not an identifier): the header line is
    # replaced by one that parses, so that line numbers stay those of the text
    cls = ast.parse("class _:" + nl + rest).body[0]  # a ClassDef: the text starts with it
    assert isinstance(cls, ast.ClassDef)
    return _module(cls, name, text.splitlines())


def _module(cls: ast.ClassDef, name: str, lines: list[str]) -> ParsedModule:
    out = ParsedModule(Graph(name=name))
    fwd: Optional[ast.FunctionDef] = None
    for stmt in cls.body:
        if isinstance(stmt, ast.ClassDef):
            child = out.children[stmt.name] = _module(stmt, f"{name}.{stmt.name}" if name else stmt.name, lines)
            child.graph.code = _class_text(stmt, lines)
        elif isinstance(stmt, ast.FunctionDef) and stmt.name == "forward":
            fwd = stmt
    if fwd is None:
        out.errors.append(f"{name or 'graph'}: no forward method")
        return out
    _GraphBuilder(out, lines).build(fwd)
    return out


def _class_text(cls: ast.ClassDef, lines: list[str]) -> str:
    """A nested body's text as fx prints the body module itself: dedented, named GraphModule."""
    assert cls.end_lineno is not None  # set by ast.parse
    return body_text(lines, cls.lineno, cls.end_lineno)


def body_text(lines: list[str], first: int, last: int) -> str:
    """The text of a nested class on 1-based lines ``first``..``last``, as fx prints that body module."""
    body = textwrap.dedent("\n".join(lines[first - 1:last]))
    head, nl, rest = body.partition("\n")
    return f"class GraphModule(torch.nn.Module):{nl}{rest}\n"


class _GraphBuilder:
    def __init__(self, out: ParsedModule, lines: list[str]) -> None:
        self.out = out
        self.lines = lines
        self.nodes: dict[str, Node] = {}
        self.order: list[Node] = []
        self.by_target: dict[str, Node] = {}  # placeholder target (forward parameter) -> node
        self.source: Optional[dict[str, Any]] = None

    def build(self, fwd: ast.FunctionDef) -> None:
        declared = [s for s in fwd.body if isinstance(s, ast.AnnAssign) and s.value is None]
        if not declared:  # fx's plain signature: one parameter per placeholder
            for a in fwd.args.args[1:]:
                ann = a.annotation.value if isinstance(a.annotation, ast.Constant) else ""
                self._add(Node(a.arg, "placeholder", a.arg, role="operand",
                               meta=meta_of_annotation(ann) if isinstance(ann, str) else {}))
                self.by_target[a.arg] = self.order[-1]
        # comments before the first statement follow the signature (a body's first "# File:" is there)
        args = [*fwd.args.args, *fwd.args.kwonlyargs]
        prev_end = max([fwd.lineno, *(a.end_lineno for a in args)])  # end_lineno: set by ast.parse
        for stmt in fwd.body:
            self._comments(prev_end, stmt.lineno - 1)
            prev_end = stmt.end_lineno
            try:
                self._stmt(stmt)
            except Exception as e:  # except: records a problem (a statement fx would not write: a damaged log)
                self.out.errors.append(f"{self.out.graph.name or 'graph'} line {stmt.lineno}: {e}")
        for n in self.order:
            for i in n.inputs:
                self.nodes[i].users.append(n.name)
        self.out.graph.nodes = self.order

    def _comments(self, start: int, end: int) -> None:
        self.source = source_after(self.lines[start:end], self.source)

    def _add(self, n: Node) -> None:
        if n.name in self.nodes:
            raise ValueError(f"node {n.name!r} defined twice")
        self.nodes[n.name] = n
        self.order.append(n)

    def _stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.AnnAssign):
            target = stmt.target.id if isinstance(stmt.target, ast.Name) else None
            ann = stmt.annotation.value if isinstance(stmt.annotation, ast.Constant) else ""
            meta = meta_of_annotation(ann) if isinstance(ann, str) else {}
            if target is None:
                raise ValueError("annotated assignment to something other than a name")
            if stmt.value is None:  # a pytree-flattened signature declares each placeholder
                self._add(Node(target, "placeholder", target, role="operand", meta=meta))
                return
            self._node(target, stmt.value, meta)
        elif isinstance(stmt, ast.Assign):
            if isinstance(stmt.value, ast.Constant) and stmt.value.value is None:
                return  # "a = b = None": fx freeing values, not a node
            if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
                if isinstance(stmt.value, ast.Call) and _dotted(stmt.value.func).endswith("tree_flatten_spec"):
                    return  # "primals_1, tangents_1, = fx_pytree.tree_flatten_spec(...)"
                raise ValueError(f"assignment not of one name: {ast.unparse(stmt)[:80]}")
            target = stmt.targets[0].id
            if isinstance(stmt.value, ast.Name) and stmt.value.id in self.by_target and target not in self.nodes:
                ph = self.by_target.pop(stmt.value.id)  # "l_x_ = L_x_": placeholder l_x_ with target L_x_
                del self.nodes[ph.name]
                ph.name = target
                self.nodes[target] = ph
                return
            self._node(target, stmt.value, {})
        elif isinstance(stmt, ast.Return):
            value = stmt.value
            if isinstance(value, ast.Call) and _dotted(value.func).endswith("tree_unflatten") and value.args:
                value = value.args[0]
            out = Node("output", "output", "output", role="output")
            out.args = [self._display(value)] if value is not None else []
            out.inputs = self._inputs([value] if value is not None else [])
            self._add(out)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return  # a docstring
        else:
            raise ValueError(f"unexpected statement: {ast.unparse(stmt)[:80]}")

    def _node(self, name: str, value: ast.expr, meta: dict[str, Any]) -> None:
        if self.source is not None:
            meta["source"] = dict(self.source)
        op, target, args, kwargs = _op(value, self.nodes)
        n = Node(name, op, target, args=[self._display(a) for a in args],
                 kwargs={k: self._display(v) for k, v in kwargs.items()}, meta=meta)
        n.inputs = self._inputs([*args, *kwargs.values()])
        n.role = "param" if op == "get_attr" else "op"
        self._add(n)

    def _display(self, e: ast.expr) -> str:
        """fx's own text of an argument: the source segment (``ast.unparse`` is the parse's largest cost)."""
        if isinstance(e, ast.Name):
            return e.id
        if e.lineno == e.end_lineno and e.end_col_offset is not None:
            line = self.lines[e.lineno - 1]  # offsets are UTF-8 bytes: equal to str offsets on ASCII lines
            if line.isascii():
                return line[e.col_offset:e.end_col_offset]
        return _display(e)

    def _inputs(self, exprs: list[ast.expr]) -> list[str]:
        names = [n for e in exprs for n in _names(e) if n in self.nodes]
        for n in names:
            self.by_target.pop(n, None)  # a placeholder already read is not renamed ("y = x" is a node then)
        return list(dict.fromkeys(names))


def _names(e: ast.AST) -> list[str]:
    """Names read by ``e``, in source order (ast.walk is breadth-first, fx orders args depth-first)."""
    if isinstance(e, ast.Name):
        return [e.id]
    out: list[str] = []
    for child in ast.iter_child_nodes(e):
        out.extend(_names(child))
    return out


def _dotted(e: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(e, ast.Attribute):
        parts.append(e.attr)
        e = e.value
    if isinstance(e, ast.Name):
        parts.append(e.id)
        return ".".join(reversed(parts))
    return ""


def source_after(lines: list[str], source: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The stack-trace source in force after the comment ``lines`` between two statements: fx writes
    "# File: path:LINE in fn, code: text" before the first node of each stack trace; from torch 2.14 an
    AOT backward node's (the forward node's trace, which 2.13 prints as a plain "# File:") reads
    "# Backward of forward node: File: ..." (torch/fx/graph.py, ``autograd_backward``)."""
    for line in lines:
        c = line.strip()
        if c.startswith(_BACKWARD_OF):
            c = "# " + c[len(_BACKWARD_OF):]
        if c.startswith("# No stacktrace found"):
            source = None
        elif c.startswith("# File: "):
            loc, _, code = c[len("# File: "):].partition(", code: ")
            where, _, fn = loc.rpartition(" in ")
            file, _, lineno = where.rpartition(":")
            source = {"file": file, "line": int(lineno) if lineno.isdigit() else 0, "fn": fn, "code": code}
    return source


def function_target(dotted: str) -> str:
    """As tracer/_torch/fx_graph.py ``target_str`` names it: "aten.mm.default", a HOP by its name."""
    if dotted.startswith("torch.ops.higher_order."):
        return dotted[len("torch.ops.higher_order."):]
    if dotted.startswith("torch.ops."):
        return dotted[len("torch.ops."):]
    return dotted  # "torch._C._nn.linear", "operator.getitem": as printed


def _op(value: ast.expr, nodes: dict[str, Node]) -> tuple[str, str, list[ast.expr], dict[str, ast.expr]]:
    """(op, target, args, kwargs) of the expression fx generated for one node."""
    if isinstance(value, ast.Attribute) and _dotted(value).startswith("self."):
        return "get_attr", _dotted(value)[len("self."):], [], {}
    if isinstance(value, ast.Call):
        args = list(value.args)
        kwargs = {k.arg: k.value for k in value.keywords if k.arg is not None}
        func = value.func
        dotted = _dotted(func)
        if dotted.startswith("self."):
            return "call_module", dotted[len("self."):], args, kwargs
        if isinstance(func, ast.Attribute) and not (dotted and dotted.split(".")[0] not in nodes):
            return "call_method", func.attr, [func.value, *args], kwargs
        if not dotted:
            raise ValueError(f"call of an expression: {ast.unparse(value)[:80]}")
        return "call_function", function_target(dotted), args, kwargs
    if isinstance(value, ast.BinOp) and type(value.op) in _BINOPS:
        return "call_function", f"operator.{_BINOPS[type(value.op)]}", [value.left, value.right], {}
    if isinstance(value, ast.UnaryOp) and type(value.op) in _UNARY:
        return "call_function", f"operator.{_UNARY[type(value.op)]}", [value.operand], {}
    if isinstance(value, ast.Compare) and len(value.ops) == 1 and type(value.ops[0]) in _CMP:
        return "call_function", f"operator.{_CMP[type(value.ops[0])]}", [value.left, value.comparators[0]], {}
    if isinstance(value, ast.Subscript):
        return "call_function", "operator.getitem", [value.value, value.slice], {}
    if isinstance(value, ast.Name):
        return "call_function", "identity", [value], {}
    raise ValueError(f"expression fx does not generate for a node: {ast.unparse(value)[:80]}")


def _display(e: ast.expr) -> str:
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Constant):
        return repr(e.value)
    return ast.unparse(e)
