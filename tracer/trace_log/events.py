"""One small parser per structured-trace event: a table of (does this record concern me?, turn it into data).

Invariant: a parser only adds to ``LogState`` (per compile attempt, in log order) and never raises out
of :func:`apply`: a record it cannot read becomes one string in ``LogState.problems`` naming its line.
Event names and payload formats are torch 2.13's (see Note [Events read from a log]).
"""

from __future__ import annotations

import collections
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from tracer.inductor_events import INDUCTOR_EVENTS
from tracer.model.attempts import AttemptInfo
from tracer.model.guards import GraphBreak
from tracer.shape_events import SHAPE_EVENTS, Event
from tracer.trace_log.reader import Record

__all__ = ["AttemptLog", "LogState", "PARSERS", "apply"]

# Note [Events read from a log]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Where torch 2.13 emits each event we read (``trace_structured(name, ...)``):
#   dynamo_start                  torch/_dynamo/convert_frame.py: a compile began (metadata: stack)
#   compilation_metrics           torch/_dynamo/utils.py ``record_compilation_metrics``: a compile ended
#                                 (under its last attempt): fail_type/reason, restart_reasons, times
#   dynamo_output_graph           torch/_dynamo/output_graph.py: the output graph, ``print_readable``
#   aot_{joint,forward,backward,inference}_graph  torch/_functorch/_aot_autograd/graph_{capture,compile}.py
#   dynamo_guards                 torch/_dynamo/guards.py: guards as JSON (only when a guard asks for it)
#   dynamo_cpp_guards_str         torch/_dynamo/guards.py: the C++ guard tree as text
#   artifact dynamo_graph_break_reason  symbolic_convert.py ``log_graph_break``: location, reason, user stack
#   artifact recompile_reasons    torch/_dynamo/guards.py: the failed guards before a recompile (JSON)
#   create_symbol, create_unbacked_symbol, guard_added_fast, symbolic_shape_specialization
#                                 torch/fx/experimental/symbolic_shapes.py, with user stacks: kept as
#                                 they are, in log order, for tracer/shape_events.py (the code a live
#                                 capture reads the same events with)
#   describe_tensor, describe_source  torch/_subclasses/meta_utils.py: which source each fakified
#                                 tensor was read from, and whether it is a Parameter (root roles)
#   optimize_ddp_split_graph / _child  torch/_dynamo/backends/distributed.py: DDPOptimizer's split
#   dump_file                     torch/_logging/structured.py: source of fx-generated files
#   inductor_output_code, artifacts inductor_post_grad_graph, inductor_provenance_tracking_node_mappings,
#   inductor_provenance_tracking_kernel_stack_traces, fx_graph_cache_hit
#                                 torch/_inductor/compile_fx.py, graph.py, codecache.py: kept
#                                 as they are, in log order, for tracer/inductor_events.py (the code
#                                 a live capture reads the same events with)
# Events we know and do not use (chromium timings, tensor descriptions, other artifacts) are
# counted in ``LogState.ignored``; events of another torch version are listed as problems.

AttemptKey = tuple[int, int, int]
GRAPH_EVENTS = {"dynamo_output_graph": "dynamo", "aot_joint_graph": "joint", "aot_forward_graph": "forward",
                "aot_backward_graph": "backward", "aot_inference_graph": "inference"}
IGNORED = frozenset(("chromium_event", "describe_storage", "artifact",
                     "link", "guard_added", "propagate_real_tensors_provenance",
                     "dynamo_cache_entries", "fx_graph_cache_miss", "fx_graph_cache_hit",
                     "fx_graph_bundled_cache_hit", "dynamo_side_effects", "precompile_cache_bypass",
                     "dynamo_cache_bypass", "missing_fake_kernel", "bwd_compilation_metrics",
                     "inductor_pre_grad_graph",
                     "graph_region_expansion", "expression_created", "aotautograd_cache_miss",
                     "aotautograd_cache_hit", "aotautograd_cache_bypass", "guard_on_data_dependent_error",
                     "compiled_autograd_graph", "optimize_ddp_split_child_failed",
                     # compile work torch times at run time, after the compile (CUDA-graph recording,
                     # autotuning on first run): CompilationMetrics with is_runtime (torch/_dynamo/utils.py)
                     "compilation_metrics_runtime", "bwd_compilation_metrics_runtime"))


