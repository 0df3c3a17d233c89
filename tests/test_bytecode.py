"""Dynamo's transformed code and resume functions, decompiled; a failed decompilation keeps ``dis``."""

from __future__ import annotations

import inspect

import pytest
import torch

import tracer
from tracer._torch import bytecode
from tracer._torch.patching import ACTIVE
from tracer.model import validate


def branchy(x):
    y = torch.sin(x)
    if y.sum() > 0:  # data-dependent jump: a graph break with a resume function for each branch
        y = y + 1
    else:
        y = y - 1
    return torch.cos(y)


@pytest.fixture(scope="module")
def cap():
    return tracer.capture(branchy, torch.randn(4))


def test_a_frame_with_two_resume_functions_decompiled(cap):
    validate(cap)
    first = next(f for f in cap.frames if f.status == "compiled" and f.bytecode and f.bytecode.original.name == "branchy")
    bc = first.bytecode
    resumes = bc.resume_functions
    assert len(resumes) == 2, resumes  # both named after the line of the break (torch/_dynamo/resume_execution.py)
    assert resumes[0].source != resumes[1].source  # ... but they resume at different offsets
    for r in resumes:
        assert r.name.startswith("torch_dynamo_resume_in_branchy_at_")
        assert r.source.startswith(f"def {r.name}("), r.source
        assert not r.problem and r.dis
    # the transformed code is what Dynamo installed: it calls the graph and jumps to a resume function.
    # depyf 0.20 cannot decompile this one (a SWAP it does not handle): then the record says so and
    # keeps the dis listing. See Note [A failed decompilation is not an inexact record].
    t = bc.transformed
    assert "__resume_at_" in (t.source or t.dis) and "__compiled_fn_" in (t.source or t.dis)
    if t.problem:
        assert t.source == "" and t.problem.startswith("depyf could not decompile branchy")
    assert bc.original.source == inspect.getsource(branchy)
    assert "TREE_GUARD_MANAGER" in bc.guard_function


def test_decompiled_transformed_code_calls_graph_and_resume_function():
    def two_breaks(x):
        y = torch.sin(x)
        print("break")
        return torch.cos(y)

    cap = tracer.capture(two_breaks, torch.randn(4))
    assert cap.frames[0].status == "restarted" and cap.frames[0].bytecode is None  # no code installed for it
    bc = cap.frames[1].bytecode
    assert bc.transformed.source.startswith("def two_breaks(x):"), bc.transformed.problem
    assert "__compiled_fn_" in bc.transformed.source and "return __resume_at_" in bc.transformed.source
    assert [r.name for r in bc.resume_functions] == [f"torch_dynamo_resume_in_two_breaks_at_{two_breaks.__code__.co_firstlineno + 2}"]


def test_resume_functions_are_the_frames_dynamo_compiled_next(cap):
    made = {r.name for f in cap.frames if f.bytecode for r in f.bytecode.resume_functions}
    ran = {f.bytecode.original.name for f in cap.frames if f.bytecode and f.bytecode.original.name != "branchy"}
    assert ran and ran <= made  # the branch taken ran as its own frame, compiled by Dynamo
    for f in cap.frames:
        if f.bytecode and f.bytecode.original.name in ran:
            assert f.bytecode.original.source.startswith(f"def {f.bytecode.original.name}(")  # decompiled, not the file


def test_hooks_removed_after_capture(cap):
    from torch._dynamo.convert_frame import _bytecode_hooks
    from torch._dynamo.resume_execution import ContinueExecutionCache

    assert ACTIVE == []
    assert "lookup" in ContinueExecutionCache.__dict__
    assert not any(getattr(h, "__self__", None).__class__.__name__ == "BytecodeRecorder" for h in _bytecode_hooks.values())


def test_decompile_failure_is_a_problem_with_dis_kept(monkeypatch):
    import depyf

    def broken(code):
        raise NotImplementedError("opcode not supported")

    monkeypatch.setattr(depyf, "decompile", broken)
    text = bytecode.code_text(branchy.__code__)
    assert text.source == "" and "NotImplementedError: opcode not supported" in text.problem
    assert "LOAD_GLOBAL" in text.dis and text.name == "branchy"


def test_round_trip(cap):
    assert tracer.Capture.from_json(cap.to_json()) == cap


def test_code_tab_shows_original_and_transformed_and_links_breaks_to_resume_functions():
    from viz import code_view
    from viz.explorer import Explorer

    def two_breaks(x):
        y = torch.sin(x)
        print("<b>break</b>")
        return torch.cos(y)

    cap = tracer.capture(two_breaks, torch.randn(4))
    f = cap.frames[1]
    links = code_view.breaks_to_resume(f, cap.graph_breaks)
    assert [names for _, names in links] == [[f"torch_dynamo_resume_in_two_breaks_at_{two_breaks.__code__.co_firstlineno + 2}"]]
    html = code_view.bytecode_html(f, cap.graph_breaks)
    assert "transformed (installed by Dynamo)" in html and "TREE_GUARD_MANAGER" in html
    assert "<b>break</b>" not in html and "&lt;b&gt;break&lt;/b&gt;" in html  # user text escaped (also by Pygments)
    ex = Explorer(cap, frame=f.compile_id)
    titles = [ex.widget.children[1].get_title(i) for i in range(len(ex.widget.children[1].children))]
    assert "Code" in titles
    assert "torch_dynamo_resume_in_two_breaks_at_" in ex.code_tab.html.value


def test_failed_decompilation_shows_the_dis_listing(cap):
    from viz import code_view

    f = next(f for f in cap.frames if f.bytecode and f.bytecode.original.name == "branchy")
    html = code_view.bytecode_html(f, cap.graph_breaks)
    if f.bytecode.transformed.problem:
        assert "bytecode listing:" in html and "LOAD_GLOBAL" in html
