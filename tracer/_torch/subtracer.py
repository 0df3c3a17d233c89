"""Hooks on HOP body speculation (``speculate_subgraph*``): one record per SubgraphTracer run.

Invariant: the wrappers call the real functions with the same arguments and return their
result (or re-raise their exception) unchanged; they are installed for one capture only.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch.fx

from tracer._torch.patching import Patches

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
        except Exception:
            pass
    return str(getattr(source_target, "__name__", source_target))


def _fx_nodes(vts: Any, out: list[torch.fx.Node], depth: int = 0) -> None:
    """fx nodes behind a (nested) list of VariableTrackers, without realizing lazy ones."""
    if depth > 8:
        return
    if isinstance(vts, (list, tuple)):
        for v in vts:
            _fx_nodes(v, out, depth + 1)
        return
    if isinstance(vts, dict):
        for v in vts.values():
            _fx_nodes(v, out, depth + 1)
        return
    vt = vts
    try:
        from torch._dynamo.variables.lazy import LazyVariableTracker

        if isinstance(vt, LazyVariableTracker):
            if not vt.is_realized():
                return
            vt = vt.unwrap()
    except Exception:
        pass
    items = getattr(vt, "items", None)
    if isinstance(items, (list, tuple)):
        _fx_nodes(list(items), out, depth + 1)
        return
    try:
        node = vt.maybe_fx_node()
    except Exception:
        node = None
    if isinstance(node, torch.fx.Node):
        out.append(node)


def _wrap(real: Callable[..., Any], sink: Callable[[SpecRecord], None]) -> Callable[..., Any]:
    def speculate(tx: Any, f: Any, sub_args: Any, sub_kwargs: Any, description: str, *args: Any, **kwargs: Any) -> Any:
        key, attempt = compile_key()
        try:
            depth = len(tx.output.tracers)
        except Exception:
            depth = 0
        rec = SpecRecord(key, attempt, hop_name_of(kwargs.get("source_target"), description), str(description), depth)
        sink(rec)
        try:
            result = real(tx, f, sub_args, sub_kwargs, description, *args, **kwargs)
        except BaseException as e:
            rec.ok = False
            rec.reason = f"{type(e).__name__}: {e}"
            raise
        rec.ok = True
        try:
            _fx_nodes([sub_args, sub_kwargs or {}], rec.operand_nodes)
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
        except Exception:  # recording is best effort; never disturb Dynamo
            pass
        return result

    speculate.__wrapped__ = real  # type: ignore[attr-defined]
    return speculate


def install_speculation_hooks(patches: Patches, sink: Callable[[SpecRecord], None]) -> None:
    """Wrap both speculate functions for the lifetime of ``patches``."""
    mod = importlib.import_module(_HOP_MODULE)
    for name in SPECULATE_FUNCTIONS:
        patches.set(mod, name, _wrap(getattr(mod, name), sink))
