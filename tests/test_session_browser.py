"""The session panel in a real JupyterLab: Step / Resume buttons drive a paused trace while the kernel is idle."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from test_browser import ARTIFACTS, notebook, serving

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

CELLS = [
    "import torch, tracer",
    "def f(x):\n"
    "    a = x.sin()\n"
    "    tracer.pause('after sin')\n"
    "    b = a.cos()\n"
    "    c = b + 1\n"
    "    return c * 2\n"
    "\n"
    "s = tracer.trace(f, torch.randn(3)).start()\n"
    "st = s.wait(timeout=240)\n"
    "s",
    # Run later by the test, not by run_cells: moves the session from code; the panel must follow.
    "s.step()\n"
    "print('now at pause', s.wait(timeout=240).index)",
]
SETUP = 2  # the cells run_cells runs


@pytest.fixture
def lab(tmp_path):
    with serving(tmp_path, "session.ipynb", notebook(CELLS)) as server:
        yield server


def run_cells(page) -> None:
    """Run every cell. The first run is retried: right after the kernel reports idle, JupyterLab
    can still drop an execute request while its kernel connection settles."""
    prompts = page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt")
    for _ in range(6):
        prompts.nth(0).click()
        page.keyboard.press("Control+Enter")
        try:
            page.wait_for_function(
                "() => !/\\[ \\]/.test(document.querySelector('.jp-Notebook .jp-Cell .jp-InputPrompt').textContent)",
                timeout=15_000)
            break
        except Exception:
            continue
    for i in range(1, SETUP):
        prompts.nth(i).click()
        page.keyboard.press("Control+Enter")


def test_session_panel_buttons_in_jupyterlab(lab, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{lab.base}/lab/tree/session.ipynb?token={lab.token}", timeout=90_000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
        run_cells(page)
        out = page.locator(".jp-OutputArea-output")
        out.locator(".ds-session", has_text="pause 1 (pause: after sin)").first.wait_for(timeout=240_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
        canvas = page.locator(".ds-canvas").first
        canvas.locator("svg [data-node='a']").wait_for(timeout=60_000)
        assert canvas.locator("svg [data-node='b']").count() == 0
        page.screenshot(path=str(ARTIFACTS / "session_paused.png"))

        # The kernel is idle: a click runs the button's callback, which steps and redraws the panel.
        page.get_by_role("button", name="Step", exact=True).click()
        out.locator(".ds-session", has_text="pause 2 (step)").first.wait_for(timeout=120_000)
        page.get_by_role("button", name="Step", exact=True).click()
        out.locator(".ds-session", has_text="pause 3 (step)").first.wait_for(timeout=120_000)
        canvas.locator("svg [data-node='b']").wait_for(timeout=60_000)  # the stepped line's cos
        page.screenshot(path=str(ARTIFACTS / "session_stepped.png"))

        # A step from a cell (the kernel busy, then idle): the displayed panel redraws by itself.
        page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").nth(SETUP).click()
        page.keyboard.press("Control+Enter")
        out.locator("text=now at pause 4").first.wait_for(timeout=120_000)
        out.locator(".ds-session", has_text="pause 4 (step)").first.wait_for(timeout=60_000)

        page.get_by_role("button", name="Resume", exact=True).click()
        out.locator(".ds-session", has_text="is finished").first.wait_for(timeout=120_000)
        # the buttons are disabled by the same redraw, which may land just after the text (a loaded machine)
        expect(page.get_by_role("button", name="Step", exact=True)).to_be_disabled(timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "session_finished.png"))
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "session_failure.png"))
        raise
