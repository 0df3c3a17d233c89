"""torch.export as data: an exported program's graph signature, range constraints and module call
signatures (``ExportProgram``, one per Frame), and what one ``tracer.export()`` did (``Export``,
one per Capture): strict or not, exported or failed, and why it failed.

Invariant: every field is what ``torch.export`` itself said (``ExportedProgram.graph_signature``,
``range_constraints``, ``module_call_graph``; the exception it raised; ``draft_export``'s report);
an input or output role names a placeholder or output argument of the frame's root graph, and each
kind is from its closed set below. See Note [Exported programs as frames].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from tracer.model.diff import FrameDiff
from tracer.model.shapes import SourceLine

__all__ = [
    "EXPORT_FAILURE_KINDS",
    "EXPORT_INPUT_KINDS",
    "EXPORT_OUTPUT_KINDS",
    "EXPORT_STAGES",
    "EXPORT_STATUSES",
    "Export",
    "ExportFailure",
    "ExportInput",
    "ExportOutput",
    "ExportProgram",
    "ModuleCall",
    "RangeConstraint",
]

# Note [Exported programs as frames]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``tracer.export`` returns a Capture whose frames are exported programs, so the explorer, the
# report, JSON and ``tracer.diff`` read them as they read compile attempts: frame "0/0" is the
# program ``torch.export.export`` returned (the training IR), and with ``decompose=True`` frame
# "0/1" is ``ep.run_decompositions()`` of it (what became functional, which mutations became
# outputs: ``tracer.diff(cap.frames[0], cap.frames[1])``, kept as ``Export.decomposition`` for the
# views). HOP bodies are the program's
# GraphModule submodules (``true_graph_0``), read by the shared HOP tree (tracer/hop_tree.py). An
# exported program does not say which body inputs were the user's operands and which were lifted
# free variables (both are operands of the HOP call by then), so those kinds are "unknown", said
# once in ``Capture.limits``. ``Frame.export`` is the program's own part (signature, ranges,
# module calls); ``Capture.export`` is the run's (strict, status, failure, draft_export's report).
#
# The kinds are torch.export's own (torch/export/graph_signature.py InputKind / OutputKind), lower case.
EXPORT_INPUT_KINDS = ("user_input", "parameter", "buffer", "constant_tensor", "custom_obj", "token")
EXPORT_OUTPUT_KINDS = ("user_output", "loss_output", "buffer_mutation", "parameter_mutation",
                       "gradient_to_parameter", "gradient_to_user_input", "user_input_mutation", "token")
EXPORT_STAGES = ("exported", "decomposed", "draft", "loaded")  # which program a frame is
EXPORT_STATUSES = ("exported", "failed")
# Why an export failed, from the exception torch raised (its class and the classes it derives from):
#   "data_dependent"        a guard or branch on a data-dependent value (GuardOnDataDependentSymNode)
#   "constraint_violation"  dynamic_shapes asked for a dimension the program specializes or relates
#   "unsupported"           an operator or Python feature export cannot trace (Dynamo's Unsupported)
#   "graph_break"           strict export hit what would be a graph break under torch.compile
#   "other"                 anything else; the message says what
# and draft_export's own failure types (torch/export/_draft_export.py FailureType), each worked around:
#   "guard_added", "missing_fake_kernel", "mismatched_fake_kernel" (and "data_dependent", as above)
EXPORT_FAILURE_KINDS = ("data_dependent", "constraint_violation", "unsupported", "graph_break", "guard_added",
                        "missing_fake_kernel", "mismatched_fake_kernel", "other")


@dataclass
class ExportInput:
    """One input of the exported program's graph signature (an ``InputSpec``), in placeholder order."""

    name: str  # the root graph's placeholder ("p_lin_weight"); "" for a constant input
    kind: str  # one of EXPORT_INPUT_KINDS
    target: str = ""  # the parameter/buffer/constant's qualified name ("lin.weight"); "" for user inputs, tokens
    persistent: Optional[bool] = None  # buffers: whether it is in the state dict; None otherwise

    def __repr__(self) -> str:
        return f"{self.name}:{self.kind}" + (f"={self.target}" if self.target else "")


