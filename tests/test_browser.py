"""End to end in a real browser: JupyterLab + headless Chromium run a notebook that shows the explorer.

The test starts its own JupyterLab (free localhost port, random token, temp root dir, isolated
settings), opens a generated notebook with Playwright, runs it, clicks the HOP node on the canvas
and checks the inspector and the canvas changed; then opens an ``export_html`` file with no kernel.
Every wait is bounded and the server (and its kernels) is always shut down.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Iterator

import pytest
from chromium import CHROMIUM, new_page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

REPO = pathlib.Path(__file__).resolve().parent.parent
ARTIFACTS = pathlib.Path(__file__).resolve().parent / "artifacts"

EVIL = "<img src=x onerror=alert(1)>"

# The notebook under test: a function with a real `wrap` HOP (public op namespace, no private import),
# captured by tracer.capture, displayed by the explorer, and exported as standalone HTML.
CELLS = [
    "import torch, tracer, viz",
    "def f(x):\n"
    "    y = x.cos()\n"
    "    return torch.ops.higher_order.wrap(lambda a: a.sin() + y, x) * 2\n"
    "\n"
    "cap = tracer.capture(f, torch.randn(3))\n"
    "hop = cap.frames[0].graph.find(role='hop')[0]\n"
    "print(hop.name, hop.calls)",
    "viz.export_html(cap, 'report.html')\n"
    "ex = viz.Explorer(cap)\n"
    "ex",
    # the same capture with a node (and the function) renamed to markup: it must show as text
    "import json\n"
    f"EVIL = {EVIL!r}\n"
    "hostile = tracer.Capture.from_json(cap.to_json().replace('\"mul\"', json.dumps(EVIL)))\n"
    "hostile.fn = EVIL\n"
    "viz.Explorer(hostile)",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook(cells: list[str]) -> dict:
    """An nbformat-4 notebook of code ``cells``, unexecuted."""
    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}},
        "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": src} for i, src in enumerate(cells)],
    }


def _api(base: str, token: str, path: str, method: str = "GET", body: dict | None = None) -> object:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{base}{path}", method=method, data=data,
                                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
    return json.loads(body) if body else None


class Lab:
    """A JupyterLab server in its own process group, rooted in ``root``."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        home = root / ".jupyter-home"
        env = dict(os.environ, PYTHONPATH=str(REPO), JUPYTER_CONFIG_DIR=str(home / "config"),
                   JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), IPYTHONDIR=str(home / "ipython"))
        # No kernel dialog, no news prompt: settings written where this server reads user settings.
        for plugin, values in (("notebook-extension/tracker", {"autoStartDefaultKernel": True}),
                               ("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False})):
            path = home / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        self.log = open(root / "lab.log", "w")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={self.port}", "--ip=127.0.0.1",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
             "--ServerApp.terminals_enabled=False", "--allow-root",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def wait_ready(self, timeout: float = 90) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {(self.root / 'lab.log').read_text()[-2000:]}")
            try:
                _api(self.base, self.token, "/api/status")
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise TimeoutError(f"jupyter lab not ready in {timeout}s: {(self.root / 'lab.log').read_text()[-2000:]}")

    def stop(self) -> None:
        # Kernels run in their own sessions: shut them down through the API before the server.
        try:
            for k in _api(self.base, self.token, "/api/kernels") or []:
                _api(self.base, self.token, f"/api/kernels/{k['id']}", method="DELETE")
        except Exception:
            pass
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                pass
        self.log.close()


@contextlib.contextmanager
def serving(root: pathlib.Path, name: str, notebook: dict) -> Iterator[Lab]:
    """A JupyterLab serving ``root`` with ``notebook`` written as ``name``; always stopped after."""
    if shutil.which(CHROMIUM) is None and not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} missing: run `make chromium`")
    (root / name).write_text(json.dumps(notebook))
    server = Lab(root)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture
def lab(tmp_path):
    with serving(tmp_path, "explorer.ipynb", notebook(CELLS)) as server:
        yield server


def _run_all(page, attempts: int = 4) -> None:
    """Run > Run All Cells, again if the kernel was still connecting and nothing started."""
    first = page.locator(".jp-Notebook .jp-InputPrompt").first
    for _ in range(attempts):
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            page.wait_for_function(
                "el => el.textContent.trim() !== '[ ]:'", arg=first.element_handle(), timeout=15_000)
            return
        except Exception:
            continue
    raise TimeoutError(f"Run All Cells did not start the notebook after {attempts} attempts")


def watch_kernel(page) -> list[bool]:
    """A list that gets an entry once the kernel answers the page's kernel_info request.

    Cells run before the page's widget manager is attached to the kernel display "model not found",
    so a test waits for this before running the notebook (:func:`open_and_run`).
    """
    kernel_ready: list[bool] = []

    def on_ws(ws) -> None:
        if "/api/kernels/" in ws.url:
            ws.on("framereceived", lambda payload: kernel_ready.append(
                "kernel_info_reply" in (payload if isinstance(payload, str) else payload.decode("latin-1"))))
    page.on("websocket", on_ws)
    return kernel_ready


def lab_page(browser, width: int = 1500, height: int = 1000) -> tuple[object, list[str], list[bool]]:
    """A page for a JupyterLab test (1500x1000 unless told): (page, page errors as they come,
    ``watch_kernel``'s list)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page, errors = new_page(browser, width, height)
    page.set_default_timeout(60_000)
    return page, errors, watch_kernel(page)


def open_and_run(page, lab, name: str, kernel_ready: list[bool]) -> None:
    """Open notebook ``name`` of ``lab``, wait until its kernel answered (``watch_kernel``), Run All."""
    page.goto(f"{lab.base}/lab/tree/{name}?token={lab.token}", timeout=90_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    end = time.monotonic() + 120
    while not any(kernel_ready) and time.monotonic() < end:
        page.wait_for_timeout(250)
    assert any(kernel_ready), "the kernel never answered kernel_info"
    _run_all(page)


def test_explorer_in_jupyterlab(lab, browser):
    page, errors, kernel_ready = lab_page(browser)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        open_and_run(page, lab, "explorer.ipynb", kernel_ready)
        # The anywidget ESM ran in JupyterLab 4: its toolbar and the SVG with real nodes are there.
        out = page.locator(".jp-Notebook .jp-Cell").nth(2)
        canvas = out.locator(".ds-canvas").first
        canvas.locator("svg [data-node]").first.wait_for(timeout=240_000)
        assert canvas.locator(".ds-toolbar button", has_text="fit").count() == 1
        hop = canvas.locator("[data-node='wrap']")
        assert hop.count() == 1, out.locator(".jp-OutputArea-output").all_inner_texts()
        svg_before = canvas.locator("svg").first.inner_html()
        canvas.scroll_into_view_if_needed()
        # Zoom (button and wheel) and pan (drag) move the stage, and are not clicks.
        stage = canvas.locator(".ds-stage")
        t0 = stage.evaluate("e => e.style.transform")
        canvas.locator(".ds-toolbar button", has_text="+").click()
        t1 = stage.evaluate("e => e.style.transform")
        view = canvas.locator(".ds-view").bounding_box()
        page.mouse.move(view["x"] + 20, view["y"] + 20)
        page.mouse.wheel(0, 200)
        page.mouse.down()
        page.mouse.move(view["x"] + 80, view["y"] + 60, steps=5)
        page.mouse.up()
        t2 = stage.evaluate("e => e.style.transform")
        assert len({t0, t1, t2}) == 3, (t0, t1, t2)
        assert out.locator(".ds-panel", has_text="Click a node to inspect it").count() == 1
        canvas.locator(".ds-toolbar button", has_text="fit").click()
        page.screenshot(path=str(ARTIFACTS / "explorer_root.png"))

        hop.click()
        # Python heard the click: the inspector shows the HOP call and the canvas shows its body.
        out.locator(".ds-panel h4", has_text="wrap").first.wait_for(timeout=60_000)
        out.locator(".ds-panel", has_text="opened wrap_body_0").first.wait_for(timeout=30_000)
        canvas.locator("[data-node='sin']").wait_for(timeout=30_000)
        assert canvas.locator("svg").first.inner_html() != svg_before
        assert canvas.locator("[data-node='wrap']").count() == 0
        page.screenshot(path=str(ARTIFACTS / "explorer_body.png"))
        # The Partition tab is built when first opened: its canvas draws the AOT forward graph.
        out.locator(".lm-TabBar-tab", has_text="Partition").first.click()
        out.locator(".ds-panel", has_text="AOTAutograd").first.wait_for(timeout=60_000)
        out.locator(".ds-canvas").nth(1).locator("svg [data-node]").first.wait_for(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "explorer_partition.png"))
        # Each canvas's arrow marker has its own id, so a hidden canvas cannot hide another's arrows.
        markers = page.evaluate("() => [...document.querySelectorAll('.ds-canvas marker')].map(m => m.id)")
        assert len(markers) >= 2 and len(set(markers)) == len(markers), markers

        # Markup in user names is shown as text on the canvas and in the inspector, never run.
        evil_out = page.locator(".jp-Notebook .jp-Cell").nth(3)
        evil_box = evil_out.locator(".ds-canvas svg text", has_text=EVIL).first
        evil_box.wait_for(timeout=60_000)
        evil_box.click()
        evil_out.locator(".ds-panel h4", has_text=EVIL).first.wait_for(timeout=30_000)
        assert evil_out.locator(".ds-panel", has_text=f"dynascope · Capture({EVIL}").count() == 1
        assert page.locator(".jp-OutputArea img").count() == 0
        assert not dialogs, dialogs
        assert not errors, errors
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "explorer_failure.png"))
        raise

    # The exported report opens with no kernel and no server.
    report = lab.root / "report.html"
    assert report.exists()
    lab.stop()
    static = browser.new_page()
    static.goto(report.as_uri(), timeout=30_000)
    static.wait_for_selector("svg [data-node]", timeout=30_000)  # the frame's graph, drawn from its payload
    assert static.locator("svg [data-node]").count() > 0
    static.screenshot(path=str(ARTIFACTS / "export_html.png"), full_page=True)
