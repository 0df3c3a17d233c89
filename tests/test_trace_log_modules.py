"""Module groups of a loaded TORCH_TRACE log agree with the live capture's ``nn_module_stack`` of the same compile.

tests/log_modules_child.py captures a program live while ``TORCH_TRACE`` logs that very compile; the
log is loaded here and every node it places in a module (``meta["log_module"]``, Note [Module groups
from a log] in tracer/trace_log/modules.py) is checked against torch's own ``nn_module_stack`` (AOT
backward nodes: ``fwd_nn_module_stack``) recorded live: the log's module is on the live node's module
path. Where the log cannot know (tied weights, a module run twice) the node must stay without one.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
import sys

import pytest

import tracer
from tracer.trace_log import load_trace
from tracer.trace_log.modules import aot_input_index, owner_of, tied_sources
from viz.graph_layout import layout
from viz.grouping import INFERRED, first_expanded, module_chain

HERE = os.path.dirname(os.path.abspath(__file__))
_GPT2 = pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers not installed")
CASES = [pytest.param("resnet18", marks=pytest.mark.slow), pytest.param("gpt2", marks=[pytest.mark.slow, _GPT2]),
         "transformer12", "tied_reused", "lines"]
_RUNS: dict[str, tuple[tracer.Capture, tracer.Capture]] = {}
LOGS: dict[str, str] = {}  # case -> the log its run wrote (other files reuse the run: tests/test_trace_log_finish_once.py)


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("log_modules")


def run(name: str, out) -> tuple[tracer.Capture, tracer.Capture]:
    """(live capture, the log of the same compile loaded), once per case."""
    if name not in _RUNS:
        env = dict(os.environ, TORCH_TRACE=str(out / name), PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE]))
        subprocess.run([sys.executable, os.path.join(HERE, "log_modules_child.py"), name, str(out / f"{name}.json")],
                       env=env, check=True, timeout=600, capture_output=True)
        live = tracer.Capture.from_json((out / f"{name}.json").read_text())
        (log,) = glob.glob(str(out / name / "*.log"))
        _RUNS[name], LOGS[name] = (live, load_trace(log)), log
    return _RUNS[name]


def _graphs(f: tracer.Frame) -> list[tuple[str, tracer.Graph]]:
    gs = [("root", f.graph)] if f.graph is not None else []
    if f.aot is not None:
        gs += [(k, g) for k in ("forward", "backward", "joint", "inference") if (g := getattr(f.aot, k)) is not None]
    return gs


def _writes_back(n: tracer.Node, g: tracer.Graph) -> bool:
    """AOTAutograd's epilogue copy of a mutated buffer into its input: live it has no module stack."""
    return n.target.startswith("aten.copy_") and g.node(n.inputs[0]).op == "placeholder"


@pytest.mark.parametrize("name", CASES)
def test_log_modules_agree_with_live_stacks(name, out):
    live, loaded = run(name, out)
    assert [f.compile_id for f in loaded.frames] == [f.compile_id for f in live.frames]
    placed = calls = 0
    for lf, gf in zip(live.frames, loaded.frames, strict=True):
        for (kind, lg), (kind2, gg) in zip(_graphs(lf), _graphs(gf), strict=True):
            assert kind == kind2
            for n in gg.nodes:
                lm = n.meta.get("log_module")
                live_paths = [p for p, _ in module_chain(lg.node(n.name))]
                if kind == "root" and n.op not in ("placeholder", "output") and live_paths:
                    calls += 1
                    placed += lm is not None
                if lm is None:
                    continue
                assert lm["via"] in ("parameter", "between", "line")
                assert ("reads" in lm) == (lm["via"] == "parameter")
                if not live_paths and kind != "root" and _writes_back(n, gg):
                    continue  # it writes that module's buffer; torch gives the epilogue no stack
                assert lm["path"] in live_paths, (lf.compile_id, kind, n.name, lm, live_paths)
    if name in ("resnet18", "gpt2"):  # nearly every node a live capture places, the log places too (Dynamo graphs)
        assert placed >= 0.8 * calls, (placed, calls)  # resnet18: 77 of 88; the rest end a stage (add, relu): the
        # run after a stage's last bn2 reaches the next stage, common module L['self'], which nn_module_stack never lists


@pytest.mark.parametrize("name", CASES)
def test_log_groups_are_marked_inferred(name, out):
    _, loaded = run(name, out)
    for f in loaded.frames:
        for _, g in _graphs(f):
            for n in g.nodes:
                chain = module_chain(n)
                assert all(typ == INFERRED for _, typ in chain)
                assert bool(chain) == ("log_module" in n.meta)


