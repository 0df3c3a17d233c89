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

from tracer._torch.unknowns import unknown
from tracer.model import Graph, Node

__all__ = ["graph_from_fx", "meta_of", "display", "source_of"]


# -- values -> meta ---------------------------------------------------------------------------


def _size(s: Any) -> Any:
    """An int, or a symbolic size's expression as a string ("s0", "2*s0")."""
    if isinstance(s, int) and not isinstance(s, bool):
        return s
    if isinstance(s, torch.SymInt):
        try:
            const = s.node.maybe_as_int()
        except Exception as e:  # except: records a problem (the expression below is still exact)
            unknown(f"whether size {s} is a constant", e)
            const = None
        if const is not None:
            return int(const)
        return _sym_expr(s)
    try:
        return int(s)
    except Exception as e:  # except: records a problem (kept as its text)
        unknown(f"the size {type(s).__name__} as an int", e)
        return str(s)


def _sizes(sizes: Any) -> list[Any]:
    """``[_size(s) for s in sizes]``, without a call per size when all are plain ints (most graphs)."""
    out = list(sizes)
    if all(type(s) is int for s in out):
        return out
    return [_size(s) for s in out]


def _dtype(d: Any) -> str:
    text = _DTYPES.get(d)
    if text is None:
        text = _DTYPES[d] = str(d).removeprefix("torch.")
    return text


# Note [Names of torch's own singletons]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every node of every graph a capture converts names its dtype, device and operator: ~20k str()
# calls for a small transformer's Dynamo, joint, forward and backward graphs, each formatting the
# same few dozen objects again (``OpOverload.__str__`` splits its schema name each time). dtypes,
# devices and OpOverloads are immutable and compare by what they name (a device by type and index,
# so ``cuda`` and ``cuda:0`` stay apart), so each one's text is formatted once per process and
# looked up after. An OpOverload is already kept for the process by torch (``torch.ops.<ns>.<op>``
# caches its overloads as attributes); a target that is not one is named as before, every time.
_DTYPES: dict[Any, str] = {}
_DEVICES: dict[Any, str] = {}
_OPS: dict[Any, str] = {}


def _device(d: Any) -> str:
    text = _DEVICES.get(d)
    if text is None:
        text = _DEVICES[d] = str(d)
    return text


def _tensor_meta(t: torch.Tensor) -> dict[str, Any]:
    meta: dict[str, Any] = {"kind": "tensor"}
    try:
        meta["shape"] = _sizes(t.shape)
    except Exception as e:  # except: records a problem (no "shape" key: never [] that reads as 0-d)
        unknown(f"the shape of a {type(t).__name__}", e)
    try:
        meta["stride"] = _sizes(t.stride())
    except (RuntimeError, NotImplementedError):  # sparse / nested tensors have no strides: no "stride" key
        pass
    meta["dtype"] = _dtype(t.dtype)
    try:
        meta["device"] = _device(t.device)
    except Exception as e:  # except: records a problem (no "device" key)
        unknown(f"the device of a {type(t).__name__}", e)
    try:
        meta["requires_grad"] = bool(t.requires_grad)
    except Exception as e:  # except: records a problem (no "requires_grad" key)
        unknown(f"requires_grad of a {type(t).__name__}", e)
    # FakeTensor and FunctionalTensor are how a graph *holds* a value, not a user subclass.
    cls = type(t)
    if cls is not torch.Tensor and cls is not torch.nn.Parameter and cls.__name__ not in _PLAIN_TENSOR_TYPES:
        meta["subclass"] = cls.__name__
    elif cls is torch.nn.Parameter:
        meta["parameter"] = True
    return meta


_PLAIN_TENSOR_TYPES = {"FakeTensor", "FunctionalTensor", "Tensor"}


def meta_of(value: Any) -> dict[str, Any]:
    """Meta dict (Note [Node.meta keys] in tracer/model.py) for one value; never raises."""
    try:
        return _meta_of(value, 0)
    except Exception as e:  # except: records a problem (a broken __repr__/__len__ must never break a capture)
        unknown(f"the value meta of a {type(value).__name__}", e)
        return {"kind": "opaque", "type": type(value).__name__, "error": f"{type(e).__name__}: {e}"[:200]}


