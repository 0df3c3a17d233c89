"""torch.fx GraphModule/Graph -> ``tracer.model.Graph``: the one converter every recorder uses.

Invariant: the result holds no torch object (only str/int/float/bool/None/list/dict), and
conversion never raises on an opaque value: it records ``{"kind": "opaque", "type": ...}``.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from typing import Any, Callable, Optional

import torch
import torch.fx
from torch.fx.immutable_collections import immutable_list

from tracer._torch.fx_values import ReadOnce, dtype_text, meta_of
from tracer._torch.unknowns import unknown
from tracer.model import Graph, Node

__all__ = ["ReadOnce", "graph_from_fx", "meta_of", "display", "source_of"]


# -- node args -> display strings ------------------------------------------------------------


def display(a: Any, depth: int = 0) -> str:
    """fx-like display form of one argument: node names as-is, constants as repr."""
    t = type(a)  # the common exact types first; the checks below give each of them the same text
    if t is _FX_NODE:
        return a.name
    if t in _REPR_TYPES:
        return repr(a)
    if (t is _IMMUTABLE_LIST or t is list) and depth < 6:
        return "[" + ", ".join([display(x, depth + 1) for x in a]) + "]"
    if isinstance(a, torch.fx.Node):
        return a.name
    if isinstance(a, tuple) and depth < 6:
        inner = ", ".join(display(x, depth + 1) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list) and depth < 6:
        return "[" + ", ".join(display(x, depth + 1) for x in a) + "]"
    if isinstance(a, dict) and depth < 6:
        return "{" + ", ".join(f"{k!r}: {display(v, depth + 1)}" for k, v in a.items()) + "}"
    if isinstance(a, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
        return str(a)
    if isinstance(a, (int, float, bool, str, type(None), slice)):
        return repr(a)
    if isinstance(a, torch.Tensor):
        return f"<{type(a).__name__} {dtype_text(a.dtype)}{list(a.shape)}>"
    try:
        text = repr(a)
    except Exception:  # except: display text only (an argument's display form)
        text = f"<{type(a).__name__}>"
    return text if len(text) <= 200 else text[:197] + "..."


_FX_NODE = torch.fx.Node
_IMMUTABLE_LIST = immutable_list
_REPR_TYPES = frozenset({int, float, bool, str, type(None)})


def target_str(node: torch.fx.Node) -> str:
    """"aten.mm.default", "torch.sin", "operator.add", "wrap_body_0", "sin" (a method name)."""
    t = node.target
    if isinstance(t, str):
        return t
    if type(t) is _OP_OVERLOAD:  # the common case first: Note [Names of torch's own singletons]
        text = _OPS.get(t)
        if text is not None:
            return text
    try:
        if isinstance(t, torch._ops.OpOverload):  # aten.mm.default; Note [Names of torch's own singletons]
            text = _OPS.get(t)
            if text is None:
                text = _OPS[t] = str(t)
            return text
        if isinstance(t, torch._ops.OpOverloadPacket):
            return str(t)
        if isinstance(t, torch._ops.HigherOrderOperator):
            return t.name()
    except Exception as e:  # except: records a problem (named by its Python path below)
        unknown(f"the operator name of {type(t).__name__}", e)
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None)
    if isinstance(name, str) and name.startswith("_VariableFunctionsClass."):
        name = name.split(".", 1)[1]  # torch.sin, not torch._VariableFunctionsClass.sin
    if name is None:
        return display(t)
    if mod in ("torch", "_operator", "operator", "builtins", "math") or mod.startswith("torch"):
        short = {"_operator": "operator", "torch._C._nn": "torch._C._nn"}.get(mod, mod)
        if mod.startswith("torch._C._VariableFunctions") or mod == "torch._C":
            short = "torch"
        return f"{short}.{name}" if short != "builtins" else name
    return f"{mod}.{name}" if mod else name


_OPS: dict[Any, str] = {}  # Note [Names of torch's own singletons] in tracer/_torch/fx_values.py
_OP_OVERLOAD = torch._ops.OpOverload


# -- source locations -----------------------------------------------------------------------------

_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>[^\n]+)\n(?P<code>[^\n]*)')


def source_of(stack_trace: Optional[str]) -> Optional[dict[str, Any]]:
    """The innermost user frame of an fx ``stack_trace``: {file, line, fn, code}."""
    if not stack_trace:
        return None
    src = _source_of(stack_trace)
    return dict(src) if src is not None else None


# Note [One object per stack trace]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The joint, forward and backward graphs carry equal but separate stack-trace strings of 2-5 kB per
# node; held once, they are a fraction of a capture's bytes. Not by ``sys.intern``: interned strings
# are immortal on Python 3.12 (PEP 683), so every trace a process ever converted would stay. A table of
# the last ``_TRACES_MAX`` distinct traces instead, as many as ``_source_of``'s cache keeps as keys
# anyway (the same objects: it is called with the one from the table), the oldest forgotten first.
_TRACES: dict[str, str] = {}
_TRACES_MAX = 8192


def _one_trace(st: str) -> str:
    """The one object held for text ``st`` (Note [One object per stack trace])."""
    got = _TRACES.get(st)
    if got is None:
        while len(_TRACES) >= _TRACES_MAX:
            _TRACES.pop(next(iter(_TRACES)), None)
        got = _TRACES.setdefault(st, st)
    return got


@functools.lru_cache(maxsize=_TRACES_MAX)
def _source_of(stack_trace: str) -> Optional[dict[str, Any]]:
    # Memoized: every node a user line makes carries the same stack_trace string (a layer of a
    # transformer gives dozens of aten nodes per line, and the joint, forward and backward graphs
    # repeat them), so parsing each distinct trace once is most of node_meta's time saved.
    frames = list(_FRAME_RE.finditer(stack_trace))
    if not frames:
        return None
    user = [m for m in frames if not _library_file(m.group("file"))]
    mine = [m for m in frames if not m.group("file").startswith(_OWN_DIR)]
    if not mine:  # only dynascope's own frames: no line of the user's or torch's to show
        return None
    m = (user or mine)[-1]
    # file and function names interned: many distinct traces name the same few (Note [Equal texts held once per conversion])
    return {"file": sys.intern(m.group("file")), "line": int(m.group("line")), "fn": sys.intern(m.group("fn").strip()),
            "code": m.group("code").strip()}


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# the tracer package (tracer/exporting.py calls torch.export itself): dynascope's own frames, never the user's line
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _library_file(path: str) -> bool:
    return path.startswith(_TORCH_DIR) or path.startswith(_OWN_DIR)


def _module_stack(stack: Any) -> list[list[str]]:
    out: list[list[str]] = []
    if not isinstance(stack, dict):
        return out
    for key, v in stack.items():
        if type(v) is tuple and len(v) == 2:  # what Dynamo stores: (path, class)
            path, typ = v
        else:
            try:
                path, typ = v
            except Exception as e:  # except: records a problem (the entry is left out)
                unknown(f"nn_module_stack entry {key!r}", e)
                continue
        if isinstance(typ, type):
            text = _TYPES.get(typ)
            if text is None:  # Note [Names of torch's own singletons]: a class's name formatted once
                text = _TYPES[typ] = f"{typ.__module__}.{typ.__qualname__}"
            typ = text
        out.append([path if type(path) is str else str(path), typ if type(typ) is str else str(typ)])
    return out


_TYPES: dict[type, str] = {}


def node_meta(node: torch.fx.Node, seen: Optional[ReadOnce] = None) -> dict[str, Any]:
    """Meta dict of one fx node (value meta + source + nn_module_stack). ``seen``: Note [Values read
    once per conversion]."""
    fx_meta = node.meta
    value = fx_meta.get("example_value", _MISSING)
    if value is _MISSING:
        value = fx_meta.get("val", _MISSING)
    meta: dict[str, Any] = {} if value is _MISSING else meta_of(value, seen)
    if node.op == "output" and value is _MISSING:
        meta = {}
    st = fx_meta.get("stack_trace")
    if isinstance(st, str) and st:
        meta["stack_trace"] = st = _one_trace(st) if type(st) is str else st  # Note [One object per stack trace]
        src = source_of(st)
        if src:
            meta["source"] = src
    stack = fx_meta.get("nn_module_stack")
    if stack is not None:  # _module_stack gives [] for None
        stack = _module_stack(stack)
        if stack:
            meta["nn_module_stack"] = stack
    fwd_stack = fx_meta.get("fwd_nn_module_stack")  # AOT backward nodes: their forward op's
    if fwd_stack is not None:
        fwd_stack = _module_stack(fwd_stack)
        if fwd_stack:
            meta["fwd_nn_module_stack"] = fwd_stack
    return meta


_MISSING = object()


# -- graphs --------------------------------------------------------------------------------------


def readable_code(gm: Any) -> str:
    """``print_readable`` text without ANSI colours; "" when the object has none."""
    try:
        if not isinstance(gm, torch.fx.GraphModule):
            return str(gm.python_code("self").src)
        return gm.print_readable(print_output=False, colored=False)
    except Exception as e:  # except: records a problem (the graph's text is "")
        unknown(f"the readable code of {type(gm).__name__}", e)
        return ""


# Note [Equal texts held once per conversion]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A node's target and its constant arguments are display texts made per node: ``repr(2)``, ``"[0]"``,
# ``"torch.contiguous_format"``, ``"operator.getitem"`` come out as a new string for every node that
# has them, and the joint, forward and backward graphs repeat them all (Swin: 2,000 copies of ~30
# texts, 150 kB of its capture). Strings are immutable, so equal ones are held once: the conversion's
# ``ReadOnce.texts`` maps each text to the first object made for it (a ``setdefault`` per text, no
# more work per node than one dict operation), for the life of one graph's conversion or one AOT
# compile's, as the tensors it read (Note [Values read once per conversion]). Lists stay one per node
# (a node's lists and dicts are its own); the lists built here are copied once to their exact size
# (``.copy()``: a list comprehension keeps room for 4 items, 24 bytes too many for 1).


def graph_from_fx(
    gm_or_graph: Any,
    name: str = "",
    *,
    role_of: Optional[Callable[[Node], Optional[str]]] = None,
    code: Optional[str] = None,
    seen: Optional[ReadOnce] = None,
) -> Graph:
    """Convert an fx GraphModule or Graph to a plain :class:`tracer.model.Graph`.

    ``role_of(node) -> role | None`` may assign a role per Note [Closed sets of kinds]; the default
    roles are "output" for the output node, "param" for get_attr of a non-module, and "op" else.
    ``code``: the readable text when torch already rendered it (see Note [Graph text torch already
    rendered] in tracer/_torch/structured.py); rendered here otherwise. ``seen``: values already read
    by an earlier conversion of the same compile (Note [Values read once per conversion]).
    """
    seen = seen if seen is not None else ReadOnce()
    fx_node = torch.fx.Node
    fx_graph = gm_or_graph.graph if isinstance(gm_or_graph, torch.fx.GraphModule) else gm_or_graph
    gm = gm_or_graph if isinstance(gm_or_graph, torch.fx.GraphModule) else getattr(fx_graph, "owning_module", None)
    nodes: list[Node] = []
    keep = seen.texts.setdefault  # See Note [Equal texts held once per conversion]
    for n in fx_graph.nodes:
        target = target_str(n)  # the reads that may say a problem, in the order they always ran
        meta = node_meta(n, seen)
        node = Node(  # positional, in field order: name, op, target, args, kwargs, inputs, users, role, calls, meta
            n.name,
            n.op,
            keep(target, target),
            [a.name if type(a) is fx_node else keep(t := display(a), t) for a in n.args].copy(),
            {keep(ks := str(k), ks): keep(t := display(v), t) for k, v in n.kwargs.items()} if n.kwargs else {},
            [a.name for a in n.all_input_nodes].copy(),
            [u.name for u in n.users].copy(),
            _default_role(n, gm),
            [],
            meta,
        )
        if role_of is not None:
            try:
                r = role_of(node)
            except Exception as e:  # except: records a problem (role "unknown")
                unknown(f"the role of node {node.name!r}", e)
                r = "unknown"
            if r:
                node.role = r
        nodes.append(node)
    if code is None:
        code = readable_code(gm if gm is not None else fx_graph)
    return Graph(nodes=nodes, code=code, name=name)


def _default_role(n: torch.fx.Node, gm: Any) -> str:
    if n.op == "output":
        return "output"
    if n.op == "get_attr":
        try:
            obj = getattr(gm, n.target) if gm is not None and "." not in n.target else _getattr_path(gm, n.target)
        except Exception as e:  # except: records a problem (role "unknown", not "param")
            unknown(f"what get_attr {n.target!r} reads", e)
            return "unknown"
        if isinstance(obj, torch.fx.GraphModule):
            return "op"
        return "param"
    if n.op == "placeholder":
        return "operand"
    return "op"


def _getattr_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj
