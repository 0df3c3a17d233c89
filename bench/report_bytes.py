"""Report bytes of every zoo model: the one-file report (viz/report_file.py) of a live capture and of
the same training step's TORCH_TRACE log, against the 1 MB target.

Invariant: every size comes from a real run. Live: ``tracer.capture`` of the model (a training step:
its parameters want gradients, so AOTAutograd's joint, forward and backward graphs are drawn), then
``viz.export_html``. Log: the same model compiled with ``torch.compile`` and the row's backend
(``aot_eager``, or ``inductor`` for GPT-2's second row) and stepped backward in a child process with
``TORCH_TRACE`` set, then ``dynascope report`` (the CLI, a whole process) on its log. Sizes are
deterministic for a given torch, model and dynascope; each report is also checked to hold every node
of every graph and every frame's code (:func:`contents`), so a size is never bought by leaving out.
"""

from __future__ import annotations

import functools
import glob
import html as html_lib
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any, Optional

__all__ = ["LIMIT", "ZOO", "contents", "measure", "run", "table"]

LIMIT = 1_000_000  # bytes: a report must stay small enough to attach to a bug or drop in a chat
# (row, name in bench.models, backend, what it is); all but resnet18, transformer12 and cnn need transformers
ZOO = [("gpt2_hf", "gpt2_hf", "aot_eager", "transformers GPT-2, 4 layers, d 256"),
       ("bert_hf", "bert_hf", "aot_eager", "transformers BertForMaskedLM, 4 layers, d 256"),
       ("llama_hf", "llama_hf", "aot_eager", "transformers LlamaForCausalLM, 4 layers, d 256"),
       ("t5_hf", "t5_hf", "aot_eager", "transformers T5ForConditionalGeneration, 4+4 layers, d 256"),
       ("vit_tiny", "vit_tiny", "aot_eager", "transformers ViTForImageClassification, ViT-Ti: 12 layers, d 192"),
       ("resnet18", "resnet18", "aot_eager", "ResNet-18 layout, width 64"),
       ("transformer12", "transformer12", "aot_eager", "12 x TransformerEncoderLayer, d 256"),
       ("gpt2_hf_inductor", "gpt2_hf", "inductor", "transformers GPT-2 as above, compiled by Inductor"),
       ("cnn", "cnn", "aot_eager", "3 x conv/bn/relu/pool")]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = """
import sys, torch
sys.path.insert(0, {root!r})
from bench import models
model, args = models.make({name!r}, {size!r})
out = torch.compile(model, backend={backend!r})(*args)
out.sum().backward()
"""


def _log(name: str, size: str, out_dir: str, backend: str = "aot_eager") -> str:
    trace = os.path.join(out_dir, f"trace-{name}-{backend}")
    env = dict(os.environ, TORCH_TRACE=trace)
    subprocess.run([sys.executable, "-c", _CHILD.format(root=ROOT, name=name, size=size, backend=backend)],
                   check=True, timeout=1800, env=env, capture_output=True)
    (path,) = glob.glob(os.path.join(trace, "*.log"))
    return path


def _graphs(frame: Any) -> list[Any]:
    from viz.report_graphs import frame_graphs

    return [g for _, _, g, _ in frame_graphs(frame)] if frame.has_graph else []


def _drawn_ids(drawing: dict[str, Any]) -> set[str]:
    """Every box id of a packed drawing and of the drawings nested in it (Note [Compact drawings] in
    viz/report_graphs.py): a node is drawn if some view of its graph, opened far enough, has its box."""
    out = {b[0] for b in drawing["b"]}
    for sub in drawing.get("open", {}).values():
        out |= _drawn_ids(sub)
    return out


_TAG = re.compile(r"<[^>]*>")


def contents(decoded: dict[str, str], cap: Any, prefix: str = "") -> dict[str, Optional[bool]]:
    """Whether a report of ``cap`` (``decoded``: its payloads' HTML, :func:`viz.report_file.payloads` of
    the page's text) holds what the capture has, checked against the capture (not against the page):
    ``drawn``, every node of every graph of every frame has a box in its frame's drawings (opening module boxes as needed); ``code``, every frame's code as the Code tab
    shows it — each code object's source (or, without one, its ``dis`` listing), the guard function
    and each Inductor output code — is in the frame's decoded HTML, read as text (tags dropped, entities
    decoded: Pygments splits highlighted code into spans); None when the capture has no code at all (one
    loaded from a TORCH_TRACE log of aot_eager compiles: the loader does not read Dynamo's bytecode,
    logged for resume functions only; from an Inductor log it reads Inductor's output code)."""
    drawn, code = True, True
    some = False
    for fi, frame in enumerate(cap.frames):
        html = decoded[f"{prefix}{fi}"]
        graphs = _graphs(frame)
        if graphs:
            block = re.search(r'<script type="application/json" class="ds-drawings">([^<]*)</script>', html)
            drawings = json.loads(block.group(1))["graphs"] if block else []
            drawn = drawn and len(drawings) == len(graphs) and all(
                {n.name for n in g.nodes} <= _drawn_ids(d) for g, d in zip(graphs, drawings, strict=False))
        text = html_lib.unescape(_TAG.sub("", html))
        bc = frame.bytecode
        wanted = [] if bc is None else [c.source or c.dis for c in (bc.original, bc.transformed, *bc.resume_functions)]
        wanted += [bc.guard_function] if bc is not None and bc.guard_function else []
        wanted += [g.output_code for g in frame.inductor if g.output_code]
        wanted = [w.strip() for w in wanted if w.strip()]
        some = some or bool(wanted)
        code = code and all(w in text for w in wanted)
    return {"drawn": drawn, "code": code if some else None}


