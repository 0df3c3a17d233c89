"""Read-only nodes and guards: a graph's node list, and guards, that raise on every write, for records
shared between frames.

Invariant: a read-only node list, its nodes, read-only guards and every list and dict inside them read
exactly like the editable ones (``==``, ``repr``, ``isinstance``, JSON, iteration) and raise
:class:`ReadOnlyError` on every write through their own methods; ``copy.copy`` / ``copy.deepcopy``
of one gives plain, editable lists, dicts and ``Node``s. See Note [Read-only graphs] in
tracer/trace_log/deferred.py for who makes them and why.
"""

from __future__ import annotations

from typing import Any, NoReturn

from tracer.model.graph import Node
from tracer.model.guards import Guard

__all__ = ["ReadOnlyError", "ReadOnlyGuard", "ReadOnlyNode", "freeze", "freeze_flat", "freeze_guards", "freeze_nodes",
           "is_read_only", "read_only_dict", "read_only_guard", "read_only_list", "read_only_node", "thaw"]

_HOW = ("it was loaded with load_trace(..., read_only=True) (or by a reader that only reads, such as "
        "`dynascope report`), so equal graphs (and guard trees) of every frame share it; for an editable graph use "
        "copy.deepcopy(graph) or load the log with load_trace(path) (the default)")


class ReadOnlyError(TypeError):
    """A write into a read-only loaded graph: its node list, a node's field, or a list or dict in a node."""


def _refuse(what: str) -> NoReturn:
    raise ReadOnlyError(f"cannot change {what}: {_HOW}")


def thaw(v: Any) -> Any:
    """``v`` with every list and dict (read-only or not, and every tuple) in it a new plain one."""
    t = type(v)
    if t is str or t is int or t is float or v is None:  # the most common leaves first
        return v
    if isinstance(v, list):
        return [thaw(x) for x in v]
    if isinstance(v, dict):
        return {k: thaw(x) for k, x in v.items()}
    if type(v) is tuple:
        return tuple(thaw(x) for x in v)
    return v


class _List(list):  # type: ignore[type-arg]
    """A list that refuses every write through its methods (its repr and ``==`` are a list's)."""

    __slots__ = ()

    def _no(self, *_: Any, **__: Any) -> NoReturn:
        _refuse("a list of a read-only loaded graph or guard")

    append = extend = insert = remove = pop = clear = sort = reverse = _no
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _no

    def __reduce__(self) -> tuple[Any, ...]:  # copy.copy / deepcopy: a plain list (deepcopy thaws its items)
        return list, (list(self),)


class _Dict(dict):  # type: ignore[type-arg]
    """A dict that refuses every write through its methods (its repr and ``==`` are a dict's)."""

    __slots__ = ()

    def _no(self, *_: Any, **__: Any) -> NoReturn:
        _refuse("a dict of a read-only loaded graph's node (its meta or kwargs)")

    __setitem__ = __delitem__ = __ior__ = setdefault = update = pop = popitem = clear = _no

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


_FIELDS = tuple(f for f in Node.__dataclass_fields__)  # type: ignore[attr-defined]
_GUARD_FIELDS = tuple(f for f in Guard.__dataclass_fields__)  # type: ignore[attr-defined]


