"""viz.to_dot: golden DOT for hand-built graphs, role styling, grouping, and that real ``dot`` reads it."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from viz_fixtures import graph, root_graph, t

import viz
from viz.synthetic import chain_graph

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz dot not installed")

# Read, not copied: one line per node (name, then what it is and format_meta), one per input edge in
# graph order, colours from viz.style.ROLE_STYLE (operand blue, hop violet, output green, op white).
GOLDEN_ROOT = """\
digraph root {
\tgraph [fontname=monospace rankdir=TB]
\tnode [fontname=monospace fontsize=10 shape=box style="rounded,filled"]
\tl_x_ [label="l_x_\\ninput · f32[3]" class="role-operand" color="#2563eb" fillcolor="#dbeafe"]
\ty [label="y\\n.cos() · f32[3]" class="role-op" color="#6b7280" fillcolor="#ffffff"]
\twrap_body_0 [label="wrap_body_0\\nget_attr wrap_body_0" class="role-op" color="#6b7280" fillcolor="#ffffff"]
\twrap [label="wrap\\nwrap(wrap_body_0) · (f32[3])" class="role-hop" color="#7c3aed" fillcolor="#ede9fe"]
\tgetitem [label="getitem\\ngetitem · f32[3]" class="role-op" color="#6b7280" fillcolor="#ffffff"]
\tmul [label="mul\\nmul · f32[3]" class="role-op" color="#6b7280" fillcolor="#ffffff"]
\toutput [label="output\\nreturn mul" class="role-output" color="#16a34a" fillcolor="#dcfce7"]
\tl_x_ -> y
\twrap_body_0 -> wrap
\tl_x_ -> wrap
\ty -> wrap
\twrap -> getitem
\tgetitem -> mul
\tmul -> output
}
"""


def test_golden_root_graph():
    assert viz.to_dot(root_graph()) == GOLDEN_ROOT


def test_lifted_roles_and_symbols():
    g = graph("wrap_body_0", [
        ("a", "placeholder", "a", [], "operand", {"meta": t("s0", 3)}),
        ("y", "placeholder", "y", [], "lifted_freevar"),
        ("s0", "placeholder", "s0", [], "lifted_symbol", {"meta": {"kind": "symint", "value": "s0"}}),
        ("w", "get_attr", "w", [], "param"),
        ("add", "call_function", "operator.add", ["a", "y"], "op", {"meta": t("s0", 3)}),
        ("output", "output", "output", ["add"], "output", {"meta": {}}),
    ])
    dot = viz.to_dot(g, rankdir="LR")
    assert dot.splitlines()[0] == "digraph wrap_body_0 {"
    assert "rankdir=LR" in dot
    assert 'a [label="a\\ninput · f32[s0, 3]" class="role-operand"' in dot
    assert 'y [label="y\\nlifted freevar · f32[3]" class="role-lifted_freevar" color="#d97706"' in dot
    assert 's0 [label="s0\\nlifted symbol · Sym(s0)" class="role-lifted_symbol"' in dot
    assert 'w [label="w\\nget_attr w · f32[3]" class="role-param"' in dot


def test_long_labels_are_cut():
    g = graph("", [("x" * 60, "placeholder", "x", [], "operand")])
    dot = viz.to_dot(g, max_label=10)
    assert 'label="xxxxxxxxx\u2026\\ninput · f\u2026"' in dot
    assert f'"{"x" * 60}"' not in dot and f"{'x' * 60} [" in dot  # the node id is never cut


def test_bad_rankdir_names_choices():
    with pytest.raises(ValueError, match=r"must be one of \['TB', 'LR', 'BT', 'RL'\]"):
        viz.to_dot(root_graph(), rankdir="up")


def test_big_graph_is_grouped_by_module():
    g = chain_graph(1000, layers=4)
    dot = viz.to_dot(g)
    # L['self'] and L['self'].layers each wrap everything, so they open by themselves: 4 layer boxes.
    groups = [line for line in dot.splitlines() if '"module:' in line and "->" not in line]
    assert [line.split(" [")[0].strip() for line in groups] == [
        f"\"module:L['self'].layers.{i}\"" for i in range(4)]
    assert 'class="role-group"' in groups[0] and "dashed" in groups[0]
    assert "TransformerEncoderLayer" in groups[0]
    counts = [int(line.split(" nodes")[0].rsplit(" ", 1)[-1]) for line in groups]
    assert sum(counts) == len(g.nodes) - 2  # every node but the input and the output is in a layer
    opened = viz.to_dot(g, expanded={"L['self'].layers.1"})
    assert "\"module:L['self'].layers.1\"" not in opened
    assert "\"module:L['self'].layers.1.self_attn\"" in opened


@needs_dot
def test_dot_reads_it():
    g = root_graph()
    out = subprocess.run(["dot", "-Tjson"], input=viz.to_dot(g).encode(), capture_output=True, check=True).stdout
    data = json.loads(out)
    assert [o["name"] for o in data["objects"]] == [n.name for n in g.nodes]
    assert len(data["edges"]) == sum(len(n.inputs) for n in g.nodes)
