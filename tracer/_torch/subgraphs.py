"""The HOP subgraph tree of one Dynamo output graph: bodies, their inputs, node roles.

Invariant: the tree is read from the GraphModule Dynamo handed to the backend (bodies are its
submodules, called by HOP nodes through get_attr); speculation records only decide *why* a
body input exists (operand vs lifted), never which inputs exist or where they come from.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
import torch.fx

from tracer._torch.fx_graph import graph_from_fx
from tracer._torch.graph_passes import root_code
from tracer._torch.subtracer import SpecRecord
from tracer.model import Graph, Node, Subgraph, SubgraphInput

__all__ = ["BodyInfo", "walk_bodies", "convert_tree"]


@dataclass(eq=False)
class BodyInfo:
    name: str  # qualified module name
    hop: str
    parent: str
    call_node: torch.fx.Node
    module: torch.fx.GraphModule
    sources: list[Optional[torch.fx.Node]] = field(default_factory=list)  # per placeholder: the parent node feeding it


def _hop_target_name(target: Any) -> str:
    try:
        return str(target.name())
    except Exception:
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
    except Exception:
        return None


def is_hop_call(n: torch.fx.Node) -> bool:
    from torch._ops import HigherOrderOperator

    return n.op == "call_function" and isinstance(n.target, HigherOrderOperator)


# Note [Body operands by position]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every HOP Dynamo emits passes a body's inputs after the body itself: wrap(body, *xs),
# cond(pred, t, f, (xs)), map_impl(body, xs, extra), invoke_subgraph(body, id, *xs),
# tag_activation_checkpoint(body, *xs), while_loop(c, b, carried, extra), ... So the fx Nodes
# among the flattened arguments after the last body are the body's inputs in placeholder order.
# When the counts differ (a HOP with extra non-tensor placeholders), we align from the end,
# where Dynamo puts the lifted inputs (Note [Lifted inputs ordering] in output_graph.py), and
# leave the unmatched leading placeholders with source "".
# Bodies whose placeholders are not fed by the parent graph: (hop, index of the body among the
# call's bodies). autograd_function_apply's backward body receives the gradients at run time.
_NOT_FED_BY_PARENT = {("autograd_function_apply", 1)}

# Bodies fed by one argument of the call, after inputs the HOP makes itself: (hop, body index)
# -> (argument position, keyword). flex_attention's score_mod gets (score, b, h, q_idx, kv_idx)
# from the kernel and then score_mod_other_buffers; its mask_mod gets (b, h, q_idx, kv_idx) and
# then mask_mod_other_buffers.
_FED_BY_ARGUMENT = {
    ("flex_attention", 0): (7, "score_mod_other_buffers"),
    ("flex_attention", 1): (8, "mask_mod_other_buffers"),
}


def _fed_by_argument(call: torch.fx.Node, position: int, keyword: str, n: int) -> list[Optional[torch.fx.Node]]:
    arg = call.args[position] if len(call.args) > position else call.kwargs.get(keyword, ())
    flat: list[Any] = []
    _flatten(arg, flat)
    fed = [a for a in flat if isinstance(a, torch.fx.Node)][-n:] if n else []
    return [None] * (n - len(fed)) + fed


def _sources(call: torch.fx.Node, placeholders: list[torch.fx.Node], last_body: int, flat: list[Any]) -> list[Optional[torch.fx.Node]]:
    after = [a for a in flat[last_body + 1:] if isinstance(a, torch.fx.Node)]
    n = len(placeholders)
    if len(after) == n:
        return list(after)
    if len(after) > n:
        return list(after[len(after) - n:]) if n else []
    return [None] * (n - len(after)) + list(after)


def walk_bodies(gm: torch.fx.GraphModule) -> tuple[list[BodyInfo], dict[int, list[str]]]:
    """Every HOP body reachable from ``gm``, parents before children, with their input sources;
    and id(HOP call node) -> qualified names of the bodies it calls (a body may be called twice)."""
    out: list[BodyInfo] = []
    calls: dict[int, list[str]] = {}
    seen: set[str] = set()
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
                (i, a) for i, a in enumerate(flat)
                if isinstance(a, torch.fx.Node) and a.op == "get_attr"
                and isinstance(_submodule(mod, a.target), torch.fx.GraphModule)
            ]
            if not bodies:
                continue
            last = bodies[-1][0]
            hop = _hop_target_name(n.target)
            for index, (_, a) in enumerate(bodies):
                body = _submodule(mod, a.target)
                name = f"{qual}.{a.target}" if qual else str(a.target)
                calls.setdefault(id(n), []).append(name)
                if name in seen:
                    continue
                seen.add(name)
                phs = [p for p in body.graph.nodes if p.op == "placeholder"]
                if (hop, index) in _NOT_FED_BY_PARENT:
                    sources: list[Optional[torch.fx.Node]] = [None] * len(phs)
                elif (hop, index) in _FED_BY_ARGUMENT:
                    sources = _fed_by_argument(n, *_FED_BY_ARGUMENT[(hop, index)], len(phs))
                else:
                    sources = _sources(n, phs, last, flat)
                info = BodyInfo(name, hop, qual, n, body, sources)
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
# record keeps the fx nodes behind the HOP's sub_args. A body placeholder is an "operand" if it
# was made from sub_args directly (manual modes) or if the parent node feeding it is, or was
# itself lifted from (following sources up the tree), one of those nodes. Otherwise it is
# "lifted_symbol" when its value is a SymInt/SymFloat/SymBool (a free symbol bound with a
# tensor, seed 002) and "lifted_freevar" for everything else.
def _classify(ph: torch.fx.Node, source: Optional[torch.fx.Node], spec: Optional[SpecRecord],
              lifted_from: dict[torch.fx.Node, Optional[torch.fx.Node]]) -> tuple[str, bool]:
    """(kind, guessed): guessed is True when no speculation record was found for the body."""
    symbolic = _is_symbolic(_value(ph))
    if spec is None:
        return ("lifted_symbol" if symbolic else "operand"), True
    if ph in spec.explicit_nodes or (ph.graph is not spec.graph and ph.name in spec.explicit_names):
        return "operand", False
    operands = set(spec.operand_nodes)
    node, hops = source, 0
    while node is not None and hops < 64:
        if node in operands:
            return "operand", False
        node, hops = lifted_from.get(node), hops + 1
    return ("lifted_symbol" if symbolic else "lifted_freevar"), False


_LOCAL_ARG = re.compile(r"^L\['(?P<name>[^']+)'\](\[[^\]]+\])*$")


def _graph_arg_source(node: torch.fx.Node) -> str:
    ga = node.meta.get("grapharg")
    src = getattr(ga, "source", None)
    if src is None:
        return ""
    name = getattr(src, "name", "")
    try:
        return str(name() if callable(name) else name)
    except Exception:
        return ""


def _root_role(node: torch.fx.Node, arg_names: set[str]) -> str:
    """Role of a root-graph placeholder (Note [Closed sets of kinds] in tracer/model.py).

    A frame argument (``L['x']``, ``L['n']`` even as a SymInt, ``L['xs'][0]``) is an operand;
    a size symbol (``L['x'].size()[0]``) is a lifted symbol; parameters and buffers are params;
    globals, closure cells and module attributes are lifted free variables.
    """
    ga = node.meta.get("grapharg")
    try:
        example = getattr(ga, "example", None)
    except Exception:
        example = None
    src = _graph_arg_source(node)
    if isinstance(example, torch.nn.Parameter) or "._parameters[" in src or "._buffers[" in src:
        return "param"
    m = _LOCAL_ARG.match(src)
    if m and m.group("name") in arg_names:
        return "operand"
    if _is_symbolic(_value(node)):
        return "lifted_symbol"
    return "lifted_freevar"


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
# placeholder names. A body with no match keeps its inputs but their kinds are guessed (and the
# body's first node says so in ``meta["note"]``).
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


def convert_tree(gm: torch.fx.GraphModule, specs: list[SpecRecord], code: Optional[types.CodeType]
                 ) -> tuple[Graph, dict[str, Subgraph], dict[int, str]]:
    """Root Graph, subgraphs by qualified name, and id(SpecRecord) -> qualified name of its body."""
    bodies, calls = walk_bodies(gm)
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
        spec = matched.get(b.name)
        phs = [p for p in b.module.graph.nodes if p.op == "placeholder"]
        inputs: list[SubgraphInput] = []
        roles: dict[str, str] = {}
        guessed = False
        for ph, src in zip(phs, b.sources, strict=True):
            lifted_from[ph] = src
            kind, g = _classify(ph, src, spec, lifted_from)
            guessed = guessed or g
            roles[ph.name] = kind
            inputs.append(SubgraphInput(name=ph.name, kind=kind, source=src.name if src is not None else ""))
        graph = graph_from_fx(b.module, b.name, role_of=_role_fn(b.module.graph, roles, calls))
        for i in inputs:
            i.meta = {k: v for k, v in graph.node(i.name).meta.items() if k not in ("stack_trace", "source")}
        sg = Subgraph(name=b.name, hop=b.hop, parent=b.parent, call_node=b.call_node.name, graph=graph, inputs=inputs)
        if guessed:
            graph.nodes[0].meta.setdefault("note", "no speculation record for this body; input kinds guessed")
        subgraphs[b.name] = sg
    return root, subgraphs, spec_names


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
