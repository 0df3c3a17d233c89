"""The one-file report of a real training step stays under 1 MB with every graph drawn, its code and
every drawn node's inspector facts in it (bench/report_bytes.py measures the whole zoo; a size is
deterministic for a given torch and model, so one real model is checked here)."""

from __future__ import annotations

import json
import re

import pytest
import torch

import tracer
import viz
from bench import models
from bench.report_bytes import LIMIT, _log, contents
from bench.report_parts import breakdown
from viz.report_file import payloads
from viz.report_graphs import frame_graphs

pytestmark = pytest.mark.slow


def test_a_12_layer_training_report_is_under_a_megabyte_with_everything_in_it(tmp_path):
    torch.manual_seed(0)
    model, args = models.make("transformer12", "full")
    cap = tracer.capture(model, *args)
    path = viz.export_html(cap, tmp_path / "t12.html")
    page = path.read_text(encoding="utf-8")
    assert len(page.encode("utf-8")) <= LIMIT, len(page.encode("utf-8"))
    (frame,) = [f for f in cap.frames if f.has_graph]
    (html,) = payloads(page).values()
    drawn = frame_graphs(frame)
    assert {k for k, _, _, _ in drawn} >= {"root", "joint", "forward", "backward"}
    assert html.count('class="ds-graphbox"') == len(drawn)  # every graph drawn
    assert "original" in html and "Guard function" in html  # the Code tab
    (block,) = re.findall(r'<script type="application/json" class="ds-node-info">([^<]*)</script>', html)
    facts = json.loads(block)["graphs"]
    assert [sorted(g) for g in facts] == [sorted(n.name for n in g.nodes) for _, _, g, _ in drawn]


def test_the_bench_sees_an_undrawn_node_and_missing_code(tmp_path):
    """bench/report_bytes.py's yes/no columns come from ``contents``, checked against the capture: a
    node whose box is gone, or a guard function gone from the Code tab, turns them to False; a loaded
    TORCH_TRACE log has no bytecode (the loader does not read it), so its code is None, not a yes."""
    model, args = models.make("cnn", "tiny")
    cap = tracer.capture(model, *args)
    page = viz.export_html(cap, tmp_path / "cnn.html").read_text(encoding="utf-8")
    decoded = payloads(page)
    assert contents(decoded, cap) == {"drawn": True, "code": True}
    parts = breakdown(page)  # bench/report_parts.py: where the bytes go, adding up to the file
    assert sum(parts.values()) == len(page.encode("utf-8"))
    assert all(parts[k] > 0 for k in ("layout", "node facts", "guard function", "guards", "graph code", "page"))
    assert parts["inductor code"] == parts["recompile diffs"] == 0  # aot_eager, one frame
    (key, html), = decoded.items()
    block = re.search(r'(<script type="application/json" class="ds-drawings">)([^<]*)', html)
    drawings = json.loads(block.group(2))
    root = drawings["graphs"][0]
    assert [b[0] for b in root["b"]].count("l_x_") == 1  # the input's box, in the root graph's first view
    root["b"] = [b for b in root["b"] if b[0] != "l_x_"]
    undrawn = html[:block.start(2)] + json.dumps(drawings) + html[block.end(2):]
    assert contents({key: undrawn}, cap) == {"drawn": False, "code": True}
    guards = re.sub(r"(<h4>Guard function</h4><pre[^>]*>)[^<]*", r"\1", html)
    assert guards != html and contents({key: guards}, cap) == {"drawn": True, "code": False}
    log = tracer.load_trace(_log("cnn", "tiny", str(tmp_path)))
    page = viz.export_html(log, tmp_path / "cnn_log.html").read_text(encoding="utf-8")
    assert contents(payloads(page), log) == {"drawn": True, "code": None}
