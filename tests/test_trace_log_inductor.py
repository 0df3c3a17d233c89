"""A TORCH_TRACE log of Inductor compiles loads into the same ``Frame.inductor`` a live capture records.

Real logs only: tests/inductor_log_child.py is run by torch in a child process with TORCH_TRACE, once
with Inductor's provenance tracking on (INDUCTOR_PROVENANCE=1) and once without (what TORCH_TRACE alone
logs), the compile caches off in both (Note [No compile caches during an Inductor capture] in
tracer/_torch/inductor.py). The expected values are the live capture of the same function, read by
torch's own structured-trace records in a fresh process of its own, written as JSON (Note [What Inductor tells us] in
tracer/inductor_events.py).
"""

from __future__ import annotations

import dataclasses
import html
import os
import re
import subprocess
import sys

import pytest

import tracer
import viz
from tracer.model import validate
from viz.report_file import expand

pytestmark = pytest.mark.slow

_HERE = os.path.dirname(os.path.abspath(__file__))
_COLD = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}


def _log(tmp_path_factory, name: str, env: dict[str, str], args: tuple[str, ...] = ("train",)) -> str:
    out = tmp_path_factory.mktemp(name) / "trace"
    child_env = {k: v for k, v in os.environ.items() if k not in ("INDUCTOR_PROVENANCE", "TORCH_COMPILE_DEBUG")}
    subprocess.run([sys.executable, os.path.join(_HERE, "inductor_log_child.py"), *args], check=True,
                   timeout=300, capture_output=True, env=dict(child_env, TORCH_TRACE=str(out), **{**_COLD, **env}))
    (path,) = out.glob("*.log")
    return str(path)


@pytest.fixture(scope="module")
def provenance_log(tmp_path_factory):
    return _log(tmp_path_factory, "provenance", {"INDUCTOR_PROVENANCE": "1"})


@pytest.fixture(scope="module")
def with_provenance(provenance_log):
    return tracer.load_trace(provenance_log)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return tracer.load_trace(_log(tmp_path_factory, "plain", {}))


# The live captures run in a fresh process too: AOTAutograd numbers its graphs from a process-wide counter
# ("0_forward"), which Inductor writes into its output code, so a capture made after other tests' compiles
# would differ from the log's child by that number alone.
_LIVE = """
import sys, torch, tracer
from inductor_log_child import model
torch.manual_seed(0)
x, w = torch.randn(4, 8), torch.randn(8, 4)
inference = tracer.capture(model, x, w, backend="inductor")
w.requires_grad_(True)
training = tracer.capture(model, x, w, backend="inductor")
for cap, path in zip((inference, training), sys.argv[1:]):
    with open(path, "w") as f:
        f.write(cap.to_json())
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The child's two compiles, captured live in a fresh process: inference (no grad), then training."""
    out = tmp_path_factory.mktemp("live")
    paths = [str(out / "inference.json"), str(out / "training.json")]
    path = os.pathsep.join([_HERE, os.path.dirname(_HERE), os.environ.get("PYTHONPATH", "")])
    subprocess.run([sys.executable, "-c", _LIVE, *paths], check=True, timeout=300, capture_output=True,
                   env=dict(os.environ, PYTHONPATH=path, **_COLD))
    inference, training = (tracer.Capture.load(p) for p in paths)
    return inference.frames[0], training.frames[0]


def _compiled(cap):
    return [f for f in cap.frames if f.inductor]


def test_log_inference_and_forward_graphs_equal_the_live_capture(with_provenance, live):
    validate(with_provenance)
    inference, training = _compiled(with_provenance)
    assert [g.aot_id.split("_")[1] for g in inference.inductor] == ["inference"]
    assert [g.aot_id.split("_")[1] for g in training.inductor] == ["forward", "backward"]
    for logged, captured in ((inference.inductor[0], live[0].inductor[0]), (training.inductor[0], live[1].inductor[0])):
        assert logged.provenance and captured.provenance
        assert logged.output_code == captured.output_code
        assert logged.post_grad_graph == captured.post_grad_graph
        assert logged.kernels == captured.kernels  # names, handles, post-grad and Dynamo nodes, user lines
        assert logged.kernels and all(k.dynamo_nodes and k.source_lines for k in logged.kernels)
    for f in (inference, training):
        assert not [p for p in f.problems if "_backward" not in p]


def test_log_backward_keeps_its_code_and_says_its_kernels_are_unknown(with_provenance, live):
    """Note [Backward provenance in a log]: the code is logged as live; the kernels are not guessed."""
    logged, captured = _compiled(with_provenance)[1].inductor[1], live[1].inductor[1]
    assert logged.aot_id == captured.aot_id and logged.aot_id.endswith("_backward")
    assert logged.output_code == captured.output_code and logged.post_grad_graph == captured.post_grad_graph
    assert captured.kernels and not logged.kernels and not logged.provenance
    (problem,) = [p for p in _compiled(with_provenance)[1].problems if "_backward" in p]
    assert "kernels and their nodes are unknown" in problem


