"""The benchmark harness (bench/) imports and every measurement runs on a tiny configuration.

No timings are asserted: only that each measurement returns its keys, and the facts it reads
(no real tensor in a Capture, the first view of a big graph is grouped, the notebook is valid).
The harness measures on the default venv, so ``make compat`` does not repeat these (marker ``bench``);
what they read of the tracer on every release is tested by the tracer's own tests (no real tensor held:
tests/test_capture_memory.py; the grouped first view: tests/test_first_view_real.py).
"""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root: `import bench`

import bench.__main__ as bench_main  # noqa: E402
from bench import capture_overhead, explorer_scaling, memory, models, pause_latency, profile_cost, saved_split  # noqa: E402

pytestmark = pytest.mark.bench


@pytest.fixture(scope="module")
def tiny_transformer():
    import tracer

    model, args = models.make("transformer12", "tiny")
    return tracer.capture(model, *args)


@pytest.mark.parametrize("name", list(models.MODELS))
def test_models_run_eagerly(name):
    model, args = models.make(name, "tiny")
    assert model(*args).shape[0] == args[0].shape[0]


def test_unknown_model_names_the_choices():
    with pytest.raises(ValueError, match="must be one of"):
        models.make("resnet")


@pytest.mark.parametrize("name", list(models.MODELS))
def test_capture_overhead_keys(name):
    res = capture_overhead.measure(name, repeat=1, size="tiny")
    assert set(res) >= {"capture_ratio", "trace_file_ratio", "seconds"}
    assert set(res["seconds"]) == set(capture_overhead.SIDES)
    assert all(v > 0 for v in res["seconds"].values())


def test_explorer_scaling_keys_and_grouped_first_view(tiny_transformer):
    res = explorer_scaling.run((400, 800), repeat=1, transformer=tiny_transformer,
                               transformer_capture_seconds=1.0, dot_cap=10.0)
    assert set(res["explorer_seconds"]) == {"400", "800", "transformer12"}
    assert "explorer_scaling_800_over_400" in res and "explorer_over_capture_transformer12" in res
    view = res["first_view_largest"]
    assert view["nodes"] >= 800 and view["grouped"] and view["boxes"] < view["nodes"]
    assert view["boxes"] < view["expanded_boxes"] <= view["nodes"]  # opening a module box shows its insides
    joint = next(f.aot.joint for f in tiny_transformer.frames if f.aot is not None and f.aot.joint)
    assert res["joint_nodes"] == len(joint.nodes)
    assert {"joint_layout_seconds", "joint_dot_seconds_capped", "joint_dot_cap_hit"} <= set(res)


def test_memory_holds_no_real_tensor(tiny_transformer):
    res = memory.retained(1, keep_result=False, width=64)
    assert res["param_bytes"] == (64 * 64 + 64) * 4
    assert res["real_tensors_in_capture"] == []
    assert {"tracemalloc_bytes", "rss_bytes", "retained_over_params"} <= set(res)
    nb = memory.notebook_bytes(tiny_transformer)
    assert nb["notebook_output_bytes"] > nb["html_bytes"] > 0


def test_pause_latency_keys():
    res = pause_latency.run(repeat=1, size="tiny")
    assert set(res) >= {"pause_step_ratio", "pause_step_seconds", "pause_line_trace_seconds"}
    assert res["pause_step_seconds"] > 0


def test_saved_split_adds_up():
    res = saved_split.measure("cnn", "tiny")
    assert res["unknown"] == 0
    assert res["saved_bytes"] >= res["activation_bytes"] + res["param_bytes"] > 0
    assert 0 < res["param_bytes"] <= res["model_param_bytes"]


