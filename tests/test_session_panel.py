"""The session panel without a browser: mimebundle, deterministic text, escaping, buttons driving a session."""

from __future__ import annotations

import html as htmllib
import re

import pytest
import torch
from session_cases import line_of, root_fn, wrap_fn

import tracer
from tracer.model import Graph, Guard, Node
from tracer.paused import LocalVar, Location, PausedState, TracerState
from viz.mimebundle import WIDGET_MIME
from viz.session_panel import SessionPanel, mimebundle, paused_html

pytestmark = pytest.mark.timeout(600)

EVIL = "<script>alert(1)</script>"


@pytest.fixture(autouse=True)
def abort_leftovers():
    yield
    for worker in list(tracer.session_worker._workers):
        worker.abort("test teardown")


def marked_line(html: str) -> tuple[int, str]:
    """(line number, code) of the line Pygments highlighted in the panel's source view."""
    start = html.index("background-color: #fde68a")
    text = htmllib.unescape(re.sub(r"<[^>]+>", "", html[start:html.index("\n", start)].split(">", 1)[1]))
    m = re.match(r"\s*(\d+)\s*(.*)$", text)
    return int(m.group(1)), m.group(2).strip()


def evil_state() -> PausedState:
    g = Graph(nodes=[Node(name="x", op="placeholder", target=EVIL, role="operand",
                          meta={"kind": "tensor", "dtype": "float32", "shape": [2]})], name=EVIL)
    return PausedState(
        session=f"Session #9 of {EVIL}", index=1, reason="pause", label=EVIL,
        location=Location(file=f"/tmp/{EVIL}.py", line=2, function=EVIL, code=f"x = '{EVIL}'",
                          instruction=f"LOAD_CONST {EVIL}", context=["def f(x):", f"    x = '{EVIL}'"],
                          context_start=1),
        locals={EVIL: LocalVar(name=EVIL, kind="ConstantVariable", value=repr(EVIL))},
        tracers=[TracerState(hop="", description="", depth=0, graph=g)],
        guards=[Guard(kind="TYPE_MATCH", source=f"L['{EVIL}']")],
    )


def test_static_html_escapes_every_user_string():
    html = paused_html(evil_state())
    assert "<script>" not in html
    assert "&lt;script&gt;" in html


def test_loaded_state_renders_without_a_session():
    st = PausedState.from_json(evil_state().to_json())
    assert st == evil_state()
    bundle = mimebundle(st)
    assert WIDGET_MIME not in bundle  # no live session behind it: no buttons
    assert bundle["text/plain"] == str(st)
    assert "<script>" not in bundle["text/html"]


def test_panel_of_a_live_pause():
    s = tracer.trace(wrap_fn, torch.randn(3), torch.randn(3)).start()
    st = s.wait(timeout=120)
    bundle = st._repr_mimebundle_()
    assert set(bundle) == {WIDGET_MIME, "text/html", "text/plain"}
    assert bundle["text/plain"] == str(st) == str(st)  # deterministic text
    text = bundle["text/plain"]
    assert "pause 1 (pause: in wrap)" in text and "wrap (wrap):" in text and "lifted:" in text
    html = bundle["text/html"]
    # The paused line is highlighted (Pygments hl_lines span) and its line number shown.
    line = line_of(wrap_fn, 'tracer.pause("in wrap")')
    assert marked_line(html) == (line, 'tracer.pause("in wrap")')
    assert "<svg" in html and 'data-node="cos"' in html  # the innermost partial graph is drawn
    assert "wrap body (wrap)" in html and "root tracer" in html
    sbundle = s._repr_mimebundle_()
    assert sbundle["text/plain"] == str(s) and "is paused at" in sbundle["text/plain"]
    s.resume()
    assert s.wait(timeout=120) is None


def test_buttons_step_resume_and_abort():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3), dynamic=False).start()
    s.wait(timeout=120)
    panel = SessionPanel(s)
    assert not panel.buttons["Step"].disabled
    assert s.state.locals["a"].node in panel.canvas.box_ids()
    panel.click("step")  # the panel updates after each step
    assert s.state.index == 2 and s.state.reason == "step"
    assert "pause 2 (step)" in panel.body.value
    panel.click("step")
    b = s.state.locals["b"]
    assert s.state.graph.node(b.node).target == "operator.add"
    assert b.node in panel.canvas.box_ids()  # the graph grew by the stepped line's op
    panel.click("abort")
    assert s.status == "finished" and isinstance(s.error, tracer.session.TraceAborted)
    assert "TraceAborted" in panel.status.value
    assert all(b.disabled for b in panel.buttons.values())
    assert panel.canvas.drawing == {}


def test_resume_button_to_the_end():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3)).start()
    s.wait(timeout=120)
    panel = SessionPanel(s)
    panel.click("resume")
    assert s.status == "finished" and s.capture is not None
    assert "finished" in panel.status.value
    panel.click("resume")  # a click on a finished session shows the error instead of raising
    assert "needs a paused session" in panel.message.value


def test_source_keeps_line_numbers_when_the_context_starts_with_blank_lines():
    st = PausedState(session="S", index=1, reason="step", label="",
                     location=Location(file="m.py", line=3, function="f", code="y = 2",
                                       context=["", "", "y = 2", "z = 3"], context_start=1))
    html = paused_html(st)
    assert marked_line(html) == (3, "y = 2")


def test_an_older_pause_shows_itself_until_a_click():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3), dynamic=False).start()
    first = s.wait(timeout=120)
    s.step()
    assert s.wait(timeout=120).index == 2
    panel = SessionPanel(s, state=first)
    assert "showing pause 1; now" in panel.status.value and "pause 1 (pause: after sin)" in panel.body.value
    assert not panel.buttons["Step"].disabled  # the buttons drive the live session
    panel.click("step")
    assert "pause 3 (step)" in panel.body.value and "showing" not in panel.status.value
    s.resume()
    assert s.wait(timeout=120) is None


def test_panel_follows_a_session_moved_from_code():
    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3)).start()
    s.wait(timeout=120)
    panel = SessionPanel(s)
    s.step()  # from a cell, not the button
    s.wait(timeout=120)
    assert "pause 2 (step)" in panel.body.value
    s.resume()
    assert s.wait(timeout=120) is None
    assert "finished" in panel.status.value and all(b.disabled for b in panel.buttons.values())


def test_bad_pause_json_names_the_field():
    data = evil_state().to_json().replace('"index": 1', '"index": "one"')
    with pytest.raises(ValueError, match=r"index"):
        PausedState.from_json(data)


def test_a_slow_redraw_does_not_hold_the_session_lock():
    # Note [Panel updates]: listeners run without the worker's lock, and wait() returns after them.
    import threading
    import time

    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3))
    seen = []

    class SlowPanel:
        def redraw(self):
            probe = threading.Thread(target=lambda: seen.append(s.state is not None or s.status))
            probe.start()
            probe.join(10)  # reading the session from another thread must not block
            time.sleep(0.2)
            seen.append("drawn")

    panel = SlowPanel()
    s.on_change(panel.redraw)
    s.start()
    assert s.wait(timeout=120) is not None
    assert seen == [True, "drawn"]  # the probe was not blocked, and wait() returned after the redraw
    s.resume()
    assert s.wait(timeout=120) is None and seen[-1] == "drawn" and len(seen) == 4
