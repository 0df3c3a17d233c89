"""``Profile``: where a compiled function's run time went, per graph node (or kernel) and per user source line.

Plain data like the rest of the model (what ``tracer.profile`` returns). Times are the profiler's
self times in microseconds, summed over every profiled step; ``total_us`` is the sum of every
profiler event's self time, and ``attributed_us + sum(unattributed.values()) == total_us`` always:
time no node is known to have spent is kept by the profiler event's name, never spread by guess
(Note [Profiler time per FX node] in tracer/_torch/fx_marks.py, Note [Profiler time per Inductor
kernel] in tracer/_torch/kernel_marks.py).

A fused Inductor kernel that computes several user lines is *shown as shared*: Inductor's provenance
says which nodes a kernel computes, not how its time divides among them, so ``by_line`` counts the
kernel's whole time on each of its lines and says how much of a line's time is shared
(``LineTime.shared_us``); the rows of ``by_line`` can then add up to more than ``attributed_us``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from tracer.model.capture import Capture
from tracer.model.shapes import SourceLine

__all__ = ["LineTime", "NodeTime", "Profile"]


@dataclass
class NodeTime:
    """Self time of one node of an AOT graph, or of one Inductor kernel (what really ran), with its user line(s);
    eager (``backend == "eager"``): of one user line in one module stack, forward or backward, ``compile_id`` ""."""

    compile_id: str  # the Frame
    graph: str  # "forward", "backward" or "inference": which of frame.aot's graphs (or frame.inductor's)
    node: str  # a node of that graph; for Inductor a kernel as its provenance names it, "cpp_fused_mul_0:1"
    self_us: float  # all profiled steps together
    ops: dict[str, float] = field(default_factory=dict)  # profiler event -> self µs; "(python)": the node's Python
    dynamo_node: str = ""  # the Dynamo node it comes from (meta["from"]); "" when torch did not record it
    file: str = ""  # that node's user line; "" and 0 when unknown
    line: int = 0
    code: str = ""
    dynamo_nodes: list[str] = field(default_factory=list)  # every Dynamo node it computes (a fused kernel: several)
    also: list[SourceLine] = field(default_factory=list)  # a fused kernel's other user lines: its time shown on each
    modules: list[list[str]] = field(default_factory=list)  # eager: [path, type] of each module it ran in, outermost first

    def lines(self) -> list[tuple[str, int, str]]:
        """Every user line this node's time shows on: (file, line, code); [("", 0, "")] when unknown."""
        return [(self.file, self.line, self.code)] + [(s.file, s.line, s.code) for s in self.also]


@dataclass
class LineTime:
    """Self time of every node that comes from one user source line, forward and backward apart."""

    file: str  # "" for nodes whose line is unknown
    line: int
    code: str
    forward_us: float = 0.0  # forward or inference graphs
    backward_us: float = 0.0
    shared_us: float = 0.0  # of the total, time of kernels that also compute other lines (counted on each)
    nodes: list[str] = field(default_factory=list)  # "<compile id> <graph>.<node>" of every node counted here

    @property
    def total_us(self) -> float:
        return self.forward_us + self.backward_us


