"""tracer._torch.breaks: the graph-break and skip hooks on real Dynamo, and the record of one break
(user frames, the ``real_stack`` fallback, a break Dynamo already logged) on real stack objects.

Fast (one small compile per hook test): these are the tests `make mutants` runs against it.
"""

from __future__ import annotations

import inspect
import logging
import os
import traceback

import pytest
import torch
from torch._dynamo.convert_frame import CatchErrorsWrapper
from torch._dynamo.symbolic_convert import InstructionTranslatorBase
from torch._guards import CompileContext, CompileId, TracingContext, compile_context, tracing

from tracer._torch.breaks import (
    BreakRecord,
    SkipRecorder,
    break_record,
    format_stack,
    install_graph_break_hook,
)
from tracer._torch.patching import ACTIVE, Patches

HERE = os.path.basename(__file__)
TORCH_FILE = os.path.join(os.sep, "venv", "lib", "site-packages", "torch", "nn", "modules", "module.py")


def fs(file: str, line: int, fn: str, code: str | None = None) -> traceback.FrameSummary:
    return traceback.FrameSummary(file, line, fn, lookup_line=False, line=code)


class Exc(Exception):
    """An exception as ``log_graph_break`` receives one: Dynamo's carry ``real_stack`` and ``logged``."""

    logged = False


def exc(stack=None, logged: bool = False) -> Exc:
    e = Exc("x")
    if stack is not None:
        ok = all(isinstance(f, traceback.FrameSummary) for f in stack)
        e.real_stack = traceback.StackSummary.from_list(stack) if ok else stack  # a damaged stack as it is
    e.logged = logged
    return e


def test_format_stack_is_file_line_function_outermost_first():
    stack = [fs("/home/u/train.py", 40, "main"), fs("/home/u/model.py", 12, "forward")]
    assert format_stack(stack) == ["train.py:40 in main", "model.py:12 in forward"]
    assert format_stack(None) == [] and format_stack([]) == []
    assert format_stack(["a line that is no frame"]) == ["a line that is no frame"]


def test_a_break_record_names_the_innermost_user_frame():
    stack = [fs("/home/u/train.py", 40, "main"), fs(TORCH_FILE, 1775, "_call_impl"),
             fs("/home/u/model.py", 12, "forward", "    torch._dynamo.graph_break()  "),
             fs(TORCH_FILE, 1790, "_call_impl"), fs("<eval_with_key>.3", 5, "forward")]
    rec = break_record("Call to graph_break", exc(stack))
    assert rec == BreakRecord(None, "Call to graph_break", ["train.py:40 in main", "model.py:12 in forward"],
                              "model.py:12", "torch._dynamo.graph_break()", 0)


def test_which_files_are_torch():
    user = ["/home/u/torch/model.py", "/venv/site-packages/torchvision/models/resnet.py",
            "/venv/site-packages/numpy/core/x.py", "/src/pytorch/torch/nn/f.py", "<string>", "x<eval_with_key>.1"]
    torch_files = [TORCH_FILE, "<eval_with_key>.12"]
    stack = [fs(f, k + 1, "f") for k, f in enumerate(user + torch_files)]
    rec = break_record("r", exc(stack))
    assert rec.user_stack == [f"{os.path.basename(f)}:{k + 1} in f" for k, f in enumerate(user)]


def test_a_stack_of_torch_frames_only_is_kept_whole():
    stack = [fs(TORCH_FILE, 3, "a", "x = 1"), fs("<eval_with_key>.2", 4, "forward", "y = 2")]
    rec = break_record("r", exc(stack))
    assert (rec.user_stack, rec.location, rec.code_line) == (["module.py:3 in a", "<eval_with_key>.2:4 in forward"],
                                                            "<eval_with_key>.2:4", "y = 2")


def test_a_frame_without_its_line_has_no_code_line():
    rec = break_record("r", exc([fs("/nowhere/model.py", 12, "forward", None)]))
    assert (rec.location, rec.code_line) == ("model.py:12", "")


def test_key_and_attempt_are_the_running_compile_s():
    ctx = CompileContext(CompileId(frame_id=3, frame_compile_id=1))
    ctx.attempt = 2
    with compile_context(ctx):
        rec = break_record("r", exc([fs("/home/u/m.py", 1, "f")]))
        bad = break_record("r", exc([object()]))
    assert (rec.key, rec.attempt) == ((3, 1), 2)
    assert bad == BreakRecord((3, 1), "r", attempt=2,
                              problem="graph break not fully read: AttributeError: 'object' object has no attribute 'filename'")


def test_a_stack_it_cannot_read_is_a_problem_not_an_error():
    rec = break_record("why", exc([fs("/home/u/m.py", 1, "f"), object()]))
    assert rec == BreakRecord(None, "why", problem="graph break not fully read: AttributeError: "
                                                   "'object' object has no attribute 'filename'")
    e = Exception("no logged attribute: not what Dynamo hands over")
    assert break_record("why", e).problem == "graph break not fully read: AttributeError: 'Exception' object has no attribute 'logged'"


