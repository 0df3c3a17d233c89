"""The contract of ``compile_aot`` (tracer/_torch/aot.py): a plain backend, its metadata observer removed
after every capture and error, a recording failure never breaking the compile, and recording never
changing what aot_eager compiles.

Every expectation below is reasoned from AOTAutograd's own Notes and source, then checked against
the graphs torch really produced; each capture is also validated and round-tripped through JSON
(tests/aot_checks.py).
"""

from __future__ import annotations

import pytest
import torch
from aot_checks import _capture, _only_aot

import tracer
from tracer.model import Frame

pytestmark = pytest.mark.timeout(300)


# -- the contract of compile_aot -----------------------------------------------------------------


def test_compile_aot_works_as_a_plain_backend_and_rejects_unknown_partitioners():
    from tracer._torch.aot import compile_aot

    frames: list[Frame] = []

    def backend(gm, example_inputs):
        frames.append(Frame(compile_id=f"{len(frames)}/0", code="?"))
        return compile_aot(gm, example_inputs, frame=frames[-1], partitioner="default")

    torch._dynamo.reset()
    x = torch.randn(3, requires_grad=True)
    try:
        out = torch.compile(lambda t: t.cos() * 2, backend=backend)(x)
        assert frames[0].aot is not None and frames[0].aot.partitioner == "default"
        assert not frames[0].aot.backward_ran  # the backward compiles lazily ...
        out.sum().backward()
        assert frames[0].aot.backward_ran  # ... on the first .backward()
    finally:
        torch._dynamo.reset()  # leave no cache entry behind
    torch.testing.assert_close(x.grad, -2 * x.detach().sin())
    with pytest.raises(
        ValueError, match=r"unknown partitioner 'greedy' \(must be one of \['min_cut', 'default'\]\)"
    ):
        compile_aot(torch.fx.symbolic_trace(lambda t: t), [x], frame=Frame("0/0", "?"), partitioner="greedy")


def test_metadata_observer_is_removed_after_capture_and_after_errors(monkeypatch):
    import torch._functorch.aot_autograd as aot_autograd

    from tracer._torch import aot, patching

    real = aot_autograd.run_functionalized_fw_and_collect_metadata
    _capture(lambda x: x.sin(), torch.randn(2, requires_grad=True))
    assert aot_autograd.run_functionalized_fw_and_collect_metadata is real

    def broken_partitioner(name):
        def partition(*args, **kwargs):
            # Raised inside AOTAutograd, after the metadata was collected.
            assert aot_autograd.run_functionalized_fw_and_collect_metadata is not real
            assert (aot_autograd, "run_functionalized_fw_and_collect_metadata") in patching.ACTIVE
            raise RuntimeError("partitioner exploded")

        return partition

    monkeypatch.setattr(aot, "_real_partitioner", broken_partitioner)
    with pytest.raises(Exception, match="partitioner exploded") as info:
        tracer.capture(lambda x: x.sin(), torch.randn(3, requires_grad=True), fullgraph=True)
    assert aot_autograd.run_functionalized_fw_and_collect_metadata is real
    assert patching.ACTIVE == []
    # The partial capture says AOT did not finish: the joint was recorded, no compiler ran.
    partial = info.value.capture
    assert [f.aot for f in partial.frames] == [None]


@pytest.mark.problems_expected
def test_a_recording_failure_warns_and_never_breaks_the_compile(monkeypatch):
    from tracer._torch import aot

    def broken(*args, **kwargs):
        raise RuntimeError("saved values exploded")

    monkeypatch.setattr(aot, "saved_values", broken)
    x = torch.randn(3, requires_grad=True)
    with pytest.warns(
        UserWarning, match="could not record the AOT forward: RuntimeError: saved values exploded"
    ):
        cap = tracer.capture(lambda t: t.sin() * 2, x)
    torch.testing.assert_close(cap.result, x.sin() * 2)
    (frame,) = cap.frames
    assert frame.meta["aot_errors"] == ["forward: RuntimeError: saved values exploded"]
    assert frame.problems == ["AOT forward not recorded: RuntimeError: saved values exploded"]  # never silent
    # What was recorded before the failure is kept; the backward still compiled and was recorded.
    assert frame.aot is not None and frame.aot.forward is not None and frame.aot.saved == []
    assert frame.aot.backward_ran
    tracer.validate(cap)


def test_recording_does_not_change_what_aot_eager_compiles():
    # The same function through torch's own aot_eager (with spy compilers that only read the
    # graphs) gives the very forward/backward graphs capture recorded.
    from torch._dynamo.backends.debugging import aot_eager

    seen = {}

    def spy(kind):
        def compiler(gm, example_inputs):
            from torch._dynamo.backends.debugging import boxed_nop

            # Rendered as AOTAutograd's own log renders it: capture's Graph.code is that text
            # (Note [Graph text torch already rendered]).
            seen[kind] = gm.print_readable(print_output=False, include_stride=True, include_device=True,
                                           expanded_def=True)
            return boxed_nop(gm, example_inputs)

        return compiler

    def f(x, w):
        return (torch.sin(x) @ w).relu().sum()

    args = (torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True))
    a = _only_aot(_capture(f, *args))
    torch._dynamo.reset()
    try:
        out = torch.compile(
            f, backend=lambda gm, ex: aot_eager(gm, ex, fw_compiler=spy("fw"), bw_compiler=spy("bw"))
        )(*args)
        out.backward()
    finally:
        torch._dynamo.reset()
    assert a.forward.code == seen["fw"]
    assert a.backward.code == seen["bw"]
