"""The README's Python examples run, in order, as one script: the documented API is the real one."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples_for_each_part_of_the_api():
    text = "\n".join(python_blocks())
    for name in ("tracer.capture(", "tracer.trace(", "tracer.pause(", "viz.Explorer(", "viz.export_html("):
        assert name in text, f"README has no example of {name}"


def test_readme_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    scope: dict = {"__name__": "readme"}
    for i, block in enumerate(python_blocks()):
        code = compile(block, f"README.md block {i}", "exec")
        exec(code, scope)  # noqa: S102 - the README is ours
    out = capsys.readouterr().out
    assert "('l_y_', 'lifted_freevar', 'l_y_')" in out  # the first example: y lifted into the wrap body
    assert (tmp_path / "report.html").read_text().count("<svg") >= 1