@dataclass
class ExportOutput:
    """One output of the graph signature (an ``OutputSpec``), in output order."""

    name: str  # the output argument's node name ("add"); "" for a constant output
    kind: str  # one of EXPORT_OUTPUT_KINDS
    target: str = ""  # what a mutation writes or a gradient is of ("count", "x"); "" for user outputs

    def __repr__(self) -> str:
        return f"{self.name}:{self.kind}" + (f"->{self.target}" if self.target else "")


@dataclass
class RangeConstraint:
    """The value range of one symbol of the program (``ep.range_constraints``), as torch prints it."""

    symbol: str  # "s77", "u0"
    lower: str  # "2"; "-int_oo" when unbounded
    upper: str  # "int_oo" when unbounded

    def __str__(self) -> str:
        return f"{self.lower} <= {self.symbol} <= {self.upper}"


@dataclass
class ModuleCall:
    """One entry of ``ep.module_call_graph``: a submodule call the program keeps the signature of."""

    fqn: str  # "" for the root module, "lin" for a submodule
    inputs: list[str] = field(default_factory=list)  # argument node names of the call
    outputs: list[str] = field(default_factory=list)
    in_spec: str = ""  # the pytree spec of (args, kwargs), as torch prints it; "" when the entry has no signature
    out_spec: str = ""
    forward_arg_names: list[str] = field(default_factory=list)


@dataclass
class ExportProgram:
    """The torch.export part of one Frame: which program it is and its signature."""

    stage: str  # one of EXPORT_STAGES
    inputs: list[ExportInput] = field(default_factory=list)  # placeholder order
    outputs: list[ExportOutput] = field(default_factory=list)  # output order
    range_constraints: list[RangeConstraint] = field(default_factory=list)
    module_calls: list[ModuleCall] = field(default_factory=list)
    dialect: str = ""  # ep.dialect ("TRAINING", "ATEN")

    def mutated(self) -> dict[str, str]:
        """What the program writes back: output name -> the buffer or user input it mutates."""
        return {o.name: o.target for o in self.outputs if o.kind in ("buffer_mutation", "user_input_mutation",
                                                                      "parameter_mutation")}

    def __repr__(self) -> str:
        return f"ExportProgram({self.stage}, {len(self.inputs)} inputs, {len(self.outputs)} outputs)"


@dataclass
class ExportFailure:
    """Why an export failed (the exception torch raised), or one failure draft_export worked around."""

    kind: str  # one of EXPORT_FAILURE_KINDS
    message: str  # torch's own message, whole
    error_type: str = ""  # the exception's class ("GuardOnDataDependentSymNode"); draft_export: its FailureType
    user_line: Optional[SourceLine] = None  # the user line torch pointed at; None when it named none
    workaround: str = ""  # draft_export: the guard or assertion it added instead ("" when none)
    # a failed export: the graph torch had traced when it failed, as torch printed it (the exception's
    # ``partial_fx_graph``, set by fx's tracer and by Dynamo); "" when torch gave none
    partial_graph: str = ""

    def __str__(self) -> str:
        where = f" at {self.user_line}" if self.user_line is not None else ""
        return f"{self.kind}{where}: {self.message.strip().splitlines()[0] if self.message.strip() else ''}"


@dataclass
class Export:
    """What one ``tracer.export()`` (or ``tracer.load_export()``) did; the programs are the frames."""

    status: str  # one of EXPORT_STATUSES
    strict: bool = False  # strict=True traced with Dynamo
    source: str = ""  # "torch.export.export", or the .pt2 file a loaded program came from
    dynamic_shapes: str = ""  # repr of the dynamic_shapes asked for ("" when none)
    failure: Optional[ExportFailure] = None  # status "failed": why
    draft: list[ExportFailure] = field(default_factory=list)  # draft_export's report, after a failure
    # decompose=True: tracer.diff(frame "0/0", frame "0/1"), what run_decompositions() changed (None otherwise)
    decomposition: Optional[FrameDiff] = None

    def __repr__(self) -> str:
        why = f": {self.failure.kind}" if self.failure is not None else ""
        return f"Export({self.status}{why}, strict={self.strict})"
