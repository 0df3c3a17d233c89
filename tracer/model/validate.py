"""validate(): the checker of the model's invariants, like fx's ``Graph.lint()``.

Invariant it keeps: a Capture that passes is internally consistent — every kind is from its
closed set (tracer/model/kinds.py) and every cross-reference (node -> node, body -> parent and
call node, input -> feeding node, break/recompile -> frame, saved value -> forward node)
resolves. The tests run it on every captured fixture and on hand-broken captures, one per check.
"""

from __future__ import annotations

import re

from tracer.model.aot import Aot
from tracer.model.capture import Capture
from tracer.model.diff import diff_problems
from tracer.model.export import (
    EXPORT_FAILURE_KINDS,
    EXPORT_INPUT_KINDS,
    EXPORT_OUTPUT_KINDS,
    EXPORT_STAGES,
    EXPORT_STATUSES,
    Export,
    ExportProgram,
)
from tracer.model.frame import Frame
from tracer.model.graph import Graph
from tracer.model.kinds import (
    ALIAS_KINDS,
    AOT_MODES,
    FRAME_STATUSES,
    INPUT_KINDS,
    NODE_OPS,
    NODE_ROLES,
    SAVED_KINDS,
    SAVED_ORIGINS,
    TIME_PHASES,
)
from tracer.model.shapes import SPECIALIZATION_KINDS

__all__ = ["ValidationError", "validate"]

_COMPILE_ID = re.compile(r"^\d+/\d+(_\d+)?$")


class ValidationError(ValueError):
    """A Capture breaks one of the model's invariants; the message lists every problem."""


def validate(cap: Capture) -> None:
    """Check the closed sets and cross-references of ``cap``; raise ValidationError listing every problem.

    >>> from tracer.model import Capture, Frame, GraphBreak
    >>> f = Frame("0/0", "f.py:1 in f", status="no_graph")
    >>> validate(Capture(frames=[f], graph_breaks=[GraphBreak("r", "f.py:2", compile_id="9/9")]))
    Traceback (most recent call last):
    ...
    tracer.model.validate.ValidationError: invalid capture:
      graph break at f.py:2: compile id '9/9' is not a frame of the capture
    """
    problems: list[str] = []
    ids = [f.compile_id for f in cap.frames]
    for cid in sorted({c for c in ids if ids.count(c) > 1}):
        problems.append(f"compile id {cid!r} names more than one frame")
    known = set(ids)
    for f in cap.frames:
        _check_frame(f, problems)
    for b in cap.graph_breaks:
        if b.compile_id and b.compile_id not in known:
            problems.append(f"graph break at {b.location}: compile id {b.compile_id!r} is not a frame of the capture")
    for r in cap.recompiles:
        if r.compile_id not in known:
            problems.append(f"recompile: compile id {r.compile_id!r} is not a frame of the capture")
        if r.failed and r.reason != r.failed[0]:
            problems.append(f"recompile {r.compile_id}: reason is not the first failed guard")
        if r.diff is not None:  # its two frames exist and it names only their nodes
            if r.diff.a not in known or r.diff.b not in known:
                problems.append(f"recompile {r.compile_id}: diff of {r.diff.a!r}/{r.diff.b!r}, not frames of the capture")
            else:
                problems += diff_problems(r.diff, cap.frame(r.diff.a), cap.frame(r.diff.b))
    if cap.export is not None:
        _check_export_run(cap.export, problems)
    if not all(isinstance(p, str) for p in cap.problems):
        problems.append("problems must be strings")
    if not all(isinstance(p, str) for p in cap.limits):
        problems.append("limits must be strings")
    if problems:
        raise ValidationError("invalid capture:\n  " + "\n  ".join(problems))


def _check_graph(g: Graph, where: str, problems: list[str]) -> None:
    names = [n.name for n in g.nodes]
    if len(set(names)) != len(names):
        problems.append(f"{where}: duplicate node names")
    by_name = {n.name: n for n in g.nodes}
    seen: set[str] = set()
    for n in g.nodes:
        if n.op not in NODE_OPS:
            problems.append(f"{where}: node {n.name!r} has op {n.op!r} (must be one of {list(NODE_OPS)})")
        if n.role not in NODE_ROLES:
            problems.append(f"{where}: node {n.name!r} has role {n.role!r} (must be one of {list(NODE_ROLES)})")
        for i in n.inputs:
            if i not in seen:
                problems.append(f"{where}: node {n.name!r} reads {i!r}, which is not an earlier node")
        seen.add(n.name)
    for n in g.nodes:
        for u in n.users:
            user = by_name.get(u)
            if user is None:
                problems.append(f"{where}: node {n.name!r} has unknown user {u!r}")
            elif n.name not in user.inputs:
                problems.append(f"{where}: node {n.name!r} lists user {u!r}, which does not read it")