def test_a_break_dynamo_already_logged_is_not_recorded_twice():
    assert break_record("r", exc([fs("/home/u/m.py", 1, "f")], logged=True)) is None
    assert break_record("r", exc([fs("/home/u/m.py", 1, "f")], logged=False)) is not None


def test_without_real_stack_the_tracing_context_stack_is_read():
    # as Dynamo's own log_graph_break: ``exc.real_stack`` when it is there, else TracingContext.extract_stack()
    ctx = TracingContext(None)
    ctx.frame_summary_stack = [fs("/home/u/train.py", 40, "main"), fs("/home/u/model.py", 12, "forward", "y = f(x)")]
    with tracing(ctx):
        rec = break_record("r", exc())
        assert (rec.user_stack, rec.location, rec.code_line) == (["train.py:40 in main", "model.py:12 in forward"],
                                                                "model.py:12", "y = f(x)")
        # an empty real_stack is the exception's stack all the same: no fallback
        empty = break_record("r", exc([]))
        assert (empty.user_stack, empty.location, empty.code_line) == ([], "", "")
    rec = break_record("r", exc())  # outside a trace torch has no stack: nothing is guessed
    assert rec == BreakRecord(None, "r", [], "", "", 0)


def _broken(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y.cos()


BREAK_LINE = inspect.getsourcelines(_broken)[1] + 2


class _Artifacts(logging.Handler):
    """The structured-trace artifacts torch logs (torch/_logging/_internal.py trace_structured)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.got: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "metadata", {})
        if "artifact" in meta:
            self.got.append((meta["artifact"].get("name", ""), str(getattr(record, "payload", ""))))


def test_the_hook_records_each_graph_break_of_a_real_compile_and_calls_dynamo():
    torch._dynamo.reset()
    recs: list[BreakRecord] = []
    x = torch.randn(3)
    trace_log, artifacts = logging.getLogger("torch.__trace"), _Artifacts()
    level = trace_log.level
    trace_log.addHandler(artifacts)
    trace_log.setLevel(logging.DEBUG)
    original = InstructionTranslatorBase.__dict__["log_graph_break"]
    try:
        with Patches() as p:
            install_graph_break_hook(p, recs.append)
            assert inspect.unwrap(InstructionTranslatorBase.log_graph_break) is original
            out = torch.compile(_broken, backend="eager")(x)
    finally:
        trace_log.removeHandler(artifacts)
        trace_log.setLevel(level)
    assert torch.equal(out, x.sin().cos())  # Dynamo went on past the break: it split the graph
    # and Dynamo's own log_graph_break ran with the same reason (its "dynamo_graph_break_reason" artifact)
    [payload] = [text for name, text in artifacts.got if name == "dynamo_graph_break_reason"]
    assert f"Graph Break Reason: {recs[0].reason.splitlines()[0]}" in payload
    assert not any(name == "log_graph_break" for _, name in ACTIVE)
    [rec] = recs
    assert rec.problem == "" and rec.attempt == 0
    assert isinstance(rec.key, tuple) and [type(k) for k in rec.key] == [int, int] and rec.key[1] == 0
    assert rec.location == f"{HERE}:{BREAK_LINE}" and rec.code_line == "torch._dynamo.graph_break()"
    assert rec.user_stack[-1] == f"{HERE}:{BREAK_LINE} in _broken"
    assert "graph_break" in rec.reason


def _no_ops(x):
    return x


def _ops(x):
    return x.sin()


@pytest.mark.skipif(not hasattr(CatchErrorsWrapper, "_handle_skip"),
                    reason="torch before 2.13 has no _handle_skip: the reason comes from convert_frame's debug log "
                           "(tracer/_torch/since_2_13.py, tested in tests/test_torch_compat.py)")
def test_the_skip_hook_hands_over_why_a_compile_made_no_graph():
    torch._dynamo.reset()
    got: list[tuple] = []
    from_log: list[tuple] = []
    x = torch.randn(3)
    original = CatchErrorsWrapper.__dict__["_handle_skip"]
    with Patches() as p:
        SkipRecorder(p, lambda code, reason: got.append((code, reason)), lambda key, reason: from_log.append((key, reason)))
        assert inspect.unwrap(CatchErrorsWrapper._handle_skip) is original
        assert torch.compile(_no_ops, backend="eager")(x) is x
        torch.compile(_ops, backend="eager")(x)  # a compile that made a graph hands nothing over
    assert not any(name == "_handle_skip" for _, name in ACTIVE)
    # torch's own frames (skipfiles) are handed over too, with their reason; the recorder picks by code object
    assert not [r for c, r in got if c is _ops.__code__]
    [reason] = [r for c, r in got if c is _no_ops.__code__]
    assert reason.startswith("Dynamo decided to skip the frame while tracing: ") and "No ops traced for the FX graph" in reason
    assert "frame is in the Dynamo skipfiles list" in {r for _, r in got} and "None" not in {r for _, r in got}
    assert from_log == []  # where torch hands the reason over, its debug log is not read
