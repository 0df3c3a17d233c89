"""The traced functions and helpers the session tests share (tests/test_session*.py): user code to
pause in, with marker comments that ``line_of`` finds, and the fixture that ends every session a test
left behind. ``FILE`` is this file's name, the one ``break_at("file:line")`` names for them."""

from __future__ import annotations

import inspect
import os
import threading

import pytest
import torch
from torch._higher_order_ops.wrap import wrap  # test input only: the HOP whose body we pause in

import tracer
from tracer._torch.pause import hooks_installed

FILE = os.path.basename(__file__)


def line_of(fn, marker: str) -> int:
    """Absolute line number of the line of ``fn`` containing ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def session_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("dynascope ")]


@pytest.fixture(autouse=True)
def no_leftovers():
    yield
    for w in list(tracer.session_worker._workers):  # a failed test may leave its session paused
        w.abort("test teardown")
    for t in session_threads():
        t.join(30)
    assert session_threads() == []
    assert not hooks_installed()


def finish(s: tracer.Session) -> None:
    """Resume ``s`` to the end (bounded)."""
    for _ in range(50):
        st = s.wait(timeout=120)
        if st is None:
            return
        s.resume()
    raise AssertionError("session did not finish")


# -- traced functions ------------------------------------------------------------------------------


def root_fn(x, y):
    a = x.sin()
    tracer.pause("after sin")
    b = a + y  # LINE-ADD
    c = b.cos()  # LINE-COS
    return c * 2


def wrap_fn(x, y):
    a = x.sin()

    def body(z):
        b = z.cos() + y
        tracer.pause("in wrap")
        return b

    return wrap(body, a) + 1


def nested_cond_fn(x, y):
    c = x.sin()

    def outer_true():
        def inner_true():
            q = c + y
            tracer.pause("in inner cond")
            return q

        return torch.cond(c.sum() < 0, inner_true, lambda: c * 3)

    def outer_false():
        return c - 1

    return torch.cond(c.sum() > 0, outer_true, outer_false)


def unmarked_fn(x):
    a = x.exp()
    b = a.neg()  # LINE-NEG
    return b.relu()


def cell_fn(x):
    scale = 3

    def inner(t):
        tracer.pause("in inner")
        return t * scale

    return inner(x.sin())


def mutated_cell_fn(x):
    count = 0
    y = x.sin()

    def bump():
        nonlocal count
        count += 1

    bump()
    tracer.pause("after bump")
    return y * count


def failing_fn(x):
    y = x + 1
    if y.shape[0] == 3:
        raise ValueError("boom from traced code")
    return y




def graph_break_fn(x):
    a = x.sin()
    tracer.pause("before break")
    print("a graph break")
    b = a.cos()
    tracer.pause("after break")
    return b + 1


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        return torch.relu(h)  # LINE-RELU
