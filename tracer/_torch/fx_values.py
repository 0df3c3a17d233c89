"""fx values -> meta dicts: what a node's ``example_value`` / ``val`` records (shape, strides, dtype,
device; symbolic sizes as expressions), each fake tensor read once per conversion.

Invariant: the result holds no torch object (only str/int/float/bool/None/list/dict), and reading a
value never raises: what cannot be read is left out or recorded as ``{"kind": "opaque", ...}``.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from tracer._torch.unknowns import said, unknown

__all__ = ["ReadOnce", "dtype_text", "meta_of"]


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
    if not out or set(map(type, out)) == _INT:
        return out
    return [_size(s) for s in out]


_INT = {int}


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


# Note [Values read once per conversion]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The same fake tensor is the value of several nodes: a tuple-returning node and its ``getitem``
# users within a graph, and the joint, forward and backward graphs of one AOT compile, whose nodes
# the partitioner copies with ``Graph.node_copy`` (a shallow copy of ``node.meta``, so the very same
# ``val`` objects). Reading its shape, strides, dtype, device and requires_grad again gives the
# same answer (a fake tensor's metadata is fixed once traced; nothing between the joint and the
# backward runs an op on it), so a ``ReadOnce`` keeps each tensor's meta by identity and hands
# out copies (fresh dict and lists: no node shares a mutable object with another). The tensor is
# held beside its meta, so an id is never reused while the table lives; the table lives as long as
# one graph's conversion, or one AOT compile's (tracer/_torch/aot.py drops it once the backward is
# converted). A read that said a problem (``unknown``) is not kept: the next node reads it again and
# says it again, as before. BERT: 2,256 tensor reads per capture, 1,079 distinct tensors. (Keeping
# converted ``nn_module_stack`` lists by content was measured too, and was slower than converting.)
class ReadOnce:
    """The tensors one conversion (or one AOT compile) already read, by identity, with their meta; and the
    display texts it made, each held once (Note [Equal texts held once per conversion] in tracer/_torch/fx_graph.py)."""

    __slots__ = ("tensors", "texts")

    def __init__(self) -> None:
        self.tensors: dict[int, tuple[Any, dict[str, Any]]] = {}
        self.texts: dict[str, str] = {}


def _copy_meta(meta: dict[str, Any]) -> dict[str, Any]:
    out = dict(meta)
    if "shape" in out:
        out["shape"] = list(out["shape"])
    if "stride" in out:
        out["stride"] = list(out["stride"])
    return out


def meta_of(value: Any, seen: Optional[ReadOnce] = None) -> dict[str, Any]:
    """Meta dict (Note [Node.meta keys] in tracer/model.py) for one value; never raises.
    ``seen``: tensors already read (Note [Values read once per conversion])."""
    try:
        return _meta_of(value, 0, seen)
    except Exception as e:  # except: records a problem (a broken __repr__/__len__ must never break a capture)
        unknown(f"the value meta of a {type(value).__name__}", e)
        return {"kind": "opaque", "type": type(value).__name__, "error": f"{type(e).__name__}: {e}"[:200]}


def _meta_of(value: Any, depth: int, seen: Optional[ReadOnce] = None) -> dict[str, Any]:
    if value is None:
        return {"kind": "none", "value": "None"}
    if isinstance(value, torch.Tensor):
        if seen is None:
            return _tensor_meta(value)
        hit = seen.tensors.get(id(value))
        if hit is not None:
            return _copy_meta(hit[1])
        before = said()
        meta = _tensor_meta(value)
        if said() == before:  # a read that said a problem is read again next time, and says it again
            seen.tensors[id(value)] = (value, meta)
            return _copy_meta(meta)
        return meta
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
                "items": [_meta_of(v, depth + 1, seen) for v in list(value)[:64]]}
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


def dtype_text(d: Any) -> str:
    """``torch.float32`` -> "float32", formatted once per process (Note [Names of torch's own singletons])."""
    return _dtype(d)