@dataclass
class Profile:
    """``tracer.profile``'s result: node times, what could not be attributed, and the Capture that ran."""

    fn: str
    backend: str
    steps: int  # profiled calls (forward, and backward when it ran)
    total_us: float  # the profiler's total: every event's self time
    nodes: list[NodeTime] = field(default_factory=list)
    unattributed: dict[str, float] = field(default_factory=dict)  # profiler event name -> self µs
    capture: Optional[Capture] = None
    trace_file: str = ""  # the profiler's Chrome trace (chrome://tracing, Perfetto), when one was written
    problems: list[str] = field(default_factory=list)

    @property
    def attributed_us(self) -> float:
        return sum(n.self_us for n in self.nodes)

    def by_line(self) -> list[LineTime]:
        """User source lines by total self time, largest first (nodes with no known line in one row, file "")."""
        rows: dict[tuple[str, int], LineTime] = {}
        for n in self.nodes:
            for file, line, code in n.lines():
                row = rows.setdefault((file, line), LineTime(file, line, code if file else "(line unknown)"))
                if n.graph == "backward":
                    row.backward_us += n.self_us
                else:
                    row.forward_us += n.self_us
                row.shared_us += n.self_us if n.also else 0.0
                row.nodes.append(f"{n.compile_id} {n.graph}.{n.node}")
        return sorted(rows.values(), key=lambda r: -r.total_us)

    def by_module(self) -> list[tuple[str, str, float, float]]:
        """(module path, type, forward µs, backward µs) by total, largest first: every module the time was
        spent in (a module includes its submodules' time; a node computing nodes of several modules counts
        on each); "(top level)" for time in no module: the profiled function's (or module's) own code.
        Paths as Dynamo's ``nn_module_stack`` writes them (``L['self'].proj``): eager from the node's
        ``modules``, compiled from its Dynamo nodes' ``nn_module_stack`` in ``capture``."""
        frames = {f.compile_id: f for f in (self.capture.frames if self.capture is not None else [])}
        rows: dict[str, list[Any]] = {}
        for n in self.nodes:
            mods: dict[str, str] = {p: t for p, t in n.modules}
            f = frames.get(n.compile_id)
            for d in n.dynamo_nodes or ([n.dynamo_node] if n.dynamo_node else []):
                node = next((x for x in f.graph.nodes if x.name == d), None) if f is not None and f.graph else None
                for e in (node.meta.get("nn_module_stack") if node is not None else None) or []:
                    if isinstance(e, (list, tuple)) and len(e) >= 2:
                        mods.setdefault(str(e[0]), str(e[1]))
            for path, typ in (mods or {"(top level)": ""}).items():
                row = rows.setdefault(path, [path, typ, 0.0, 0.0])
                row[3 if n.graph == "backward" else 2] += n.self_us
        return sorted((tuple(r) for r in rows.values()), key=lambda r: -(r[2] + r[3]))  # type: ignore[misc]

    def by_node(self, graph: str = "") -> dict[str, float]:
        """``{"<compile id> <graph>.<node>": self µs}``, largest first; ``graph`` keeps one graph kind."""
        pairs = [(f"{n.compile_id} {n.graph}.{n.node}", n.self_us) for n in self.nodes if not graph or n.graph == graph]
        return dict(sorted(pairs, key=lambda p: -p[1]))

    def table(self, top: int = 10) -> str:
        """The ``top`` source lines by time per step, then what was not attributed."""
        per = max(self.steps, 1)
        lines = [f"Profile of {self.fn or '?'} ({self.backend}): {self.total_us / per / 1000:.3f} ms per step "
                 f"over {self.steps} step(s), {self._share(self.attributed_us)} on "
                 + ("user lines" if self.backend == "eager" else "graph nodes"),
                 f"{'forward ms':>11} {'backward ms':>12}  line"]
        for r in self.by_line()[:top]:
            where = f"{r.file.rsplit('/', 1)[-1]}:{r.line}  {r.code}" if r.file else r.code
            shared = f"  (shared: {r.shared_us / per / 1000:.3f} ms)" if r.shared_us else ""
            lines.append(f"{r.forward_us / per / 1000:>11.3f} {r.backward_us / per / 1000:>12.3f}  {where}{shared}")
        rest = sorted(self.unattributed.items(), key=lambda kv: -kv[1])
        if rest:
            lines.append(f"not on a {'user line' if self.backend == 'eager' else 'graph node'}: {sum(v for _, v in rest) / per / 1000:.3f} ms per step, largest: "
                         + ", ".join(f"{k} {v / per / 1000:.3f} ms" for k, v in rest[:3]))
        lines.extend(f"? {p}" for p in self.problems)
        return "\n".join(lines)

    def _share(self, us: float) -> str:
        return f"{100 * us / self.total_us:.1f} %" if self.total_us else "0 %"

    def __repr__(self) -> str:
        return (f"Profile({self.fn!r}, {self.backend}, {self.steps} steps, {self.total_us / max(self.steps, 1) / 1000:.3f} "
                f"ms/step, {self._share(self.attributed_us)} attributed)")

    def __str__(self) -> str:
        return self.table()

    def to_json(self) -> str:
        """JSON text; ``Profile.from_json`` reads it back (the Capture included)."""
        data = asdict(self) | {"capture": None}
        data["capture"] = json.loads(self.capture.to_json()) if self.capture is not None else None
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> "Profile":
        try:
            data: dict[str, Any] = json.loads(text)
            cap = data.pop("capture", None)
            nodes = [NodeTime(**(n | {"also": [SourceLine(**s) for s in n.get("also", [])]}))
                     for n in data.pop("nodes", [])]
            prof = cls(**data, nodes=nodes)
        except (ValueError, TypeError) as e:
            raise ValueError(f"not a dynascope profile: {e}") from None
        prof.capture = Capture.from_json(json.dumps(cap)) if cap is not None else None
        return prof
