"""``tracer.load_trace`` agrees with ``tracer.capture`` of the same cases, field by field.

tests/oracle_child.py runs every oracle case in a fresh process with ``TORCH_TRACE`` set (once per
module); the log is cut at its ``dynascope_oracle_case`` markers into one log per case (the
``str`` interning records kept in front), so each case's loaded ids are numbered from "0/0" like a
capture's. Then the same case is captured here and compared.

Compared exactly: per frame compile_id, status, code, the set of time phases, status_reason of
failed attempts, the Dynamo graph's node names, ops and code, every node role that is not a
placeholder's, root placeholders' graph-arg sources, HOP body names, parents, call nodes, call
sites, input names, input sources, what the HOP supplies, constants passed, shape symbols, shape
guards and specializations (their user stacks without torch's own frames: the backend code path
differs between the two runs), the TENSOR_MATCH guard sources, every node's shape, stride, dtype and
device and its user line wherever the innermost frame of its stack is user code (in bodies too);
graph breaks (compile id, location, code line) and recompiles (compile id, reason, every failed guard).
The fields a log cannot give are ``tracer.trace_log.LOG_LIMITS`` (and the README's list of them):
each is compared by the rule of :data:`LIMITED`, which says how the log may differ and nothing
more, and each must differ in at least one case, so the list is exactly what a log lacks.
Differing because the log comes from another run, not from a limit of logs (RUN_DIFFERS): the
dynamo_id, time values, the user stack's outer frames.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import oracle_cases
import pytest
import torch._dynamo.config
from oracle_cases import ORACLE_CASES

import tracer
from tracer.trace_log import LOG_LIMITS, load_trace

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = sorted(ORACLE_CASES)
RUN_DIFFERS = ["dynamo_id", "time values", "outer frames of Frame.meta['stack']"]
# The logged output graph is the one before Dynamo's passes; the live capture records the graph the
# backend received. Cases where a pass changed it (invoke_subgraph inlining of a single call):
BEFORE_PASSES = {"region_once"}
_LOCAL = re.compile(r"^L\['[^']+'\](\[[^\]]+\])*$")
_SEEN: dict[str, set[str]] = {}  # case -> the LOG_LIMITS fields in which its log differed from the capture


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


_BACKEND_PATH = (f"{os.sep}torch{os.sep}", f"{os.sep}tracer{os.sep}", "oracle_child.py", "<string>")


def _user_only(records: list) -> list[dict]:
    """Shape records as dicts, user stacks without the frames of the backend's code path (torch's own,
    dynascope's recorder, the oracle's backend): a symbol AOTAutograd creates has only those."""
    out = []
    for r in records:
        d = dataclasses.asdict(r)
        if "user_stack" in d:
            d["user_stack"] = [f for f in d["user_stack"] if not any(p in f["file"] for p in _BACKEND_PATH)]
        if d.get("user_line") and any(p in d["user_line"]["file"] for p in _BACKEND_PATH):
            d["user_line"] = None
        out.append(d)
    return out


def _root_role_limited(got: tracer.Node, want: tracer.Node) -> bool:
    """LOG_LIMITS["Node.role"]: a frame local's placeholder is "unknown" in the log, if anything differs."""
    return (got.role == "unknown" and want.role in ("operand", "lifted_freevar")
            and bool(_LOCAL.match(want.meta.get("graph_arg_source", ""))))


# How the log may differ from the capture in each LOG_LIMITS field: (got frame, live frame) -> the
# field differs (as the limit allows) or not; an unallowed difference fails inside.
def _speculations(got: tracer.Frame, want: tracer.Frame) -> bool:
    assert got.speculations == []
    return bool(want.speculations)


def _input_kinds(got: tracer.Frame, want: tracer.Frame) -> bool:
    differs = False
    for qn, sg in want.subgraphs.items():
        for g, w in zip(got.subgraphs[qn].inputs, sg.inputs, strict=True):
            assert g.kind == w.kind or (g.kind == "unknown" and w.kind != "hop_supplied"), (qn, g, w)
            differs |= g.kind != w.kind
    return differs


