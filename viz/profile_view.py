"""A Profile's views: tables of source lines, modules and nodes by time, and each drawn graph's time per node.

Invariant: reads ``tracer.model`` only (no torch); every number is the Profile's own (self times summed
over its steps, shown per step); a time no node is known to have spent stays in the unattributed table,
and a fused Inductor kernel's time is shown, whole, on each node, line and module it computes, marked
as shared (the model's rule, ``tracer.model.profile``). The static report colours each graph's nodes by
these times and its inspector shows them (:func:`graph_times`, :func:`time_facts`).
"""

from __future__ import annotations

from typing import Any

from tracer.model import Frame
from tracer.model.profile import Profile
from viz.markup import fragment, render
from viz.panels import table

__all__ = ["graph_times", "module_times", "profile_html", "time_facts"]


def _ms(us: float, steps: int) -> str:
    return f"{us / max(steps, 1) / 1000:.3f}"


def _of_frame(prof: Profile, frame: Frame) -> list[Any]:
    return [n for n in prof.nodes if n.compile_id == frame.compile_id]


def graph_times(prof: Profile, frame: Frame) -> dict[str, dict[str, float]]:
    """Per graph kind of :func:`viz.report_graphs.frame_graphs` ("root", "forward", "backward",
    "inference"): node name -> self µs. The root (Dynamo) graph gets the time of every AOT node or kernel
    computing each node (a fused kernel's on each of its nodes); an AOT graph its own nodes' time."""
    out: dict[str, dict[str, float]] = {}
    for n in _of_frame(prof, frame):
        if prof.backend == "aot_eager":
            kind = out.setdefault(n.graph, {})
            kind[n.node] = kind.get(n.node, 0.0) + n.self_us
        root = out.setdefault("root", {})
        for d in n.dynamo_nodes or ([n.dynamo_node] if n.dynamo_node else []):
            root[d] = root.get(d, 0.0) + n.self_us
    return out


def time_facts(prof: Profile, frame: Frame, kind: str, node: str) -> dict[str, Any]:
    """What the inspector adds for ``node`` of graph ``kind``: ``time`` (ms per step, forward and
    backward) and ``kernels`` (or AOT nodes) that spent it, each with its ms per step; {} when none."""
    mine = [n for n in _of_frame(prof, frame)
            if (kind == "root" and node in (n.dynamo_nodes or [n.dynamo_node]))
            or (kind != "root" and prof.backend == "aot_eager" and n.graph == kind and n.node == node)]
    if not mine:
        return {}
    fwd = sum(n.self_us for n in mine if n.graph != "backward")
    bwd = sum(n.self_us for n in mine if n.graph == "backward")
    shared = any(n.also or len(n.dynamo_nodes) > 1 for n in mine) and kind == "root"
    facts: dict[str, Any] = {"time": f"{_ms(fwd, prof.steps)} ms forward, {_ms(bwd, prof.steps)} ms backward per step"
                             + (" (shared with other nodes of a fused kernel)" if shared else "")}
    label = "kernels" if prof.backend == "inductor" else "ops"
    facts[label] = [f"{n.graph}.{n.node}: {_ms(n.self_us, prof.steps)} ms" + (f" ({', '.join(n.ops)})" if label == "ops" else "")
                    for n in sorted(mine, key=lambda n: -n.self_us)]
    return facts


def module_times(prof: Profile) -> list[tuple[str, str, float, float]]:
    """(module path, type, forward µs, backward µs) by total, largest first: :meth:`tracer.Profile.by_module`."""
    return prof.by_module()


def profile_html(prof: Profile, top: int = 20) -> str:
    """The profile's section: totals, source lines by time (forward + backward, shared part), modules
    by time, the ``top`` nodes or kernels, and the unattributed time by profiler event."""
    s = prof.steps
    lines = [[f"{r.file.rsplit('/', 1)[-1]}:{r.line}" if r.file else "?", r.code, _ms(r.total_us, s),
              _ms(r.forward_us, s), _ms(r.backward_us, s), _ms(r.shared_us, s) if r.shared_us else ""]
             for r in prof.by_line()]
    modules = [[p, t, _ms(fw + bw, s), _ms(fw, s), _ms(bw, s)] for p, t, fw, bw in module_times(prof)]
    what = "kernel" if prof.backend == "inductor" else "node"
    nodes = [[f"{n.compile_id} {n.graph}.{n.node}", _ms(n.self_us, s), ", ".join(n.dynamo_nodes),
              ", ".join(f"{ln}" for _, ln, _ in n.lines() if ln), ", ".join(list(n.ops)[:4])]
             for n in prof.nodes[:top]]
    rest = [[k, _ms(v, s)] for k, v in sorted(prof.unattributed.items(), key=lambda kv: -kv[1])[:top]]
    share = f"{100 * prof.attributed_us / prof.total_us:.1f} %" if prof.total_us else "0 %"
    return render(
        "profile.html.j2", prof=prof, per_step=_ms(prof.total_us, s), share=share,
        lines=fragment(table(["line", "code", "total ms", "forward ms", "backward ms", "of it shared ms"], lines)),
        modules=fragment(table(["module", "type", "total ms", "forward ms", "backward ms"], modules)),
        nodes=fragment(table([what, "ms", "Dynamo nodes", "lines", "ops"], nodes)),
        rest=fragment(table(["profiler event", "ms"], rest)),
    )
