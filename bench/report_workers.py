"""``dynascope report LOG -j 1`` and ``-j 2`` beside ``tlparse`` on the same log, whole process trees
measured in the same run (``python -m bench.report_vs_tlparse workers LOG ROUNDS``).

Invariant: each command runs as a whole process (start-up included) under a small Python process that
reports its wall, the CPU of it and every process it waited for (the report's workers), and the peak of
the RSS summed over its process tree; the commands alternate, their order rotating each round, and the
load average at each start is recorded, so figures compare within one run only (bench/RESULTS.md).
The log of many distinct frames they are measured on is torch's own (:func:`distinct_log`, one process
compiling many models under TORCH_TRACE), never records written here.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

from bench.report_vs_tlparse import ROOT, _tlparse

__all__ = ["distinct_log", "tree_rounds", "workers_main"]

# One process compiling (aot_eager, forward then backward) model after model with TORCH_TRACE set, each a
# new instance at a size or input shape not compiled before (so every frame is a compile of its own, its
# graphs' shapes or structure unlike any other's), until the log holds ``target`` bytes or the list ends.
# The models: bench/models.py's own classes and transformers architectures (bench/zoo.py's configs
# widened), random weights, no download. Dynamo's recompile limits are raised so that a class's forward
# compiled at a new size is compiled, not skipped (it is a recompile of the same code: its frame id is
# the class's, its attempt number counts up). Torch writes every record; nothing here touches the log.
_DISTINCT = """
import glob, itertools, os, sys
import torch
sys.path.insert(0, {root!r})
from tracer._torch.bench_support import raise_recompile_limits
raise_recompile_limits()
from bench import models
target, trace = {target!r}, os.environ["TORCH_TRACE"]

def hf(cls_name, config_name, vocab, hidden, layers, seq, **extra):
    import transformers
    cfg = getattr(transformers, config_name)(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, **extra)
    ids = torch.randint(0, vocab, (2, seq))
    return models.HFLabelled(getattr(transformers, cls_name)(cfg)), (ids, ids)

def gpt2_hf(vocab, hidden, layers, seq):
    import transformers
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=hidden, n_head=4, vocab_size=vocab, n_positions=256)
    return models.HFLoss(transformers.GPT2LMHeadModel(cfg)), (torch.randint(0, vocab, (2, seq)),)

def variants():
    for i in itertools.count():
        w, seq, layers = 32 * (1 + i % 4), 8 + 4 * i, 1 + i % 3
        yield f"transformer{{layers}}x{{w}}", lambda: (models.Transformer(layers, w, 4), (torch.randn(2, seq, w),))
        yield f"gpt2 {{layers}}x{{w}}", lambda: (models.GPT2(layers, w, 4, 256 + i, seq), (torch.randint(0, 256, (2, seq)),))
        yield f"cnn {{w}}", lambda: (models.SmallCNN(8 + i), (torch.randn(2, 3, 16 + 4 * (i % 4), 16 + 4 * (i % 4)),))
        yield f"mlp {{w}}", lambda: (models.MLP(w + i), (torch.randn(4, w + i),))
        yield f"hops {{layers}}x{{w}}", lambda: (models.HopStack(layers, w), (torch.randn(4 + i, w),))
        yield f"gpt2_hf {{layers}}x{{w}}", lambda: gpt2_hf(500 + i, 4 * w, layers, seq)
        yield f"llama_hf {{layers}}x{{w}}", lambda: hf("LlamaForCausalLM", "LlamaConfig", 500 + i, 4 * w, layers, seq)
        yield f"mistral_hf {{layers}}x{{w}}", lambda: hf("MistralForCausalLM", "MistralConfig", 500 + i, 4 * w, layers, seq)
        yield f"qwen2_hf {{layers}}x{{w}}", lambda: hf("Qwen2ForCausalLM", "Qwen2Config", 500 + i, 4 * w, layers, seq)

def size():
    return sum(os.path.getsize(p) for p in glob.glob(os.path.join(trace, "*.log")))

for n, (name, build) in enumerate(variants()):
    if size() >= target or n >= {most!r}:
        break
    torch.manual_seed(n)
    model, args = build()
    out = torch.compile(model.train(), backend="aot_eager", dynamic=False)(*args)
    out = out if isinstance(out, torch.Tensor) else out[0]
    out.float().sum().backward()
    print(n, name, size(), flush=True)