def test_log_without_provenance_has_code_and_names_what_is_unknown(plain, live):
    """TORCH_TRACE alone does not turn Inductor's provenance tracking on (config.trace.provenance_tracking_level
    reads INDUCTOR_PROVENANCE / TORCH_COMPILE_DEBUG): output code and post-grad graph, no kernels, a problem."""
    validate(plain)
    inference, training = _compiled(plain)
    for logged, captured in ((inference.inductor[0], live[0].inductor[0]), (training.inductor[0], live[1].inductor[0])):
        assert logged.post_grad_graph == captured.post_grad_graph
        assert logged.output_code and logged.output_code.split("\n", 1)[0] == captured.output_code.split("\n", 1)[0]
        assert not logged.provenance and not logged.kernels
        assert any(p.startswith(f"inductor {logged.aot_id}: Inductor logged no provenance mapping") for p in
                   (inference if logged in inference.inductor else training).problems)


def test_log_inductor_round_trips_json(with_provenance):
    back = tracer.Capture.from_json(with_provenance.to_json())
    assert [f.inductor for f in back.frames] == [f.inductor for f in with_provenance.frames]
    assert any(f.inductor for f in back.frames)


def test_inductor_events_wait_for_first_access(provenance_log, with_provenance):
    """The loader keeps the events and reads them on the first access of ``frame.inductor`` (or of the
    frame's problems, which then hold what that read found)."""
    from tracer.model.lazy import pending

    cap = tracer.load_trace(provenance_log)  # the same log, loaded afresh
    frames = [f for f in cap.frames if pending(f, "inductor")]
    assert len(frames) == 2
    problems = frames[1].problems  # reading the problems reads the Inductor events first
    assert not pending(frames[1], "inductor") and any("_backward" in p for p in problems)
    assert [dataclasses.asdict(g) for g in frames[0].inductor] == [
        dataclasses.asdict(g) for g in _compiled(with_provenance)[0].inductor]


def test_static_report_of_the_log_shows_the_output_code(with_provenance, tmp_path):
    page = expand(viz.export_html(with_provenance, tmp_path / "r.html").read_text(encoding="utf-8"))
    text = html.unescape(re.sub(r"<[^>]*>", "", page))
    codes = [g.output_code.strip() for f in with_provenance.frames for g in f.inductor]
    assert len(codes) == 3 and all(c in text for c in codes)


def test_a_graph_from_the_fx_graph_cache_has_code_and_no_guessed_kernels(tmp_path_factory, live):
    """With the caches on (a user's default), a second process loads the compile from the FX graph cache: Inductor
    replays the entry's provenance (Note [Provenance replayed from a compile cache]); the code is the same."""
    cache = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path_factory.mktemp("inductor_cache")), "INDUCTOR_PROVENANCE": "1",
             "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}
    first = tracer.load_trace(_log(tmp_path_factory, "cache_miss", cache, ()))
    hit = tracer.load_trace(_log(tmp_path_factory, "cache_hit", cache, ()))
    (made,), (loaded,) = (_compiled(first)[0].inductor, _compiled(hit)[0].inductor)
    assert made.kernels == live[0].inductor[0].kernels and made.provenance  # the compile that made the entry
    assert loaded.output_code == made.output_code and loaded.post_grad_graph == made.post_grad_graph
    assert not loaded.kernels and not loaded.provenance
    assert _compiled(hit)[0].problems == [f"inductor {loaded.aot_id}: loaded from the FX graph cache, whose provenance "
                                          "is that of the compile that made the entry: its kernels and their nodes are "
                                          "unknown"]


def test_static_report_of_the_log_offers_each_kernel_once(with_provenance, tmp_path):
    """The report's kernel chooser (Note [One kernel chooser] in viz/report.js) is in a logged capture's
    payload too: the widget's labels, each kernel once, each with the Dynamo nodes it computes."""
    from viz.code_view import kernel_nodes

    page = expand(viz.export_html(with_provenance, tmp_path / "r.html").read_text(encoding="utf-8"))
    pickers = re.findall(r'<select class="ds-kernel-choice" data-graph="\d+">(.*?)</select>', page)
    frames = [f for f in _compiled(with_provenance) if any(g.kernels for g in f.inductor)]
    assert frames and len(pickers) == len(frames)
    for picker, frame in zip(pickers, frames, strict=True):
        got = [(html.unescape(label), nodes.split()) for nodes, label in
               re.findall(r'<option value="\d+" data-nodes="([^"]*)">([^<]*)</option>', picker)]
        assert got == kernel_nodes(frame) and len({lb for lb, _ in got}) == len(got), got
        assert all(nodes for _, nodes in got)
