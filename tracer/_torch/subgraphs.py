"""The HOP subgraph tree of one Dynamo output graph, live: the fx reader and the kind policy that
:mod:`tracer.hop_tree` builds it with, and the root graph's placeholder roles.

Invariant: the tree is read from the GraphModule Dynamo handed to the backend (bodies are its
submodules, called by HOP nodes through get_attr); speculation records only decide *why* a
body input exists (operand vs lifted), never which inputs exist or where they come from.
"""

from __future__ import annotations

import types
from typing import Any, Callable, Optional

import torch
import torch.fx

from tracer._torch.body_inputs import call_feeds
from tracer._torch.fx_graph import graph_from_fx
from tracer._torch.graph_passes import root_code
from tracer._torch.subtracer import SpecRecord
from tracer._torch.unknowns import unknown
from tracer.hop_feeds import Feed, leaves
from tracer.hop_tree import Body, HopCall, KindPolicy, build_subgraphs, walk
from tracer.model import Graph, Node, Subgraph
from tracer.root_roles import root_role

__all__ = ["FxGraph", "convert_tree", "is_hop_call"]


def _hop_target_name(target: Any) -> str:
    try:
        return str(target.name())
    except Exception as e:  # except: records a problem (named by its __name__)
        unknown(f"the name of HOP {target!r}", e)
        return str(getattr(target, "__name__", target))


def _submodule(gm: torch.nn.Module, target: str) -> Any:
    try:
        return gm.get_submodule(target)
    except AttributeError:  # not a submodule (a parameter, a constant): not a body
        return None


def is_hop_call(n: torch.fx.Node) -> bool:
    from torch._ops import HigherOrderOperator

    return n.op == "call_function" and isinstance(n.target, HigherOrderOperator)


class FxGraph:
    """One GraphModule of the tree for :mod:`tracer.hop_tree`: its HOP calls are the nodes whose
    target is a HigherOrderOperator, their bodies the ``get_attr`` arguments that read a GraphModule
    submodule (at any depth of the arguments' lists, tuples and dicts)."""

    def __init__(self, module: torch.fx.GraphModule, name: str, build: Optional[Callable[[], Graph]] = None) -> None:
        self.module = module
        self.name = name
        self.fx_placeholders = [p for p in module.graph.nodes if p.op == "placeholder"]
        self._build = build or (lambda: graph_from_fx(module, name))
        self._graph: Optional[Graph] = None

    @property
    def placeholders(self) -> list[str]:
        return [p.name for p in self.fx_placeholders]

    @property
    def graph(self) -> Graph:
        if self._graph is None:  # built after the walk, so its problems follow the walk's
            self._graph = self._build()
        return self._graph

    def hop_calls(self) -> list[HopCall]:
        out = []
        for n in self.module.graph.nodes:
            if not is_hop_call(n):
                continue
            bodies = tuple(str(a.target) for a in leaves([n.args, n.kwargs])
                           if isinstance(a, torch.fx.Node) and a.op == "get_attr"
                           and isinstance(_submodule(self.module, a.target), torch.fx.GraphModule))
            out.append(HopCall(n.name, _hop_target_name(n.target), bodies, n))
        return out

    def body(self, attr: str, name: str) -> FxGraph:
        return FxGraph(_submodule(self.module, attr), name)

    def feeds(self, call: HopCall, index: int, body: str, n: int) -> tuple[list[Feed], list[str]]:
        return call_feeds(call.ref, call.hop, index, body, n, self.module)

    def leaf_name(self, leaf: Any) -> str:
        return str(leaf.name)


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
def _classify(ph: torch.fx.Node, spec: Optional[SpecRecord], fed_from: list[torch.fx.Node]) -> Optional[str]:
    """The input kind of ``ph``, an input the HOP does not supply, fed by the chain ``fed_from``
    (Note [Where a body input comes from] in tracer/hop_tree.py); None when it is unknown (no
    speculation record for the body)."""
    if spec is None:
        return None
    if ph in spec.explicit_nodes or (ph.graph is not spec.graph and ph.name in spec.explicit_names):
        return "operand"
    operands = set(spec.operand_nodes)
    if any(node in operands or _reached_from(node, spec.operand_sources) for node in fed_from):
        return "operand"
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
def _match_specs(bodies: list[Body], specs: list[SpecRecord]) -> dict[str, SpecRecord]:
    by_graph: dict[int, SpecRecord] = {}
    for s in specs:
        if s.ok and s.graph is not None:
            by_graph[id(s.graph)] = s  # the latest successful speculation that built this graph
    out: dict[str, SpecRecord] = {}
    for b in bodies:
        s = by_graph.get(id(b.reader.module.graph))
        if s is not None:
            out[b.name] = s
    used = {id(s) for s in out.values()}
    for b in bodies:
        if b.name in out:
            continue
        names = b.reader.placeholders
        for s in specs:
            if s.ok and id(s) not in used and s.placeholder_names == names:
                out[b.name] = s
                used.add(id(s))
                break
    return out


def _policy(matched: dict[str, SpecRecord]) -> KindPolicy:
    """Kinds from the speculation records (Note [Operand or lifted]); a body no record matched has
    inputs of kind "unknown" and a problem (Note [Matching speculations to bodies])."""

    def kind(b: Body, i: int, fed_from: list[Any]) -> Optional[str]:
        return _classify(b.reader.fx_placeholders[i], matched.get(b.name), fed_from)

    def why(b: Body, names: list[str]) -> str:
        return (f"body {b.name!r} ({b.hop}): no speculation record matched it, so whether "
                f"{names} are operands or lifted is unknown (kind 'unknown')")

    return KindPolicy(kind, why)


def convert_tree(gm: torch.fx.GraphModule, specs: list[SpecRecord], code: Optional[types.CodeType],
                 problems: Optional[list[str]] = None) -> tuple[Graph, dict[str, Subgraph], dict[int, str]]:
    """Root Graph, subgraphs by qualified name, and id(SpecRecord) -> qualified name of its body.

    What could not be known exactly (an input's source or kind) is appended to ``problems``
    (the frame's ``problems``), one string each; the record then says "" / "unknown" for it.
    """
    problems = problems if problems is not None else []
    for s in specs:
        problems.extend(s.problems)
    root = FxGraph(gm, "", build=lambda: _root_graph(gm, code))
    tree = walk(root, problems)
    matched = _match_specs(tree.bodies, specs)
    subgraphs = build_subgraphs(tree, _policy(matched), problems)
    return root.graph, subgraphs, {id(s): name for name, s in matched.items()}


def _root_graph(gm: torch.fx.GraphModule, code: Optional[types.CodeType]) -> Graph:
    """The root Graph with its placeholders' roles and the Sources Dynamo read them from."""
    arg_names = _arg_names(code)
    roles = {n.name: _root_role(n, arg_names) for n in gm.graph.nodes if n.op == "placeholder"}

    def role_of(node: Node) -> Optional[str]:
        return roles.get(node.name) if node.op == "placeholder" else None

    graph = graph_from_fx(gm, "", role_of=role_of,
                          code=root_code(gm))  # Note [Dynamo passes after the output graph is logged]
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            src = _graph_arg_source(n)
            if src:
                graph.node(n.name).meta["graph_arg_source"] = src
    return graph