class _Frozen:
    """What a read-only record adds to its plain class ``_plain`` (fields ``_fields``): fields frozen at
    ``__init__``, every assignment refused, ``==`` by fields with any plain one, a copy plain."""

    __slots__ = ()
    _plain: type
    _fields: tuple[str, ...]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        plain = self._plain(*args, **kwargs)
        for f in self._fields:
            object.__setattr__(self, f, _freeze(getattr(plain, f)))

    def _what(self) -> str:
        raise NotImplementedError

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        _refuse(f"{self._what()}.{name}")

    def __delattr__(self, name: str) -> NoReturn:
        _refuse(f"{self._what()}.{name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, self._plain):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields)

    __hash__ = None  # type: ignore[assignment]  # as the plain record: equal by value, so not hashable

    def __reduce__(self) -> tuple[Any, ...]:  # copy.copy / deepcopy: an editable plain record
        return self._plain, tuple(thaw(getattr(self, f)) for f in self._fields)


class ReadOnlyNode(_Frozen, Node):
    """A ``Node`` of a read-only loaded graph: every field reads as a Node's; assigning one raises
    :class:`ReadOnlyError`. ``==`` compares fields with any Node; ``copy.deepcopy`` gives a plain Node;
    ``dataclasses.replace`` a new read-only one."""

    __slots__ = ()
    _plain, _fields = Node, _FIELDS

    def _what(self) -> str:
        return f"node {self.name!r}"


class ReadOnlyGuard(_Frozen, Guard):
    """A ``Guard`` shared by the frames of a read-only capture that logged the same guard tree: as
    :class:`ReadOnlyNode`, every write raises :class:`ReadOnlyError`."""

    __slots__ = ()
    _plain, _fields = Guard, _GUARD_FIELDS

    def _what(self) -> str:
        return f"guard {self.kind} {self.source!r}"


class _UnfrozenGuard(Guard):
    """A Guard with ReadOnlyGuard's layout, as ``_Unfrozen`` is for nodes (Note [Read-only nodes built in one call])."""

    __slots__ = ()


def read_only_guard(kind: str, source: str, code: Any, user_stack: Any) -> Guard:
    """The ReadOnlyGuard ``freeze_guards`` makes of ``Guard(kind, source, list(code), list(user_stack))`` when
    ``code`` and ``user_stack`` hold strings: its fields stored by Guard's own ``__init__``, then its class set
    (Note [Read-only nodes built in one call])."""
    g = _UnfrozenGuard(kind, source, _List(code), _List(user_stack))
    g.__class__ = ReadOnlyGuard
    return g


def freeze_guards(guards: list[Guard]) -> tuple[Guard, ...]:
    """Read-only copies of ``guards`` (:class:`ReadOnlyGuard`), to share."""
    return tuple(ReadOnlyGuard(*(getattr(g, f) for f in _GUARD_FIELDS)) for g in guards)


def _freeze(v: Any) -> Any:
    t = type(v)
    if t is list:
        return _List([_freeze(x) for x in v])
    if t is dict:
        return _Dict({k: _freeze(x) for k, x in v.items()})
    if t is tuple:
        return tuple(_freeze(x) for x in v)
    return v


freeze = _freeze  # a value with every list and dict in it read-only (new ones)


def freeze_flat(v: Any) -> Any:
    """A read-only copy of list or dict ``v`` that holds no list, dict or tuple (one C-level copy)."""
    return _List(v) if type(v) is list else _Dict(v)


class _Unfrozen(Node):
    """A Node with ReadOnlyNode's layout whose fields can be set once: ``read_only_node`` sets them
    through the dataclass's ``__init__`` (plain slot stores), then makes it a ReadOnlyNode by
    ``__class__`` assignment (Note [Read-only nodes built in one call])."""

    __slots__ = ()


# Note [Read-only nodes built in one call]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# (Guards likewise: ``read_only_guard`` builds an ``_UnfrozenGuard`` and sets its class to ReadOnlyGuard.)
# A ReadOnlyNode refuses ``__setattr__``, so its ten fields were written one ``object.__setattr__``
# call each, a tenth of keeping a parse (tracer/trace_log/deferred.py ``_keep``). Instead the node is
# made as an ``_Unfrozen`` (a Node subclass adding no slot and no method: Node's own ``__init__``
# stores the fields as a Node's are stored) and its class is then set to ReadOnlyNode, which Python
# allows between classes of the same layout (both add no slot to Node); from then on every write is
# refused as before. The object is exactly what the field-by-field build gave: same class, same slots.


def read_only_node(name: str, op: str, target: str, args: Any, kwargs: Any, inputs: list[str], users: list[str],
                   role: str, calls: list[str], meta: Any) -> ReadOnlyNode:
    """A ReadOnlyNode of these fields as they are (the caller made its lists and dicts read-only)."""
    r = _Unfrozen(name, op, target, args, kwargs, inputs, users, role, calls, meta)
    r.__class__ = ReadOnlyNode  # Note [Read-only nodes built in one call]
    return r  # type: ignore[return-value]


def freeze_nodes(nodes: list[Node]) -> list[Node]:
    """A read-only copy of ``nodes``: a list that refuses writes, of :class:`ReadOnlyNode`\\ s whose lists
    and dicts refuse them too (a list already read-only is returned as it is)."""
    if type(nodes) is _List:
        return nodes
    out = []
    put = object.__setattr__  # the slots of a ReadOnlyNode, written once here
    for n in nodes:
        r = ReadOnlyNode.__new__(ReadOnlyNode)
        for f in _FIELDS:
            put(r, f, _freeze(getattr(n, f)))
        out.append(r)
    return _List(out)


read_only_list = _List  # read_only_list(items): ``items`` as a read-only list (the items as they are); the class
read_only_dict = _Dict  # itself, called without a Python frame between (freeze_flat's two halves, for callers that know which)


def is_read_only(nodes: list[Node]) -> bool:
    """Whether a graph's ``nodes`` is a read-only list (:func:`freeze_nodes`)."""
    return type(nodes) is _List
