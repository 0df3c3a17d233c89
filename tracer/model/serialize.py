"""JSON for the model: ``dumps`` writes a Capture, ``loads`` reads one back with typed decoding.

Invariant: ``loads(dumps(cap)) == cap``, and a document that does not fit the model's types is
one ``ValueError`` naming the path of the first bad field (``$.frames[0].guards[3].kind: Expected
`str`, got `int```), never a ``TypeError`` later in a view. Decoding is msgspec's
``convert`` against the dataclasses' own type hints (a maintained C decoder: no hand-written
walk to keep in step with the fields); no pickle, no code is ever loaded.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any, TypedDict, Union

import msgspec

from tracer.model.graph import Node
from tracer.model.subgraph import SubgraphInput

if TYPE_CHECKING:
    from tracer.model.capture import Capture

__all__ = ["SCHEMA_VERSION", "dumps", "load_document", "loads", "to_plain"]

SCHEMA_VERSION = 2  # 2: frames are compile attempts with status/times/problems (1 had compiled frames only)

_SKIP_FIELDS = {"result"}


def to_plain(obj: Any) -> Any:
    """Dataclasses as dicts of their fields (``Capture.result`` dropped), tuples as lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.name not in _SKIP_FIELDS}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    return obj


def dumps(cap: Capture, indent: int | None = None) -> str:
    """JSON text of ``cap`` (without ``result``)."""
    return json.dumps({"schema": SCHEMA_VERSION, "capture": to_plain(cap)}, indent=indent)


def loads(text: str | bytes, cls: type[Capture]) -> Capture:
    """A ``cls`` (Capture) from :func:`dumps` text; ``ValueError`` with the path of the first bad field.

    The class is passed in, so this module does not import the one that calls it.
    """
    return load_document(text, key="capture", cls=cls, what="capture", schema=SCHEMA_VERSION)


def load_document(text: str | bytes, *, key: str, cls: type, what: str, schema: int | None = None) -> Any:
    """Decode ``{"schema": .., key: {...}}`` JSON text into ``cls`` with msgspec's typed ``convert``.

    Every way the text can be wrong is one ``ValueError`` saying what was expected: not UTF-8 (bytes),
    not JSON, not an object with ``key``, another schema, or a field of the wrong type (named by its path).
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = text.decode("utf-8-sig")  # a BOM is not part of the document
        except UnicodeDecodeError as e:
            raise ValueError(f"not a dynascope {what}: binary data, not JSON text (byte {e.object[e.start]:#04x} "
                             f"at offset {e.start} is not UTF-8)") from None
    try:
        data = json.loads(text)
    except (ValueError, TypeError) as e:
        raise ValueError(f"not a dynascope {what}: the text is not JSON ({e})") from None
    if not isinstance(data, dict) or key not in data:
        raise ValueError(f"not a dynascope {what}: expected a JSON object with a {key!r} key")
    if schema is not None and data.get("schema") != schema:
        raise ValueError(f"unsupported {what} schema {data.get('schema')!r} (this dynascope reads {schema}; "
                         f"make the {what} again with this version)")
    body = data[key]
    if isinstance(body, dict) and "result" in body:
        raise ValueError(f"$.{key}.result: a {what}'s result is never serialized")
    try:
        out = msgspec.convert(body, type=cls, strict=True)
    except msgspec.ValidationError as e:
        raise ValueError(f"invalid {what} file: {_path(str(e))}") from None
    _check_value_metas(out, "$", what)
    return out


# Note [Typed value meta]
# ~~~~~~~~~~~~~~~~~~~~~~~
# ``Node.meta`` and ``SubgraphInput.meta`` are escape hatches (``dict[str, Any]``, as fx's
# ``Node.meta``), so msgspec cannot type them; but the keys of Note [Node.meta keys] that describe
# the value (what ``format_meta`` and every view read) have fixed types. They are checked here,
# against this TypedDict, so that ``"shape": 3`` in a file is a ValueError naming its path and not a
# TypeError in a view. Other keys stay free; checking does not change the dict.
class _ValueMeta(TypedDict, total=False):
    kind: str
    shape: list[Union[int, str]]
    stride: list[Union[int, str]]
    dtype: str
    device: str
    requires_grad: bool
    value: str
    items: list[_ValueMeta]
    subclass: str


def _check_value_metas(obj: Any, where: str, what: str) -> None:
    """ValueError at the first node / body-input meta whose value keys have the wrong types."""
    if isinstance(obj, (Node, SubgraphInput)):
        try:
            msgspec.convert(obj.meta, type=_ValueMeta, strict=True)
        except msgspec.ValidationError as e:
            raise ValueError(f"invalid {what} file: {_path(str(e).replace('`$', f'`{where}.meta'))}") from None
        return
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if isinstance(v, (list, dict)) or dataclasses.is_dataclass(v):
                _check_value_metas(v, f"{where}.{f.name}", what)
    elif isinstance(obj, list):  # the model's lists hold either dataclasses or plain values
        for i, v in enumerate(obj):
            if not dataclasses.is_dataclass(v):
                return
            _check_value_metas(v, f"{where}[{i}]", what)
    elif isinstance(obj, dict):  # the model's dicts hold either dataclasses (subgraphs, ranks) or plain values
        for k, v in obj.items():
            if dataclasses.is_dataclass(v):
                _check_value_metas(v, f"{where}.{k}", what)


def _path(message: str) -> str:
    """msgspec says "Expected `str`, got `int` - at `$.frames[0].kind`": put the path first."""
    what, sep, where = message.rpartition(" - at ")
    if not sep:
        return message
    return f"{where.removeprefix('`').removesuffix('`')}: {what}"
