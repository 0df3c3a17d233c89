"""The oracle: a Capture agrees with torch's own recording of the same run.

tests/oracle_child.py runs every case of tests/oracle_cases.py in a fresh process under a plain
``torch.compile`` with ``TORCH_TRACE`` set and a backend that records the GraphModule torch hands
it. From torch's structured trace we take every compile attempt that ran (records carry
``frame_id``/``frame_compile_id``/``attempt``), its fate (``compilation_metrics``: ``fail_type``,
and the attempt it was logged under), graph breaks and recompile reasons; from the backend, the
graph of each compiled attempt. The same case is then captured here with ``tracer.capture``; any
difference in frames, ids, statuses, code locations, node lists, graph code, HOP body names, body
inputs, call nodes, graph breaks or recompiles fails the case. In a fresh process torch's ids are
the capture-local ids dynascope uses (Note [Capture-local compile ids]): frames are numbered by
first compile, which the test re-derives from the log.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys

import pytest
from oracle_cases import OPTIONS, ORACLE_CASES
from torch._dynamo.exc import _load_gb_type_to_gb_id_map

import tracer
from tracer.model.break_reason import parse_break_reason

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = sorted(ORACLE_CASES)
GB_IDS = _load_gb_type_to_gb_id_map()  # torch's graph-break registry: type -> "GB0291"


def _records(log_dir: str) -> list[tuple[dict, str]]:
    """(metadata, payload) per structured-trace record, in log order."""
    (name,) = os.listdir(log_dir)
    out: list[tuple[dict, str]] = []
    with open(os.path.join(log_dir, name)) as fh:
        for line in fh:
            if line.startswith("\t"):
                meta, payload = out[-1]
                out[-1] = (meta, payload + line[1:])
            else:
                out.append((json.loads(line[line.index("{"):]), ""))
    return out


def _expected(records: list[tuple[dict, str]], calls: list[dict]) -> dict:
    """What torch recorded for one case: attempts with status, breaks, recompiles, graphs."""
    order: list[tuple[int, int, int]] = []
    final: dict[tuple[int, int], tuple[int, dict]] = {}
    breaks: collections.Counter = collections.Counter()
    recompiles: list[tuple[tuple[int, int], list[str]]] = []
    for meta, payload in records:
        if meta.get("frame_id") is None or meta.get("compiled_autograd_id") is not None:
            continue
        akey = (meta["frame_id"], meta["frame_compile_id"], meta.get("attempt") or 0)
        if akey not in order:
            order.append(akey)
        if "compilation_metrics" in meta:
            final[akey[:2]] = (akey[2], meta["compilation_metrics"])
        art = meta.get("artifact", {}).get("name")
        if art == "dynamo_graph_break_reason":
            breaks[akey] += 1
        if art == "recompile_reasons":  # one per recompile: the failed guard of every cache entry
            reasons = json.loads(payload) if payload.lstrip().startswith(("[", '"')) else payload
            recompiles.append((akey[:2], [reasons] if isinstance(reasons, str) else reasons))
    frames_seen: dict[int, int] = {}
    compiles_seen: dict[tuple[int, int], int] = {}
    local: dict[tuple[int, int, int], str] = {}
    for fid, cid, attempt in order:
        f = frames_seen.setdefault(fid, len(frames_seen))
        c = compiles_seen.setdefault((fid, cid), len([k for k in compiles_seen if k[0] == fid]))
        local[(fid, cid, attempt)] = f"{f}/{c}" + (f"_{attempt}" if attempt else "")
    graphs = {tuple(c["id"]): c for c in calls if "id" in c}
    frames = []
    unbroken: dict[str, list[str]] = {}  # restarted attempts with no logged graph break
    for akey in order:
        last, m = final.get(akey[:2], (None, {}))
        if last is not None and akey[2] < last:
            status = "restarted"
        elif m.get("fail_type"):
            status = "failed"
        elif akey in graphs:
            status = "compiled"
        else:
            status = "no_graph"
        code = f"{os.path.basename(m.get('co_filename') or '?')}:{m.get('co_firstlineno')} in {m.get('co_name')}"
        if not m.get("co_name"):  # a refused compile: torch numbers frames per code object
            code = next(c for k, _, c, _ in frames if k.split("/")[0] == local[akey].split("/")[0])
        frames.append((local[akey], status, code, graphs.get(akey)))
        if status == "restarted" and not breaks[akey]:  # torch's reasons of the compile, a set
            unbroken[local[akey]] = m.get("restart_reasons") or []
    return {
        "frames": frames,
        "breaks": sorted(local[k] for k, n in breaks.items() for _ in range(n)),
        "recompiles": [(local[(*k, 0)], [_local_prefix(r, local) for r in reasons]) for k, reasons in recompiles],
        "raised": any("raised" in c for c in calls),
        "raised_type": next((c["raised"] for c in calls if "raised" in c), None),
        "unbroken_restarts": unbroken,
    }


def _local_prefix(reason: str, local: dict[tuple[int, int, int], str]) -> str:
    """torch's "36/0: ..." (the cache entry's compile id in the child) with the capture-local id."""
    m = re.match(r"(\d+)/(\d+): ", reason)
    return f"{local[(int(m[1]), int(m[2]), 0)]}: {reason[m.end():]}" if m else reason


@pytest.fixture(scope="module")
def oracle(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("oracle")
    log_dir = out / "trace"
    env = dict(os.environ, TORCH_TRACE=str(log_dir))
    subprocess.run([sys.executable, os.path.join(HERE, "oracle_child.py"), str(out / "calls.json"), *NAMES],
                   env=env, check=True, timeout=600, capture_output=True)
    calls = json.loads((out / "calls.json").read_text())
    records = _records(str(log_dir))
    marks = [i for i, (m, _) in enumerate(records) if m.get("artifact", {}).get("name") == "dynascope_oracle_case"]
    cases = {}
    for k, i in enumerate(marks):
        name = records[i][1].strip()
        end = marks[k + 1] if k + 1 < len(marks) else len(records)
        cases[name] = _expected(records[i + 1:end], calls[name])
    return cases


def _capture(name: str) -> tuple[tracer.Capture, bool]:
    fn, args, options = ORACLE_CASES[name]()
    assert set(options) <= set(OPTIONS), f"the oracle child does not mirror {set(options) - set(OPTIONS)}"
    try:
        return tracer.capture(fn, *args, **options), False
    except Exception as e:
        return e.capture, True  # the partial capture rides on the exception


@pytest.mark.parametrize("name", NAMES)
def test_capture_agrees_with_torch(name, oracle):
    want = oracle[name]
    cap, raised = _capture(name)
    tracer.validate(cap)
    assert raised == want["raised"]
    # what the call raised is the call's error, whichever attempt ran last (Note [Interrupted compiles])
    assert cap.meta.get("error", "").split(":")[0] == (want["raised_type"] or "")
    got = [(f.compile_id, f.status, f.code) for f in cap.frames]
    assert got == [(cid, status, code) for cid, status, code, _ in want["frames"]]
    for frame, (_, _, _, torch_graph) in zip(cap.frames, want["frames"], strict=True):
        if torch_graph is None:
            assert frame.graph.nodes == []
            continue
        where = f"frame {frame.compile_id}"
        assert [[n.name, n.op] for n in frame.graph.nodes] == torch_graph["nodes"], where
        assert frame.graph.code == torch_graph["code"], where
        bodies = torch_graph["bodies"]
        assert sorted(frame.subgraphs) == sorted(bodies), where
        for qn, body in bodies.items():
            sg = frame.subgraphs[qn]
            assert [i.name for i in sg.inputs] == body["placeholders"], f"{where} {qn}"
            assert sg.parent == body["parent"] and sg.call_node == body["callers"][0], f"{where} {qn}"
            assert [c.node for c in sg.call_sites] == body["callers"], f"{where} {qn}"
    assert sorted(b.compile_id for b in cap.graph_breaks) == want["breaks"]
    # a break's type is torch's own: the registry entry its documentation link names (the cause
    # that groups breaks, tracer/model/break_reason.py)
    for b in cap.graph_breaks:
        parts = parse_break_reason(b.reason)
        if parts.doc:
            assert parts.doc.endswith(f"/gb{GB_IDS[parts.gb_type].removeprefix('GB')}.html"), b.reason
    # a restart with no logged break: its reason is one of torch's restart_reasons (else unknown + a
    # problem, which the last assert rejects) (Note [Restart reasons by elimination])
    for frame in cap.frames:
        if frame.compile_id in want["unbroken_restarts"]:
            assert frame.status_reason in want["unbroken_restarts"][frame.compile_id], frame.compile_id
    # Note [One record per recompile]: as many as torch logged, each with every cache entry's failed
    # guard, the same text but for torch's column padding (ids are local = torch's in a fresh process)
    assert [(r.compile_id, [" ".join(f.split()) for f in r.failed]) for r in cap.recompiles] == \
        [(cid, [" ".join(f.split()) for f in reasons]) for cid, reasons in want["recompiles"]]
    assert all(r.reason == r.failed[0] and not re.search(r" {3,}#| $", "\n".join(r.failed), flags=re.M)
               for r in cap.recompiles)
    assert cap.all_problems() == []
