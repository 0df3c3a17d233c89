"""Hooks on HOP body speculation (``speculate_subgraph*``): one record per SubgraphTracer run.

Invariant: the wrappers call the real functions with the same arguments and return their
result (or re-raise their exception) unchanged; they are installed for one capture only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch.fx

from tracer._torch.patching import Patches
from tracer._torch.releases import hook_point

__all__ = ["SpecRecord", "install_speculation_hooks", "compile_key", "hop_name_of", "SPECULATE_FUNCTIONS"]

# Note [Speculation hook point]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every HOP body is traced by ``speculate_subgraph`` or
# ``speculate_subgraph_with_auto_output_flattening`` (torch/_dynamo/variables/higher_order_ops.py),
# each of which opens a nested SubgraphTracer with ``OutputGraph.subtracer``. All callers look
# them up as globals of that module (tensor.py imports the name at call time), so replacing the
# two module attributes sees every speculation. From the call we keep:
#   sub_args        the VariableTrackers the HOP passes to the body: what the *user* passed
#                   (operands); see Note [Operand or lifted] in tracer/_torch/subgraphs.py
#   the result      (..., graph, lifted_freevars, ...): the body fx.Graph and the ordered map
#                   parent proxy -> body placeholder that SubgraphTracer.lifted_freevars built
#   an exception    the speculation failed (e.g. a graph break in the body): its message
SPECULATE_FUNCTIONS = ("speculate_subgraph", "speculate_subgraph_with_auto_output_flattening")
_HOP_MODULE = "torch._dynamo.variables.higher_order_ops"


def compile_key() -> tuple[Optional[tuple[int, int]], int]:
    """((frame_id, frame_compile_id), attempt) of the compile running now, (None, 0) outside one."""
    from torch._guards import CompileContext

    trace_id = CompileContext.current_trace_id()
    if trace_id is None:
        return None, 0
    cid = trace_id.compile_id
    return (cid.frame_id, cid.frame_compile_id), int(trace_id.attempt)


@dataclass(eq=False)
class SpecRecord:
    """One speculation while it is live; torch objects are dropped when the capture ends."""

    key: Optional[tuple[int, int]]
    attempt: int
    hop: str
    description: str
    depth: int
    ok: Optional[bool] = None
    reason: str = ""
    operand_nodes: list[torch.fx.Node] = field(default_factory=list)
    graph: Optional[torch.fx.Graph] = None
    lifted_nodes: list[torch.fx.Node] = field(default_factory=list)  # body placeholders, lifted_freevars order
    explicit_nodes: list[torch.fx.Node] = field(default_factory=list)  # body placeholders made from sub_args
    lifted_names: list[str] = field(default_factory=list)  # names of lifted_nodes when speculation ended
    placeholder_names: list[str] = field(default_factory=list)  # body placeholders when speculation ended
    explicit_names: list[str] = field(default_factory=list)  # names of explicit_nodes when speculation ended
    operand_sources: list[Any] = field(default_factory=list)  # Dynamo Sources of the VTs the user passed
    problems: list[str] = field(default_factory=list)  # what this record could not read, and why


def hop_name_of(source_target: Any, default: str = "") -> str:
    """The name of the HOP a SubgraphTracer traces a body for ("cond", "wrap", ...); ``default`` if none.

    One definition for ``Speculation.hop`` and the pause's ``TracerState.hop``, so both views agree.
    """
    if source_target is None:
        return default
    name = getattr(source_target, "name", None)
    if callable(name):
        try:
            return str(name())
        except Exception:  # except: display text only (the speculation's label: its __name__ below)
            pass
    return str(getattr(source_target, "__name__", source_target))


# Note [Operands through the pytree]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What the user passed to a HOP is any pytree: tensors inside dicts, nested tuples/lists, a
# registered dataclass, at any depth. After the real speculation returns we walk sub_args and
# sub_kwargs and keep, for every VariableTracker reached, its fx node (``maybe_fx_node``) and its
# Source (how Dynamo reads it from the frame). Containers: list/tuple items, ConstDictVariable
# values, and the attributes Dynamo recorded for a user object built inside the frame
# (SideEffects.store_attr_mutations, e.g. ``Pair(x, y)``). An object read from the frame (``p``,
# Source ``L['p']``) keeps its leaves nowhere in the VT: its leaves become graph inputs with
# Sources chained on ``L['p']`` (``L['p'].a``), which tracer/_torch/subgraphs.py matches (Note
# [Operand or lifted]). A LazyVariableTracker still unrealized after speculation was never read
# by the body, so no placeholder can come from it; we keep its Source only, never realize it
# (realizing would install guards and graph inputs Dynamo did not make).
def _operands(vts: Any, rec: SpecRecord, side_effects: Any) -> None:
    """Fill ``rec.operand_nodes`` / ``rec.operand_sources`` from a pytree of VariableTrackers."""
    from torch._dynamo.variables.dicts import ConstDictVariable
    from torch._dynamo.variables.lazy import LazyVariableTracker
    from torch._dynamo.variables.lists import BaseListVariable

    stack, seen = [vts], set()
    while stack:
        vt = stack.pop()
        if isinstance(vt, (list, tuple)):
            stack.extend(reversed(vt))
            continue
        if isinstance(vt, dict):
            stack.extend(reversed(list(vt.values())))
            continue
        if id(vt) in seen:
            continue
        seen.add(id(vt))
        source = getattr(vt, "source", None)
        if source is not None:
            rec.operand_sources.append(source)
        if isinstance(vt, LazyVariableTracker):
            if vt.is_realized():
                stack.append(vt.unwrap())
            continue
        if isinstance(vt, (BaseListVariable, ConstDictVariable)):  # tuples, lists, named tuples; dicts
            stack.append(list(vt.items) if isinstance(vt, BaseListVariable) else list(vt.items.values()))
            continue
        attrs = side_effects.store_attr_mutations.get(vt) if side_effects is not None else None
        if attrs:
            stack.append(dict(attrs))
        node = vt.maybe_fx_node()
        if isinstance(node, torch.fx.Node):
            rec.operand_nodes.append(node)


def _wrap(real: Callable[..., Any], sink: Callable[[SpecRecord], None]) -> Callable[..., Any]:
    def speculate(tx: Any, f: Any, sub_args: Any, sub_kwargs: Any, description: str, *args: Any, **kwargs: Any) -> Any:
        key, attempt = compile_key()
        tracers = getattr(getattr(tx, "output", None), "tracers", None)
        rec = SpecRecord(key, attempt, hop_name_of(kwargs.get("source_target"), description), str(description),
                         len(tracers) if tracers is not None else 0)
        if tracers is None:
            rec.problems.append(f"speculation {rec.hop}/{rec.description}: tx.output.tracers unreadable; depth unknown")
        sink(rec)
        try:
            result = real(tx, f, sub_args, sub_kwargs, description, *args, **kwargs)
        except BaseException as e:  # except: re-raises (after marking the speculation failed)
            rec.ok = False
            rec.reason = f"{type(e).__name__}: {e}"
            raise
        rec.ok = True
        try:
            _record_result(rec, tx, sub_args, sub_kwargs, result)
        except Exception as e:  # except: records a problem (recording must never disturb Dynamo)
            rec.problems.append(f"speculation {rec.hop}/{rec.description}: could not read its result "
                                f"({type(e).__name__}: {e}); its body's input kinds are unknown")
            rec.graph = None
        return result

    speculate.__wrapped__ = real  # type: ignore[attr-defined]
    return speculate


def _record_result(rec: SpecRecord, tx: Any, sub_args: Any, sub_kwargs: Any, result: Any) -> None:
    _operands([sub_args, sub_kwargs or {}], rec, tx.output.side_effects)
    graph = next((r for r in result if isinstance(r, torch.fx.Graph)), None)
    lifted = next((r for r in result if isinstance(r, dict)), {})
    rec.graph = graph
    rec.lifted_nodes = [p.node for p in lifted.values() if hasattr(p, "node")]
    rec.lifted_names = [n.name for n in rec.lifted_nodes]
    if graph is not None:
        lifted_set = set(rec.lifted_nodes)
        rec.explicit_nodes = [n for n in graph.nodes if n.op == "placeholder" and n not in lifted_set]
        rec.placeholder_names = [n.name for n in graph.nodes if n.op == "placeholder"]
        rec.explicit_names = [n.name for n in rec.explicit_nodes]


def install_speculation_hooks(patches: Patches, sink: Callable[[SpecRecord], None]) -> None:
    """Wrap both speculate functions for the lifetime of ``patches`` (both or neither: ``MissingHookPoint``)."""
    points = [(name, *hook_point(_HOP_MODULE, name)) for name in SPECULATE_FUNCTIONS]
    for name, mod, real in points:
        patches.set(mod, name, _wrap(real, sink))