def test_backward_nodes_placed_by_the_line_they_differentiate(out):
    """Note [Backward groups from a log]: each user line of ``Lines`` runs in one module, so every AOT
    backward node torch gives a ``fwd_nn_module_stack`` is placed by the log, in that module."""
    live, loaded = run("lines", out)
    by_line = 0
    for lf, gf in zip(live.frames, loaded.frames, strict=True):
        if lf.aot is None or lf.aot.backward is None:
            continue
        for n in gf.aot.backward.nodes:
            ln = lf.aot.backward.node(n.name)
            fwd = [p for p, _ in ln.meta.get("fwd_nn_module_stack") or []]
            if n.op == "placeholder" or not fwd:
                continue
            lm = n.meta["log_module"]
            assert lm["path"] == fwd[-1], (n.name, lm, fwd)
            if lm["via"] == "line":
                by_line += 1
                assert lm["line"].endswith(f":{ln.meta['source']['line']}") and lm["nodes"]
                dyn = [lf.graph.node(d) for d in lm["nodes"]]
                assert all(lm["path"] in [p for p, _ in module_chain(d)] for d in dyn)  # torch's own stacks
    assert by_line >= 4, by_line  # the mm/sum of Linear's backward and Scale's weight gradient read no parameter


def test_a_line_run_in_two_modules_places_nothing(out):
    _, loaded = run("tied_reused", out)
    (f,) = [f for f in loaded.frames if f.aot is not None and f.aot.backward is not None]
    assert not [n for n in f.aot.backward.nodes if (n.meta.get("log_module") or {}).get("via") == "line"]
    norm_bw = f.aot.backward.find(target="native_layer_norm_backward")[0]  # line 27 runs lin and norm
    assert norm_bw.meta["log_module"]["via"] == "parameter"
    assert all("log_module" not in n.meta for n in f.aot.backward.find(target="mm"))


def test_tied_weights_and_a_module_run_twice_stay_unplaced(out):
    live, loaded = run("tied_reused", out)
    (f,) = [f for f in loaded.frames if f.graph is not None and f.graph.nodes]
    g = f.graph
    tied = tied_sources(c for g in f.guards for c in g.code)
    assert "L['self']._modules['head']._parameters['weight']" in tied  # the guard says head.weight is emb.weight
    emb, head = g.find(target="embedding")[0], g.find(target="linear")[-1]
    assert "log_module" not in emb.meta and "log_module" not in head.meta  # tied: two owners
    lins = g.find(target="linear")[:2]
    assert [n.meta["log_module"]["path"] for n in lins] == ["L['self'].lin", "L['self'].lin"]
    between = g.nodes[g.nodes.index(lins[0]) + 1:g.nodes.index(lins[1])]
    assert between and all("log_module" not in n.meta for n in between)  # lin ran twice: the relu is not in it
    (lf,) = [x for x in live.frames if x.compile_id == f.compile_id]
    live_relu = lf.graph.node(between[0].name)
    assert [p for p, _ in module_chain(live_relu)] in ([], ["L['self']"])  # live: the relu is not in lin


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", pytest.param("gpt2", marks=_GPT2)])
def test_log_report_first_view_is_grouped(name, out):
    """The log report's biggest Dynamo graph opens on module boxes (it was 17,267 / 5,896 px of loose ops)."""
    _, loaded = run(name, out)
    f = max((f for f in loaded.frames if f.graph is not None), key=lambda f: len(f.graph.nodes))
    lay = layout(f.graph, expanded=first_expanded(f.graph), engine="linear")
    groups = [b for b in lay.boxes if b.id.startswith("module:")]
    assert groups and all(INFERRED in b.sublabel for b in groups), [b.sublabel for b in groups]
    assert max(b.x + b.w for b in lay.boxes) <= 4 * 1440
    assert len(lay.boxes) <= 0.25 * len(f.graph.nodes)


def test_owner_of_parameter_and_buffer_sources():
    assert owner_of("L['self']._modules['layer1']._modules['0']._modules['bn1']._buffers['running_mean']") == \
        "L['self'].layer1.0.bn1"
    assert owner_of("G['m']._parameters['w']") == "G['m']"
    for other in ("L['x']", "L['self'].lin.weight", "L['self']._modules['lin']", "L['self']._modules['a'].w._parameters['b']"):
        assert owner_of(other) is None


def test_aot_input_index_reads_both_signature_styles():
    g = tracer.Graph(code='\n'.join([
        '    def forward(self, primals, tangents):',
        '        primals_1: "f32[4][1]cpu"  # PlainAOTInput(idx=0)',
        '        tangents_1: "f32[][]cpu"  # TangentAOTInput(output=PlainAOTOutput(idx=0))',
        '        primals_12: "f32[3, 4][4, 1]cpu",  # PlainAOTInput(idx=11)',
        '        addmm: "f32[3, 4][4, 1]cpu",',
    ]))
    assert aot_input_index(g) == {"primals_1": 0, "primals_12": 11}