def _check_frame(f: Frame, problems: list[str]) -> None:
    where = f"frame {f.compile_id}"
    if not _COMPILE_ID.match(f.compile_id):
        problems.append(f"{where}: compile id {f.compile_id!r} is not of the form 'F/C' or 'F/C_A'")
    if f.status not in FRAME_STATUSES:
        problems.append(f"{where}: status {f.status!r} (must be one of {list(FRAME_STATUSES)})")
    elif f.status == "no_graph" and (f.has_graph or f.aot is not None):
        problems.append(f"{where}: status 'no_graph' but it has a graph")
    elif f.status == "compiled" and not f.graph.nodes and not (f.graph.code and f.problems):
        # a logged graph whose text could not be parsed keeps its text and says why in problems
        problems.append(f"{where}: status 'compiled' without a graph")
    if f.status in ("restarted", "failed") and not f.status_reason:
        problems.append(f"{where}: status {f.status!r} without a reason")
    for phase, seconds in f.times.items():
        if phase not in TIME_PHASES:
            problems.append(f"{where}: time phase {phase!r} (must be one of {list(TIME_PHASES)})")
        elif not seconds >= 0:
            problems.append(f"{where}: time {phase!r} is {seconds!r}, not a duration")
    _check_graph(f.graph, where, problems)
    graphs = f.graphs()
    for qn, sg in f.subgraphs.items():
        sw = f"{where} subgraph {qn!r}"
        _check_graph(sg.graph, sw, problems)
        if sg.name != qn:
            problems.append(f"{sw}: keyed under a different name {sg.name!r}")
        if sg.parent not in graphs:
            problems.append(f"{sw}: parent {sg.parent!r} is not a graph of the frame")
            continue
        parent = {n.name: n for n in graphs[sg.parent].nodes}
        if sg.call_node not in parent:
            problems.append(f"{sw}: call node {sg.call_node!r} not in parent {sg.parent!r}")
        elif qn not in parent[sg.call_node].calls:
            problems.append(f"{sw}: call node {sg.call_node!r} does not call it (calls {parent[sg.call_node].calls})")
        placeholders = [n.name for n in sg.graph.placeholders]
        if [i.name for i in sg.inputs] != placeholders:
            problems.append(f"{sw}: inputs {[i.name for i in sg.inputs]} != placeholders {placeholders}")
        for i in sg.inputs:
            if i.kind not in INPUT_KINDS:
                problems.append(f"{sw}: input {i.name!r} has kind {i.kind!r} (must be one of {list(INPUT_KINDS)})")
            if i.source and i.source not in parent:
                problems.append(f"{sw}: input {i.name!r} source {i.source!r} not in parent {sg.parent!r}")
            if i.kind == "hop_supplied" and not i.supplied:
                problems.append(f"{sw}: input {i.name!r} is hop_supplied without saying what the HOP supplies")
        if sg.call_sites and sg.call_sites[0].node != sg.call_node:
            problems.append(f"{sw}: first call site {sg.call_sites[0].node!r} is not call_node {sg.call_node!r}")
        for site in sg.call_sites:
            if site.node not in parent:
                problems.append(f"{sw}: call site {site.node!r} not in parent {sg.parent!r}")
            if len(site.sources) != len(sg.inputs):
                problems.append(f"{sw}: call site {site.node!r} has {len(site.sources)} sources for {len(sg.inputs)} inputs")
            for s in site.sources:
                if s and s not in parent:
                    problems.append(f"{sw}: call site {site.node!r} source {s!r} not in parent {sg.parent!r}")
    for n in [n for g in graphs.values() for n in g.nodes]:
        for body in n.calls:
            if body not in f.subgraphs:
                problems.append(f"{where}: node {n.name!r} calls unknown subgraph {body!r}")
    for s in f.speculations:
        if s.subgraph is not None and s.subgraph not in f.subgraphs:
            problems.append(f"{where}: speculation names unknown subgraph {s.subgraph!r}")
        if not 1 <= s.depth <= len(f.speculations):  # each level of nesting is a speculation of the frame
            problems.append(f"{where}: speculation {s.hop}/{s.description} has depth {s.depth} "
                            f"(must be 1..{len(f.speculations)})")
    if f.aot is not None:
        _check_aot(f.aot, where, problems)
    if f.export is not None:
        _check_program(f, f.export, where, problems)
    _check_beyond(f, where, problems)


