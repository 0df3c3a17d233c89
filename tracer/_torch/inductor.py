"""The Inductor backend of a capture, and Inductor's own record of each compile read back as data.

Invariant: the graph is compiled exactly as ``torch.compile(backend="inductor")`` compiles it (the
registered "inductor" backend, i.e. ``compile_fx``); the one change is Inductor's provenance
tracking switched on (``config.trace.provenance_tracking_level = 1``) for the capture only, with
``torch._inductor.config.patch`` in a ``with`` — never left set. Everything recorded is what
Inductor logs to the structured trace (Note [What Inductor tells us]).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Iterator, Optional

from tracer._torch.trace_events import Event
from tracer.model import InductorGraph, Kernel, SourceLine

__all__ = ["compile_inductor", "inductor_graphs", "provenance_tracking"]


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
#
# Note [No compile caches during an Inductor capture]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# On an FX-graph-cache (or AOTAutograd-cache) hit Inductor replays the artifacts it stored when the
# entry was made: the kernel stack traces (and node names) of *that* compile. The cache key is the
# graph's structure, not its source lines, so a structurally equal graph from another function or
# file gets the other one's lines (seen: a capture of f in a.py reporting lines of b.py). The record
# must be exact, so the capture compiles with the local FX graph cache (``torch._inductor.config.fx_graph_cache``)
# and AOTAutograd cache (``torch._functorch.config.enable_autograd_cache``) off; the remote caches are off
# by default. Not ``force_disable_caches``: it also turns off Dynamo's PGO profile and warns about it.
# The cost is a cold compile (bench/inductor_overhead.py).
@contextlib.contextmanager
def compile_caches_off() -> Iterator[None]:
    """The local FX-graph and AOTAutograd caches off (see above); also what the bench's plain
    Inductor compile uses, so both sides compile cold."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as config

    with config.patch({"fx_graph_cache": False}), functorch_config.patch({"enable_autograd_cache": False}):
        yield


@contextlib.contextmanager
def provenance_tracking() -> Iterator[None]:
    """Inductor's provenance tracking on and compile caches off, for the capture only."""
    import torch._inductor.config as config

    with config.patch({"trace.provenance_tracking_level": 1}), compile_caches_off():
        yield


def compile_inductor(gm: Any, example_inputs: list[Any], mode: Optional[str] = None,
                     dynamic: Optional[bool] = None) -> Any:
    """What ``torch.compile(backend="inductor", mode=mode)`` does with the Dynamo graph: the registered
    backend, given the mode's Inductor options as ``config_patches`` as torch.compile's Inductor wrapper
    does (``_TorchCompileInductorWrapper`` in torch/__init__.py), so a backward compiled later gets them too."""
    from torch._dynamo.backends.registry import lookup_backend

    if mode is None or mode == "default":
        return lookup_backend("inductor")(gm, example_inputs)
    from torch._inductor import list_mode_options

    return lookup_backend("inductor")(gm, example_inputs, config_patches=list_mode_options(mode, dynamic))


def inductor_graphs(events: list[Event], problems: list[str],
                    backward: list[dict[str, list[str]]] = ()) -> list[InductorGraph]:
    """The InductorGraphs of one attempt from its kept events (Note [What Inductor tells us]);
    ``backward``: per backward compile, in order, its post-grad nodes' Dynamo origins (Note [Backward
    kernels and their Dynamo nodes] in tracer/_torch/inductor_backward.py)."""
    graphs: list[InductorGraph] = []
    traces: dict[str, list[str]] = {}
    for name, _meta, payload in events:
        if name == "inductor_post_grad_graph":
            graphs.append(InductorGraph(aot_id="", post_grad_graph=payload if isinstance(payload, str) else ""))
            continue
        if name not in ("inductor_output_code", "inductor_provenance_tracking_node_mappings",
                        "inductor_provenance_tracking_kernel_stack_traces"):
            continue
        if not graphs:
            graphs.append(InductorGraph(aot_id=""))
            problems.append(f"inductor logged {name} before any post-grad graph")
        g = graphs[-1]
        if name == "inductor_output_code" and isinstance(payload, str):
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
    origins = list(backward)
    for g in graphs:
        if g.aot_id.endswith("_backward") and origins:
            _backward_origins(g, origins.pop(0), problems)
        unmapped = [k.name for k in g.kernels if not k.post_grad_nodes]
        if g.provenance and unmapped:
            problems.append(f"inductor {g.aot_id}: Inductor mapped no post-grad nodes for kernel(s) {unmapped}")
        if not g.provenance:
            problems.append(f"inductor {g.aot_id or 'graph'}: Inductor logged no provenance mapping; "
                            "its kernels are not mapped to nodes")
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
