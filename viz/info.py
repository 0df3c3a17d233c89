"""``viz.node_info``: everything the inspector shows about one node, as a JSON-friendly dict.

Invariant: reads only ``tracer.model``; the dict holds only str/int/float/bool/None/list/dict, so it can
cross to a browser as is. Lifted inputs are followed up through ``SubgraphInput.source`` to the node that
binds the value (Note [Lifted chain]).
"""

from __future__ import annotations

import re
from typing import Any

from tracer.model import Frame, Graph, format_meta
from viz.markup import human_bytes, user_line_text

__all__ = ["AOT_GRAPHS", "frame_graph", "graph_info", "lifted_chain", "node_info"]

AOT_GRAPHS = ("joint", "forward", "backward", "inference")


def frame_graph(frame: Frame, graph_name: str) -> Graph:
    """The graph ``graph_name`` of ``frame``: "" (root), a subgraph's qualified name, or "aot.forward" etc."""
    if graph_name.startswith("aot.") and frame.aot is not None:
        g = getattr(frame.aot, graph_name[4:], None) if graph_name[4:] in AOT_GRAPHS else None
        if isinstance(g, Graph):
            return g
    graphs = frame.graphs()
    if graph_name in graphs:
        return graphs[graph_name]
    choices = list(graphs)
    if frame.aot is not None:
        choices += [f"aot.{k}" for k in AOT_GRAPHS if getattr(frame.aot, k) is not None]
    raise KeyError(f"no graph {graph_name!r} in frame {frame.compile_id} (graphs: {choices})")


# Note [Lifted chain]
# ~~~~~~~~~~~~~~~~~~~
# A free variable used two bodies deep is lifted into *every* enclosing SubgraphTracer
# (torch/_dynamo/output_graph.py SubgraphTracer.lift_tracked_freevar_to_input recurses into its parent):
# the inner body's placeholder is fed by a placeholder of the outer body, which is fed by the node in
# the root graph that computes the value. Each SubgraphInput records its feeder in the parent graph
# (``source``), so we walk parent by parent until the feeder is not itself a body placeholder (or the
# source is unknown). The chain starts at the node asked about and ends where the value is bound.
def lifted_chain(frame: Frame, graph_name: str, node_name: str) -> list[dict[str, Any]]:
    """[{graph, node, kind}] from this body placeholder up to the node that binds its value."""
    chain: list[dict[str, Any]] = []
    graph, name = graph_name, node_name
    seen: set[tuple[str, str]] = set()
    while graph in frame.subgraphs and (graph, name) not in seen:
        seen.add((graph, name))
        sg = frame.subgraphs[graph]
        inp = next((i for i in sg.inputs if i.name == name), None)
        if inp is None:
            break
        chain.append({"graph": graph, "node": name, "kind": inp.kind})
        if not inp.source:
            chain.append({"graph": sg.parent, "node": "", "kind": "unknown"})
            return chain
        graph, name = sg.parent, inp.source
    if chain:
        try:
            n = frame_graph(frame, graph).node(name)
            kind = n.role if n.op == "placeholder" else n.op
        except KeyError:
            kind = "unknown"
        chain.append({"graph": graph, "node": name, "kind": kind})
    return chain


def _source(meta: dict[str, Any]) -> dict[str, Any]:
    src = meta.get("source")
    if not isinstance(src, dict):
        return {}
    out = {"source": f"{src.get('file', '?')}:{src.get('line', '?')}"}
    if src.get("fn"):
        out["source"] += f" in {src['fn']}"
    if src.get("code"):
        out["code_line"] = str(src["code"]).strip()
    return out


def node_info(frame: Frame, graph_name: str, node_name: str) -> dict[str, Any]:
    """The inspector's facts about ``node_name`` in graph ``graph_name`` of ``frame``.

    Keys: name, graph, op, role, target, value (``format_meta``), args, kwargs, inputs, users, calls
    (HOP bodies), source ("file:line in fn") and code_line, nn_module (innermost path) and
    nn_module_type, nn_module_stack (paths), and for a body placeholder: input_kind, lifted_from
    ({graph, node} in the parent) and lifted_chain (Note [Lifted chain]); for a root node compiled by
    Inductor, kernels ("name (aot id)" of each kernel that computes it); for a value the forward saves
    for the backward, in an AOT graph, saved_for_backward (its size and origin); finally meta (all of it).
    Raises KeyError naming the valid graphs or nodes.
    """
    return _facts(frame, graph_name, frame_graph(frame, graph_name).node(node_name), _Lookups(frame, graph_name))


def graph_info(frame: Frame, graph_name: str) -> dict[str, dict[str, Any]]:
    """:func:`node_info` of every node of graph ``graph_name``, by node name in graph order, its lookups
    in the frame (kernels, saved values, a body's inputs) made once for the graph (the static report)."""
    graph, lookups = frame_graph(frame, graph_name), _Lookups(frame, graph_name)
    return {n.name: _facts(frame, graph_name, n, lookups) for n in graph.nodes}