@dataclass
class AttemptLog:
    """What the log says about one compile attempt."""

    texts: dict[str, tuple[str, int]] = field(default_factory=dict)  # GRAPH_EVENTS value -> (text, line)
    guards_json: Optional[list[Any]] = None  # dynamo_guards payload
    cpp_guards: str = ""  # dynamo_cpp_guards_str payload
    start_stack: list[dict[str, Any]] = field(default_factory=list)  # dynamo_start's stack
    shape_events: list[Event] = field(default_factory=list)  # ShapeEnv's events (SHAPE_EVENTS), log order
    sources: list[str] = field(default_factory=list)  # describe_source sources, log order
    ddp_split: Optional[str] = None  # optimize_ddp_split_graph text
    ddp_children: dict[str, str] = field(default_factory=dict)  # split submodule name -> text
    inductor: list[Event] = field(default_factory=list)  # Inductor's events (INDUCTOR_EVENTS), log order


# Note [Equal payloads held once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A log repeats equal graph texts and guard trees (every rank, every step compiled again), and the
# loaded capture keeps them (``Graph.code``, the guards read on first access). The loader keeps one
# string object per distinct text (``LogState.same``: strings are immutable, so nothing can tell,
# but the memory): on the 100 MB synthetic log that took its lazy load from 0.78x the log's bytes to 0.05x.
@dataclass
class LogState:
    """Everything read so far, keyed by torch's own (frame_id, frame_compile_id, attempt)."""

    strings: dict[int, str]  # the reader's interned file names
    order: list[AttemptKey] = field(default_factory=list)  # attempts in the order the log first names them
    attempts: dict[AttemptKey, AttemptLog] = field(default_factory=dict)
    info: dict[tuple[int, int], AttemptInfo] = field(default_factory=dict)
    breaks: list[tuple[Optional[AttemptKey], GraphBreak]] = field(default_factory=list)
    recompiles: list[tuple[tuple[int, int], list[str]]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # dump_file name -> source
    problems: list[str] = field(default_factory=list)
    ignored: collections.Counter = field(default_factory=collections.Counter)
    unknown: collections.Counter = field(default_factory=collections.Counter)
    torch_version: str = ""
    parameters: set[tuple[Any, Any]] = field(default_factory=set)  # (describer_id, id) of described Parameters
    param_sources: set[str] = field(default_factory=set)  # describe_source sources of those Parameters
    texts: dict[str, str] = field(default_factory=dict)  # Note [Equal payloads held once]

    def same(self, text: str) -> str:
        """``text``, or the equal text kept before (Note [Equal payloads held once])."""
        return self.texts.setdefault(text, text)

    def attempt(self, rec: Record) -> Optional[AttemptKey]:
        m = rec.meta
        fid, cid = m.get("frame_id"), m.get("frame_compile_id")
        # ``type(v) is int``: what JSON gives for a whole number (bool is its own type); anything else asks _count
        if not (type(fid) is int and type(cid) is int and fid >= 0 and cid >= 0) and not (_count(fid) and _count(cid)):
            return None
        if m.get("compiled_autograd_id") is not None:
            return None
        attempt = m.get("attempt") or 0
        key = (fid, cid, attempt if type(attempt) is int and attempt >= 0 or _count(attempt) else 0)
        if key not in self.attempts:
            self.attempts[key] = AttemptLog()
            self.order.append(key)
        return key

    def stack(self, frames: Any) -> list[str]:
        """"file.py:LINE in fn" per frame of a structured stack (file names interned)."""
        out = []
        for f in frames if isinstance(frames, list) else []:
            if isinstance(f, dict):
                name = self.strings.get(f["filename"], "?") if isinstance(f.get("filename"), int) else str(f.get("filename"))
                out.append(f"{_base(name)}:{f.get('line')} in {f.get('name')}")
        return out


def _base(path: str) -> str:
    """The file name of a path as torch logs it ("/a/b/f.py" -> "f.py")."""
    return path[path.rfind("/") + 1:]


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


@dataclass(frozen=True)
class Parser:
    """One row of the table: a record of event ``event`` (of an "artifact" record: whose artifact name is
    ``artifact``) goes to ``parse(record, state, attempt key)``."""

    event: str
    parse: Callable[[Record, LogState, Optional[AttemptKey]], None]
    artifact: Optional[str] = None


def _artifact_name(rec: Record) -> Any:
    """The name of an "artifact" record's artifact ({"artifact": {"name": ..., "encoding": ...}}), or None."""
    a = rec.meta["artifact"]
    return a.get("name") if isinstance(a, dict) else None


def _need(key: Optional[AttemptKey]) -> AttemptKey:
    if key is None:
        raise ValueError("no compile id in the metadata")
    return key


def _dynamo_start(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    st.attempts[_need(key)].start_stack = list((rec.meta["dynamo_start"] or {}).get("stack") or [])


def _metrics(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    m = rec.meta["compilation_metrics"]
    if not isinstance(m, dict):
        raise ValueError("compilation_metrics is not an object")
    k = _need(key)
    info = st.info.setdefault(k[:2], AttemptInfo())
    info.metrics, info.final_attempt = m, k[2]
    if not st.torch_version and isinstance(m.get("pytorch_version"), str):
        # torch 2.11 logs no torch_version artifact (2.12 added it); every compile's metrics carry the release
        st.torch_version = m["pytorch_version"]


def _graph(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    if rec.payload is None:
        raise ValueError("graph event without payload")
    st.attempts[_need(key)].texts[GRAPH_EVENTS[rec.event]] = (st.same(rec.payload), rec.line)


def _guards(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    data = json.loads(rec.payload or "null")
    if not isinstance(data, list):
        raise ValueError("dynamo_guards payload is not a JSON list")
    st.attempts[_need(key)].guards_json = data


def _cpp_guards(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    st.attempts[_need(key)].cpp_guards = st.same(rec.payload or "")


def _break(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    """Payload: "Graph break in user code at FILE:LINE\\nGraph Break Reason: ...\\n\\nUser code traceback:\\n"
    then ``traceback.format_list`` lines, then the exception's traceback (symbolic_convert.py)."""
    text = rec.payload or ""
    head, _, rest = text.partition("\n")
    prefix = "Graph break in user code at "
    if not head.startswith(prefix):
        raise ValueError("graph break payload does not start with 'Graph break in user code at'")
    path, _, line = head[len(prefix):].rpartition(":")
    reason, _, tb = rest.partition("\nUser code traceback:\n")
    reason = reason.removeprefix("Graph Break Reason: ").strip()
    stack, code_line = _format_list(tb)
    gb = GraphBreak(reason=reason, location=f"{_base(path)}:{line}", user_stack=stack,
                    code_line=code_line)
    if key is not None:
        st.info.setdefault(key[:2], AttemptInfo()).break_reasons.setdefault(key[2], []).append(reason)
    st.breaks.append((key, gb))


_FRAME = re.compile(r'  File "(?P<path>.*)", line (?P<line>\d+), in (?P<fn>.*)')  # traceback.format_list


def _format_list(tb: str) -> tuple[list[str], str]:
    """``traceback.format_list`` text -> ("file.py:LINE in fn" per frame, the last frame's code line)."""
    stack: list[str] = []
    code = ""
    for line in tb.split("\n"):
        s = line.strip()
        m = _FRAME.fullmatch(line)
        if m is not None:
            stack.append(f"{_base(m['path'])}:{m['line']} in {m['fn']}")
            code = ""
        elif line.startswith("    ") and stack and not code:
            code = s
        elif not s or s.startswith("Traceback"):
            if stack:
                break
    return stack, code


def _recompile(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    # guards.py logs ``reasons[0] if len(reasons) == 1 else reasons``: a str payload is written as
    # is (trace_structured only JSON-encodes non-strings), a list as JSON.
    text = rec.payload or ""
    try:
        reasons = json.loads(text)
    except ValueError:
        reasons = text
    reasons = [reasons] if isinstance(reasons, str) else reasons
    if not isinstance(reasons, list):
        raise ValueError("recompile_reasons payload is not a JSON list")
    st.recompiles.append((_need(key)[:2], [str(r) for r in reasons]))


def _version(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    data = json.loads(rec.payload or "{}")
    st.torch_version = str(data.get("pytorch_version", "")) if isinstance(data, dict) else ""


def _shape(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    m = rec.meta[rec.event]
    if not isinstance(m, dict):
        raise ValueError(f"{rec.event} is not an object")
    m = {k: v for k, v in m.items() if k != "stack"}  # the framework stack: not read, not kept
    st.attempts[_need(key)].shape_events.append((rec.event, m, None))


def _describe_tensor(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    m = rec.meta["describe_tensor"]
    if isinstance(m, dict) and m.get("is_parameter") is True:  # as_json leaves out fields at their default
        st.parameters.add((m.get("describer_id"), m.get("id")))


def _describe_source(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    m = rec.meta["describe_source"]
    if not isinstance(m, dict) or not isinstance(m.get("source"), str):
        raise ValueError("describe_source has no source")
    st.attempts[_need(key)].sources.append(m["source"])
    if (m.get("describer_id"), m.get("id")) in st.parameters:
        st.param_sources.add(m["source"])


def _ddp(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    a = st.attempts[_need(key)]
    if rec.event == "optimize_ddp_split_graph":
        a.ddp_split = rec.payload or ""
    else:
        a.ddp_children[str((rec.meta[rec.event] or {}).get("name"))] = rec.payload or ""


def _inductor(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    """Kept as the live reader keeps it (tracer/_torch/trace_events.py): (event or artifact name, metadata, payload)."""
    name = _artifact_name(rec) if rec.event == "artifact" else rec.event
    payload = st.same(rec.payload) if isinstance(rec.payload, str) else rec.payload
    st.attempts[_need(key)].inductor.append((name, rec.meta[rec.event], payload))


def _dump_file(rec: Record, st: LogState, key: Optional[AttemptKey]) -> None:
    st.files[str(rec.meta["dump_file"].get("name"))] = rec.payload or ""


PARSERS: list[Parser] = [
    Parser("dynamo_start", _dynamo_start),
    Parser("compilation_metrics", _metrics),
    *(Parser(name, _graph) for name in GRAPH_EVENTS),
    Parser("dynamo_guards", _guards),
    Parser("dynamo_cpp_guards_str", _cpp_guards),
    Parser("artifact", _break, "dynamo_graph_break_reason"),
    Parser("artifact", _recompile, "recompile_reasons"),
    Parser("artifact", _version, "torch_version"),
    *(Parser(name, _shape) for name in SHAPE_EVENTS),
    Parser("describe_tensor", _describe_tensor),
    Parser("describe_source", _describe_source),
    Parser("optimize_ddp_split_graph", _ddp),
    Parser("optimize_ddp_split_child", _ddp),
    Parser("dump_file", _dump_file),
    Parser("inductor_output_code", _inductor),
    Parser("inductor_post_grad_graph", _inductor),  # an event on an FX-graph-cache hit (codecache.py), else an artifact
    *(Parser("artifact", _inductor, name) for name in INDUCTOR_EVENTS if name != "inductor_output_code"),
    Parser("fx_graph_cache_hit", _inductor),  # an event before the artifact (compile_fx.py logs the artifact)
]
_BY_EVENT: dict[str, list[Parser]] = {}  # the table's rows by event, in table order (one dict lookup per record)
for _p in PARSERS:
    _BY_EVENT.setdefault(_p.event, []).append(_p)
# an event whose only row takes every record of it (no artifact name to ask): its parse, found in one lookup
_ONLY: dict[str, Callable[[Record, LogState, Optional[AttemptKey]], None]] = {
    e: rows[0].parse for e, rows in _BY_EVENT.items() if len(rows) == 1 and rows[0].artifact is None}


def apply(rec: Record, st: LogState) -> None:
    """Hand ``rec`` to the first parser it concerns; count it as ignored or unknown otherwise."""
    event = rec.event
    try:
        key = st.attempt(rec)
        parse = _ONLY.get(event)
        if parse is not None:
            parse(rec, st, key)
            return
        for p in _BY_EVENT.get(event, ()):
            if p.artifact is None or p.artifact == _artifact_name(rec):
                p.parse(rec, st, key)
                return
    except Exception as e:  # except: records a problem (a damaged record: keep going, say which line)
        # the parsers' messages hold no text from the record, so the line stays short
        st.problems.append(f"line {rec.line}: {event} not read ({type(e).__name__}: {e})")
        return
    (st.ignored if event in IGNORED else st.unknown)[event] += 1
