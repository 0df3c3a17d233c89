"""A ``torch.export.ExportedProgram`` -> one ``tracer.model.Frame``: its graph, every HOP body from
the shared HOP tree, and the program's graph signature, range constraints and module call signatures.

Invariant: everything comes from the program object (``graph_module``, ``graph_signature``,
``range_constraints``, ``module_call_graph``; all public torch.export API); HOP bodies are its
GraphModule submodules read by :class:`tracer._torch.subgraphs.FxGraph`, so a body's inputs have the
same feeds as in a capture, and the operand-or-lifted kind nobody recorded is "unknown" (Note
[Exported programs as frames] in tracer/model/export.py).
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from tracer._torch.fx_graph import graph_from_fx
from tracer._torch.subgraphs import FxGraph
from tracer._torch.unknowns import recording_into, unknown
from tracer.hop_tree import KindPolicy, build_subgraphs, walk
from tracer.model import ExportInput, ExportOutput, ExportProgram, Frame, ModuleCall, Node, RangeConstraint

__all__ = ["EXPORT_LIMIT", "frame_of_program"]

# Said once in Capture.limits (Note [Limits of the source] in tracer/model/capture.py).
EXPORT_LIMIT = ("HOP body input kinds: an exported program passes every body input as an operand of the HOP "
                "call and does not record which were the user's operands and which were lifted free "
                "variables, so those inputs have kind 'unknown' (their sources and what the HOP supplies are exact)")

_KINDS = KindPolicy(kind=lambda b, i, fed_from: None, unknown=lambda b, names: "")  # said once in limits

# What an input kind makes its root placeholder, for a reader of the graph (Note [Closed sets of kinds]).
_ROOT_ROLES = {"user_input": "operand", "parameter": "param", "buffer": "param", "constant_tensor": "param",
               "custom_obj": "param", "token": "op"}


def _kind(spec: Any) -> str:
    return str(getattr(spec.kind, "name", spec.kind)).lower()


def _arg_name(arg: Any) -> str:
    """The node name of a signature argument; "" for a constant argument (it names no node)."""
    name = getattr(arg, "name", None)
    return str(name) if isinstance(name, str) else ""


def signature(ep: torch.export.ExportedProgram) -> tuple[list[ExportInput], list[ExportOutput]]:
    """The graph signature's inputs and outputs, in order, as torch.export states them."""
    sig = ep.graph_signature
    inputs = [ExportInput(name=_arg_name(s.arg), kind=_kind(s), target=str(s.target or ""),
                          persistent=s.persistent if _kind(s) == "buffer" else None) for s in sig.input_specs]
    outputs = [ExportOutput(name=_arg_name(s.arg), kind=_kind(s), target=str(s.target or ""))
               for s in sig.output_specs]
    return inputs, outputs


def _bound(v: Any) -> str:
    return str(v)


def range_constraints(ep: torch.export.ExportedProgram) -> list[RangeConstraint]:
    """``ep.range_constraints`` (symbol -> ValueRanges) as text bounds, in torch's order."""
    out = []
    for sym, vr in ep.range_constraints.items():
        try:
            out.append(RangeConstraint(str(sym), _bound(vr.lower), _bound(vr.upper)))
        except Exception as e:  # except: records a problem (the symbol's range is left out)
            unknown(f"the range of symbol {sym}", e)
    return out


def module_calls(ep: torch.export.ExportedProgram) -> list[ModuleCall]:
    """``ep.module_call_graph``: each entry's fqn and, when it has one, its call signature."""
    out = []
    for entry in ep.module_call_graph:
        sig = entry.signature
        if sig is None:
            out.append(ModuleCall(fqn=entry.fqn))
            continue
        out.append(ModuleCall(fqn=entry.fqn, inputs=[_arg_name(a) for a in sig.inputs],
                              outputs=[_arg_name(a) for a in sig.outputs], in_spec=str(sig.in_spec),
                              out_spec=str(sig.out_spec), forward_arg_names=list(sig.forward_arg_names or [])))
    return out


def _generated(file: str) -> bool:
    """Code torch generated and ran while tracing (an fx GraphModule's ``<eval_with_key>.N``): no user line."""
    return file.startswith("<eval_with_key>")


def _drop_generated_sources(frame: Frame) -> None:
    """A node whose innermost frame is torch's generated graph code has no user line (See Note
    [Exported programs as frames]): its ``stack_trace`` stays, its ``source`` goes."""
    for g in frame.graphs().values():
        for n in g.nodes:
            src = n.meta.get("source")
            if isinstance(src, dict) and _generated(str(src.get("file", ""))):
                del n.meta["source"]


def frame_of_program(ep: torch.export.ExportedProgram, *, compile_id: str, code: str, stage: str) -> Frame:
    """The Frame of one exported program: graph, HOP bodies (shared HOP tree), signature.

    What could not be read is a problem of the frame (never a guess)."""
    frame = Frame(compile_id=compile_id, code=code)
    with recording_into(frame.problems):
        inputs, outputs = signature(ep)
        roles = {i.name: _ROOT_ROLES.get(i.kind, "unknown") for i in inputs if i.name}

        def role_of(node: Node) -> Optional[str]:
            return roles.get(node.name, "unknown") if node.op == "placeholder" else None

        gm = ep.graph_module
        root = FxGraph(gm, "", build=lambda: graph_from_fx(gm, "", role_of=role_of))
        tree = walk(root, frame.problems)
        frame.subgraphs = build_subgraphs(tree, _KINDS, frame.problems)
        frame.graph = root.graph
        frame.export = ExportProgram(stage=stage, inputs=inputs, outputs=outputs,
                                     range_constraints=range_constraints(ep), module_calls=module_calls(ep),
                                     dialect=str(getattr(ep, "dialect", "") or ""))
        _drop_generated_sources(frame)
    return frame