class _Lookups:
    """What :func:`node_info` finds in ``frame`` for graph ``graph_name``'s nodes, by node name (the first
    of each name, as a search in order finds it)."""

    __slots__ = ("kernels", "saved", "body", "inputs")

    def __init__(self, frame: Frame, graph_name: str) -> None:
        self.kernels: dict[str, list[str]] = {}
        if graph_name == "":
            for g in frame.inductor:
                for k in g.kernels:
                    for d in dict.fromkeys(k.dynamo_nodes):
                        self.kernels.setdefault(d, []).append(f"{k.name} ({g.aot_id})")
        self.saved = ({s.name: s for s in reversed(frame.aot.saved)}
                      if graph_name in ("aot.forward", "aot.backward", "aot.joint") and frame.aot is not None else {})
        self.body = frame.subgraphs.get(graph_name)
        self.inputs = {i.name: i for i in reversed(self.body.inputs)} if self.body is not None else {}


def _facts(frame: Frame, graph_name: str, n: Any, lookups: _Lookups) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": n.name,
        "graph": graph_name,
        "op": n.op,
        "role": n.role,
        "target": n.target,
        "value": format_meta(n.meta),
        "args": list(n.args),
        "kwargs": dict(n.kwargs),
        "inputs": list(n.inputs),
        "users": list(n.users),
    }
    if n.calls:
        info["calls"] = list(n.calls)
    info.update(_source(n.meta))
    raw = n.meta.get("nn_module_stack") or n.meta.get("fwd_nn_module_stack") or []
    stack = [e for e in raw if isinstance(e, (list, tuple)) and len(e) >= 2]
    if stack:
        info["nn_module"] = str(stack[-1][0])
        info["nn_module_type"] = str(stack[-1][1])
        info["nn_module_stack"] = [str(e[0]) for e in stack]
    elif isinstance(n.meta.get("log_module"), dict):  # Note [Groups inferred from a log] in viz/module_paths.py
        lm = n.meta["log_module"]
        info["nn_module"] = str(lm.get("path", ""))
        how = (f"reads {', '.join(map(str, lm.get('reads', [])))}" if lm.get("via") == "parameter"
               else f"line {lm.get('line')} ran in it only" if lm.get("via") == "line"
               else f"traced between {lm.get('after')} and {lm.get('before')}")
        info["nn_module_type"] = f"inferred from log: {how}"
    if n.op == "placeholder" and lookups.body is not None:
        sg = lookups.body
        inp = lookups.inputs.get(n.name)
        if inp is not None:
            info["input_kind"] = inp.kind
            if inp.kind == "hop_supplied":  # the HOP makes the value when it runs the body
                info["supplied"] = f"by {sg.hop}: {inp.supplied or '?'}"
                if inp.source:  # made from a parent value: a slice of xs, a carry's initial value
                    info["derived_from"] = {"graph": sg.parent, "node": inp.source}
            else:
                info["lifted_from"] = {"graph": sg.parent, "node": inp.source}
                info["lifted_chain"] = lifted_chain(frame, graph_name, n.name)
    for key in ("partition", "from"):
        if key in n.meta:
            info[key] = n.meta[key]
    symbols = _symbols_of(frame, n.meta)
    if symbols:
        info["symbols"] = symbols
    kernels = lookups.kernels.get(n.name)
    if kernels:
        info["kernels"] = list(kernels)
    if lookups.saved:
        saved = lookups.saved.get(n.name)
        if saved is not None:  # the partitioner names the backward's placeholder after the forward value
            info["saved_for_backward"] = f"{human_bytes(saved.nbytes)}, {saved.origin}"
    info["meta"] = dict(n.meta)
    return info


def _symbols_of(frame: Frame, meta: dict[str, Any]) -> list[str]:
    """Each ShapeEnv symbol in the node's sizes: what it stands for, where it was created, and every
    specialization of it (Frame.symbols / Frame.specializations, from ShapeEnv's own records)."""
    if not frame.symbols:
        return []
    sizes = [*meta.get("shape", []), meta.get("value", "")]
    text = " ".join(str(s) for s in sizes if isinstance(s, str))
    out = []
    for sym in frame.symbols:
        if not re.search(rf"\b{re.escape(sym.name)}\b", text):
            continue
        line = f"{sym.name} = {sym.source or 'unbacked'}"
        if sym.user_stack:
            line += f", created at {user_line_text(sym)}"
        for sp in frame.specializations:
            if sp.symbol == sym.name:
                line += f"; {sp.kind} {sp.value}" + (f" at {sp.user_line}" if sp.user_line is not None else "")
        out.append(line)
    return out