"""


def distinct_log(out_dir: str, target: int = 40 * 2**20, most: int = 400) -> str:
    """Path of a real TORCH_TRACE log of many distinct frames, about ``target`` bytes (at most ``most``
    models compiled): see ``_DISTINCT``. Minutes on a 2-core machine."""
    trace = os.path.join(out_dir, "trace")
    subprocess.run([sys.executable, "-c", _DISTINCT.format(root=ROOT, target=target, most=most)], check=True,
                   timeout=3600, env=dict(os.environ, TORCH_TRACE=trace, OMP_NUM_THREADS="1"))
    (path,) = glob.glob(os.path.join(trace, "*.log"))
    return path


# One measured run of a command that may start processes of its own (``dynascope report -j N``): wall,
# CPU (user + system of the command and every process it waited for, ``RUSAGE_CHILDREN``), the peak of
# the RSS summed over the whole process tree (``/proc``'s VmRSS of the command and its descendants,
# sampled every 5 ms: pages a fork shares are counted once per process, the conservative sum), the
# largest single process's peak RSS, and the load average when it started. Linux only.
_TREE = """
import os, resource, subprocess, sys, threading, time
def tree(pid):
    out = [pid]
    for p in out:
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as fh:
                    out += [int(c) for c in fh.read().split()]
        except OSError:
            pass
    return out
def rss(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
load = os.getloadavg()[0]
t0 = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
peak, done = [0], threading.Event()
def sample():
    while not done.is_set():
        peak[0] = max(peak[0], sum(rss(p) for p in tree(child.pid)))
        time.sleep(0.005)
th = threading.Thread(target=sample, daemon=True)
th.start()
err = child.communicate(timeout=1200)[1]
wall = time.perf_counter() - t0
done.set(); th.join()
if child.returncode:
    sys.exit(err.decode(errors="replace")[-2000:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, r.ru_utime + r.ru_stime, peak[0], r.ru_maxrss, load)
"""


def tree_rounds(cmds: dict[str, list[str]], rounds: int) -> list[dict[str, Any]]:
    """Per round, per name (the commands one after the other in each round, their order rotating by one
    each round): wall s, CPU s, peak RSS MB summed over the process tree, the largest process's peak RSS
    MB, the load average at its start (see ``_TREE``)."""
    out, names = [], list(cmds)
    env = dict(os.environ, PYTHONPATH=ROOT)
    for i in range(rounds):
        row: dict[str, Any] = {}
        for name in names[i % len(names):] + names[:i % len(names)]:
            r = subprocess.run([sys.executable, "-c", _TREE, *cmds[name]], check=True, capture_output=True,
                               text=True, env=env, cwd=ROOT, timeout=1300)
            wall, cpu, tree_kb, max_kb, load = r.stdout.split()
            row[name] = {"wall": round(float(wall), 2), "cpu": round(float(cpu), 2),
                         "tree_rss_mb": round(int(tree_kb) / 1024, 1), "max_rss_mb": round(int(max_kb) / 1024, 1),
                         "load": float(load)}
        out.append(row)
    return out


def workers_main(argv: list[str]) -> None:
    """``python -m bench.report_vs_tlparse workers LOG N [J ...]`` (``LOG`` "distinct:DIR" makes
    :func:`distinct_log` in ``DIR`` first, or reuses the one there): N rounds of ``dynascope report LOG -j J``
    for each J (default 1 and 2) and tlparse, whole processes, alternating (:func:`tree_rounds`); one JSON
    line per round, then the medians (and per round ratios to tlparse) as one JSON line."""
    log, n, js = os.path.abspath(argv[0]), int(argv[1]), [int(j) for j in argv[2:]] or [1, 2]
    if argv[0].startswith("distinct:"):
        made = glob.glob(os.path.join(argv[0][len("distinct:"):], "trace", "*.log"))
        log = made[0] if made else distinct_log(argv[0][len("distinct:"):])
    tmp = tempfile.mkdtemp(prefix="dynascope-workers-")
    try:
        cmds = {f"j{j}": [sys.executable, "-m", "viz.cli", "report", log, "-o", os.path.join(tmp, f"j{j}.html"),
                          "-j", str(j)] for j in js}
        cmds["tlparse"] = [_tlparse(), log, "-o", os.path.join(tmp, "tl"), "--overwrite", "--no-browser"]
        rows = []
        for row in tree_rounds(cmds, n):
            rows.append(row)
            print(json.dumps(row), flush=True)

        def med(xs: list[float]) -> float:
            xs = sorted(xs)
            return round((xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2, 2)

        summary: dict[str, Any] = {k: {m: med([r[k][m] for r in rows]) for m in ("wall", "cpu", "tree_rss_mb", "max_rss_mb")}
                                   for k in cmds}
        for k in cmds:
            if k != "tlparse":
                summary[k]["wall_ratio"] = med([r[k]["wall"] / r["tlparse"]["wall"] for r in rows])
                summary[k]["cpu_ratio"] = med([r[k]["cpu"] / r["tlparse"]["cpu"] for r in rows])
        summary["load"] = [min(r[k]["load"] for r in rows for k in cmds), max(r[k]["load"] for r in rows for k in cmds)]
        print(json.dumps({"medians": summary}), flush=True)
    finally:
        shutil.rmtree(tmp)