def test_the_inspector_says_how_a_log_module_was_found(out):
    import viz

    _, loaded = run("transformer12", out)
    f = next(f for f in loaded.frames if f.graph is not None and f.graph.nodes)
    by_param = next(n for n in f.graph.nodes if n.op != "placeholder" and (n.meta.get("log_module") or {}).get("via") == "parameter")
    between = next(n for n in f.graph.nodes if (n.meta.get("log_module") or {}).get("via") == "between")
    info = viz.node_info(f, "", by_param.name)
    assert info["nn_module"] == by_param.meta["log_module"]["path"]
    assert info["nn_module_type"].startswith("inferred from log: reads L['self']._modules[")
    info = viz.node_info(f, "", between.name)
    lm = between.meta["log_module"]
    assert info["nn_module_type"] == f"inferred from log: traced between {lm['after']} and {lm['before']}"


@pytest.mark.parametrize("name", CASES)
def test_logged_joint_partition_is_the_live_one(name, out):
    """Note [Joint partition from a log]: a logged joint's nodes say where the partitioner put them, as live."""
    live, loaded = run(name, out)
    joints = 0
    for lf, gf in zip(live.frames, loaded.frames, strict=True):
        if lf.aot is None or lf.aot.joint is None:
            continue
        joints += 1
        for n in gf.aot.joint.nodes:
            ln = lf.aot.joint.node(n.name)
            for key in ("partition", "recomputed", "dead"):
                assert n.meta.get(key) == ln.meta.get(key), (lf.compile_id, n.name, key)
    assert joints


@pytest.mark.parametrize("name", CASES)
def test_joint_forward_half_places_nodes_traced_between(name, out):
    """Note [Joint forward half in traced order]: "between" places joint nodes before the last forward
    output only, and the forward graph takes them by name (each checked against live stacks above)."""
    from tracer.trace_log.joint_partition import forward_half

    _, loaded = run(name, out)
    for f in loaded.frames:
        if f.aot is None or f.aot.joint is None:
            continue
        half = forward_half(f.aot.joint)
        assert half is not None
        for k, n in enumerate(f.aot.joint.nodes):
            if (n.meta.get("log_module") or {}).get("via") == "between":
                assert k < half
        joint = {n.name: n.meta.get("log_module") for n in f.aot.joint.nodes}
        for n in f.aot.forward.nodes:
            lm = n.meta.get("log_module")
            if lm is not None and lm["via"] == "between":
                assert lm["joint"] and joint[n.name]["path"] == lm["path"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", pytest.param("gpt2", marks=_GPT2)])
def test_logged_joint_and_forward_first_views_are_grouped(name, out):
    """The log report's joint and forward graphs open on module boxes marked as inferred, no wider than
    4 x a 1,440 px viewport (GPT-2's joint was 7,195 px of loose ops)."""
    _, loaded = run(name, out)
    f = max((f for f in loaded.frames if f.aot is not None and f.aot.joint is not None), key=lambda f: len(f.graph.nodes))
    for g in (f.aot.joint, f.aot.forward):
        lay = layout(g, expanded=first_expanded(g), engine="linear")
        groups = [b for b in lay.boxes if b.id.startswith("module:L[")]
        assert groups and all(INFERRED in b.sublabel for b in groups), (g.name, [b.sublabel for b in lay.boxes])
        assert max(b.x + b.w for b in lay.boxes) <= 4 * 1440, g.name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", pytest.param("gpt2", marks=_GPT2)])
def test_logged_backward_first_view_fits_without_hiding_nodes(name, out):
    """The log report's backward graph opens no wider than 4 x a 1,440 px viewport, drawn at labels
    >= 10 px (viz/view.js fit() at its 1,400 px canvas), every node in a box: resnet18's 41 runs of
    the no-module group were one row 7,836 px wide; they wrap (Note [Wrapped rows] in viz/layout_linear.py)."""
    from viz.style import FONT_PX, READABLE_PX

    _, loaded = run(name, out)
    f = max((f for f in loaded.frames if f.aot is not None and f.aot.backward is not None), key=lambda f: len(f.graph.nodes))
    g = f.aot.backward
    lay = layout(g, expanded=first_expanded(g), engine="linear")
    assert lay.width <= 4 * 1440, lay.width
    scale = max(READABLE_PX / FONT_PX, min(1.0, (1400 - 16) / lay.width))  # viz/view.js fit() when it cannot fit all
    assert FONT_PX * scale >= READABLE_PX
    assert sum(b.count for b in lay.boxes) == len(g.nodes)  # nothing hidden: each node in one box
    runs = [b for b in lay.boxes if b.id.startswith("module:(no module).")]
    assert name != "resnet18" or len(runs) > 20, len(runs)  # the case that was too wide: its runs are all drawn
    for a in lay.boxes:  # wrapped rows never overlap
        for b in lay.boxes:
            if a is not b:
                assert a.x + a.w <= b.x or b.x + b.w <= a.x or a.y + a.h <= b.y or b.y + b.h <= a.y, (a.id, b.id)
