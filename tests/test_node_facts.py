"""viz/node_facts.py: the inspector's rows in Python equal viz/inspector.js's for every node of a real
capture, and a Capture's no-script HTML (its ``text/html``) carries every node's facts from node_info."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

import tracer
from viz.info import node_info
from viz.mimebundle import mimebundle
from viz.node_facts import inspector_rows
from viz.report_graphs import frame_graphs
from viz.report_info import graph_names

VIZ = Path(__file__).resolve().parent.parent / "viz"


@pytest.fixture(scope="module")
def cap() -> tracer.Capture:
    def f(x, w):
        y = x.cos()
        return torch.ops.higher_order.wrap(lambda a: (a.sin() + y) @ w, x).sum()

    return tracer.capture(f, torch.randn(3, 3), torch.randn(3, 3, requires_grad=True))


def _infos(cap):
    """(graph title, node, node_info as the browser receives it: JSON) of every drawn node."""
    for frame in cap.frames:
        if not frame.has_graph:
            continue
        names = graph_names(frame)
        for _, title, g, _ in frame_graphs(frame):
            for n in g.nodes:
                yield title, n.name, json.loads(json.dumps(node_info(frame, names[id(g)], n.name), default=str))


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_python_rows_are_inspector_js_rows_for_every_node(cap, tmp_path):
    infos = [info for _, _, info in _infos(cap)]
    infos.append({"name": "n", "graph": "b", "x": 2.0, "y": [1.5, 3.0, "a"], "z": True, "w": None, "v": [True],
                  "derived_from": {"graph": "", "node": ""}, "lifted_chain": [{"graph": "", "node": "", "kind": ""}],
                  "meta": {"stack_trace": "  File a.py, line 2\n    f()\n\n", "q": {"b": [2.0, {}], "a": "é"}}})
    assert len(infos) >= 20 and any("lifted_chain" in i for i in infos) and any("saved_for_backward" in i for i in infos)
    (tmp_path / "inspector.js").write_text((VIZ / "inspector.js").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "package.json").write_text('{"type": "module"}', encoding="utf-8")
    (tmp_path / "infos.json").write_text(json.dumps(infos), encoding="utf-8")
    (tmp_path / "main.mjs").write_text(
        "import { inspectorRows } from './inspector.js';\nimport { readFileSync } from 'node:fs';\n"
        "console.log(JSON.stringify(JSON.parse(readFileSync('infos.json', 'utf8')).map(inspectorRows)));\n",
        encoding="utf-8")
    got = subprocess.run(["node", "main.mjs"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)
    js = json.loads(got.stdout)
    py = [[list(r) for r in inspector_rows(info)] for info in infos]
    for info, a, b in zip(infos, js, py, strict=True):
        assert a == b, info["name"]


class _Text(HTMLParser):
    """The text a page shows without its script: script and style elements dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style")
        if tag in ("tr", "div", "pre", "br"):
            self.parts.append("\n")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def test_the_no_script_html_carries_every_nodes_facts(cap):
    page = mimebundle(cap, include={"text/html"})["text/html"]
    reader = _Text()
    for part in page.split('<details class="ds-node-facts">')[1:]:  # each frame's node facts, to its Modules heading
        reader.feed('<details class="ds-node-facts">' + part[:part.index("<h3>Modules</h3>")])
    facts = "".join(reader.parts)
    for title, name, _ in _infos(cap):
        assert re.search(rf"^{re.escape(name)}\nop: ", facts, re.M), (title, name)  # the node's row: th, then its facts
    chains = [i for _, _, i in _infos(cap) if "lifted_chain" in i]
    chain = next(v for k, kind, v in inspector_rows(chains[0]) if k == "lifted_chain")
    assert "lifted_chain: " + " \u2190 ".join(chain) in facts  # the lifted chain, step by step
    saved = next(i for _, _, i in _infos(cap) if "saved_for_backward" in i)
    assert f"saved_for_backward: {saved['saved_for_backward']}" in facts
    sourced = next(i for _, _, i in _infos(cap) if "source" in i and "stack_trace" in i["meta"])
    assert f"source: {sourced['source']}" in facts
    stack = sourced["meta"]["stack_trace"].rstrip()
    assert re.search(r"stack: stack \d+ \(below\)", facts)
    for frame_facts in facts.split("Node facts:")[1:]:  # each distinct stack written once per frame
        stored = re.split(r"\nstack \d+\n", frame_facts.split("Recorded user stacks", 1)[-1])[1:]
        assert len(stored) == len(set(stored))
    assert stack in facts and "&lt;" not in facts
    assert "meta: " not in facts  # Note [Node facts without a script]: the raw meta stays in the widget and report


def test_node_facts_escape_user_text():
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from explorer_capture import make_capture

    page = mimebundle(make_capture(hostile="<img src=x onerror=alert(1)>"), include={"text/html"})["text/html"]
    facts = page[page.index('<details class="ds-node-facts">'):page.index("<h3>Modules</h3>")]
    assert "<img" not in facts and "&lt;img src=x onerror=alert(1)&gt;" in facts  # the hostile code line, as text
