"""``LogState`` -> ``Capture``: one Frame per compile attempt the log names, ids and statuses as a live capture.

Invariant: ids, statuses, reasons and times come from the same code a live capture uses
(:mod:`tracer.model.attempts`); what a log cannot tell is left empty and said once in
``Capture.limits`` (Note [What a log does not contain]), never guessed.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Hashable, NamedTuple, Optional

from tracer.diffing import attach_recompile_diffs
from tracer.hop_tree import subgraph_tree
from tracer.model.aot import Aot
from tracer.model.attempts import (
    AttemptInfo,
    FrameCodes,
    format_id,
    local_ids,
    location,
    recompile,
    settle_status,
)
from tracer.model.capture import Capture
from tracer.model.frame import Frame
from tracer.model.graph import Graph
from tracer.root_roles import placeholder_name, root_role
from tracer.shape_events import shape_records
from tracer.trace_log.body_feeds import LOG_KINDS, LoggedGraph
from tracer.trace_log.deferred import (
    deferred_graph,
    deferred_inductor,
    has_bodies,
    parse_finished,
    parse_logged,
    problems_wait_for_graphs,
)
from tracer.trace_log.events import AttemptLog, LogState
from tracer.trace_log.graph_text import ParsedModule
from tracer.trace_log.guards import fill_guards
from tracer.trace_log.joint_partition import forward_half, from_joint, tag_logged_partition
from tracer.trace_log.line_modules import infer_line_modules
from tracer.trace_log.modules import (
    LOG_MODULE_RULE,
    aot_owners,
    infer_modules,
    lines_with,
    ran_twice,
    root_owners,
    tied_sources,
)

__all__ = ["assemble", "LOG_LIMITS"]

# Note [What a log does not contain]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# TORCH_TRACE records what torch logs, which is less than a live capture watches. LOG_LIMITS names
# each model field a loaded log cannot fill as a live capture does, and why; a loaded Capture says
# each once in its problems, and tests/test_trace_log.py checks that a log and a live capture of the
# same program agree on every other field it compares, and differ on these only as written here:
# - speculations (every SubgraphTracer run, failed ones included) are not logged, so whether a
#   body input is the user's operand or a lifted free variable or symbol is unknown (kind
#   "unknown"); what the HOP supplies and every source are read from the call (Note [Body input
#   sources from a log]);
# - a root placeholder read from a frame local (L['y']) is an argument or a closure variable: the
#   log does not name the frame's arguments (Note [Root roles from a log]);
# - the output graph is logged before Dynamo's graph passes (e.g. invoke_subgraph inlining), so
#   ``Frame.passes`` is unknown and the graph may differ from what the backend received;
# - ViewAndMutationMeta, saved values and their origins are not read (only the AOT graphs);
# - node meta is what the annotations and "# File:" comments print: shapes, strides, dtype,
#   device and the innermost line of the node's stack; no requires_grad, nn_module_stack or full
#   stack trace (so not the user line when the innermost frame is torch's own code); the module a
#   node ran in only where the log proves it (Note [Module groups from a log] in modules.py);
# - why a frame produced no graph is logged at debug level only (not in the trace);
# - Dynamo's bytecode is logged for resume functions only, and not read;
# - guards are the leaves of the C++ guard tree (its kinds: ID_MATCH where the Python guard says
#   MODULE_MATCH, ...), not the guards Dynamo built.
LOG_LIMITS: dict[str, str] = {
    "Frame.speculations": "speculations are not recorded in TORCH_TRACE",
    "SubgraphInput.kind": "a body input the HOP does not supply has kind 'unknown': whether it is an operand or "
                          "lifted is decided by speculation, which is not in the log; its source is read from the call",
    "Node.role": "a root placeholder read from a frame local (L['x']) has role 'unknown': an argument or a "
                 "closure variable, the log does not name the frame's arguments; body placeholders as SubgraphInput.kind",
    "Frame.passes": "graphs are as logged before Dynamo's graph passes; Frame.passes is unknown",
    "Frame.aot": "AOT saved values and ViewAndMutationMeta are not read; only the AOT graphs are",
    "Node.meta": "node meta holds only what print_readable prints (shape, stride, dtype, device, the innermost "
                 "line of the node's stack); no nn_module_stack: 'log_module' where parameter Sources prove a node's module",
    "Frame.status_reason": "why a frame produced no graph is logged at debug level only",
    "Frame.bytecode": "Dynamo's bytecode is logged for resume functions only and is not read",
    "Frame.guards": "guards are the C++ guard tree's leaves, with its kinds, not the guards Dynamo built",
}


def assemble(st: LogState, fn: str = "") -> Capture:
    cap = Capture(fn=fn, limits=[f"{k}: {why}" for k, why in LOG_LIMITS.items()])
    local = local_ids(st.order)
    codes = FrameCodes()  # Note [Code object from the frame id]
    last: dict[tuple[int, int], int] = {}  # each compile's last logged attempt
    for key in st.order:
        last[key[:2]] = max(last.get(key[:2], 0), key[2])
    for key in st.order:
        a = st.attempts[key]
        info = st.info.get(key[:2], AttemptInfo())
        if info.final_attempt is None and last[key[:2]] > key[2]:  # no metrics (a cut log, a crash): the
            info = dataclasses.replace(info, final_attempt=last[key[:2]])  # later attempt logged proves a restart
        frame = Frame(compile_id=local[key], code=_code(a, info, st), dynamo_id=format_id(*key))
        codes.settle(frame, key)
        _fill_graphs(frame, a, _graph_input_sources(a, st))
        fill_guards(frame, a, st)
        first = st.attempts.get((key[0], key[1], 0))
        start = a.start_stack or (first.start_stack if first is not None else [])
        if start:  # dynamo_start's user stack, outermost first (the stack trie); logged once, for attempt 0
            frame.meta["stack"] = st.stack(start)
        # the same reader a live capture uses (Note [Where a specialization came from])
        frame.symbols, frame.shape_guards, frame.specializations = shape_records(a.shape_events, st.strings)
        deferred_inductor(frame, a.inductor)  # Inductor's post-grad graphs, output code, kernels: read on first access
        if a.ddp_split is not None:
            frame.meta["ddp_split"] = {"graph": a.ddp_split, "children": a.ddp_children}  # DDPOptimizer's split
        restarted = len([k for k in st.order if k[:2] == key[:2] and info.final_attempt is not None
                         and k[2] < info.final_attempt])
        settle_status(frame, key[2], info, restarted)
        if frame.status == "no_graph" and frame.aot is not None:
            frame.aot = None
            frame.problems.append("AOT graphs logged for a compile that produced no Dynamo graph: not kept")
        elif frame.status == "restarted" and frame.aot is not None:  # e.g. TensorifyScalarRestartAnalysis,
            frame.aot = None  # raised inside AOTAutograd after it logged a graph torch then threw away
            frame.problems.append("AOT graphs logged for an attempt that restarted: not kept")
        problems_wait_for_graphs(frame)
        cap.frames.append(frame)
    for key, gb in st.breaks:
        gb.compile_id = local.get(key, "")  # key None: Dynamo was not compiling; no key of ``local``
        cap.graph_breaks.append(gb)
    for k2, reasons in st.recompiles:  # Note [One record per recompile] in tracer/model/attempts.py
        key = (*k2, 0)
        if key in local:
            cap.recompiles.append(recompile(local[key], reasons, local))
    cap.meta["source"] = "TORCH_TRACE"
    cap.meta["module_groups"] = LOG_MODULE_RULE
    if st.torch_version:
        cap.meta["torch"] = st.torch_version
    if st.files:
        cap.meta["files"] = st.files  # dump_file: name -> source text
    cap.problems.extend(st.problems)
    for name, n in sorted(st.unknown.items()):
        cap.problems.append(f"{n} record(s) of event {name!r} not read: not an event of torch 2.13's trace")
    return attach_recompile_diffs(cap, on_read=True)  # what each recompile changed, as live; diffed when read


def _code(a: AttemptLog, info: AttemptInfo, st: LogState) -> str:
    m = info.metrics or {}
    if m.get("co_filename") or m.get("co_name"):
        return location(str(m.get("co_filename") or ""), m.get("co_firstlineno"), str(m.get("co_name") or ""))
    where = st.stack(a.start_stack[-1:])
    return where[0] if where else ""


def _fill_graphs(frame: Frame, a: AttemptLog, sources: dict[str, tuple[str, bool]]) -> None:
    """The Dynamo and AOT graphs; each waits for its first read unless its bodies are needed now
    (Note [Which logged graphs wait] in deferred.py)."""
    gj, cg = a.guards_json, a.cpp_guards  # the guard text, for module groups (not the whole attempt)
    tied = functools.cache(lambda: _tied(gj, cg))  # read once for the attempt's graphs, when the first needs it
    dynamo: Optional[Callable[[], Graph]] = None  # the Dynamo graph as loaded, when it waits too
    dynamo_key: Optional[Callable[[], Hashable]] = None
    if "dynamo" in a.texts:
        text, line = a.texts["dynamo"]
        if not has_bodies(text):
            roles, dynamo_key = _finished_roots(frame, text, line, sources, tied)
            frame.graph = deferred_graph(frame, text, line, "", finish=roles, key=dynamo_key)
            dynamo = _as_loaded(text, line, roles, dynamo_key)
        else:
            parsed = parse_logged(frame.problems, text, line, "")
            frame.graph = parsed.graph if parsed is not None else Graph(code=text)
            _root_roles(frame.graph, sources, tied())
            if parsed is not None:
                frame.subgraphs = subgraph_tree(LoggedGraph(parsed), LOG_KINDS, frame.problems)
    graphs: dict[str, Graph] = {}
    children: dict[str, Graph] = {}
    for k in ("joint", "forward", "backward", "inference"):
        if k not in a.texts:
            continue
        text, line = a.texts[k]
        if not has_bodies(text):
            split = _split(a, k)  # Note [Joint partition from a log]: the joint's finish reads the other two
            if dynamo is not None and dynamo_key is not None:  # See Note [One finish per distinct graph and context]
                graphs[k] = deferred_graph(frame, text, line, k, finish=_AotFinish(dynamo, dynamo_key, tied, split),
                                           key=_aot_key(text, dynamo_key, split), reads=_reads(frame))
            else:
                graphs[k] = deferred_graph(frame, text, line, k, finish=lambda g, s=split: _aot_modules(frame, g, tied(), s))
            continue
        parsed = parse_logged(frame.problems, text, line, k)
        graphs[k] = parsed.graph if parsed is not None else Graph(code=text, name=k)
        _aot_modules(frame, graphs[k], tied(), _split(a, k))
        if parsed is not None:
            children.update(_flat_children(parsed, k))
    if "inference" in graphs:
        frame.aot = Aot(mode="inference", forward=graphs["inference"], inference=graphs["inference"])
    elif graphs:
        frame.aot = Aot(mode="training", joint=graphs.get("joint"), forward=graphs.get("forward"),
                        backward=graphs.get("backward"), backward_ran="backward" in graphs, saved_known=False)
    if frame.aot is not None:
        frame.aot.subgraphs.update(children)


def _finished_roots(frame: Frame, text: str, line: int, sources: dict[str, tuple[str, bool]],
                    tied: Callable[[], set[str]]) -> tuple[Callable[[Graph], None], Callable[[], Hashable]]:
    """The finish of a waiting Dynamo graph (roles, then modules) and the key of all it reads: the attempt's
    Sources and tied Sources, and the text, which the AOT finishes keyed by it read (Note [One finish per distinct graph and context])."""
    return (lambda g: _root_roles(g, sources, tied()),
            functools.cache(lambda: ("roots", text, frozenset(sources.items()), frozenset(tied()))))


def _as_loaded(text: str, line: int, roles: Callable[[Graph], None], key: Callable[[], Hashable]) -> Callable[[], Graph]:
    """A waiting Dynamo graph as loaded and finished, for AOT finishes that only read it: the kept parse's
    read-only nodes, never the frame's object, which a user may have changed (Note [One finish per distinct
    graph and context]); no nodes if its text cannot be parsed (the Dynamo graph's own read records why).
    An exception of the finish propagates to the AOT graph's read, as it does to the Dynamo graph's."""
    def graph() -> Graph:
        parsed = parse_finished([], text, line, "", roles, key(), read_only=True)
        return parsed.graph if parsed is not None else Graph(code=text)
    return graph


class _AotFinish(NamedTuple):
    """A waiting AOT graph's finish (a waiting Dynamo graph has no bodies). A forward's reads its joint as
    the joint's own finish left it, kept: it passes itself as the joint's finish, as an argument, so that
    no closure refers to itself. A self-referring closure is a reference cycle, and the loaded log sits in
    the oldest generation (Note [No cyclic GC while a log is read]): each let-go frame's texts stayed
    until a full collection (14 MB of the distinct-frames log's texts at frame 110 of its report, bench/RESULTS.md)."""

    dynamo: Callable[[], Graph]
    dynamo_key: Callable[[], Hashable]
    tied: Callable[[], set[str]]
    split: _Split

    def __call__(self, g: Graph) -> None:
        joint = None if self.split is None else (self, _aot_key(self.split[0][0], self.dynamo_key, self.split)())
        _aot_modules_of(g, self.dynamo(), [], self.tied(), self.split, joint)


def _aot_key(dynamo_text: str, dynamo_key: Callable[[], Hashable], split: _Split) -> Callable[[], Hashable]:
    texts = None if split is None else tuple(text for text, _ in split)  # not their log lines: equal copies share
    return lambda: ("aot", dynamo_text, dynamo_key(), texts)


# Note [Joint partition from a log]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A live joint graph's nodes say where the real partitioner put them (``meta["partition"]``, read from
# the forward and backward modules it returned). A log holds those two graphs too, with the joint's
# node names, so a logged joint is tagged by the same rule (tracer/partition.py) from their node
# names (tracer/trace_log/joint_partition.py). The joint's finish then depends on those two texts, so
# they are part of its key (Note [One finish per distinct graph and context]); their log lines are not
# (read only to word a parse problem, which the graph's own read records), or no copy would share.
_Split = Optional[tuple[tuple[str, int], tuple[str, int], tuple[str, int]]]  # (text, line) of the joint, forward, backward


def _split(a: AttemptLog, k: str) -> _Split:
    """What the finish of a joint or forward graph reads besides its own text: the three graphs' texts."""
    if k not in ("joint", "forward") or not {"joint", "forward", "backward"} <= a.texts.keys():
        return None
    return a.texts["joint"], a.texts["forward"], a.texts["backward"]


def _reads(frame: Frame) -> Callable[[], None]:
    """What ``_aot_modules`` reads first: the frame's Dynamo graph (its parse and problems come then)."""
    return lambda: frame.graph.nodes if frame.graph is not None else None


def _flat_children(p: ParsedModule, prefix: str) -> dict[str, Graph]:
    out: dict[str, Graph] = {}
    for name, c in p.children.items():
        out[f"{prefix}.{name}"] = c.graph
        out.update(_flat_children(c, f"{prefix}.{name}"))
    return out


# Note [Root roles from a log]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo names a root placeholder after the Source it read the value from
# (tracer.root_roles.placeholder_name: L['x'] -> L_x_), and the log names those Sources: the
# ``describe_source`` of every fakified tensor (its ``describe_tensor`` says whether it is a
# Parameter) and the ``create_symbol`` of every symbol (s77 <- L['x'].size()[0], L_n_ <- L['n']).
# With the Source found, the role is the live capture's policy (tracer.root_roles.root_role) without
# the frame's argument names, which the log does not carry: a frame local L['y'] is "unknown"
# (an argument, or a closure variable Dynamo also reads as L['y']), a global, a module attribute
# or a size is lifted, a parameter or buffer is a param. A placeholder whose Source the log does
# not name (or names twice) is "unknown" too. LOG_LIMITS says so once.
def _graph_input_sources(a: AttemptLog, st: LogState) -> dict[str, tuple[str, bool]]:
    """Placeholder target -> (the Source it was read from, whether that is a Parameter); a name two
    Sources would give is left out."""
    named: dict[str, set[str]] = {}
    for src in a.sources:
        named.setdefault(placeholder_name(src), set()).add(src)
    for event, meta, _ in a.shape_events:
        if event == "create_symbol" and isinstance(meta.get("source"), str) and meta["source"]:
            named.setdefault(placeholder_name(meta["source"]), set()).add(meta["source"])
            named.setdefault(str(meta.get("symbol")), set()).add(meta["source"])
    return {name: (src, src in st.param_sources) for name, (src, *more) in
            ((n, sorted(s)) for n, s in named.items()) if not more}


def _root_roles(g: Graph, sources: dict[str, tuple[str, bool]], tied: set[str]) -> None:
    """Root placeholder roles by Note [Root roles from a log]; then module groups by Note [Module
    groups from a log] in modules.py."""
    for n in g.placeholders:
        if n.target not in sources:
            n.role = "unknown"
            continue
        src, parameter = sources[n.target]
        n.meta["graph_arg_source"] = src
        n.role = root_role(src, parameter=parameter, symbolic=n.meta.get("kind") == "symint", arg_names=None)
    owners = root_owners(g, tied)
    infer_modules(g, owners, ran_twice(g, owners))


def _aot_modules(frame: Frame, g: Graph, tied: set[str], split: _Split = None) -> None:
    """Module groups of an AOT graph through its inputs' descriptors (Note [Module groups from a log]);
    a joint's partition first (Note [Joint partition from a log])."""
    if frame.graph is None:
        return None if split is None or g.name != "joint" else tag_logged_partition(g, *split[1:])
    frame.graph.nodes  # noqa: B018 (parsed first: its Sources and modules are set when it is)
    _aot_modules_of(g, frame.graph, [s.graph for s in frame.subgraphs.values() if s.graph is not None], tied, split)


def _aot_modules_of(g: Graph, dynamo: Graph, bodies: list[Graph], tied: set[str], split: _Split = None,
                    joint: Optional[tuple[Callable[[Graph], None], Hashable]] = None) -> None:
    """``_aot_modules`` given the frame's Dynamo graph (roles, modules set), its HOP bodies, a joint's finish and key."""
    if split is not None and g.name == "joint":
        tag_logged_partition(g, *split[1:])
    root = root_owners(dynamo, tied)
    owners = aot_owners(g, dynamo, root)
    half = forward_half(g) if g.name == "joint" else None  # Note [Joint forward half in traced order]
    infer_modules(g, owners, None if half is None else ran_twice(dynamo, root), upto=half)
    if split is not None and g.name == "forward":
        if joint is not None:  # as the joint's own finish left it, kept: only read (from_joint), not copied
            parsed = parse_finished([], *split[0], "joint", *joint, read_only=True)
        elif (parsed := parse_logged([], *split[0], "joint")) is not None:
            _aot_modules_of(parsed.graph, dynamo, bodies, tied, split)
        if parsed is not None:
            from_joint(g, parsed.graph)
    infer_line_modules(g, [dynamo, *bodies])


_TIED: dict[str, frozenset[str]] = {}  # guard tree text -> its tied Sources, the last few texts


def _tied(guards_json: Optional[list[Any]], cpp_guards: Optional[str]) -> set[str]:
    """Sources an ``A is B`` guard of this attempt ties (Note [Module groups from a log]), read from the
    guard text itself: the Guard list waits for its first read and a graph's parse must not read it.
    The tree when it is logged, else ``dynamo_guards``' code parts (Note [Guards from a log])."""
    if cpp_guards:  # only a line holding " is " can hold an identity check (tied_sources' pattern)
        kept = _TIED.get(cpp_guards)  # a function of the text: read once per distinct tree (every step compiled again)
        if kept is None:
            kept = _TIED[cpp_guards] = frozenset(tied_sources(
                ln.partition("+- ")[2].partition(": ")[2] for ln in lines_with(cpp_guards, " is ") if "+- " in ln))
            while len(_TIED) > 8:
                _TIED.pop(next(iter(_TIED)))
        return set(kept)
    codes: list[str] = []
    for g in guards_json or []:
        code = g.get("code") if isinstance(g, dict) else None
        codes.extend([code] if isinstance(code, str) else [str(c) for c in code] if isinstance(code, list) else [])
    return tied_sources(codes)