def test_table_and_json_line(monkeypatch, capsys):
    res = {"capture_overhead": {"mlp": 1.05}, "trace_file_overhead": {"mlp": 1.2},
           "explorer_scaling_16k_over_4k": 5.0, "pause_step_ratio": 1.5, "errors": {}}
    text = bench_main.table(res)
    assert "MISS" in text.splitlines()[3] and "ok" in text.splitlines()[1]
    # main() prints the table, then the JSON object as the very last line (what `tail -1` reads).
    monkeypatch.setattr(bench_main, "run", lambda quick=False, figures=None: (figures(res), res)[1])
    assert bench_main.main([]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert json.loads(lines[-1]) == res
    assert lines[:-1] == text.splitlines()
    assert captured.err.splitlines()[-1] == "bench: 1 of 2 targets met; missed: explorer_scaling_16k_over_4k"


def test_a_failing_benchmark_is_named_and_the_rest_still_run(monkeypatch, capsys):
    # Three steps, the middle one raises: the others' figures are printed as each ends, the JSON names
    # the failure, the summary line says it, and the exit status is 1.
    steps = [("first", lambda: {"pause_step_ratio": 1.5, "diff_seconds_transformer12": 0.01}),
             ("broken", lambda: {}["missing"]),
             ("last", lambda: {"report_bytes": 2_000_000})]
    monkeypatch.setattr(bench_main, "_steps", lambda quick, out, held: steps)
    assert bench_main.main(["--quick"]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    res = json.loads(lines[-1])
    assert res["errors"] == {"broken": "KeyError: 'missing'"} and res["quick"] is True
    assert res["pause_step_ratio"] == 1.5 and res["report_bytes"] == 2_000_000
    assert lines[:-1] == bench_main.table(res).splitlines()  # every figure measured, in the order measured
    assert captured.err.splitlines()[-1] == ("bench --quick: 1 of 2 targets met; missed: report_bytes; "
                                             "1 benchmark(s) FAILED: broken (KeyError: 'missing')")
    assert "FAILED: broken" in captured.err  # the progress log names it when it happens


def test_a_step_needing_a_failed_capture_says_so():
    out = {"repeat": 1}
    steps = dict(bench_main._steps(True, out, {}))
    with pytest.raises(RuntimeError, match="needs the transformer12 capture"):
        steps["canvas payload, load time"]()
    with pytest.raises(RuntimeError, match="compile time from the capture overhead step"):
        steps["explorer scaling"]()


@pytest.mark.parametrize("name", ["mixtral"])
def test_zoo_models_build_and_train_eagerly(name):
    """The zoo's real architectures build from their transformers configs and take a training step
    (bench/zoo.py; the full zoo is `python -m bench --zoo`, minutes per model)."""
    from bench import zoo

    model, args = zoo.make(name)
    out = model(*args)
    assert zoo._float_outputs(out)
    zoo._step(out)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    assert set(zoo.INDUCTOR_MODELS) <= set(zoo.ZOO) and len(zoo.ZOO) >= 9


def test_zoo_row_prints_every_figure_and_dashes_what_was_not_measured():
    from bench import zoo

    gc = {"plain": {"collections": [190, 17, 2], "seconds": 0.4}, "capture": {"collections": [191, 22, 0], "seconds": 0.03}}
    res = {"load": [3.31, 2.0, 1.0], "aot_eager": {"wall": 1.031, "cpu": 1.046, "plain_s": 2.5, "gc": gc},
           "held_bytes": 4099941, "param_bytes": 6771712, "held_share": 0.6054, "report_bytes": 512000, "report_s": 0.41}
    assert zoo.row("qwen2", res) == ("qwen2", "1.03 / 1.05", "-", "2.50", "2 / 0", "4,099,941", "6,771,712", "0.61",
                                     "512,000", "0.41", "3.3")
    res["inductor"] = {"wall": 0.98, "cpu": 1.0}
    assert zoo.row("qwen2", res)[2] == "0.98 / 1.00" and len(zoo.row("qwen2", res)) == len(zoo.HEADER)


def test_zoo_pools_the_rounds_of_several_processes():
    """``--zoo-processes N``: the ratio is the median of every round of every process (not a median of
    medians), the collections are summed."""
    from bench import zoo

    def part(ratios, plain, full):
        return {"rounds": len(ratios), "cpu": sorted(ratios)[len(ratios) // 2], "ratios": {"wall": ratios, "cpu": ratios},
                "seconds": {"plain": plain, "capture": [p * r for p, r in zip(plain, ratios, strict=True)]},
                "gc": {"plain": {"collections": [1, 1, full], "seconds": 0.5}, "capture": {"collections": [2, 0, 0], "seconds": 0.25}}}

    res = zoo.pooled([part([1.0, 1.0, 1.2], [2.0, 2.0, 2.0], 1), part([1.1, 1.3, 1.4], [3.0, 3.0, 3.0], 0)])
    # medians of medians would be 1.1 (1.0 and 1.3 -> either); all six rounds: 1.0 1.0 1.1 1.2 1.3 1.4 -> 1.15
    assert res["cpu"] == res["wall"] == 1.15 and res["rounds"] == 6 and res["processes"] == 2
    assert res["per_process_cpu"] == [1.0, 1.3] and res["plain_s"] == 2.5
    assert res["gc"]["plain"] == {"collections": [2, 2, 1], "seconds": 1.0}
    assert res["gc"]["capture"] == {"collections": [4, 0, 0], "seconds": 0.5}


def test_zoo_measures_each_row_in_a_process_of_its_own():
    """Note [Each row in a process of its own]: the arguments and result travel as JSON, the work runs in
    another process, and a failure there says what failed."""
    from bench import zoo

    res = {"load": [1.0, 1.0, 1.0], "aot_eager": {"wall": 1.0, "cpu": 1.0, "plain_s": 2.0},
           "held_bytes": 1, "param_bytes": 2, "held_share": 0.5, "report_bytes": 3, "report_s": 0.1}
    assert zoo.in_fresh_process("row", "bert", res) == list(zoo.row("bert", res))
    with pytest.raises(RuntimeError, match=r"(?s)bench.zoo.make\('nope',\) failed in its process.*KeyError"):
        zoo.in_fresh_process("make", "nope")


def test_profile_cost_measures_both_parts_and_leaves_nothing_wrapped():
    import tracer._torch.fx_marks as fx_marks

    before = fx_marks.node_times
    res = profile_cost.measure("mlp", "tiny", "aot_eager", steps=1)
    assert res["profiled_run_s"] > 0 and res["attribution_s"] > 0 and res["nodes"] > 0
    assert fx_marks.node_times is before and "events" not in __import__("torch").profiler.profile.__dict__
    eager = profile_cost.measure("mlp", "tiny", "eager", steps=1)
    assert eager["attribution_s"] > 0 and eager["nodes"] > 0 and 0 < eager["markers_share"] < 1


def test_job_scale_keys_and_the_report_of_every_rank():
    """The job bench on a tiny job: every figure is there, and the cores and load are recorded with them."""
    from bench import job_scale

    res = job_scale.run(size="tiny", rank_bytes=2 * 2**20, ranks=2, job_ranks=2, job_rank_bytes=2**20, workers=2)
    keys = {key for key, *_ in bench_main.TARGETS if key.startswith("job_")}
    assert keys <= set(res) and res["job_workers_n"] == 2 and res["job_cores"] == os.cpu_count()
    assert set(res["job_loadavg"]) == {"start", "one_rank", "report_1", "report_n", "end"}
    assert res["job_total_bytes"] == 2 * res["job_rank_log_bytes"] >= 4 * 2**20


def test_job_worker_rows_on_a_real_rank_log(ddp_job_dir, tmp_path):
    """``bench.job_scale rows=``: a row per run, rounds alternating 1, N and N, 1, each N-worker report
    checked to be the 1-worker file."""
    from bench import job_scale

    log = sorted((ddp_job_dir / "trace").glob("*rank_0*.log"))[0]
    res = job_scale.worker_rows(str(log), 2**20, 2, str(tmp_path), workers=2, rounds=2)
    assert [(r["round"], r["what"], r["workers"]) for r in res["rows"]] == [
        (0, "dynascope report", 1), (0, "load_job", 1), (0, "dynascope report", 2), (0, "load_job", 2),
        (1, "dynascope report", 2), (1, "load_job", 2), (1, "dynascope report", 1), (1, "load_job", 1)]
    assert all(r["same_file_as_1_worker"] for r in res["rows"] if r["what"] == "dynascope report")
    assert all(r["rss_mb"] > 0 and r["cpu"] > 0 and len(r["load"].split()) == 3 for r in res["rows"])
    assert all(r["worker_rss_mb"] > 0 for r in res["rows"] if r["workers"] == 2)
    assert res["rows_total_bytes"] == 2 * res["rows_rank_log_bytes"] >= 2 * 2**20


def test_export_overhead_keys_and_table_rows():
    from bench import export_overhead

    res = export_overhead.run(("mlp",), repeat=1, size="tiny")
    assert set(res["export_overhead"]) == set(res["export_overhead_cpu"]) == {"mlp"}
    assert res["export_overhead"]["mlp"] > 0 and res["export_seconds"]["mlp"] > 0
    (row,) = [r for r in bench_main.rows(res) if r[0].startswith("tracer.export")]
    assert row[0] == "tracer.export / torch.export.export (mlp; CPU time)" and row[2] == "<= 1.10"
    assert "export_overhead[mlp]" in bench_main.verdicts(res)


# Parameter counts of the published checkpoints, as their model cards and papers give them (not read from
# our output): gpt2 124M (tied head), bert-base-uncased 110M (BertModel, pooler included), t5-small 60M
# (T5Model), TinyLlama-1.1B, Qwen2-0.5B (tied embeddings), ViT-B/16 86M (ViTModel, pooler included),
# Swin-T 28.3M with its 1000-class head, 27.5M without (SwinModel).
_PUBLISHED_PARAMS = {"gpt2": 124_439_808, "bert": 109_482_240, "t5": 60_506_624, "llama": 1_100_048_384,
                     "qwen2": 494_032_768, "vit": 86_389_248, "swin": 28_288_354 - (768 * 1000 + 1000)}


@pytest.mark.parametrize("name", sorted(_PUBLISHED_PARAMS))
def test_published_configs_have_their_checkpoints_parameter_counts(name):
    """bench/zoo_published.py builds each architecture at its checkpoint's size: counted on the meta device
    (no memory), the parameters are the checkpoint's."""
    import torch

    from bench import zoo_published

    checkpoint, size, build = zoo_published.PUBLISHED[name]
    assert size == "whole"
    with torch.device("meta"):
        model, _ = build()
    assert sum(p.numel() for p in model.parameters()) == _PUBLISHED_PARAMS[name], checkpoint


_HELD_CHILD = """
import json, sys
import torch, tracer
from bench import models, zoo_published
model, args = models.make("mlp", "tiny")
cap = tracer.capture(model, *args, backward=True)
aot = cap.frames[0].aot
expected = sum(len(g.nodes) for g in (cap.frames[0].graph, aot.joint, aot.forward, aot.backward))
json_bytes = len(cap.to_json())
del cap, aot
torch.compiler.reset()
print(json.dumps({"expected": expected, "json_bytes": json_bytes, **zoo_published.held(model, args)}))
"""


def test_published_held_counts_every_graphs_nodes():
    """``zoo_published.held``: the nodes are those of the Dynamo, joint, forward and backward graphs, and
    the held bytes are what deleting the capture gave back (more than nothing, less than its JSON). In a
    process of its own: this suite's fixture keeps every capture it sees (Note [No capture has problems])."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", _HELD_CHILD], cwd=root, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=root), check=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    assert res["nodes"] == res["expected"]
    assert 0 < res["held_bytes"] < 4 * res["json_bytes"]
    assert res["held_share"] == round(res["held_bytes"] / res["param_bytes"], 4)