def _roles(got: tracer.Frame, want: tracer.Frame) -> bool:
    differs = False
    for g, w in zip(got.graph.placeholders, want.graph.placeholders, strict=True):
        assert g.role == w.role or _root_role_limited(g, w), (g.name, g.role, w.role, w.meta.get("graph_arg_source"))
        differs |= g.role != w.role
    for qn, sg in want.subgraphs.items():  # a body placeholder's role is its input's kind
        assert [n.role for n in got.subgraphs[qn].graph.placeholders] == [i.kind for i in got.subgraphs[qn].inputs]
        assert [n.role for n in sg.graph.placeholders] == [i.kind for i in sg.inputs]
    return differs


def _passes(got: tracer.Frame, want: tracer.Frame) -> bool:
    assert got.passes == []
    return bool(want.passes)


def _aot(got: tracer.Frame, want: tracer.Frame) -> bool:
    assert (got.aot is None) == (want.aot is None)
    if got.aot is None:
        return False
    assert got.aot.mode == want.aot.mode and got.aot.saved == [] and got.aot.inputs == [] and got.aot.outputs == []
    return bool(want.aot.saved or want.aot.inputs or want.aot.outputs)


def _meta(got: tracer.Frame, want: tracer.Frame) -> bool:
    """What print_readable prints is equal; a node's logged line (the innermost frame of its stack) is the
    live one whenever that frame is user code, and a node the log gives no line has none live either
    unless its stack ends in torch's own code (a line is never carried over from the node before)."""
    differs = False
    for name, sg in [("", None), *want.subgraphs.items()]:
        gg, wg = (got.graph, want.graph) if sg is None else (got.subgraphs[name].graph, sg.graph)
        for g, w in zip(_log_order(gg), _log_order(wg), strict=True):
            for k in ("shape", "stride", "dtype", "device"):
                assert g.meta.get(k) == w.meta.get(k), (name, g.name, k)
            innermost = [ln for ln in w.meta.get("stack_trace", "").split("\n") if ln.lstrip().startswith('File "')][-1:]
            torch_line = bool(innermost) and f"{os.sep}torch{os.sep}" in innermost[0]
            if g.op not in ("placeholder", "output") and not torch_line:
                assert g.meta.get("source") == w.meta.get("source"), (name, g.name)
            differs |= g.meta != w.meta
    return differs


def _status_reason(got: tracer.Frame, want: tracer.Frame) -> bool:
    if want.status == "no_graph":
        assert got.status_reason in (want.status_reason, "unknown")
        return got.status_reason != want.status_reason
    if want.status == "failed":
        assert got.status_reason == want.status_reason
    return False


def _bytecode(got: tracer.Frame, want: tracer.Frame) -> bool:
    assert got.bytecode is None
    return want.bytecode is not None


def _guards(got: tracer.Frame, want: tracer.Frame) -> bool:
    assert _tensor_sources(got) == _tensor_sources(want)
    return {(g.kind, g.source) for g in got.guards} != {(g.kind, g.source) for g in want.guards}


LIMITED = {"Frame.speculations": _speculations, "SubgraphInput.kind": _input_kinds, "Node.role": _roles,
           "Frame.passes": _passes, "Frame.aot": _aot, "Node.meta": _meta, "Frame.status_reason": _status_reason,
           "Frame.bytecode": _bytecode, "Frame.guards": _guards}


# torch 2.13 added the pass that inlines a single-use nested_compile_region after the graph is logged
# (pytorch/pytorch#180674); on 2.11 and 2.12 the backend gets the logged graph, invoke_subgraph and all.
_INLINES_SINGLE_USE = hasattr(torch._dynamo.config, "inline_single_use_invoke_subgraph")


def _in_log_order(frame: tracer.Frame) -> list[list[str]]:
    """[name, op] of the root graph's nodes, placeholders first: a logged graph is ``print_readable``
    text, whose placeholders are the signature. Torch 2.11 and 2.12 model a hook on an intermediate as
    an autograd-function HOP whose lifted input is placed after the hooked value's node (replaced by a
    trampoline in pytorch/pytorch#181803), so only there does the order of the two kinds interleave."""
    return [[n.name, n.op] for n in _log_order(frame.graph)]


def _log_order(graph: tracer.Graph) -> list:
    """The nodes of ``graph`` as its ``print_readable`` text lists them: placeholders first (see above)."""
    return [n for n in graph.nodes if n.op == "placeholder"] + [n for n in graph.nodes if n.op != "placeholder"]


