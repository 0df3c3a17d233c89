"""``make bench-quick`` in a fresh clone of this checkout's HEAD: it installs what it needs and completes.

The clone gets a new ``.venv`` and its ``make bench-quick`` runs the real recipe: ``make install``
(pip), ``make chromium`` (apt, only when Chromium is missing), the ``bench`` extra (tlparse) and
``python -m bench --quick``. To spare the test a gigabyte of downloads the new venv sees this
interpreter's site-packages through a ``.pth`` line, so pip finds torch and the other wheels already
installed; dynascope itself and tlparse are installed into the clone's venv by the recipe, and the
clone imports its own ``tracer``. No timing is asserted: only that every benchmark ran, each figure
was printed before the JSON line, and the summary line came last.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.tooling, pytest.mark.timeout(1200)]

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _head() -> str:
    if shutil.which("git") is None or shutil.which("make") is None:
        pytest.skip("needs git and make")
    r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout: nothing to clone")
    return r.stdout.strip()


def test_make_bench_quick_from_a_fresh_clone(tmp_path):
    head = _head()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(clone)], check=True, timeout=120)
    subprocess.run(["git", "checkout", "-q", head], cwd=clone, check=True, timeout=120)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(clone / ".venv")], check=True, timeout=120)
    (site,) = (clone / ".venv" / "lib").glob("python*/site-packages")
    (site / "seeded-from-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # As typed in a fresh shell: not this checkout's code, and no outer make's flags (under `make test`
    # MAKEFLAGS/MAKELEVEL would make the inner make print "Entering directory" lines around the output).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "MAKEFLAGS", "MFLAGS",
                                                            "MAKELEVEL")}

    r = subprocess.run(["make", "bench-quick"], cwd=clone, env=env, capture_output=True, text=True, timeout=1100)
    out, err = r.stdout.splitlines(), r.stderr.splitlines()
    assert r.returncode == 0, f"make bench-quick exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    res = json.loads(out[-1])
    assert res["quick"] is True and res["errors"] == {}
    for key in ("capture_overhead", "explorer_scaling_16k_over_4k", "retained_over_params", "pause_step_ratio",
                "diff_seconds_transformer12", "report_over_tlparse", "inductor_overhead", "report_bytes",
                "explorer_first_paint_seconds"):  # the last one measured in Chromium
        assert key in res, f"{key} was not measured"
    # The figures came before the JSON, one row per figure (the table's rows, in the order measured), after
    # the table's header (what the install step printed comes before it).
    head = [i for i, ln in enumerate(out) if ln.split()[:3] == ["measure", "value", "target"]]
    assert len(head) == 1, r.stdout[-3000:]
    assert sorted(out[head[0] + 1:-1]) == sorted(_table(clone, res).splitlines()[1:])
    assert err[-1].startswith("bench --quick: ") and " targets met" in err[-1] and "FAILED" not in err[-1]
    # The clone's venv imports the clone's code, not this checkout's.
    where = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", "import tracer; print(tracer.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    assert pathlib.Path(where.strip()).is_relative_to(clone)


def _table(clone: pathlib.Path, res: dict) -> str:
    """The clone's own ``bench.table`` of ``res`` (what its run printed, row by row)."""
    code = "import json, sys; from bench.__main__ import table; print(table(json.load(sys.stdin)))"
    return subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", code], cwd=clone, input=json.dumps(res),
                          capture_output=True, text=True, timeout=300, check=True).stdout
