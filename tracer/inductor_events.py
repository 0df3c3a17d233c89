"""Inductor's record of each compile (post-grad graph, output code, kernels with provenance) from its structured-trace events.

Invariant: everything here is read from what Inductor logs (Note [What Inductor tells us]); what it
did not log stays unknown and is named in ``problems``, never guessed. Torch-free: a live capture
(the events its structured-trace handler kept, tracer/_torch/trace_events.py) and a loaded
TORCH_TRACE log (the same events read from the file, tracer/trace_log/events.py) both call
:func:`inductor_graphs`, so the two cannot read them differently.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from tracer.model.inductor import InductorGraph, Kernel
from tracer.model.shapes import SourceLine
from tracer.shape_events import Event

__all__ = ["INDUCTOR_EVENTS", "inductor_graphs"]

# The events (an "artifact" record: its artifact name) :func:`inductor_graphs` reads, in the order Inductor logs them.
INDUCTOR_EVENTS = ("inductor_post_grad_graph", "inductor_output_code", "inductor_provenance_tracking_node_mappings",
                   "inductor_provenance_tracking_kernel_stack_traces", "fx_graph_cache_hit")


# Note [What Inductor tells us]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# For each graph it compiles (inference, or forward and backward), ``compile_fx_inner`` logs, in
# this order, under the compile id of the Dynamo frame (torch/_inductor/compile_fx.py, and on an
# FX-graph-cache hit the same artifacts replayed from the cache, torch/_inductor/codecache.py):
#   artifact "inductor_post_grad_graph"            print_readable text of the post-grad graph
#   "inductor_output_code"                         the wrapper module source, kernels inline
#   artifact "inductor_provenance_tracking_node_mappings"   (provenance level != 0)
#        {"preToPost", "postToPre": pre-grad (= the Dynamo graph handed to compile_fx) <-> post-grad
#         node names, "cppCodeToPost"/"postToCppCode": "kernel:handle" <-> post-grad nodes}
#   artifact "inductor_provenance_tracking_kernel_stack_traces"  {"kernel:handle": [traceback text]}
# (torch/_inductor/debug.py ``set_kernel_post_grad_provenance_tracing`` names each kernel
# "name:handle"; ``create_mapping_pre_post_grad_nodes`` keeps the from_node ancestors that live in
# the pre-grad graph.) A new post-grad graph starts a new InductorGraph; the rest attach to it. For a
# backward graph Inductor maps kernels to post-grad nodes only because the capture runs its compile
# in ``reset_provenance_globals()``, and the Dynamo nodes come from autograd's seq_nr: see Note
# [Backward kernels and their Dynamo nodes] in tracer/_torch/inductor_backward.py.
# Inductor logs the mappings and kernel stack traces only at provenance level != 0
# (``config.trace.provenance_tracking_level``, 0 by default; the environment variables
# INDUCTOR_PROVENANCE or TORCH_COMPILE_DEBUG set it): TORCH_TRACE alone logs the post-grad graph and
# the output code, and a graph without the mapping has no kernels recorded (its problem says so).
#
# Note [Backward provenance in a log]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Outside a capture the backward compile does not run in ``reset_provenance_globals()``: what a log
# holds for it is Inductor's process-wide tables as an earlier compile left them (kernels of other
# compiles mixed in, Note [Backward kernels and their Dynamo nodes]), and there is no seq_nr record.
# So a loaded log's backward graph keeps its post-grad graph and output code and records no
# kernels; its problem says they are unknown. A forward or inference graph's provenance is logged
# inside that context, for that compile alone, and is read as in a live capture.
#
# Note [Provenance replayed from a compile cache]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A user's log is written with the compile caches on. On an FX-graph-cache hit Inductor replays the
# artifacts it stored with the entry (torch/_inductor/codecache.py), then logs artifact
# "fx_graph_cache_hit" (compile_fx.py, and aot_autograd_result.py for an AOTAutograd-cache hit):
# the mapping and stack traces are those of the compile that made the entry (another function's
# node names and lines, Note [No compile caches during an Inductor capture] in
# tracer/_torch/inductor.py), or absent (no payload) when that compile tracked no provenance. So a
# graph loaded from a cache hit keeps its post-grad graph and output code and records no kernels;
# its problem says why. A live capture compiles with the caches off and never sees this event.


def inductor_graphs(events: list[Event], problems: list[str],
                    backward: Optional[list[dict[str, list[str]]]] = None) -> list[InductorGraph]:
    """The InductorGraphs of one attempt from its kept events (Note [What Inductor tells us]);
    ``backward``: per backward compile, in order, its post-grad nodes' Dynamo origins (Note [Backward
    kernels and their Dynamo nodes] in tracer/_torch/inductor_backward.py); None for a loaded log,
    which has no such record (Note [Backward provenance in a log])."""
    graphs: list[InductorGraph] = []
    cached: set[int] = set()  # id() of the graphs loaded from a compile cache
    traces: dict[str, list[str]] = {}
    for name, _meta, payload in events:
        if name == "inductor_post_grad_graph":
            graphs.append(InductorGraph(aot_id="", post_grad_graph=payload if isinstance(payload, str) else ""))
            continue
        if name not in INDUCTOR_EVENTS:
            continue
        if not graphs:
            graphs.append(InductorGraph(aot_id=""))
            problems.append(f"inductor logged {name} before any post-grad graph")
        g = graphs[-1]
        if name == "fx_graph_cache_hit":
            g.kernels, g.provenance = [], False  # See Note [Provenance replayed from a compile cache]
            cached.add(id(g))
        elif payload is None:  # a cache hit replays an entry made without provenance: nothing logged
            continue
        elif name == "inductor_output_code" and isinstance(payload, str):
            g.output_code = payload
            g.aot_id = _aot_id(payload)
        elif name == "inductor_provenance_tracking_kernel_stack_traces":
            traces = _json(payload, name, problems) or {}
            _attach_lines(g, traces)
        elif name == "inductor_provenance_tracking_node_mappings":
            mapping = _json(payload, name, problems) or {}
            g.provenance = True
            lines = {(k.name, k.handle): k.source_lines for k in g.kernels}  # stack traces logged first
            g.kernels = _kernels(mapping)
            for k in g.kernels:
                k.source_lines = lines.get((k.name, k.handle), k.source_lines)
    origins = list(backward or ())
    for g in graphs:
        if id(g) in cached:
            problems.append(f"inductor {g.aot_id or 'graph'}: loaded from the FX graph cache, whose provenance is that "
                            "of the compile that made the entry: its kernels and their nodes are unknown")
            continue
        if g.aot_id.endswith("_backward") and backward is None and (g.kernels or g.provenance):
            g.kernels, g.provenance = [], False  # See Note [Backward provenance in a log]
            problems.append(f"inductor {g.aot_id}: the provenance Inductor logs for a backward compile outside a "
                            "dynascope capture is not this compile's own: its kernels and their nodes are unknown")
            continue
        if g.aot_id.endswith("_backward") and origins:
            _backward_origins(g, origins.pop(0), problems)
        unmapped = [k.name for k in g.kernels if not k.post_grad_nodes]
        if g.provenance and unmapped:
            problems.append(f"inductor {g.aot_id}: Inductor mapped no post-grad nodes for kernel(s) {unmapped}")
        if not g.provenance:
            problems.append(f"inductor {g.aot_id or 'graph'}: Inductor logged no provenance mapping (its provenance "
                            "tracking was off; INDUCTOR_PROVENANCE=1 turns it on): its kernels and their nodes are unknown")
    return graphs


def _backward_origins(g: InductorGraph, origins: dict[str, list[str]], problems: list[str]) -> None:
    """A backward graph's kernels: the Dynamo nodes they differentiate, from their post-grad nodes'
    seq_nr; a post-grad node without a recorded origin is named in a problem, never guessed. The
    ``postToPre`` Inductor logs for a backward is not used: a backward graph has no pre-grad graph,
    and under the id -1 that ``reset_provenance_globals`` sets it matches the empty NodeSource a
    pattern replacement leaves (``{"addmm_default": [""]}``)."""
    for k in g.kernels:
        k.dynamo_nodes = []
        for p in k.post_grad_nodes:
            k.dynamo_nodes.extend(n for n in origins.get(p, []) if n not in k.dynamo_nodes)
        unknown = [p for p in k.post_grad_nodes if p not in origins]
        if unknown:
            problems.append(f"inductor {g.aot_id}: kernel {k.name} computes post-grad node(s) {unknown} whose forward "
                            "node torch did not record (no seq_nr shared with a forward node of the Dynamo graph)")


def _kernels(mapping: dict[str, Any]) -> list[Kernel]:
    post_to_pre = mapping.get("postToPre") or {}
    out = []
    for key, posts in (mapping.get("cppCodeToPost") or {}).items():
        name, _, handle = str(key).rpartition(":")
        if not name:
            name, handle = str(key), "0"
        dynamo: list[str] = []
        for p in posts or []:
            dynamo.extend(n for n in post_to_pre.get(p, []) if n not in dynamo)
        out.append(Kernel(name=name, handle=int(handle) if handle.isdigit() else 0,
                          post_grad_nodes=[str(p) for p in posts or []], dynamo_nodes=dynamo))
    return out


def _attach_lines(g: InductorGraph, traces: dict[str, Any]) -> None:
    """Kernel stack traces come before or after the mappings depending on the path: attach when both exist."""
    by_key = {f"{k.name}:{k.handle}": k for k in g.kernels}
    for key, texts in traces.items():
        k = by_key.get(str(key))
        if k is None:
            name, _, handle = str(key).rpartition(":")
            k = Kernel(name=name or str(key), handle=int(handle) if handle.isdigit() else 0)
            g.kernels.append(k)
        for text in texts or []:
            line = _source_line(str(text))
            if line is not None and line not in k.source_lines:
                k.source_lines.append(line)
    g.kernels.sort(key=lambda k: k.handle)


def _source_line(text: str) -> SourceLine | None:
    """The innermost frame of a traceback text ``  File "f.py", line 3, in fn\\n    code\\n``."""
    frames = [ln for ln in text.splitlines() if ln.strip().startswith('File "')]
    if not frames:
        return None
    head = frames[-1].strip()
    rest = text.splitlines()[text.splitlines().index(frames[-1]) + 1:]
    try:
        file_part, line_part, fn_part = head[len('File "'):].rsplit(", ", 2)
        return SourceLine(file=file_part.rstrip('"'), line=int(line_part.split()[-1]), fn=fn_part[len("in "):],
                          code=rest[0].strip() if rest else "")
    except ValueError:
        return None


def _aot_id(code: str) -> str:
    first = code.split("\n", 1)[0]
    prefix = "# AOT ID: "
    if not first.startswith(prefix):
        return ""
    try:
        ids = json.loads(first[len(prefix):].replace("'", '"'))
        return ",".join(str(i) for i in ids)
    except ValueError:
        return first[len(prefix):]


def _json(payload: Any, name: str, problems: list[str]) -> Any:
    try:
        return json.loads(payload) if isinstance(payload, str) else None
    except ValueError as e:
        problems.append(f"inductor {name} not read: {e}")
        return None