def _compare(name: str, loaded: tracer.Capture, live: tracer.Capture) -> set[str]:
    """Assert every compared field equal (or differing only as LIMITED allows); the limited fields that differ."""
    seen: set[str] = set()
    assert [(f.compile_id, f.status, f.code) for f in loaded.frames] == \
        [(f.compile_id, f.status, f.code) for f in live.frames]
    for got, want in zip(loaded.frames, live.frames, strict=True):
        where = f"{name} frame {want.compile_id}"
        assert got.dynamo_id and got.dynamo_id.split("_")[0].count("/") == 1, where
        assert set(got.times) == set(want.times), where
        # the user stack at dynamo_start: the outer frames differ (the child's loop vs pytest), the
        # frame being compiled is the same; a compile refused by recompile_limit logs no dynamo_start
        assert got.meta.get("stack", [])[-1:] == want.meta.get("stack", [])[-1:], where
        assert "stack" in want.meta or want.status_reason.startswith("Unsupported: Dynamo recompile limit"), where
        assert _user_only(got.symbols) == _user_only(want.symbols), where
        assert _user_only(got.shape_guards) == _user_only(want.shape_guards), where
        assert _user_only(got.specializations) == _user_only(want.specializations), where
        for field, allowed in LIMITED.items():
            if field in ("Frame.speculations", "Frame.bytecode", "Frame.status_reason", "Frame.guards", "Frame.aot"):
                if allowed(got, want):
                    seen.add(field)
        if name in BEFORE_PASSES and _INLINES_SINGLE_USE:  # the log has the call, the backend got it inlined
            assert got.graph.find(target="invoke_subgraph") and not want.graph.find(target="invoke_subgraph"), where
            if _passes(got, want):
                seen.add("Frame.passes")
            continue
        assert _in_log_order(got) == _in_log_order(want), where
        assert got.graph.code == want.graph.code, where
        assert [(n.name, n.role, n.calls) for n in got.graph.nodes if n.op != "placeholder"] == \
            [(n.name, n.role, n.calls) for n in want.graph.nodes if n.op != "placeholder"], where
        assert [n.meta.get("graph_arg_source") for n in got.graph.placeholders if n.role != "unknown"] == \
            [n.meta.get("graph_arg_source") for n in want.graph.placeholders if
             not _root_role_limited(got.graph.node(n.name), n)], where
        assert sorted(got.subgraphs) == sorted(want.subgraphs), where
        for qn, sg in want.subgraphs.items():
            g = got.subgraphs[qn]
            assert (g.parent, g.call_node, g.hop) == (sg.parent, sg.call_node, sg.hop), f"{where} {qn}"
            assert [i.name for i in g.inputs] == [i.name for i in sg.inputs], f"{where} {qn}"
            assert not [p for p in got.problems if p.startswith(f"body {qn!r}")], f"{where} {qn}"
            assert [i.source for i in g.inputs] == [i.source for i in sg.inputs], f"{where} {qn}"
            assert [(i.supplied, i.meta.get("constant")) for i in g.inputs] == \
                [(i.supplied, i.meta.get("constant")) for i in sg.inputs], f"{where} {qn}"
            if sg.call_sites:
                assert [(c.node, c.sources) for c in g.call_sites] == \
                    [(c.node, c.sources) for c in sg.call_sites], f"{where} {qn}"
        seen |= {field for field in ("SubgraphInput.kind", "Node.role", "Frame.passes", "Node.meta")
                 if LIMITED[field](got, want)}
    assert [(b.compile_id, b.location, b.code_line) for b in loaded.graph_breaks] == \
        [(b.compile_id, b.location, b.code_line) for b in live.graph_breaks]
    assert [(g.location, g.gb_type, g.explanation, g.count, g.compile_ids, g.hints) for g in loaded.grouped_breaks()] == \
        [(g.location, g.gb_type, g.explanation, g.count, g.compile_ids, g.hints) for g in live.grouped_breaks()]
    assert [(r.compile_id, r.reason, r.failed) for r in loaded.recompiles] == \
        [(r.compile_id, r.reason, r.failed) for r in live.recompiles]
    # what each recompile replaced and how its graphs changed: the same from a log (guards and AOT
    # records differ only as LOG_LIMITS says, so the diff's guard and AOT parts are not compared)
    assert [(r.replaced, r.diff is None) for r in loaded.recompiles] == [(r.replaced, r.diff is None) for r in live.recompiles]
    for got_r, want_r in zip(loaded.recompiles, live.recompiles, strict=True):
        if want_r.diff is not None:
            got_d, want_d = got_r.diff, want_r.diff
            assert (got_d.a, got_d.b, got_d.reason, got_d.status, got_d.symbols_added, got_d.symbols_removed) == \
                (want_d.a, want_d.b, want_d.reason, want_d.status, want_d.symbols_added, want_d.symbols_removed)
            assert [g for g in got_d.graphs if not g.a.startswith("aot.")] == \
                [g for g in want_d.graphs if not g.a.startswith("aot.")], got_r.compile_id
    # Note [Limits of the source]: what a log cannot contain is said once, apart from this run's problems
    assert loaded.limits == [f"{k}: {v}" for k, v in LOG_LIMITS.items()]
    assert not set(loaded.limits) & set(loaded.all_problems())
    return seen


