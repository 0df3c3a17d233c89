"""Dynamo's code objects are kept as bytes and decompiled when first read; a saved capture carries the
text (Note [Decompiled when first read] in tracer/model/bytecode.py)."""

from __future__ import annotations

import base64
import dis
import inspect
import marshal

import torch

import tracer
from tracer.model import CodeText
from tracer.model import bytecode as model_bytecode
from viz import code_view


def one_break(x):
    y = torch.sin(x)
    print("graph break")
    return torch.cos(y)


def _bytecode(cap):
    return next(f.bytecode for f in cap.frames if f.bytecode and f.bytecode.original.name == "one_break")


def test_nothing_is_decompiled_until_read(monkeypatch):
    import depyf

    calls = []
    real = depyf.decompile
    monkeypatch.setattr(depyf, "decompile", lambda code: calls.append(code.co_name) or real(code))
    cap = tracer.capture(one_break, torch.randn(4))
    bc = _bytecode(cap)
    assert calls == [] and bc.transformed.pending and all(r.pending for r in bc.resume_functions)
    assert bc.original.source == inspect.getsource(one_break)  # the user's own source needs no decompiler
    # the kept bytes are the code object Dynamo installed: the same listing as dis gives for it
    code = marshal.loads(base64.b64decode(bc.transformed.code))
    assert code.co_name == "one_break" and any(n.startswith("__resume_at_") for n in code.co_names)
    source = bc.transformed.source  # first read: decompiled now, once
    assert calls == ["one_break"] and not bc.transformed.pending
    assert source == bc.transformed.source and calls == ["one_break"]  # kept, not decompiled again
    assert bc.transformed.dis == dis.Bytecode(code).dis()
    assert "__resume_at_" in source or bc.transformed.problem.startswith("depyf could not decompile")
    (resume,) = bc.resume_functions
    assert resume.source.startswith(f"def {resume.name}(") and calls == ["one_break", resume.name]


def test_saved_capture_has_the_text_and_loads_without_a_decompiler(tmp_path, monkeypatch):
    cap = tracer.capture(one_break, torch.randn(4))
    path = tmp_path / "cap.json"
    cap.save(str(path))  # reading the fields for JSON decompiles what was pending
    bc = _bytecode(cap)
    assert not bc.transformed.pending and bc.transformed.dis
    monkeypatch.setattr(model_bytecode, "_RESOLVER", None)  # as in a process that never captured
    loaded = _bytecode(tracer.Capture.load(str(path)))
    for a, b in [(bc.transformed, loaded.transformed), *zip(bc.resume_functions, loaded.resume_functions, strict=True)]:
        assert (b.source, b.dis, b.problem) == (a.source, a.dis, a.problem) and not b.pending
    assert loaded == bc


def test_pending_code_without_a_decompiler_is_shown_as_not_decompiled(monkeypatch):
    kept = base64.b64encode(marshal.dumps(one_break.__code__)).decode()
    monkeypatch.setattr(model_bytecode, "_RESOLVER", None)
    ct = CodeText("one_break", code=kept)
    assert ct.pending and ct.source == "" and ct.dis == "" and repr(ct) == "CodeText(one_break, pending)"
    html = code_view.code_html(ct)
    assert "not decompiled" in html


def test_damaged_bytes_are_a_problem_not_a_crash():
    ct = CodeText("f", code=base64.b64encode(b"\x00not marshal").decode())
    assert ct.source == "" and "not decompiled" in ct.problem and ct.dis.startswith("<not listed")
    assert not ct.pending


# -- constants marshal cannot write (Note [Constants marshal cannot write] in tracer/_torch/bytecode.py)


class _DeviceOut(torch.nn.Module):
    """Dynamo's transformed code for this forward loads torch.device and torch.dtype constants."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x), x.device, x.dtype


def _early_texts(monkeypatch):
    """Wrap kept_code so every code object is also turned into text at once (the value read early)."""
    from tracer._torch import bytecode

    early: list[tuple[CodeText, CodeText]] = []
    real = bytecode.kept_code

    def kept_code(code, *, original=False):
        out = real(code, original=original)
        early.append((out, bytecode.code_text(code, original=original)))
        return out

    monkeypatch.setattr(bytecode, "kept_code", kept_code)
    return early


def test_constants_marshal_cannot_write_are_kept_and_read_late_as_early(monkeypatch):
    import gc
    import weakref

    early = _early_texts(monkeypatch)
    model = _DeviceOut()
    ref = weakref.ref(model)
    cap = tracer.capture(model, torch.randn(2, 4))
    kept = [(late, now) for late, now in early if late.__dict__.get("_constants")]
    assert kept, "the transformed code of this forward has no device constant: the test checks nothing"
    for late, _ in kept:
        assert late.pending and {type(c) for c in late.__dict__["_constants"]} <= {torch.device, torch.dtype}
    del model
    gc.collect()
    assert ref() is None  # the kept constants hold nothing of the model
    loaded = tracer.Capture.from_json(cap.to_json())  # the first read: to_json reads every field
    for late, now in early:
        assert (late.source, late.dis, late.problem) == (now.source, now.dis, now.problem) and not late.pending
        assert "_constants" not in late.__dict__  # dropped once put back
    for _late, now in kept:
        assert "device(type='cpu')" in now.dis and "__co_consts[" in now.source  # depyf's own rendering
    assert loaded.frames[0].bytecode == cap.frames[0].bytecode


def test_a_constant_that_cannot_be_kept_is_turned_into_text_at_once():
    from tracer._torch import bytecode

    code = one_break.__code__
    with_object = code.replace(co_consts=(*code.co_consts, object()))
    ct = bytecode.kept_code(with_object)
    assert not ct.pending and ct.code == "" and ct.dis == bytecode.code_text(with_object).dis
    with_device = code.replace(co_consts=(*code.co_consts, torch.device("cpu")))
    kept = bytecode.kept_code(with_device)
    assert kept.pending and kept.__dict__["_constants"] == (torch.device("cpu"),)
    assert kept.dis == dis.Bytecode(with_device).dis()


def test_stand_ins_without_their_constants_are_not_listed():
    from tracer._torch import bytecode

    code = one_break.__code__.replace(co_consts=(*one_break.__code__.co_consts, torch.device("cpu")))
    ct = bytecode.kept_code(code)
    lost = CodeText(ct.name, code=ct.code)  # the bytes alone, as a hand-made document would carry them
    assert lost.dis.startswith("<not listed") and "constants" in lost.problem and lost.source == ""
    assert bytecode._STAND_IN not in lost.dis
