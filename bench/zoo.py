"""``python -m bench --zoo``: capture cost on real architectures, built from ``transformers`` configs with random weights.

Invariant: every model is a real ``transformers`` architecture (GPT-2, BERT, T5, Llama, Mistral,
Qwen2, Mixtral, ViT, Swin) at a small config, seeded, no download. Each model's measurement runs in a
Python process of its own (Note [Each row in a process of its own]); per round, in rotating order from a
fresh Dynamo state: plain ``torch.compile(backend=...)`` and ``tracer.capture`` with the
same backend, each a first call plus ``sum(outputs).backward()`` (a training step's compile); the
ratio is the median of per-round ratios, wall and CPU, with each side's collections counted (Note
[Collections counted per side]). Also the bytes a capture holds (what
tracemalloc sees freed when the capture, its result dropped, is deleted: torch's own caches filled
by the compile stay and are not counted; tensors a capture held would be, through their Python
objects only, so ``bench.memory.real_tensors`` checks there are none) against the model's parameter
bytes, and the static report's size and write time. ``python -m bench --zoo`` prints one row per model
(header first, the load when each model started), then every figure as one JSON line.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from typing import Any, Callable

import torch

import tracer
from bench.timing import collections, fresh, median, timed

__all__ = ["HEADER", "ZOO", "INDUCTOR_MODELS", "held_and_report", "in_fresh_process", "make", "measure", "pooled", "row",
           "run"]

VOCAB, SEQ, BATCH = 1000, 32, 2


def _ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, SEQ))


def _decoder(cls_name: str, config_name: str, **extra: Any) -> Callable[[], tuple[torch.nn.Module, tuple]]:
    def build() -> tuple[torch.nn.Module, tuple]:
        import transformers

        config = getattr(transformers, config_name)(
            vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128, **extra)
        return getattr(transformers, cls_name)(config), (_ids(),)
    return build


def _gpt2() -> tuple[torch.nn.Module, tuple]:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=128, n_embd=256, n_layer=4, n_head=4)), (_ids(),)


def _bert() -> tuple[torch.nn.Module, tuple]:
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(vocab_size=VOCAB, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                intermediate_size=512, max_position_embeddings=128)), (_ids(),)


def _t5() -> tuple[torch.nn.Module, tuple]:
    from transformers import T5Config, T5Model

    config = T5Config(vocab_size=VOCAB, d_model=256, d_kv=64, d_ff=512, num_layers=2, num_decoder_layers=2, num_heads=4)
    return T5Model(config), (_ids(), None, _ids())  # input_ids, attention_mask, decoder_input_ids


def _vit() -> tuple[torch.nn.Module, tuple]:
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(image_size=64, patch_size=8, hidden_size=192, num_hidden_layers=4, num_attention_heads=3,
                       intermediate_size=384)
    return ViTModel(config), (torch.randn(BATCH, 3, 64, 64),)


def _swin() -> tuple[torch.nn.Module, tuple]:
    from transformers import SwinConfig, SwinModel

    config = SwinConfig(image_size=64, patch_size=4, embed_dim=48, depths=[2, 2], num_heads=[3, 6], window_size=4)
    return SwinModel(config), (torch.randn(BATCH, 3, 64, 64),)


ZOO: dict[str, Callable[[], tuple[torch.nn.Module, tuple]]] = {
    "gpt2": _gpt2,
    "bert": _bert,
    "t5": _t5,
    "llama": _decoder("LlamaForCausalLM", "LlamaConfig"),
    "mistral": _decoder("MistralForCausalLM", "MistralConfig"),
    "qwen2": _decoder("Qwen2ForCausalLM", "Qwen2Config"),
    "mixtral": _decoder("MixtralForCausalLM", "MixtralConfig", num_local_experts=4, num_experts_per_tok=2),
    "vit": _vit,
    "swin": _swin,
}
INDUCTOR_MODELS = ("gpt2", "llama", "vit")  # capture / plain inductor for these three


def make(name: str) -> tuple[torch.nn.Module, tuple]:
    """The seeded model and its inputs (training mode: dropout off by config default is not assumed)."""
    torch.manual_seed(0)
    model, args = ZOO[name]()
    return model.train(), args


def _float_outputs(out: Any, depth: int = 0) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() and out.requires_grad else []
    if depth > 4:
        return []
    values = out.values() if isinstance(out, dict) else out if isinstance(out, (list, tuple)) else []
    return [t for v in values for t in _float_outputs(v, depth + 1)]


def _step(out: Any) -> Any:
    sum(t.sum() for t in _float_outputs(out)).backward()
    return out


def _sides(model: torch.nn.Module, args: tuple, backend: str) -> dict[str, Callable[[], Any]]:
    """Both sides compile cold: a capture turns Inductor's FX-graph and AOTAutograd caches off (Note [No
    compile caches during an Inductor capture]), so the plain Inductor side does too (as bench/inductor_overhead)."""
    from tracer._torch.inductor import compile_caches_off

    def plain() -> Any:
        with compile_caches_off() if backend == "inductor" else contextlib.nullcontext():
            return _step(torch.compile(model, backend=backend)(*args))

    return {"plain": plain, "capture": lambda: tracer.capture(model, *args, backend=backend, backward=True)}


# Note [Collections counted per side]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A full collection walks every object the process holds: in this process ~190k objects of imported
# modules plus torch's, ~0.2 s of a 1.2 s compile, a cost set by what the measuring process holds, and
# where one falls is decided by the collector's counters, so over 7 rounds it lands on a side by chance
# (bench/RESULTS.md, 2026-11-27 11:07: the same compiles read 1.05 here and 1.03 from a bare process).
# So each side's collections per generation and their seconds are counted (``gc.callbacks``) and
# printed, and a ratio moved by them can be told from one moved by the work. The heap is not frozen
# around a side to take the old heap out of full collections: a capture treats a frozen heap as its
# user's (Note [No cyclic GC while a log is read] in tracer/_no_gc.py) and records differently, so
# that would measure another capture (2026-11-27 14:30, GPT-2: 1.22 frozen against 1.02 live, when a
# capture still counted the frozen objects at each of its six recording steps).
def measure(name: str, rounds: int = 7, backend: str = "aot_eager") -> dict[str, Any]:
    """capture ÷ plain (median of per-round ratios, wall and CPU) after one warm-up round; ``gc``: each
    side's collections per generation and their seconds, summed over the rounds (Note [Collections counted per side])."""
    model, args = make(name)
    sides = _sides(model, args, backend)
    order = ("plain", "capture")
    wall: dict[str, list[float]] = {s: [] for s in order}
    cpu: dict[str, list[float]] = {s: [] for s in order}
    gcs: dict[str, dict[str, Any]] = {s: {"collections": [0, 0, 0], "seconds": 0.0} for s in order}
    for r in range(rounds + 1):
        for side in (order if r % 2 == 0 else order[::-1]):
            fresh()
            with collections() as col:
                t = timed(sides[side])
            if r:  # round 0 warms imports and lazy initialisation
                wall[side].append(t.wall)
                cpu[side].append(t.cpu)
                gcs[side]["collections"] = [a + b for a, b in zip(gcs[side]["collections"], col.counts, strict=True)]
                gcs[side]["seconds"] += col.seconds
            del t
            model.zero_grad(set_to_none=True)
    fresh()
    ratios = {kind: [round(c / p, 4) for c, p in zip(d["capture"], d["plain"], strict=True)]
              for kind, d in (("wall", wall), ("cpu", cpu))}
    for g in gcs.values():
        g["seconds"] = round(g["seconds"], 3)
    return {"wall": round(median(ratios["wall"]), 3), "cpu": round(median(ratios["cpu"]), 3), "rounds": rounds,
            "plain_s": round(median(wall["plain"]), 3), "capture_s": round(median(wall["capture"]), 3), "gc": gcs,
            "ratios": ratios, "seconds": {"plain": [round(x, 4) for x in wall["plain"]],
                                          "capture": [round(x, 4) for x in wall["capture"]]}}


