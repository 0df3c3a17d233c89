"""``make lab``, the README's first command, serves the quickstart, as root and as a normal user.

JupyterLab refuses to start as root without ``--allow-root`` (containers and cloud notebooks run as
root), and a normal user must not be handed that flag: the Makefile adds it only for root. The first
test reads the command line the recipe builds (``make -n``) for this user and, when this is root, for
an unprivileged user (``setpriv`` to ``nobody``). The second runs the real recipe headless as the
current user, through ``LAB_ARGS`` (no browser, a free port, a token), and opens the quickstart in
headless Chromium: it loads, its kernel answers, every cell runs without a traceback and the
explorer draws.

Both pass ``-o install`` and ``VENV=<this interpreter's environment>``: the tests run inside the
environment ``make install`` made, so reinstalling is not what is tested. The recipe runs in a temp
directory holding a copy of the Makefile and the quickstart, so autosave cannot touch the checkout;
``PYTHONPATH`` makes its kernel import this checkout's ``tracer`` and ``viz``.

A real run as a normal user while the tests run as root needs an interpreter that user can read;
where Python lives under root's home (mode 700) that is not possible, and the dry run stands in
for it. Run as a normal user, the second test is that case itself.
"""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import shutil
import signal
import subprocess
import sys
import time
import types
import urllib.error

import pytest
from test_browser import _api, _free_port, open_and_run, watch_kernel

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.tooling, pytest.mark.timeout(600)]

REPO = pathlib.Path(__file__).resolve().parent.parent
VENV = pathlib.Path(sys.prefix)  # the environment this test runs in: `make install` made it
QUICKSTART = "notebooks/00_quickstart.ipynb"
NOBODY = 65534


def _lab_command(prefix: list[str]) -> str:
    """The jupyter command line ``make lab`` would run (dry run), the Makefile read from stdin."""
    r = subprocess.run([*prefix, "make", "-s", "-f", "-", "-n", "-o", "install", "lab", f"VENV={VENV}"],
                       input=(REPO / "Makefile").read_text(), capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if " lab " in ln]
    return line


def test_allow_root_is_passed_only_to_root():
    mine = _lab_command([])
    assert mine.split()[:2] == [f"{VENV}/bin/jupyter", "lab"] and mine.split()[-1] == QUICKSTART
    assert ("--allow-root" in mine.split()) == (os.geteuid() == 0), mine
    if os.geteuid() != 0:
        return  # a normal user cannot become another one; the line above is the non-root case
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot check the recipe as an unprivileged user")
    other = _lab_command([setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"])
    assert "--allow-root" not in other.split(), other
    assert other.replace(" ", "") == mine.replace("--allow-root", "").replace(" ", "")


def _env(home: pathlib.Path) -> dict[str, str]:
    """Settings, runtime files and IPython state in ``home``; no kernel dialog, no news prompt, no autosave."""
    for plugin, values in (("notebook-extension/tracker", {"autoStartDefaultKernel": True}),
                           ("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
                           ("docmanager-extension/plugin", {"autosave": False})):
        path = home / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    fresh = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # no outer make's
    return dict(fresh, PYTHONPATH=str(REPO), JUPYTER_CONFIG_DIR=str(home / "config"),
                JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
                JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), IPYTHONDIR=str(home / "ipython"))


def _stop(proc: subprocess.Popen, lab) -> None:
    """Kernels through the API (they run in their own sessions), then make and JupyterLab (one process group)."""
    try:
        for k in _api(lab.base, lab.token, "/api/kernels") or []:
            _api(lab.base, lab.token, f"/api/kernels/{k['id']}", method="DELETE")
    except (urllib.error.URLError, OSError):
        pass  # the server is already gone: nothing to shut down through it
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            pass
    assert proc.poll() is not None, "make lab survived SIGKILL"


def test_make_lab_serves_the_quickstart_and_it_runs(tmp_path, browser):
    work = tmp_path / "checkout"
    (work / "notebooks").mkdir(parents=True)
    shutil.copy(REPO / "Makefile", work / "Makefile")
    shutil.copy(REPO / QUICKSTART, work / QUICKSTART)
    port, token = _free_port(), secrets.token_hex(16)
    lab = types.SimpleNamespace(base=f"http://127.0.0.1:{port}", token=token)
    args = (f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 --IdentityProvider.token={token} "
            "--ServerApp.terminals_enabled=False --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate")
    log_path = tmp_path / "make_lab.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["make", "-o", "install", "lab", f"VENV={VENV}", f"LAB_ARGS={args}"], cwd=work,
                                env=_env(tmp_path / "home"), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        end = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"make lab exited {proc.returncode}:\n{log_path.read_text()[-3000:]}"
            try:
                _api(lab.base, token, "/api/status")
                break
            except (urllib.error.URLError, OSError):
                assert time.monotonic() < end, f"make lab not serving after 120 s:\n{log_path.read_text()[-3000:]}"
                time.sleep(0.5)
        # `jupyter lab <file>` serves the file's directory: the lab URL of the quickstart is /lab/tree/00_quickstart.ipynb.
        name = pathlib.PurePosixPath(QUICKSTART).name
        served = _api(lab.base, token, f"/api/contents/{name}")
        assert served["type"] == "notebook"
        code_cells = [c for c in served["content"]["cells"] if c["cell_type"] == "code"]
        assert code_cells and "import tracer" in "".join(c["source"] for c in code_cells[:2])

        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        kernel_ready = watch_kernel(page)
        open_and_run(page, lab, name, kernel_ready)  # opens the lab URL of the notebook, waits for the kernel
        # Every code cell ran, as the notebook's own model says: save it from the page (Ctrl+S) and read it back
        # through the contents API until each code cell has an execution count. (The DOM's prompts are no
        # witness: JupyterLab 4 renders only the cells near the viewport, and a cell with hidden input shows none.)
        end = time.monotonic() + int(os.environ.get("DS_LAB_RUN_TIMEOUT_S", 300))
        while True:
            page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
            page.keyboard.press("Control+s")
            page.wait_for_timeout(2000)
            cells = [c for c in _api(lab.base, token, f"/api/contents/{name}")["content"]["cells"] if c["cell_type"] == "code"]
            waiting = [i for i, c in enumerate(cells) if c.get("execution_count") is None]
            if not waiting:
                break
            assert time.monotonic() < end, f"code cells {waiting} of {len(cells)} never ran"
        errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, errors[0]
        assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1))  # in order, each once
        outputs = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
        assert "Traceback" not in outputs, outputs[-3000:]
        assert "Capture(TinyMLP:" in outputs  # the quickstart's own printout, from this checkout's tracer
        page.locator(".jp-Notebook .ds-canvas svg [data-node]").first.wait_for(timeout=120_000)  # the explorer drew
        page.close()
    finally:
        _stop(proc, lab)
