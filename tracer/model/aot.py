"""What AOTAutograd did with one Dynamo graph: joint/forward/backward (or inference) graphs,
saved values, and the mutation/aliasing metadata of ViewAndMutationMeta.

Invariant: every ``SavedValue.name`` is a node of ``Aot.forward`` (validate() checks it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from tracer.model.graph import Graph

__all__ = ["Aot", "AotInput", "AotOutput", "SavedTensorHooks", "SavedValue"]


@dataclass
class SavedValue:
    """A value the forward saves for the backward."""

    name: str  # forward-graph node name
    kind: str  # one of SAVED_KINDS
    shape: list[Any] = field(default_factory=list)  # ints or symbolic strings
    dtype: str = ""
    nbytes: int = 0  # symbolic sizes evaluated at their hints
    origin: str = "unknown"  # one of SAVED_ORIGINS: who owns the storage (Note [Origin of a saved value], tracer/_torch/aot_meta.py)
    alias_of: str = ""  # forward node owning this saved view's storage; "" when the value owns it

    def __repr__(self) -> str:
        return f"SavedValue({self.name}, {self.kind}, {self.nbytes}B)"


@dataclass
class AotInput:
    """Per graph input metadata from ViewAndMutationMeta.input_info."""

    name: str
    mutates_data: bool = False
    mutates_metadata: bool = False
    requires_grad: bool = False
    mutation_in_graph: bool = False  # the copy_ back happens inside the graph (vs. in the runtime epilogue)
    is_parameter: bool = False


@dataclass
class AotOutput:
    """Per user output metadata from ViewAndMutationMeta.output_info."""

    name: str
    alias: str = "none"  # one of ALIAS_KINDS (OutputType names, lower-cased)
    base_index: Optional[int] = None  # the input or intermediate it aliases


@dataclass
class SavedTensorHooks:
    """Saved-tensor hooks traced into the graphs (torch/_functorch/_aot_autograd/graph_compile.py,
    ``maybe_inline_graph_saved_tensors_hooks``): pack inlined in the forward epilogue, unpack in
    the backward prologue."""

    pack: Optional[Graph] = None
    unpack: Optional[Graph] = None
    applied_to: list[str] = field(default_factory=list)  # names of the saved values they were applied to


@dataclass
class Aot:
    """What AOTAutograd did with one Dynamo graph."""

    mode: str  # one of AOT_MODES
    partitioner: str = "min_cut"  # "min_cut" or "default"
    joint: Optional[Graph] = None  # the joint graph the partitioner received (training only)
    forward: Optional[Graph] = None  # in inference mode: the inference graph (the graph that runs forward)
    backward: Optional[Graph] = None
    inference: Optional[Graph] = None
    saved: list[SavedValue] = field(default_factory=list)
    saved_known: bool = True  # False: the source does not say what the forward saves (a log, LOG_LIMITS "Frame.aot"); saved is then empty
    inputs: list[AotInput] = field(default_factory=list)
    outputs: list[AotOutput] = field(default_factory=list)
    synthetic_bases: list[list[int]] = field(default_factory=list)  # groups of input indices merged into one base
    effect_tokens: int = 0
    saved_tensor_hooks: Optional[SavedTensorHooks] = None
    backward_ran: bool = False  # the backward graph really was compiled (capture ran .backward())
    subgraphs: dict[str, Graph] = field(default_factory=dict)  # HOP bodies the AOT graphs call, by "forward.repeated_subgraph0"

    @property
    def saved_bytes(self) -> int:
        """Bytes of every saved value, each at its own size: parameters, buffers, inputs and
        views of other saved values included (see ``activation_bytes`` and ``param_bytes``)."""
        return sum(s.nbytes for s in self.saved)

    @property
    def activation_bytes(self) -> int:
        """Bytes the forward keeps alive only for the backward: saved values of origin
        "activation", each storage once (a view of another saved value adds nothing)."""
        return self._once(("activation",))

    @property
    def param_bytes(self) -> int:
        """Bytes of saved parameters and buffers (and views of them), each storage once: they
        live in the module anyway. Saved graph inputs ("input") and "unknown" are in neither."""
        return self._once(("parameter", "buffer"))

    def _once(self, origins: tuple[str, ...]) -> int:
        names = {s.name for s in self.saved}
        return sum(s.nbytes for s in self.saved if s.origin in origins and s.alias_of not in names)

    def __repr__(self) -> str:
        return f"Aot({self.mode}, {len(self.saved)} saved, {self.saved_bytes}B)"