def _meta_of(value: Any, depth: int) -> dict[str, Any]:
    if value is None:
        return {"kind": "none", "value": "None"}
    if isinstance(value, torch.Tensor):
        return _tensor_meta(value)
    if isinstance(value, bool):
        return {"kind": "bool", "value": repr(value)}
    if isinstance(value, int):
        return {"kind": "int", "value": repr(value)}
    if isinstance(value, float):
        return {"kind": "float", "value": repr(value)}
    if isinstance(value, torch.SymInt):
        return {"kind": "symint", "value": str(_size(value))}
    if isinstance(value, torch.SymFloat):
        return {"kind": "symfloat", "value": _sym_expr(value)}
    if isinstance(value, torch.SymBool):
        return {"kind": "symbool", "value": _sym_expr(value)}
    if isinstance(value, (tuple, list)) and depth < 4:
        return {"kind": "tuple" if isinstance(value, tuple) else "list",
                "items": [_meta_of(v, depth + 1) for v in list(value)[:64]]}
    if isinstance(value, str):
        return {"kind": "str", "value": repr(value)[:200]}
    if isinstance(value, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
        return {"kind": type(value).__name__, "value": str(value)}
    return {"kind": "opaque", "type": type(value).__name__}


def _sym_expr(v: Any) -> str:
    try:
        return str(v.node.expr)
    except Exception as e:  # except: records a problem (kept as str(v))
        unknown(f"the expression of a {type(v).__name__}", e)
        return str(v)


# -- node args -> display strings ------------------------------------------------------------


def display(a: Any, depth: int = 0) -> str:
    """fx-like display form of one argument: node names as-is, constants as repr."""
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
        return f"<{type(a).__name__} {_dtype(a.dtype)}{list(a.shape)}>"
    try:
        text = repr(a)
    except Exception:  # except: display text only (an argument's display form)
        text = f"<{type(a).__name__}>"
    return text if len(text) <= 200 else text[:197] + "..."


def target_str(node: torch.fx.Node) -> str:
    """"aten.mm.default", "torch.sin", "operator.add", "wrap_body_0", "sin" (a method name)."""
    t = node.target
    if isinstance(t, str):
        return t
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


# -- source locations -----------------------------------------------------------------------------

_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>[^\n]+)\n(?P<code>[^\n]*)')


def source_of(stack_trace: Optional[str]) -> Optional[dict[str, Any]]:
    """The innermost user frame of an fx ``stack_trace``: {file, line, fn, code}."""
    if not stack_trace:
        return None
    src = _source_of(stack_trace)
    return dict(src) if src is not None else None


@functools.lru_cache(maxsize=8192)
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
    return {"file": m.group("file"), "line": int(m.group("line")), "fn": m.group("fn").strip(),
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


def node_meta(node: torch.fx.Node) -> dict[str, Any]:
    """Meta dict of one fx node (value meta + source + nn_module_stack)."""
    fx_meta = node.meta
    value = fx_meta.get("example_value", fx_meta.get("val", _MISSING))
    meta: dict[str, Any] = {} if value is _MISSING else meta_of(value)
    if node.op == "output" and value is _MISSING:
        meta = {}
    st = fx_meta.get("stack_trace")
    if isinstance(st, str) and st:
        # one object per distinct trace: the joint, forward and backward graphs carry equal but separate
        # strings of 2-5 kB each (interned strings are freed with their last reference)
        meta["stack_trace"] = st = sys.intern(st) if type(st) is str else st
        src = source_of(st)
        if src:
            meta["source"] = src
    stack = _module_stack(fx_meta.get("nn_module_stack"))
    if stack:
        meta["nn_module_stack"] = stack
    fwd_stack = _module_stack(fx_meta.get("fwd_nn_module_stack"))  # AOT backward nodes: their forward op's
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


def graph_from_fx(
    gm_or_graph: Any,
    name: str = "",
    *,
    role_of: Optional[Callable[[Node], Optional[str]]] = None,
    code: Optional[str] = None,
) -> Graph:
    """Convert an fx GraphModule or Graph to a plain :class:`tracer.model.Graph`.

    ``role_of(node) -> role | None`` may assign a role per Note [Closed sets of kinds]; the default
    roles are "output" for the output node, "param" for get_attr of a non-module, and "op" else.
    ``code``: the readable text when torch already rendered it (see Note [Graph text torch already
    rendered] in tracer/_torch/structured.py); rendered here otherwise.
    """
    fx_graph = gm_or_graph.graph if isinstance(gm_or_graph, torch.fx.GraphModule) else gm_or_graph
    gm = gm_or_graph if isinstance(gm_or_graph, torch.fx.GraphModule) else getattr(fx_graph, "owning_module", None)
    nodes: list[Node] = []
    for n in fx_graph.nodes:
        inputs = [a.name for a in n.all_input_nodes]
        node = Node(
            name=n.name,
            op=n.op,
            target=target_str(n),
            args=[display(a) for a in n.args],
            kwargs={str(k): display(v) for k, v in n.kwargs.items()},
            inputs=inputs,
            users=[u.name for u in n.users],
            meta=node_meta(n),
        )
        node.role = _default_role(n, gm)
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
