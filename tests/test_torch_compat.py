"""Every private torch name dynascope uses exists in the releases ``_symbols.py`` says it does, and a torch
lacking one still captures (tracer/_torch/_symbols.py, tracer/_torch/releases.py)."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from tracer._torch import releases
from tracer._torch._symbols import (
    ATTRIBUTES,
    CHECKED_RELEASES,
    PRIVATE_ATTRIBUTES,
    SYMBOLS,
    WRAPPERS,
)


def _expect(p) -> bool:
    """Whether the running torch must have ``p``: a checked release as the table says; any other, what the
    newest checked release has."""
    r = releases.release()
    return r in p.releases if r in CHECKED_RELEASES else CHECKED_RELEASES[-1] in p.releases


@pytest.mark.parametrize("p", [*SYMBOLS, *ATTRIBUTES], ids=str)
def test_private_name_exists_in_the_releases_listed(p):
    r = releases.release()
    if _expect(p):
        assert releases.present(p), f"torch {r} has no {p} (feeds {p.feeds}); _symbols.py lists it for {p.releases}"
    else:
        assert not releases.present(p), f"torch {r} has {p}: add {r} to its releases in _symbols.py"


def test_each_name_is_listed_once_with_checked_releases():
    names = [str(p) for p in (*SYMBOLS, *ATTRIBUTES)]
    assert len(names) == len(set(names))
    for p in (*SYMBOLS, *ATTRIBUTES, *WRAPPERS):
        assert p.releases and set(p.releases) <= set(CHECKED_RELEASES), p
        assert p.feeds, p


def test_private_symbol_names_the_missing_part():
    with pytest.raises(releases.MissingHookPoint, match=r"torch \S+ has no torch\._dynamo\.convert_frame:"
                                                        r"CatchErrorsWrapper\._no_such_method"):
        releases.lookup("torch._dynamo.convert_frame:CatchErrorsWrapper._no_such_method")
    with pytest.raises(releases.MissingHookPoint, match="torch._no_such_module"):
        releases.lookup("torch._no_such_module:x")


def test_class_has_reads_fields_and_self_assignments():
    from torch._dynamo.output_graph import SubgraphTracer

    assert releases.class_has(SubgraphTracer, "lifted_freevars")  # self.lifted_freevars = ... in __init__
    assert not releases.class_has(SubgraphTracer, "no_such_attribute_anywhere")


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
        seen["CompileId"] = seen["TraceId"].compile_id
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
    for w in WRAPPERS:
        has = any(hasattr(x, w.name) for x in (optimized, disabled))
        if _expect(w):
            assert has, f"torch {releases.release()} no longer sets {w.name} on wrappers"
        else:
            assert not has, f"torch {releases.release()} sets {w.name}: add it to its releases in _symbols.py"
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


# A torch that lacks a hook point, made by deleting one for the test (restored after): Dynamo never calls
# ``speculate_subgraph_with_auto_output_flattening`` for a function without a HOP, so torch itself runs as on
# a release that does not have it; only dynascope's hook has nothing to wrap.
_HOP_MODULE = "torch._dynamo.variables.higher_order_ops"
_POINT = "speculate_subgraph_with_auto_output_flattening"


@pytest.fixture
def torch_without_hook_point():
    mod = importlib.import_module(_HOP_MODULE)
    real = mod.__dict__[_POINT]
    delattr(mod, _POINT)
    warned, releases._warned = releases._warned, False
    try:
        yield f"{_HOP_MODULE}:{_POINT}"
    finally:
        setattr(mod, _POINT, real)
        releases._warned = warned


@pytest.mark.problems_expected
def test_capture_on_a_torch_missing_a_hook_point_records_a_problem(torch_without_hook_point):
    import torch

    import tracer
    from tracer._torch.patching import ACTIVE

    def f(x):
        return torch.relu(x) + 1

    x = torch.randn(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", releases.UncheckedTorchWarning)
        cap = tracer.capture(f, x)
    assert torch.equal(cap.result, f(x))
    assert [fr.compile_id for fr in cap.frames] == ["0/0"] and cap.frames[0].status == "compiled"
    assert [n.target for n in cap.frames[0].graph.nodes if n.op == "call_function"] == ["torch.relu", "operator.add"]
    assert cap.frames[0].aot is not None and cap.frames[0].guards  # the other hooks still recorded
    missing = [p for p in cap.problems if torch_without_hook_point in p]
    assert missing == [f"HOP body speculations, operands vs lifted inputs (Frame.speculations, Subgraph inputs): "
                       f"not recorded, torch {releases.release()} has no {torch_without_hook_point}"]
    assert ACTIVE == []  # the hooks that did install are removed


def test_a_release_nobody_checked_warns_once_naming_what_it_lacks(torch_without_hook_point):
    unchecked = ()  # as on a release newer than CHECKED_RELEASES: the running one is not among them
    with pytest.warns(releases.UncheckedTorchWarning) as record:
        text = releases.warn_once(checked=unchecked)
    [w] = record
    assert str(w.message) == text
    assert f"this is torch {releases.release()}" in text and ", ".join(CHECKED_RELEASES) in text
    # on an older checked release, also the names the table says it lacks and the newest release has
    older = [p for p in (*SYMBOLS, *ATTRIBUTES) if CHECKED_RELEASES[-1] in p.releases and not _expect(p)]
    assert f"lacks {1 + len(older)} private name(s) dynascope reads: " in text
    assert f"{torch_without_hook_point} (feeds HOP body speculations" in text and all(f"{p} (feeds" in text for p in older)
    assert "Capture.problems" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", releases.UncheckedTorchWarning)
        assert releases.warn_once(checked=unchecked) is None  # once per process


def test_a_checked_release_is_not_looked_at_and_does_not_warn():
    warned, releases._warned = releases._warned, False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", releases.UncheckedTorchWarning)
            assert releases.warn_once(checked=(releases.release(),)) is None
        assert releases._warned is False  # nothing looked up: a later capture on it stays free
    finally:
        releases._warned = warned



def test_backend_match_guards_on_a_torch_without_the_cache_entry_api(monkeypatch):
    """torch 2.12 has no ``_get_cache_entries_for_region``. Torch 2.13 itself calls it, so deleting it
    would break torch, not simulate 2.12: here only the import dynascope makes fails (a module in
    sys.modules without the two functions). The BACKEND_MATCH guards are then unknown, said once."""
    import types

    from tracer._torch.guards import backend_match_guards
    from tracer._torch.unknowns import recording_into

    monkeypatch.setitem(sys.modules, "torch._C._dynamo.eval_frame", types.ModuleType("torch._C._dynamo.eval_frame"))
    problems: list[str] = []
    with recording_into(problems):
        assert backend_match_guards([test_backend_match_guards_on_a_torch_without_the_cache_entry_api.__code__], 0) == {}
    assert len(problems) == 1
    assert problems[0].startswith("the cache entries (BACKEND_MATCH guards) of every frame")
    assert "_get_cache_entries_for_region" in problems[0] or "_debug_get_cache_entry_list" in problems[0]


def test_a_session_then_a_capture_in_a_fresh_process():
    """A Session compiles on a worker thread; a capture on the main thread after it must not crash the
    process (Note [A compile on a worker thread, before torch 2.12]): in a fresh process, where the
    session's compile is the first one."""
    import os
    import subprocess

    code = ("import torch, tracer\n"
            "s = tracer.trace(lambda x: x.sin() + 1, torch.randn(3))\n"
            "assert s.start().wait(timeout=120) is None\n"
            "cap = tracer.capture(lambda x: x.cos(), torch.randn(3))\n"
            "print([f.status for f in cap.frames])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "['compiled']"


def test_the_skip_log_tap_hands_on_the_reason_and_logs_unchanged():
    """Before torch 2.13 a skipped frame's reason is only in convert_frame's debug log (Note [Skip reasons
    before torch 2.13]): the stand-in logger gives the exception's text to the sink and passes every call
    on to the real logger as it was made."""
    import logging

    from tracer._torch.since_2_13 import _SkipLogTap

    real = logging.getLogger("dynascope.test.skiptap")
    real.setLevel(logging.DEBUG)
    real.propagate = False
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    real.addHandler(handler)
    got: list[tuple] = []
    tap = _SkipLogTap(real, lambda key, reason: got.append((key, reason)))
    try:
        signal = "Received signal to skip frame (without graph break): %s %s %s %s"
        tap.debug(signal, RuntimeError("No ops traced for the FX graph."), "f", "f.py", 1)
        tap.debug("something else: %s", ValueError("not a skip"))
        tap.info("an info line")
    finally:
        real.removeHandler(handler)
    assert got == [(None, "No ops traced for the FX graph.")]  # outside a compile: no compile key
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("DEBUG", "Received signal to skip frame (without graph break): No ops traced for the FX graph. f f.py 1"),
        ("DEBUG", "something else: not a skip"), ("INFO", "an info line")]
