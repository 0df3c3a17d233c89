"""The HOP subgraph tree of one Dynamo output graph: bodies, their inputs, node roles.

Invariant: the tree is read from the GraphModule Dynamo handed to the backend (bodies are its
submodules, called by HOP nodes through get_attr); speculation records only decide *why* a
body input exists (operand vs lifted), never which inputs exist or where they come from.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
import torch.fx

from tracer._torch.body_inputs import call_feeds
from tracer._torch.fx_graph import graph_from_fx
from tracer._torch.graph_passes import root_code
from tracer._torch.subtracer import SpecRecord
from tracer._torch.unknowns import unknown
from tracer.hop_feeds import Feed
from tracer.model import CallSite, Graph, Node, Subgraph, SubgraphInput
from tracer.root_roles import root_role

__all__ = ["BodyInfo", "walk_bodies", "convert_tree"]


@dataclass(eq=False)
class BodyInfo:
    name: str  # qualified module name
    hop: str
    parent: str
    call_node: torch.fx.Node  # the first call of the body in its parent graph
    module: torch.fx.GraphModule
    feeds: list[Feed] = field(default_factory=list)  # per placeholder at call_node; [] when unknown (a problem says why)
    sites: list[tuple[torch.fx.Node, list[Feed]]] = field(default_factory=list)  # every call, graph order


def _hop_target_name(target: Any) -> str:
    try:
        return str(target.name())
    except Exception as e:  # except: records a problem (named by its __name__)
        unknown(f"the name of HOP {target!r}", e)
        return str(getattr(target, "__name__", target))


def _flatten(a: Any, out: list[Any]) -> None:
    if isinstance(a, (list, tuple)):
        for x in a:
            _flatten(x, out)
    elif isinstance(a, dict):
        for x in a.values():
            _flatten(x, out)
    else:
        out.append(a)


def _submodule(gm: torch.nn.Module, target: str) -> Any:
    try:
        return gm.get_submodule(target)
    except AttributeError:  # not a submodule (a parameter, a constant): not a body
        return None


def is_hop_call(n: torch.fx.Node) -> bool:
    from torch._ops import HigherOrderOperator

    return n.op == "call_function" and isinstance(n.target, HigherOrderOperator)


def walk_bodies(gm: torch.fx.GraphModule, problems: list[str]) -> tuple[list[BodyInfo], dict[int, list[str]]]:
    """Every HOP body reachable from ``gm``, parents before children, with what each call feeds
    it (See Note [How each HOP calls its bodies] in tracer/hop_feeds.py); and
    id(HOP call node) -> qualified names of the bodies it calls. A body called from several nodes
    (``invoke_subgraph`` of one ``nested_compile_region``) is one BodyInfo with several sites."""
    out: list[BodyInfo] = []
    by_name: dict[str, BodyInfo] = {}
    calls: dict[int, list[str]] = {}
    queue: list[tuple[str, torch.fx.GraphModule]] = [("", gm)]
    while queue:
        qual, mod = queue.pop(0)
        for n in mod.graph.nodes:
            if not is_hop_call(n):
                continue
            flat: list[Any] = []
            _flatten(n.args, flat)
            _flatten(n.kwargs, flat)
            bodies = [
                a for a in flat
                if isinstance(a, torch.fx.Node) and a.op == "get_attr"
                and isinstance(_submodule(mod, a.target), torch.fx.GraphModule)
            ]
            hop = _hop_target_name(n.target)
            for index, a in enumerate(bodies):
                body = _submodule(mod, a.target)
                name = f"{qual}.{a.target}" if qual else str(a.target)
                calls.setdefault(id(n), []).append(name)
                phs = [p for p in body.graph.nodes if p.op == "placeholder"]
                feeds, why = call_feeds(n, hop, index, name, len(phs), mod)
                problems.extend(why)
                if name in by_name:
                    by_name[name].sites.append((n, feeds))
                    continue
                info = BodyInfo(name, hop, qual, n, body, feeds, [(n, feeds)])
                by_name[name] = info
                out.append(info)
                queue.append((name, body))
    return out, calls


def _value(node: torch.fx.Node) -> Any:
    return node.meta.get("example_value", node.meta.get("val"))


def _is_symbolic(v: Any) -> bool:
    return isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool))


# Note [Operand or lifted]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo builds most bodies with set_subgraph_inputs="automatic": the user's operands are *not*
# made placeholders up front; they are lifted on first use exactly like closure variables, and
# placeholders end up in first-use order. So neither position nor SubgraphTracer.lifted_freevars
# tells operands from free variables. We classify by what the user passed: the speculation
# record keeps the fx nodes and Sources behind the whole pytree of the HOP's sub_args (Note
# [Operands through the pytree] in tracer/_torch/subtracer.py). A body placeholder is an
# "operand" if it was made from sub_args directly (manual modes) or if the parent node feeding
# it is, or was itself lifted from (following sources up the tree), one of those nodes or a
# graph input whose Source is one of those Sources or reached from one through pytree steps
# (attribute, item, dict item: ``L['p'].a`` from ``L['p']``; never a size or other property).
# Otherwise it is "lifted_symbol" when its value is a SymInt/SymFloat/SymBool (a free symbol
# bound with a tensor: torch/_dynamo/output_graph.py
# SubgraphTracer._lift_basic_symbols) and "lifted_freevar" for everything else. A placeholder the HOP
# feeds itself is "hop_supplied" whatever the record says (Note [Inputs the HOP supplies]).
def _classify(ph: torch.fx.Node, feed: Optional[Feed], spec: Optional[SpecRecord],
              lifted_from: dict[torch.fx.Node, Optional[torch.fx.Node]]) -> Optional[str]:
    """The input kind of ``ph``; None when it is unknown (no speculation record for the body)."""
    if feed is not None and feed.supplied:
        return "hop_supplied"
    if spec is None:
        return None
    if ph in spec.explicit_nodes or (ph.graph is not spec.graph and ph.name in spec.explicit_names):
        return "operand"
    operands = set(spec.operand_nodes)
    node, hops = feed.node if feed is not None else None, 0
    while node is not None and hops < 64:
        if node in operands or _reached_from(node, spec.operand_sources):
            return "operand"
        node, hops = lifted_from.get(node), hops + 1
    return "lifted_symbol" if _is_symbolic(_value(ph)) else "lifted_freevar"


def _reached_from(node: torch.fx.Node, sources: list[Any]) -> bool:
    """True if ``node`` is a graph input read from one of ``sources`` through pytree steps."""
    from torch._dynamo.source import AttrSource, CellContentsSource, DictGetItemSource, GetItemSource

    if not sources or node.op != "placeholder":
        return False
    src = getattr(node.meta.get("grapharg"), "source", None)
    while src is not None:
        if any(src == s for s in sources):
            return True
        steps = isinstance(src, (AttrSource, GetItemSource, DictGetItemSource))
        src = src.base if steps and not isinstance(src, CellContentsSource) else None
    return False


def _graph_arg_source(node: torch.fx.Node) -> str:
    ga = node.meta.get("grapharg")
    src = getattr(ga, "source", None)
    if src is None:
        return ""
    name = getattr(src, "name", "")
    try:
        return str(name() if callable(name) else name)
    except Exception as e:  # except: records a problem (source "")
        unknown(f"the source of graph input {node.name!r}", e)
        return ""


def _root_role(node: torch.fx.Node, arg_names: set[str]) -> str:
    """Role of a root-graph placeholder: :func:`tracer.root_roles.root_role` (the policy a loaded log
    uses too) on its GraphArg's source, with the frame's argument names from its code object."""
    ga = node.meta.get("grapharg")
    try:
        example = getattr(ga, "example", None)
    except Exception as e:  # except: records a problem (then not known to be a Parameter)
        unknown(f"the example value of graph input {node.name!r}", e)
        example = None
    return root_role(_graph_arg_source(node), parameter=isinstance(example, torch.nn.Parameter),
                     symbolic=_is_symbolic(_value(node)), arg_names=arg_names)


def _arg_names(code: Optional[types.CodeType]) -> set[str]:
    if code is None:
        return set()
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    return set(code.co_varnames[:n])


# Note [Matching speculations to bodies]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most HOPs install the very fx.Graph the SubgraphTracer built, so a body and its speculation
# match by graph identity. A few rebuild the graph before installing it (autograd.Function's
# fwd/bwd); those we match to the first unused successful speculation of the frame with the same
# placeholder names. A body with no match keeps its inputs and sources, but whether each is an
# operand or lifted is unknown: kind "unknown", and the frame's problems say so (Note [Operand or lifted]).
def _match_specs(bodies: list[BodyInfo], specs: list[SpecRecord]) -> dict[str, SpecRecord]:
    by_graph: dict[int, SpecRecord] = {}
    for s in specs:
        if s.ok and s.graph is not None:
            by_graph[id(s.graph)] = s  # the latest successful speculation that built this graph
    out: dict[str, SpecRecord] = {}
    for b in bodies:
        s = by_graph.get(id(b.module.graph))
        if s is not None:
            out[b.name] = s
    used = {id(s) for s in out.values()}
    for b in bodies:
        if b.name in out:
            continue
        names = [p.name for p in b.module.graph.nodes if p.op == "placeholder"]
        for s in specs:
            if s.ok and id(s) not in used and s.placeholder_names == names:
                out[b.name] = s
                used.add(id(s))
                break
    return out


def convert_tree(gm: torch.fx.GraphModule, specs: list[SpecRecord], code: Optional[types.CodeType],
                 problems: Optional[list[str]] = None) -> tuple[Graph, dict[str, Subgraph], dict[int, str]]:
    """Root Graph, subgraphs by qualified name, and id(SpecRecord) -> qualified name of its body.

    What could not be known exactly (an input's source or kind) is appended to ``problems``
    (the frame's ``problems``), one string each; the record then says "" / "unknown" for it.
    """
    problems = problems if problems is not None else []
    for s in specs:
        problems.extend(s.problems)
    bodies, calls = walk_bodies(gm, problems)
    matched = _match_specs(bodies, specs)
    spec_names = {id(s): name for name, s in matched.items()}

    lifted_from: dict[torch.fx.Node, Optional[torch.fx.Node]] = {}
    subgraphs: dict[str, Subgraph] = {}
    arg_names = _arg_names(code)

    root_roles = {}
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            root_roles[n.name] = _root_role(n, arg_names)
    root = graph_from_fx(gm, "", role_of=_role_fn(gm.graph, root_roles, calls),
                         code=root_code(gm))  # Note [Dynamo passes after the output graph is logged]
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            src = _graph_arg_source(n)
            if src:
                root.node(n.name).meta["graph_arg_source"] = src

    for b in bodies:
        sg = _subgraph(b, matched.get(b.name), lifted_from, calls, problems)
        subgraphs[b.name] = sg
    return root, subgraphs, spec_names


def _subgraph(b: BodyInfo, spec: Optional[SpecRecord], lifted_from: dict[torch.fx.Node, Optional[torch.fx.Node]],
              calls: dict[int, list[str]], problems: list[str]) -> Subgraph:
    phs = [p for p in b.module.graph.nodes if p.op == "placeholder"]
    feeds: list[Optional[Feed]] = list(b.feeds) if b.feeds else [None] * len(phs)
    inputs: list[SubgraphInput] = []
    roles: dict[str, str] = {}
    unknown: list[str] = []
    for ph, feed in zip(phs, feeds, strict=True):
        src = feed.node if feed is not None else None
        lifted_from[ph] = src
        kind = _classify(ph, feed, spec, lifted_from)
        if kind is None:  # no record, not a guess: see Note [Matching speculations to bodies]
            unknown.append(ph.name)
            kind = "unknown"
        roles[ph.name] = kind
        inputs.append(SubgraphInput(name=ph.name, kind=kind, source=src.name if src is not None else "",
                                    supplied=feed.supplied if feed is not None else ""))
    if unknown:
        problems.append(f"body {b.name!r} ({b.hop}): no speculation record matched it, so whether "
                        f"{unknown} are operands or lifted is unknown (kind 'unknown')")
    graph = graph_from_fx(b.module, b.name, role_of=_role_fn(b.module.graph, roles, calls))
    for i, feed in zip(inputs, feeds, strict=True):
        i.meta = {k: v for k, v in graph.node(i.name).meta.items() if k not in ("stack_trace", "source")}
        if feed is not None and feed.constant:
            i.meta["constant"] = feed.constant  # the call passes this value, not a node
    sites = [CallSite(node=n.name, sources=[f.node.name if f.node is not None else "" for f in fs] if fs else [""] * len(phs))
             for n, fs in b.sites]
    return Subgraph(name=b.name, hop=b.hop, parent=b.parent, call_node=b.call_node.name, graph=graph,
                    inputs=inputs, call_sites=sites)


def _role_fn(fx_graph: torch.fx.Graph, placeholder_roles: dict[str, str], calls: dict[int, list[str]]):
    by_name = {n.name: n for n in fx_graph.nodes}

    def role_of(node: Node) -> Optional[str]:
        fx_node = by_name.get(node.name)
        if fx_node is None:
            return None
        if node.op == "placeholder":
            return placeholder_roles.get(node.name)
        if is_hop_call(fx_node):
            node.calls = list(calls.get(id(fx_node), []))
            return "hop"
        return None

    return role_of