def pooled(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """``measure`` results of one model and backend from several processes as one: the median of every
    round's ratio, the median seconds of every round, the collections and their seconds summed."""
    ratios = {k: [r for p in parts for r in p["ratios"][k]] for k in ("wall", "cpu")}
    seconds = {k: [x for p in parts for x in p["seconds"][k]] for k in ("plain", "capture")}
    gcs = {side: {"collections": [sum(p["gc"][side]["collections"][g] for p in parts) for g in range(3)],
                  "seconds": round(sum(p["gc"][side]["seconds"] for p in parts), 3)} for side in ("plain", "capture")}
    return {"wall": round(median(ratios["wall"]), 3), "cpu": round(median(ratios["cpu"]), 3),
            "rounds": sum(p["rounds"] for p in parts), "processes": len(parts),
            "per_process_cpu": [p["cpu"] for p in parts], "plain_s": round(median(seconds["plain"]), 3),
            "capture_s": round(median(seconds["capture"]), 3), "gc": gcs, "ratios": ratios, "seconds": seconds}


def held_and_report(name: str) -> dict[str, Any]:
    """Bytes a capture holds ÷ the model's parameter bytes, every lazy field read first (through ``to_json``,
    whose length is ``json_bytes``); the static report's bytes and write time."""
    import viz

    model, args = make(name)
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    from bench.memory import real_tensors

    fresh()
    tracemalloc.start()
    cap = tracer.capture(model, *args, backward=True)
    cap.result = None
    json_bytes = len(cap.to_json())  # every lazy field read first: the bytes it holds once fully read
    tensors = real_tensors(cap)
    with tempfile.TemporaryDirectory(prefix="dynascope-zoo-") as d:
        path = os.path.join(d, "r.html")
        t = timed(functools.partial(viz.export_html, cap, path))
        size = os.path.getsize(path)
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    del cap
    gc.collect()
    held = before - tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    fresh()
    return {"held_bytes": held, "param_bytes": param_bytes, "held_share": round(held / param_bytes, 4),
            "tensors_held": len(tensors), "json_bytes": json_bytes, "report_bytes": size, "report_s": round(t.wall, 3)}


HEADER = ("model", "aot_eager wall/CPU", "inductor wall/CPU", "plain s", "full collections plain/capture", "held bytes",
          "param bytes", "held share", "report bytes", "report s", "load")


def row(name: str, res: dict[str, Any]) -> tuple[str, ...]:
    """One printed row of a model's figures (``run``'s dict for it); "-" where not measured. Full
    collections: those inside the ``aot_eager`` rounds, summed per side."""
    def ratio(kind: str) -> str:
        r = res.get(kind)
        return f"{r['wall']:.2f} / {r['cpu']:.2f}" if r else "-"

    gc = res["aot_eager"].get("gc")
    full = f"{gc['plain']['collections'][2]} / {gc['capture']['collections'][2]}" if gc else "-"
    return (name, ratio("aot_eager"), ratio("inductor"), f"{res['aot_eager']['plain_s']:.2f}", full, f"{res['held_bytes']:,}",
            f"{res['param_bytes']:,}", f"{res['held_share']:.2f}", f"{res['report_bytes']:,}", f"{res['report_s']:.2f}",
            f"{res['load'][0]:.1f}")


# Note [Each row in a process of its own]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Measured one after another in one process, a model's ratio depended on which models ran before it
# (bench/RESULTS.md, 2026-11-27 17:31-17:50): Mistral read 1.04 alone and 1.08-1.10 after Llama; Llama
# 1.06 first and 1.02 after T5; ViT under Inductor 1.01 with only Inductor compiles before it and 0.93
# after its own aot_eager rounds. The plain side's seconds moved with it (Llama's plain compile 1.47 s
# first, 2.14 s after GPT-2, BERT and T5), so what moved is the state earlier compiles leave in the
# process (its heap, torch's and transformers' caches that ``torch.compiler.reset()`` does not clear),
# not the capture. So, as pyperf runs each benchmark in worker processes, every ``measure`` (one model,
# one backend) and every ``held_and_report`` runs in a fresh Python process that imports only this
# module; a row no longer depends on the zoo's order, and the two sides within it still alternate.
def in_fresh_process(fn: str, *args: Any, timeout: float = 1800) -> Any:
    """``bench.zoo.<fn>(*args)`` run in a new Python process (Note [Each row in a process of its own]); its
    JSON result. A failing child raises ``RuntimeError`` with the end of its stderr."""
    code = ("import json, sys; from bench import zoo; "
            f"print(json.dumps(zoo.{fn}(*json.loads(sys.argv[1]))), flush=True)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", code, json.dumps(args)], cwd=root, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"bench.zoo.{fn}{args!r} failed in its process (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(names: tuple[str, ...] = tuple(ZOO), *, rounds: int = 7, processes: int = 1,
        inductor: tuple[str, ...] = INDUCTOR_MODELS, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every zoo figure, each measurement in a process of its own (Note [Each row in a process of its
    own]), ``rounds`` rounds in each of ``processes`` processes per model and backend, pooled; ``log`` gets
    the header, then one row per model as it is measured (``load``: the 1-, 5- and 15-minute
    ``os.getloadavg()`` when the model's measurement started)."""
    out: dict[str, Any] = {"zoo_rounds": rounds, "zoo_processes": processes, "zoo_load_before": os.getloadavg()[0]}
    log(" | ".join(HEADER))
    for name in names:
        res: dict[str, Any] = {"load": [round(x, 2) for x in os.getloadavg()]}
        for backend in ("aot_eager", "inductor") if name in inductor else ("aot_eager",):
            res[backend] = pooled([in_fresh_process("measure", name, rounds, backend) for _ in range(processes)])
        res.update(in_fresh_process("held_and_report", name))
        out[f"zoo_{name}"] = res
        log(" | ".join(row(name, res)))
    out["zoo_load_after"] = os.getloadavg()[0]
    return out
