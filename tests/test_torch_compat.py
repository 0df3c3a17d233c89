"""Every private torch symbol dynascope uses still exists (tracer/_torch/_symbols.py)."""

from __future__ import annotations

import importlib

import pytest

from tracer._torch._symbols import PRIVATE_SYMBOLS


@pytest.mark.parametrize("symbol", PRIVATE_SYMBOLS)
def test_private_symbol_exists(symbol):
    module_name, _, attr = symbol.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as e:
        pytest.fail(f"torch moved {symbol!r}: module {module_name!r} does not import ({e})")
    for part in attr.split("."):
        if not hasattr(obj, part):
            pytest.fail(f"torch moved {symbol!r}: {module_name} has no {attr!r} (missing {part!r})")
        obj = getattr(obj, part)


def test_only_tracer_torch_imports_private_modules():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    pattern = re.compile(r"^\s*(from|import)\s+torch\._(?!C\b)|importlib\.import_module\([\"']torch\._", re.M)
    offenders = []
    for path in list((root / "tracer").rglob("*.py")) + list((root / "viz").rglob("*.py")):
        if "_torch" in path.parts:
            continue
        if pattern.search(path.read_text()):
            offenders.append(str(path.relative_to(root)))
    assert offenders == []