def _check_beyond(f: Frame, where: str, problems: list[str]) -> None:
    """Inductor kernels, shape specializations, bytecode: kinds closed, references resolve."""
    dynamo = {n.name for n in f.graph.nodes}
    for g in f.inductor:
        for k in g.kernels:
            if k.name not in g.output_code:
                problems.append(f"{where}: inductor {g.aot_id} kernel {k.name!r} is not in its output code")
            bad = [n for n in k.dynamo_nodes if n not in dynamo]
            if bad:
                problems.append(f"{where}: inductor {g.aot_id} kernel {k.name!r} names unknown Dynamo nodes {bad}")
    symbols = {s.name for s in f.symbols}
    for sp in f.specializations:
        if sp.kind not in SPECIALIZATION_KINDS:
            problems.append(f"{where}: specialization kind {sp.kind!r} (must be one of {list(SPECIALIZATION_KINDS)})")
        if sp.symbol not in symbols:
            problems.append(f"{where}: specialization of {sp.symbol!r}, which is not a symbol of the frame")
    if f.bytecode is not None:
        for c in [f.bytecode.original, f.bytecode.transformed, *f.bytecode.resume_functions]:
            if not c.source and not c.problem:
                problems.append(f"{where}: bytecode of {c.name!r} has no source and no problem saying why")


def _check_aot(a: Aot, where: str, problems: list[str]) -> None:
    if a.mode not in AOT_MODES:
        problems.append(f"{where}: aot mode {a.mode!r} (must be one of {list(AOT_MODES)})")
    for name in ("joint", "forward", "backward", "inference"):
        g = getattr(a, name)
        if g is not None:
            _check_graph(g, f"{where} aot.{name}", problems)
    if a.mode == "inference" and (a.joint or a.backward or a.forward != a.inference):
        problems.append(f"{where}: aot mode 'inference' with training graphs (forward must be the inference graph)")
    if a.mode == "training" and a.inference is not None:
        problems.append(f"{where}: aot mode 'training' with an inference graph")
    for qn, g in a.subgraphs.items():
        _check_graph(g, f"{where} aot.subgraphs[{qn!r}]", problems)
    if not a.saved_known and a.saved:
        problems.append(f"{where}: saved values not known, yet {len(a.saved)} listed")
    forward = {n.name for n in a.forward.nodes} if a.forward is not None else None
    for s in a.saved:
        if s.kind not in SAVED_KINDS:
            problems.append(f"{where}: saved {s.name!r} kind {s.kind!r} (must be one of {list(SAVED_KINDS)})")
        if s.origin not in SAVED_ORIGINS:
            problems.append(f"{where}: saved {s.name!r} origin {s.origin!r} (must be one of {list(SAVED_ORIGINS)})")
        if forward is None:
            problems.append(f"{where}: saved {s.name!r} but the frame has no forward graph")
        elif s.name not in forward:
            problems.append(f"{where}: saved {s.name!r} is not a node of the forward graph")
        if s.nbytes < 0:
            problems.append(f"{where}: saved {s.name!r} has {s.nbytes} bytes")
    for o in a.outputs:
        if o.alias not in ALIAS_KINDS:
            problems.append(f"{where}: output {o.name!r} alias {o.alias!r} (must be one of {list(ALIAS_KINDS)})")
    for group in a.synthetic_bases:
        bad = [i for i in group if not 0 <= i < len(a.inputs)]
        if bad:
            problems.append(f"{where}: synthetic base groups input indices {bad} out of {len(a.inputs)} inputs")


def _check_export_run(e: Export, problems: list[str]) -> None:
    if e.status not in EXPORT_STATUSES:
        problems.append(f"export: status {e.status!r} (must be one of {list(EXPORT_STATUSES)})")
    if (e.status == "failed") != (e.failure is not None):
        problems.append(f"export: status {e.status!r} {'without' if e.failure is None else 'with'} a failure")
    for x in [*([e.failure] if e.failure is not None else []), *e.draft]:
        if x.kind not in EXPORT_FAILURE_KINDS:
            problems.append(f"export: failure kind {x.kind!r} (must be one of {list(EXPORT_FAILURE_KINDS)})")


def _check_program(f: Frame, p: ExportProgram, where: str, problems: list[str]) -> None:
    """The signature names the root graph's placeholders in order, and output arguments."""
    if p.stage not in EXPORT_STAGES:
        problems.append(f"{where}: export stage {p.stage!r} (must be one of {list(EXPORT_STAGES)})")
    placeholders = [n.name for n in f.graph.placeholders]
    named = [i.name for i in p.inputs if i.name]
    if f.graph.nodes and named != [n for n in placeholders if n in named]:
        problems.append(f"{where}: export inputs {named} are not placeholders of the graph in order {placeholders}")
    for i in p.inputs:
        if i.kind not in EXPORT_INPUT_KINDS:
            problems.append(f"{where}: export input {i.name!r} kind {i.kind!r} (must be one of {list(EXPORT_INPUT_KINDS)})")
    out = f.graph.output
    returned = set(out.inputs) if out is not None else set()
    for o in p.outputs:
        if o.kind not in EXPORT_OUTPUT_KINDS:
            problems.append(f"{where}: export output {o.name!r} kind {o.kind!r} (must be one of {list(EXPORT_OUTPUT_KINDS)})")
        if o.name and f.graph.nodes and o.name not in returned:
            problems.append(f"{where}: export output {o.name!r} is not returned by the graph")
