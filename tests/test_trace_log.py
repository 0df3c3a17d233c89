"""``tracer.load_trace`` agrees with ``tracer.capture`` of the same cases, field by field.

tests/oracle_child.py runs every oracle case in a fresh process with ``TORCH_TRACE`` set (once per
module); the log is cut at its ``dynascope_oracle_case`` markers into one log per case (the
``str`` interning records kept in front), so each case's loaded ids are numbered from "0/0" like a
capture's. Then the same case is captured here and compared.

Compared (COMPARED): per frame compile_id, status, code, status_reason of failed attempts, the set
of time phases, the Dynamo graph's node names and ops and its code, HOP body names, parents, call
nodes, call sites, input names, input sources, what the HOP supplies, constants passed, and the input
kinds the log can tell (every HOP-supplied one; the rest are "unknown" there: operand or lifted is
decided by speculation, which is not logged), the TENSOR_MATCH guard sources; graph breaks
(compile id, location, code line) and recompiles (compile id, reason).
Not in a log (LOG_CANNOT): see Note [What a log does not contain] in tracer/trace_log/assemble.py.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest
from oracle_cases import ORACLE_CASES

import tracer
from tracer.trace_log import LOG_LIMITS, load_trace

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = sorted(ORACLE_CASES)
COMPARED = ["compile_id", "status", "code", "status_reason (failed)", "times (phases)", "graph nodes (name, op)",
            "graph code", "subgraph names/parent/call_node/call_sites/input names/input sources",
            "body input supplied/constant, kind hop_supplied (map/scan slices and carries, while_loop carries, "
            "flex_attention score and indices, autograd.Function backward gradients and saved values)",
            "TENSOR_MATCH guard sources", "graph breaks (compile_id, location, code_line)",
            "recompiles (compile_id, reason)"]
LOG_CANNOT = ["speculations", "body input kinds operand/lifted_freevar/lifted_symbol", "Frame.passes (graph before passes)",
              "Aot saved values, inputs/outputs metadata", "node meta beyond annotations",
              "no_graph reasons (logged at debug level only)", "dynamo_id (another process)", "time values"]
# The logged output graph is the one before Dynamo's passes; the live capture records the graph the
# backend received. Cases where a pass changed it (invoke_subgraph inlining of a single call):
BEFORE_PASSES = {"region_once"}


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, str]:
    """Case name -> path of that case's log."""
    out = tmp_path_factory.mktemp("trace_log")
    env = dict(os.environ, TORCH_TRACE=str(out / "trace"))
    subprocess.run([sys.executable, os.path.join(HERE, "oracle_child.py"), str(out / "calls.json"), *NAMES],
                   env=env, check=True, timeout=600, capture_output=True)
    (path,) = glob.glob(str(out / "trace" / "*.log"))
    return split_by_case(path, out)


def split_by_case(path: str, out) -> dict[str, str]:
    with open(path) as fh:
        lines = fh.readlines()
    strings = [ln for ln in lines if '] {"str": [' in ln]
    marks = [i for i, ln in enumerate(lines) if '"name": "dynascope_oracle_case"' in ln]
    cases = {}
    for k, i in enumerate(marks):
        name = lines[i + 1].strip()
        end = marks[k + 1] if k + 1 < len(marks) else len(lines)
        p = out / f"{name}.log"
        p.write_text("".join(strings + lines[i + 2:end]))
        cases[name] = str(p)
    cases["_all"] = path
    return cases


def _capture(name: str) -> tracer.Capture:
    fn, args, options = ORACLE_CASES[name]()
    try:
        return tracer.capture(fn, *args, **options)
    except Exception as e:
        return e.capture


def _tensor_sources(frame: tracer.Frame) -> set[str]:
    return {g.source for g in frame.guards if g.kind == "TENSOR_MATCH"}