@pytest.mark.parametrize("name", NAMES)
def test_loaded_log_agrees_with_capture(name, logs):
    loaded = load_trace(logs[name])
    tracer.validate(loaded)
    _SEEN[name] = _compare(name, loaded, _capture(name))


def test_log_limits_are_exactly_what_a_log_lacks(logs):
    """Every LOG_LIMITS field differs in some case (else it is not a limit), each has a rule in
    LIMITED, and the README lists exactly these fields."""
    assert set(LIMITED) == set(LOG_LIMITS)
    for name in NAMES:
        if name not in _SEEN:  # the parametrized test did not run (-k): compare here
            _SEEN[name] = _compare(name, load_trace(logs[name]), _capture(name))
    seen = set().union(*_SEEN.values())
    # before torch 2.13 no case's backend gets a graph changed after the log point (_INLINES_SINGLE_USE)
    only_later = set() if _INLINES_SINGLE_USE else {"Frame.passes"}
    assert set(LOG_LIMITS) - seen - only_later == set(), "LOG_LIMITS names fields in which no log differed"
    readme = (Path(HERE).parent / "README.md").read_text()
    section = readme.split("<!-- LOG_LIMITS -->")[1]
    assert re.findall(r"^- `([^`]+)`", section, flags=re.M) == list(LOG_LIMITS)


def test_a_recompile_from_a_log_is_diffed_when_first_read(logs):
    """What a recompile changed (``Recompile.diff``) is computed on first read of a loaded log, like
    its graphs and guards, and is then the diff of the frames it names."""
    from tracer.model.lazy import pending

    cap = load_trace(logs["recompile_twice"])
    # sizes 3, 4, 5: the second call recompiles with a dynamic size, which the third reuses
    assert [(r.compile_id, r.replaced) for r in cap.recompiles] == [("0/1", "0/0")]
    assert all(pending(r, "diff") for r in cap.recompiles)
    d = cap.recompiles[0].diff
    assert (d.a, d.b) == ("0/0", "0/1") and not pending(cap.recompiles[0], "diff")
    assert d == tracer.diff(cap.frame("0/0"), cap.frame("0/1"), reason=d.reason)


def test_a_closure_and_a_specialization_from_a_log(logs):
    """The cases the comparison needs to mean something: a closure variable read at the root (live:
    lifted_freevar; log: unknown, its Source known) and a symbolic size made static by a guard."""
    (f,) = load_trace(logs["closure_root"]).frames
    assert [(n.name, n.role, n.meta["graph_arg_source"]) for n in f.graph.placeholders] == \
        [("l_x_", "unknown", "L['x']"), ("l_y_", "unknown", "L['y']")]
    (f,) = load_trace(logs["specialize_size"]).frames
    line = inspect.getsourcelines(oracle_cases.specialize_size)[1] + 1  # its ``if x.shape[0] == 4``
    assert [(s.name, s.source) for s in f.symbols] == [("s77", "L['x'].size()[0]")]
    assert [(s.kind, s.symbol, s.value, s.guard, s.user_line.line) for s in f.specializations] == \
        [("zero_one", "s77", "[2, int_oo]", "", line), ("static", "s77", "4", "Eq(s77, 4)", line)]
    assert [g.expr for g in f.shape_guards] == ["Eq(s77, 4)"]


