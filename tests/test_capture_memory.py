"""A Capture holds plain data only: it never keeps the user's model (or any real tensor) alive."""

from __future__ import annotations

import gc
import weakref

import torch

import tracer


def test_capture_does_not_keep_the_model_alive():
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x = torch.randn(8, 16, requires_grad=True)  # training: the forward saves weights for the backward
    cap = tracer.capture(model, x, backward=False)  # no backward: saved tensors would stay on grad_fn
    assert cap.frames[0].aot.mode == "training"
    weight = weakref.ref(model[0].weight)
    expected = model(x).detach()
    del model
    gc.collect()
    assert weight() is None, "the Capture (or its result's autograd graph) keeps a parameter alive"
    torch.testing.assert_close(cap.result, expected)  # the values are still there
    assert cap.result.grad_fn is None and not cap.result.requires_grad


def test_result_containers_keep_their_shape():
    def f(x):
        return {"a": x.sin(), "b": (x.cos(), 3)}, torch.max(x, dim=0)

    x = torch.randn(3, 2, requires_grad=True)
    cap = tracer.capture(f, x, backward=False)
    d, mx = cap.result
    assert set(d) == {"a", "b"} and d["b"][1] == 3
    assert type(mx).__name__ == "max" and mx.values.grad_fn is None
    torch.testing.assert_close(d["a"], x.detach().sin())


_DROPPED = """
import gc, weakref, torch, tracer
from torch._dynamo import eval_frame
from tracer._torch.backend import Recorder

def f(x):
    return torch.relu(x @ x.T).sum(0)

cap = tracer.capture(f, torch.randn(4, 4, requires_grad=True))
assert not cap.all_problems(), cap.all_problems()
frame, graph = weakref.ref(cap.frames[0]), weakref.ref(cap.frames[0].aot.forward)
assert not any(isinstance(getattr(v, "__self__", None), Recorder) for v in eval_frame.cached_backends.values())
del cap
gc.collect()
assert frame() is None and graph() is None, "a dropped capture is still alive"

print("ok")
"""


def test_a_dropped_capture_is_freed():
    """Note [Dynamo keeps every backend]: torch keeps each torch.compile backend in a process-wide table
    until torch._dynamo.reset(); the capture removes its recorder from it, so ``del cap`` frees the record.
    In a fresh process: the test session's own problem check holds every capture until the test ends."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _DROPPED], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