@pytest.mark.parametrize("name", NAMES)
def test_loaded_log_agrees_with_capture(name, logs):
    loaded = load_trace(logs[name])
    tracer.validate(loaded)
    live = _capture(name)
    assert [(f.compile_id, f.status, f.code) for f in loaded.frames] == \
        [(f.compile_id, f.status, f.code) for f in live.frames]
    for got, want in zip(loaded.frames, live.frames, strict=True):
        where = f"{name} frame {want.compile_id}"
        assert got.dynamo_id and got.dynamo_id.split("_")[0].count("/") == 1, where
        if want.status == "failed":
            assert got.status_reason == want.status_reason, where
        assert set(got.times) == set(want.times), where
        # the user stack at dynamo_start: the outer frames differ (the child's loop vs pytest), the
        # frame being compiled is the same
        assert got.meta["stack"][-1] == want.meta["stack"][-1], where
        if name in BEFORE_PASSES:  # the log has the call, the backend got it inlined
            assert got.graph.find(target="invoke_subgraph") and not want.graph.find(target="invoke_subgraph"), where
            continue
        assert [[n.name, n.op] for n in got.graph.nodes] == [[n.name, n.op] for n in want.graph.nodes], where
        assert got.graph.code == want.graph.code, where
        assert sorted(got.subgraphs) == sorted(want.subgraphs), where
        for qn, sg in want.subgraphs.items():
            g = got.subgraphs[qn]
            assert (g.parent, g.call_node, g.hop) == (sg.parent, sg.call_node, sg.hop), f"{where} {qn}"
            assert [i.name for i in g.inputs] == [i.name for i in sg.inputs], f"{where} {qn}"
            assert not [p for p in got.problems if p.startswith(f"body {qn!r}")], f"{where} {qn}"
            assert [i.source for i in g.inputs] == [i.source for i in sg.inputs], f"{where} {qn}"
            assert [(i.supplied, i.meta.get("constant")) for i in g.inputs] == \
                [(i.supplied, i.meta.get("constant")) for i in sg.inputs], f"{where} {qn}"
            # Note [Body input sources from a log]: what the HOP supplies is known, the rest is "unknown"
            assert [i.kind for i in g.inputs] == [i.kind if i.kind == "hop_supplied" else "unknown"
                                                  for i in sg.inputs], f"{where} {qn}"
            if sg.call_sites:
                assert [(c.node, c.sources) for c in g.call_sites] == \
                    [(c.node, c.sources) for c in sg.call_sites], f"{where} {qn}"
        assert _tensor_sources(got) == _tensor_sources(want), where
    assert [(b.compile_id, b.location, b.code_line) for b in loaded.graph_breaks] == \
        [(b.compile_id, b.location, b.code_line) for b in live.graph_breaks]
    assert [(r.compile_id, r.reason) for r in loaded.recompiles] == [(r.compile_id, r.reason) for r in live.recompiles]
    assert loaded.problems[:len(LOG_LIMITS)] == LOG_LIMITS


def test_whole_log_loads_without_skipped_lines(logs):
    cap = load_trace(logs["_all"])
    tracer.validate(cap)
    assert [p for p in cap.problems if p.startswith("line ")] == []
    import torch

    assert cap.meta["torch"] == torch.__version__  # the release of the child that wrote the log (this interpreter)
    assert any(f.meta.get("symbols") for f in cap.frames)  # dynamic cases create symbols with user stacks
    sym = next(s for f in cap.frames for s in f.meta.get("symbols", []))
    assert sym["symbol"] and sym["user_stack"] and sym["user_stack"][0].count(":") >= 1


def test_aot_graphs_are_loaded(logs):
    cap = load_trace(logs["_all"])
    training = [f for f in cap.frames if f.aot is not None and f.aot.mode == "training"]
    assert training and all(f.aot.joint.nodes and f.aot.forward.nodes and f.aot.backward.nodes for f in training)
    for f in training:  # the joint's placeholders are the pytree-declared primals and tangents
        names = [n.name for n in f.aot.joint.placeholders]
        assert names and all(n.startswith(("primals_", "tangents_")) for n in names), names
        assert f.aot.joint.output.inputs


def test_loading_needs_no_torch(logs):
    code = ("import sys, tracer; from tracer.trace_log import load_trace; "
            f"cap = load_trace({logs['_all']!r}); tracer.validate(cap); "
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch')); print(len(cap.frames))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(HERE)))
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 10


def test_not_a_trace(tmp_path):
    p = tmp_path / "x.log"
    p.write_text(json.dumps({"schema": 1}) + "\nhello\n")
    with pytest.raises(ValueError, match="not a TORCH_TRACE structured log"):
        load_trace(str(p))
