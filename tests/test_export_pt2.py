"""A ``torch.export.save`` archive opened by ``tracer.load_export`` and ``dynascope report`` in a fresh
process that does not have the model's code (it was written, exported and deleted before), with
nothing in the file unpickled; a pickled payload is refused, a file that is no archive is one error."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import zipfile

import pytest
import torch

import tracer
from tests.test_export import _check_against_torch

ROOT = pathlib.Path(__file__).resolve().parent.parent

MODEL = textwrap.dedent('''
    import torch

    class Secret(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.register_buffer("steps", torch.zeros(1))

        def forward(self, x):
            self.steps.add_(1)
            y = torch.cond(x.sum() > 0, lambda x: x.sin() + self.steps, lambda x: x.cos(), (x,))
            return self.lin(y)
''')


def _python(code: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> pathlib.Path:
    """model.pt2 saved from a module whose source file is deleted right after."""
    tmp = tmp_path_factory.mktemp("pt2")
    defs = tmp / "defs"
    defs.mkdir()
    (defs / "secret_model.py").write_text(MODEL)
    r = _python("import sys, torch; sys.path.insert(0, 'defs'); from secret_model import Secret; "
                "torch.export.save(torch.export.export(Secret(), (torch.randn(2, 4),)), 'model.pt2')", tmp)
    assert r.returncode == 0, r.stderr[-2000:]
    (defs / "secret_model.py").unlink()
    return tmp / "model.pt2"


def test_load_export_in_a_process_without_the_model_code(archive):
    code = textwrap.dedent('''
        import json, sys, tracer
        cap = tracer.load_export("model.pt2")
        tracer.validate(cap)
        f = cap.frames[0]
        print(json.dumps({"inputs": [[i.name, i.kind, i.target] for i in f.export.inputs],
                          "bodies": sorted(f.subgraphs), "stage": f.export.stage,
                          "secret": "secret_model" in sys.modules, "json": cap.to_json()}))
    ''')
    r = _python(code, archive.parent)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert not got["secret"] and not (archive.parent / "defs" / "secret_model.py").exists()
    assert got["stage"] == "loaded" and got["bodies"] == ["false_graph_0", "true_graph_0"]
    assert got["inputs"] == [["p_lin_weight", "parameter", "lin.weight"], ["p_lin_bias", "parameter", "lin.bias"],
                             ["b_steps", "buffer", "steps"], ["x", "user_input", ""]]
    # the record made in the child is torch's own loaded program, node for node
    cap = tracer.Capture.from_json(got["json"])
    _check_against_torch(cap.frames[0], torch.export.load(str(archive)))


def test_dynascope_report_of_a_pt2(archive, tmp_path):
    out = tmp_path / "r.html"
    r = subprocess.run([sys.executable, "-m", "viz.cli", "report", str(archive), "-o", str(out)], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == str(out) and out.stat().st_size > 0
    assert "Traceback" not in r.stderr


def test_a_pickled_payload_is_refused(archive, tmp_path):
    bad = tmp_path / "bad.pt2"
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("model_weights_config.json"):
                data = data.replace(b'"use_pickle": false', b'"use_pickle": true', 1)
            dst.writestr(info, data)
    with pytest.raises(ValueError, match="torch would unpickle.*pickled lin.weight"):
        tracer.load_export(bad)


def test_not_an_archive(tmp_path):
    (tmp_path / "x.pt2").write_text("hello")
    with pytest.raises(ValueError, match="not a torch.export archive"):
        tracer.load_export(tmp_path / "x.pt2")
    with pytest.raises(ValueError, match="no such file"):
        tracer.load_export(tmp_path / "missing.pt2")
    r = subprocess.run([sys.executable, "-m", "viz.cli", "report", str(tmp_path / "x.pt2")], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert r.returncode == 2 and "error: not a torch.export archive" in r.stderr and "Traceback" not in r.stderr