def _line(meta: dict, payload: str | None = None) -> str:
    head = "V1125 19:00:00.000000 1 f.py:1] "
    if payload is None:
        return head + json.dumps(meta) + "\n"
    md5 = hashlib.md5(payload.encode("utf-8"), usedforsecurity=False).hexdigest()  # as trace_structured writes it
    return head + json.dumps({**meta, "has_payload": md5}) + "\n" + "".join(f"\t{p}\n" for p in payload.split("\n"))


def test_one_recompile_per_recompile_reasons_record(tmp_path):
    """Note [One record per recompile]: the third compile of a frame checked two cache entries; torch
    logs one record with both failed guards (a JSON list), padded as its guard code prints them."""
    lines = []
    for c in range(3):
        ids = {"frame_id": 7, "frame_compile_id": c, "attempt": 0}
        lines.append(_line({"dynamo_start": {"stack": []}, **ids}))
        if c == 1:
            lines.append(_line({"artifact": {"name": "recompile_reasons", "encoding": "json"}, **ids},
                               "7/0: s == 'a'            # f.py:3 in f"))
        if c == 2:
            lines.append(_line({"artifact": {"name": "recompile_reasons", "encoding": "json"}, **ids},
                               json.dumps(["7/1: s == 'bb'           # f.py:3 in f", "7/0: s == 'a'   "])))
    p = tmp_path / "t.log"
    p.write_text("".join(lines))
    cap = load_trace(str(p))
    assert [(r.compile_id, r.failed) for r in cap.recompiles] == [
        ("0/1", ["0/0: s == 'a'  # f.py:3 in f"]),
        ("0/2", ["0/1: s == 'bb'  # f.py:3 in f", "0/0: s == 'a'"]),
    ]
    assert [r.reason for r in cap.recompiles] == ["0/0: s == 'a'  # f.py:3 in f", "0/1: s == 'bb'  # f.py:3 in f"]
    assert "2 recompiles" in repr(cap)


def test_damaged_shape_events_load_as_what_they_say(tmp_path):
    """ShapeEnv records with fields of the wrong type (a damaged log) give what is readable, never raise."""
    ids = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
    p = tmp_path / "t.log"
    p.write_text("".join([
        _line({"dynamo_start": {"stack": []}, **ids}),
        _line({"create_symbol": {"symbol": "s0", "val": "3", "vr": "[2, int_oo]", "source": "L['x'].size()[0]",
                                 "user_stack": [{"line": "x", "name": "f", "filename": "f.py"}, 7]}, **ids}),
        _line({"guard_added_fast": {"expr": "Eq(Mod(s0, 4), 0\u0000", "user_stack": "not a list"}, **ids}),
        _line({"symbolic_shape_specialization": {"symbol": "s0", "value": "4", "reason": "r", "sources": 5}, **ids}),
    ]))
    (f,) = load_trace(str(p)).frames
    assert [(s.name, [(u.file, u.line) for u in s.user_stack]) for s in f.symbols] == [("s0", [("f.py", 0)])]
    assert [g.user_stack for g in f.shape_guards] == [[]]
    assert [(s.kind, s.sources) for s in f.specializations] == [("zero_one", ["L['x'].size()[0]"]), ("static", [])]


def test_whole_log_loads_without_skipped_lines(logs):
    cap = load_trace(logs["_all"])
    tracer.validate(cap)
    assert [p for p in cap.problems if p.startswith("line ")] == []
    import torch

    assert cap.meta["torch"] == torch.__version__  # the release of the child that wrote the log (this interpreter)
    # dynamic cases create symbols (sizes s, unbacked u, floats zf), read by the code a live capture uses
    sym = next(s for f in cap.frames for s in f.symbols if s.source)
    assert re.fullmatch(r"(s|u|zf)\d+", sym.name) and sym.user_stack and sym.user_stack[-1].file.endswith(".py")
    assert any(s.kind == "zero_one" for f in cap.frames for s in f.specializations)


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
