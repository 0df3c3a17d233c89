"""Every private torch symbol dynascope uses still exists (tracer/_torch/_symbols.py)."""

from __future__ import annotations

import importlib

import pytest

from tracer._torch._symbols import PRIVATE_ATTRIBUTES, PRIVATE_SYMBOLS, WRAPPER_ATTRIBUTES


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


def _class_has(cls: type, attr: str) -> bool:
    """``attr`` is a class attribute, field, slot, annotation or ``self.attr =`` in the class's own source."""
    import dataclasses
    import inspect
    import re

    if hasattr(cls, attr):
        return True
    assigned = re.compile(rf"\bself\.{re.escape(attr)}\s*(:[^=]*)?=(?!=)")
    for c in cls.__mro__:
        if c is object:
            continue
        if dataclasses.is_dataclass(c) and attr in {f.name for f in dataclasses.fields(c)}:
            return True
        if attr in getattr(c, "_fields", ()) or attr in getattr(c, "__slots__", ()) or attr in vars(c).get(
                "__annotations__", {}):
            return True
        try:
            if assigned.search(inspect.getsource(c)):
                return True
        except (OSError, TypeError):
            continue
    return False


@pytest.mark.parametrize("owner,attr", PRIVATE_ATTRIBUTES, ids=[f"{o}.{a}" for o, a in PRIVATE_ATTRIBUTES])
def test_private_attribute_exists(owner, attr):
    module_name, _, cls_name = owner.partition(":")
    cls = getattr(importlib.import_module(module_name), cls_name, None)
    assert isinstance(cls, type), f"torch moved {owner!r} (read for .{attr})"
    assert _class_has(cls, attr), f"torch renamed {owner}.{attr}: no class attribute, field or self.{attr} ="


def test_tracing_state_attributes_on_real_instances():
    """The attributes pause.py reads, on the InstructionTranslator a real compile is tracing with."""
    import torch
    from torch._dynamo.comptime import comptime
    from torch._guards import CompileContext

    seen = {}

    def inspect_tx(ctx):
        tx = ctx._i_will_not_complain_if_bc_breaks_InstructionTranslator()
        seen["InstructionTranslatorBase"] = tx
        seen["OutputGraph"] = tx.output
        seen["SubgraphTracer"] = tx.output.current_tracer
        seen["SideEffects"] = tx.output.side_effects
        seen["Instruction"] = tx.current_instruction
        seen["TraceId"] = CompileContext.current_trace_id()
        seen["Guard"] = next(iter(tx.output.guards), None)

    def f(x):
        comptime(inspect_tx)
        return x.sin()

    torch._dynamo.reset()
    try:
        torch.compile(f, backend="eager")(torch.randn(2))
    finally:
        torch._dynamo.reset()
    checked = 0
    for owner, attr in PRIVATE_ATTRIBUTES:
        obj = seen.get(owner.partition(":")[2])
        if obj is not None:
            assert hasattr(obj, attr), f"torch renamed {owner}.{attr} (not on a real instance)"
            checked += 1
    assert checked >= 25


def test_wrapper_attributes_on_real_wrappers():
    import torch

    def f(x):
        return x

    optimized = torch._dynamo.optimize("eager")(f)
    disabled = torch._dynamo.disable(f)
    module = torch.compile(torch.nn.Linear(2, 2), backend="eager")
    for attr in WRAPPER_ATTRIBUTES:
        assert any(hasattr(w, attr) for w in (optimized, disabled)), f"torch no longer sets {attr} on wrappers"
    assert hasattr(module, "_orig_mod") and hasattr(torch._dynamo.config, "_config")


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


def test_saved_value_kinds_tell_floats_and_bools_from_ints():
    import torch

    from tracer._torch.aot_meta import value_kind
    from tracer.model import SAVED_KINDS

    kinds = [value_kind(v) for v in (torch.ones(1), 3, 2.5, True, object())]
    assert kinds == ["tensor", "symint", "symfloat", "symbool", "opaque"]
    assert set(kinds) <= set(SAVED_KINDS)
