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
from bench.report_bytes import LIMIT
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
