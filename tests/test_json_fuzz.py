"""Damaged capture files have defined outcomes: ``Capture.from_json`` either refuses them or they render.

Each document is a valid capture file with one seeded damage (a field removed, a value of another
type, a container swapped, a huge int, NaN, an unknown field at any depth, markup in a string, the
text truncated). The outcome must be exactly one of: ``ValueError`` from ``Capture.from_json``,
``ValidationError`` from ``tracer.validate``, or a capture that validates and renders
(``viz.capture_html`` and ``str``) with no other exception, and whose HTML shows injected markup as text.
"""

from __future__ import annotations

import json
import math
import random
import traceback
from collections import Counter
from typing import Any

import pytest
from viz_fixtures import fidelity_capture

import viz
from tracer.model import Capture, ValidationError, validate

DOCUMENTS = 1200  # damaged documents per base capture
MARKUP = "<img src=x onerror=alert(1)>"

Path = tuple  # keys and indices from the document root


def _paths(doc: Any, here: Path = ()) -> list[Path]:
    """Every position in ``doc`` (the root included), depth first."""
    out = [here]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*here, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*here, i))
    return out


def _get(doc: Any, path: Path) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def _set(doc: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


_VALUES = [0, -1, 1.5, True, None, "", "x", MARKUP, [], {}, [MARKUP], {"x": 1}, 10**40, -(2**70),
           float("nan"), float("inf"), "0/0", "operand"]


def _damage(doc: Any, rng: random.Random) -> tuple[Any, str]:
    """``doc`` with one damage, and what it was (for the failure message)."""
    paths = _paths(doc)
    path = rng.choice(paths)
    here = _get(doc, path)
    kind = rng.choice(["remove", "retype", "retype", "swap", "unknown", "markup", "huge", "nan", "wrap"])
    if kind == "remove":
        parents = [p for p in paths if p and isinstance(_get(doc, p[:-1]), (dict, list))]
        path = rng.choice(parents)
        del _get(doc, path[:-1])[path[-1]]
    elif kind == "retype":
        doc = _set(doc, path, rng.choice(_VALUES))
    elif kind == "swap":  # a list where a dict was and back
        swapped = list(here.values()) if isinstance(here, dict) else (
            {str(i): v for i, v in enumerate(here)} if isinstance(here, list) else [here])
        doc = _set(doc, path, swapped)
    elif kind == "unknown":
        dicts = [p for p in paths if isinstance(_get(doc, p), dict)]
        path = rng.choice(dicts)
        _get(doc, path)[rng.choice(["zzz", MARKUP, "__class__", "meta"]) + "_x"] = rng.choice(_VALUES)
    elif kind == "markup":
        strings = [p for p in paths if isinstance(_get(doc, p), str)] or [path]
        path = rng.choice(strings)
        doc = _set(doc, path, f"{_get(doc, path)}{MARKUP}")
    elif kind == "huge":
        doc = _set(doc, path, rng.choice([10**40, -(10**40), 2**63, -(2**63) - 1]))
    elif kind == "nan":
        doc = _set(doc, path, rng.choice([float("nan"), float("inf"), float("-inf")]))
    elif kind == "wrap":
        doc = _set(doc, path, [here])
    return doc, f"{kind} at {'.'.join(map(str, path)) or '$'}"


def _outcome(text: str) -> str:
    """'refused', 'invalid' or 'rendered'; any other exception propagates (that is a bug)."""
    try:
        cap = Capture.from_json(text)
    except ValueError:
        return "refused"
    try:
        validate(cap)
    except ValidationError:
        return "invalid"
    html = viz.capture_html(cap)
    str(cap)
    assert MARKUP not in html, "markup from a capture file reached the HTML unescaped"
    return "rendered"


def _fuzz(base: Capture, seed: int, n: int = DOCUMENTS) -> Counter:
    original = json.loads(base.to_json())
    rng = random.Random(seed)
    seen: Counter = Counter()
    bugs: list[str] = []
    for i in range(n):
        doc, what = _damage(json.loads(json.dumps(original)), rng)
        text = json.dumps(doc)  # NaN / Infinity as JSON's common extension, as json.dumps writes them
        if rng.random() < 0.05:
            text, what = text[: rng.randrange(len(text))], f"truncated ({what})"
        try:
            seen[_outcome(text)] += 1
        except Exception as e:  # noqa: BLE001 - collected and reported below with the damage that caused it
            bugs.append(f"#{i} {what}: {type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}")
    assert not bugs, f"{len(bugs)} damaged documents raised an undefined error; first:\n" + "\n".join(bugs[:3])
    return seen


def test_fuzz_synthetic_capture_every_kind():
    """The fixture with every frame status, saved-value origin, input kind and grouped break."""
    seen = _fuzz(fidelity_capture(), seed=0)
    assert sum(seen.values()) == DOCUMENTS
    assert seen["refused"] and seen["rendered"], seen  # the damages reach both ends


@pytest.mark.slow
def test_fuzz_real_capture(captured):
    """A real capture of nested HOP bodies (lifted inputs, call sites, AOT graphs, guards)."""
    seen = _fuzz(captured("checkpoint"), seed=1)
    assert sum(seen.values()) == DOCUMENTS and seen["refused"], seen


def test_undamaged_documents_render():
    assert _outcome(fidelity_capture().to_json()) == "rendered"


@pytest.mark.parametrize("text, match", [
    ('{"schema": 2, "capture": {"frames": [{"compile_id": 0}]}}', r"\$\.frames\[0\]"),
    ('{"schema": 2, "capture": {"frames": NaN}}', r"\$\.frames"),
    ('{"schema": 2, "capture": []}', "capture"),
    ('{"schema": 2}', "capture"),
    ("[1, 2", "not JSON"),
])
def test_damage_is_one_value_error_naming_its_path(text: str, match: str):
    with pytest.raises(ValueError, match=match):
        Capture.from_json(text)


def test_nan_in_a_float_field_is_refused_or_rendered():
    """JSON has no NaN, but Python's json writes and reads it: a NaN time must not break a view."""
    doc = json.loads(fidelity_capture().to_json())
    doc["capture"]["frames"][1]["times"]["total"] = math.nan
    assert _outcome(json.dumps(doc)) in ("refused", "invalid", "rendered")


def test_error_message_is_path_then_msgspec_reason():
    """The exact shape of the error: where first, then msgspec's own words (no backticks around the path)."""
    text = '{"schema": 2, "capture": {"frames": [{"compile_id": 0, "code": "f.py:1 in f"}]}}'
    with pytest.raises(ValueError) as e:
        Capture.from_json(text)
    assert str(e.value) == "invalid capture file: $.frames[0].compile_id: Expected `str`, got `int`"


def test_error_message_of_a_bad_value_meta():
    doc = json.loads(fidelity_capture().to_json())
    doc["capture"]["frames"][1]["graph"]["nodes"][0]["meta"]["shape"] = [[1]]
    with pytest.raises(ValueError) as e:
        Capture.from_json(json.dumps(doc))
    assert str(e.value) == ("invalid capture file: $.frames[1].graph.nodes[0].meta.shape[0]: "
                            "Expected `int | str`, got `array`")