def _report(cap: Any, page_path: str, seconds: float) -> dict[str, Any]:
    from bench.report_parts import breakdown
    from viz.report_file import payloads

    with open(page_path, encoding="utf-8") as f:
        page = f.read()
    return {"bytes": os.path.getsize(page_path), **contents(payloads(page), cap), "seconds": round(seconds, 2),
            "parts": breakdown(page)}


def measure(name: str, size: str = "full", log: bool = True, backend: str = "aot_eager") -> dict[str, Any]:
    """For one zoo model, its live capture's report (``viz.export_html``) and, with ``log``, the report
    ``dynascope report`` writes of the same step's TORCH_TRACE log: each as {"bytes", "drawn": every
    graph's every node drawn, "code": every frame's code in it (:func:`contents`), "seconds": the
    export's wall time (the CLI's: a whole process that loads the log), "parts": its bytes by kind
    (bench/report_parts.py)}; "log_input": the log's bytes;
    "frames", "nodes": of the live capture."""
    import tracer
    import viz
    from bench import models
    from bench.timing import fresh, timed

    model, args = models.make(name, size)
    fresh()
    cap = tracer.capture(model, *args, backend=backend)
    out: dict[str, Any] = {"frames": len(cap.frames), "nodes": sum(len(g.nodes) for f in cap.frames
                                                                   for g in _graphs(f))}
    with tempfile.TemporaryDirectory(prefix="dynascope-bytes-") as tmp:
        live = os.path.join(tmp, "live.html")
        t = timed(functools.partial(viz.export_html, cap, live))
        out["live"] = _report(cap, live, t.wall)
        del cap
        fresh()
        if log:
            path = _log(name, size, tmp, backend)
            html = os.path.join(tmp, "log.html")
            env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
            t = timed(lambda: subprocess.run([sys.executable, "-m", "viz.cli", "report", path, "-o", html], check=True,
                                             timeout=1800, env=env, capture_output=True))
            out["log"] = _report(tracer.load_trace(path), html, t.wall)
            out["log_input"] = os.path.getsize(path)
    return out


def run(size: str = "full", log: bool = True, names: list[str] | None = None) -> dict[str, Any]:
    """Per zoo row its reports (:func:`measure`; a model whose package is missing is named under
    "skipped"), and ``report_bytes_max``: the largest report of all (target <= LIMIT)."""
    out: dict[str, Any] = {"models": {}, "skipped": []}
    for row, name, backend, _ in ZOO:
        if names is not None and row not in names:
            continue
        try:
            out["models"][row] = measure(name, size, log, backend)
        except ModuleNotFoundError as e:  # except: a model needing an optional package is skipped, and named
            out["skipped"].append(f"{row}: {e}")
    sizes = [m[k]["bytes"] for m in out["models"].values() for k in ("live", "log") if k in m]
    out["report_bytes_max"] = max(sizes, default=0)
    return out


def table(res: dict[str, Any]) -> str:
    """The RESULTS.md table of :func:`run`'s result."""
    lines = ["| model (training step) | nodes drawn (live) | report | bytes | every graph drawn | code available | export s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row, m in res["models"].items():
        for kind in ("live", "log"):
            if kind in m:
                r = m[kind]
                what = "live capture" if kind == "live" else f"log ({m['log_input']:,} B)"
                code = {True: "yes", False: "NO", None: "none loaded"}[r["code"]]
                nodes = f"{m['nodes']:,}" if kind == "live" else ""
                lines.append(f"| {row} | {nodes} | {what} | **{r['bytes']:,}** | {'yes' if r['drawn'] else 'NO'} "
                             f"| {code} | {r['seconds']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from bench import report_parts

    res = run(size=sys.argv[1] if len(sys.argv) > 1 else "full", names=sys.argv[2:] or None)
    print(json.dumps(res, indent=1))
    print(table(res))
    print(report_parts.table({f"{row} {kind}": m[kind]["parts"] for row, m in res["models"].items()
                              for kind in ("live", "log") if kind in m}))
