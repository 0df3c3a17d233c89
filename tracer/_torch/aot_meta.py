"""ViewAndMutationMeta and the partitioned graphs -> AotInput/AotOutput/SavedValue/synthetic bases.

Invariant: every fact here is read from torch's own metadata or graphs (``InputAliasInfo``,
``OutputAliasInfo``, AOT descriptors, the forward graph's outputs); nothing is re-derived.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.fx

from tracer._torch.fx_graph import meta_of
from tracer._torch.since_2_12 import optimization_hint
from tracer._torch.unknowns import unknown
from tracer.model import AotInput, AotOutput, SavedValue

__all__ = [
    "forward_outputs",
    "inputs_from_meta",
    "outputs_from_meta",
    "return_kinds",
    "saved_origins",
    "saved_values",
    "synthetic_base_groups",
    "value_kind",
]

# Note [Unbacked sizes in saved bytes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``SavedValue.nbytes`` evaluates symbolic sizes at their hints (``optimization_hint``, which adds
# no guards). An unbacked size (u0) has no hint; like Inductor's memory estimates we then use a
# fixed fallback, so the number stays an estimate and never raises.
_UNBACKED_FALLBACK = 8192


def _hint(s: Any) -> int:
    if isinstance(s, int) and not isinstance(s, bool):
        return s
    try:
        return int(optimization_hint()(s, fallback=_UNBACKED_FALLBACK))
    except Exception as e:  # except: records a problem (the fallback hint is used)
        unknown(f"the size hint of {s}", e)
        return _UNBACKED_FALLBACK


def value_kind(val: Any) -> str:
    """ "tensor", "symint", "symfloat", "symbool" or "opaque" (``tracer.model.SAVED_KINDS``) for a saved value.

    A plain int/float/bool counts as its symbolic kind (a size known at trace time); bool before int,
    since ``bool`` subclasses ``int``.
    """
    if isinstance(val, torch.Tensor):
        return "tensor"
    if isinstance(val, (torch.SymBool, bool)):
        return "symbool"
    if isinstance(val, (torch.SymInt, int)):
        return "symint"
    if isinstance(val, (torch.SymFloat, float)):
        return "symfloat"
    return "opaque"


def saved_value(node: Any) -> SavedValue:
    """One forward output the backward reads, with its size at the shape hints.

    ``nbytes`` is numel x element size: a saved view counts its own size although it shares its
    base's storage; a SymInt or opaque object counts 0 (no tensor memory).
    """
    if not isinstance(node, torch.fx.Node):
        return SavedValue(name=repr(node), kind="opaque")
    val = node.meta.get("val")
    kind = value_kind(val)
    if kind != "tensor":
        return SavedValue(name=node.name, kind=kind)
    meta = meta_of(val)
    numel = 1
    for s in val.shape:
        numel *= _hint(s)
    try:
        itemsize = val.element_size()
    except Exception as e:  # except: records a problem (nbytes 0 for this value)
        unknown(f"the itemsize of saved value {node.name!r}", e)
        itemsize = 0
    return SavedValue(
        name=node.name,
        kind="tensor",
        shape=list(meta.get("shape", [])),
        dtype=meta.get("dtype", ""),
        nbytes=numel * itemsize,
    )


def forward_outputs(gm: torch.fx.GraphModule) -> list[Any]:
    out = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
    if out is None or not out.args:
        return []
    first = out.args[0]
    return list(first) if isinstance(first, (tuple, list)) else [first]


# Note [Which forward outputs are saved]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The compiled forward returns (tokens, mutated inputs, user outputs, intermediate bases, rng
# offset, saved tensors, saved symints): see ``ViewAndMutationMeta.num_forward``. Everything past
# ``num_forward`` (plus the effect tokens, which ``num_forward`` leaves out while they are still
# threaded through the graph) is saved for the backward. This holds after saved-tensor hooks were
# inlined too: the hooks replace saved outputs by their packed values in the same region.
def saved_values(
    gm: torch.fx.GraphModule, meta: Any, *, tokens_in_outputs: bool
) -> tuple[list[SavedValue], int]:
    """(saved values, number of forward outputs before them) of a partitioned forward graph."""
    outs = forward_outputs(gm)
    start: Optional[int] = None
    if meta is not None:
        try:
            start = int(meta.num_forward) + (len(meta.tokens) if tokens_in_outputs else 0)
        except (AttributeError, TypeError, ValueError):  # metadata without these fields: the descriptors below
            start = None
    if start is None:
        # No metadata: fall back to the output descriptors the partitioner attached.
        out_node = next((n for n in reversed(gm.graph.nodes) if n.op == "output"), None)
        descs = out_node.meta.get("desc") if out_node is not None else None
        if isinstance(descs, (list, tuple)) and len(descs) == len(outs):
            start = sum(1 for d in descs if not type(d).__name__.startswith("SavedForBackwards"))
        else:
            start = len(outs)
    start = max(0, min(start, len(outs)))
    return [saved_value(o) for o in outs[start:]], start


# Note [Origin of a saved value]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``SavedValue.origin`` says who owns the memory a saved value keeps alive, so that "saved bytes"
# can be split into what the forward keeps only for the backward (activations) and what lives in
# the module anyway (parameters, buffers). The owner of a saved tensor's storage is the first
# forward-graph node whose fake value has that storage (functionalization re-applies views, so a
# view's fake value shares its base's storage: ``t = weight.t()`` shares ``weight``'s). Then:
#   - owner is a node computed in the forward: "activation";
#   - owner is a forward placeholder: its AOT descriptor says which input it is.
#     ``ParamAOTInput``/``BufferAOTInput`` (``prepare_aot_config`` lifts a GraphModule's own
#     parameters and buffers with them) are "parameter"/"buffer"; ``PlainAOTInput(idx)`` is the
#     idx-th Dynamo placeholder, which is a "parameter" when its example value is an
#     ``nn.Parameter`` or Dynamo read it from a module's ``_parameters`` dict, a "buffer" when
#     read from ``_buffers`` (the ``UnspecializedParamBufferSource`` Dynamo builds for inlined
#     modules, ``torch/_dynamo/variables/user_defined.py``), otherwise "input" (an argument, a
#     global, a closure cell, the output of an earlier graph). Subclass and synthetic-base
#     descriptors take the origin of the input they were made from; tokens and RNG seeds are
#     "input". A placeholder without a descriptor, or a Dynamo placeholder without a source, is
#     "unknown" and a problem names it.
# A saved view of a parameter therefore has origin "parameter" (it costs no memory the module
# does not hold anyway) and ``alias_of`` names the parameter's placeholder; a saved view of
# another saved value (``detach(relu)`` next to ``relu``) has ``alias_of`` = that value, and
# ``Aot.activation_bytes``/``param_bytes`` count each storage once. A symint or opaque saved
# value has no storage: a forward placeholder's origin by the same descriptor rule, else
# "activation" (0 bytes either way).
def saved_origins(gm: torch.fx.GraphModule, saved: list[SavedValue], dynamo_placeholders: list[Any]) -> list[str]:
    """Set ``origin`` and ``alias_of`` on ``saved`` (Note [Origin of a saved value]); returns problems."""
    nodes = {n.name: n for n in gm.graph.nodes}
    owners: dict[Any, str] = {}
    for n in gm.graph.nodes:
        key = _fake_storage(n.meta.get("val"))
        if key is not None:
            owners.setdefault(key, n.name)
    problems: list[str] = []
    for s in saved:
        node = nodes.get(s.name)
        if node is None:
            problems.append(f"saved value {s.name!r} is not a node of the forward graph: origin unknown")
            continue
        owner = owners.get(_fake_storage(node.meta.get("val")), s.name) if s.kind == "tensor" else s.name
        if owner != s.name:
            s.alias_of = owner
        owner_node = nodes[owner]
        if owner_node.op != "placeholder":
            s.origin = "activation"
            continue
        origin, why = _input_origin(owner_node.meta.get("desc"), dynamo_placeholders)
        s.origin = origin
        if why:
            problems.append(f"saved value {s.name!r} (forward input {owner!r}): {why}; origin unknown")
    return problems


def _fake_storage(val: Any) -> Any:
    if not isinstance(val, torch.Tensor):
        return None
    try:
        from torch.multiprocessing.reductions import StorageWeakRef

        return StorageWeakRef(val.untyped_storage())
    except (RuntimeError, NotImplementedError):  # no storage (e.g. a sparse or nested fake): the value owns itself
        return None


def _input_origin(desc: Any, dynamo_placeholders: list[Any], depth: int = 0) -> tuple[str, str]:
    """(origin, why it is unknown) of a forward placeholder from its AOT descriptor."""
    from torch._functorch._aot_autograd.descriptors import (
        AOTInput,
        BufferAOTInput,
        ParamAOTInput,
        PlainAOTInput,
    )

    if isinstance(desc, ParamAOTInput):
        return "parameter", ""
    if isinstance(desc, BufferAOTInput):
        return "buffer", ""
    if isinstance(desc, PlainAOTInput):
        if not 0 <= desc.idx < len(dynamo_placeholders):
            return "unknown", f"{desc} names no Dynamo placeholder"
        return _dynamo_input_origin(dynamo_placeholders[desc.idx])
    if not isinstance(desc, AOTInput):
        return "unknown", "AOTAutograd attached no input descriptor"
    base = getattr(desc, "base", None) or getattr(desc, "base_of", None)  # subclass / synthetic base
    if isinstance(base, AOTInput) and depth < 16:
        return _input_origin(base, dynamo_placeholders, depth + 1)
    return "input", ""  # effect tokens, RNG seeds and offsets


def _dynamo_input_origin(node: Any) -> tuple[str, str]:
    from torch._dynamo.source import DictGetItemSource, UnspecializedParamBufferSource

    ga = node.meta.get("grapharg")
    example = node.meta.get("example_value")
    if isinstance(example, torch.nn.Parameter):
        return "parameter", ""
    src = getattr(ga, "source", None)
    if src is None:
        return "unknown", f"Dynamo placeholder {node.name!r} has no source"
    if isinstance(src, DictGetItemSource) and isinstance(src.base, UnspecializedParamBufferSource):
        if src.base.member == "_parameters":
            return "parameter", ""
        if src.base.member == "_buffers":
            return "buffer", ""
    return "input", ""


def return_kinds(
    gm: torch.fx.GraphModule, meta: Any, *, tokens_in_outputs: bool
) -> Optional[list[list[str]]]:
    """``[name, kind]`` per forward/inference output, kinds in the order of Note [Which forward
    outputs are saved]: "token", "mutated_input", "output", "intermediate_base", "rng_offset", "saved".

    None when the metadata does not add up to the graph's outputs (then nothing is claimed).
    """
    outs = forward_outputs(gm)
    try:
        counts = [
            ("token", len(meta.tokens) if tokens_in_outputs else 0),
            ("mutated_input", int(meta.num_mutated_inp_runtime_indices)),
            ("output", int(meta.num_outputs)),
            ("intermediate_base", int(meta.num_intermediate_bases)),
            ("rng_offset", int(meta.num_outputs_rng_offset)),
        ]
    except Exception as e:  # except: records a problem (the output node gets no "returns")
        unknown("what each AOT output is for (ViewAndMutationMeta counts)", e)
        return None
    kinds = [k for k, n in counts for _ in range(n)]
    if len(kinds) > len(outs):
        return None
    kinds += ["saved"] * (len(outs) - len(kinds))
    return [
        [o.name if isinstance(o, torch.fx.Node) else repr(o), k] for o, k in zip(outs, kinds, strict=True)
    ]


def inputs_from_meta(meta: Any, names: list[str], params: set[int]) -> list[AotInput]:
    """One AotInput per ``meta.input_info`` entry, named after the Dynamo placeholder it describes."""
    from torch._functorch._aot_autograd.schemas import MutationType

    out: list[AotInput] = []
    for i, info in enumerate(getattr(meta, "input_info", []) or []):
        mutated = bool(info.mutates_data or info.mutates_metadata)
        try:
            in_graph = mutated and info.mutation_type == MutationType.MUTATED_IN_GRAPH
        except Exception as e:  # except: records a problem (mutation_in_graph False)
            unknown(f"whether the mutation of AOT input {i} happens in the graph", e)
            in_graph = False
        out.append(
            AotInput(
                name=names[i] if i < len(names) else f"input_{i}",
                mutates_data=bool(info.mutates_data),
                mutates_metadata=bool(info.mutates_metadata),
                requires_grad=bool(info.requires_grad),
                mutation_in_graph=bool(in_graph),
                is_parameter=i in params,
            )
        )
    return out


def outputs_from_meta(meta: Any, names: list[str]) -> list[AotOutput]:
    """One AotOutput per ``meta.output_info`` entry (user outputs, in order)."""
    out: list[AotOutput] = []
    for i, info in enumerate(getattr(meta, "output_info", []) or []):
        kind = getattr(info.output_type, "name", str(info.output_type))
        base = info.base_idx
        out.append(
            AotOutput(
                name=names[i] if i < len(names) else f"output_{i}",
                alias="none" if kind == "non_alias" else kind,
                base_index=base if isinstance(base, int) else None,
            )
        )
    return out


# Note [Synthetic bases from descriptors]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# When a mutated input aliases another input, AOTAutograd replaces the aliased inputs with one
# "synthetic base" placeholder (Note [AOT Autograd: mutations to inputs that alias other inputs]).
# The graph says so itself: that placeholder's descriptor is ``SyntheticBaseAOTInput`` or
# ``ViewBaseAOTInput`` (``base_of`` = one of the merged inputs), and the merged inputs no longer
# appear as ``PlainAOTInput`` placeholders. The inputs merged into one base are the missing ones
# that share a storage with ``base_of`` (the same test ``merge_view_inputs`` applies).
def synthetic_base_groups(placeholders: list[torch.fx.Node], example_inputs: list[Any]) -> list[list[int]]:
    """Groups of Dynamo input indices merged into one synthetic base, in placeholder order."""
    present: set[int] = set()
    bases: list[int] = []
    for n in placeholders:
        desc = n.meta.get("desc")
        kind = type(desc).__name__
        if kind == "PlainAOTInput" and isinstance(getattr(desc, "idx", None), int):
            present.add(desc.idx)
        elif kind in ("SyntheticBaseAOTInput", "ViewBaseAOTInput"):
            root = getattr(desc, "base_of", None)
            if type(root).__name__ == "PlainAOTInput" and isinstance(getattr(root, "idx", None), int):
                bases.append(root.idx)
    if not bases:
        return []
    missing = [i for i in range(len(example_inputs)) if i not in present]
    groups: list[list[int]] = []
    taken: set[int] = set()
    for b in bases:
        key = _storage_key(example_inputs, b)
        group = [
            i
            for i in missing
            if i not in taken and (i == b or (key is not None and _storage_key(example_inputs, i) == key))
        ]
        taken.update(group)
        if group:
            groups.append(group)
    return groups


def _storage_key(example_inputs: list[Any], i: int) -> Any:
    if not 0 <= i < len(example_inputs):
        return None
    t = example_inputs[i]
    if not isinstance(t, torch.Tensor):
        return None
    try:
        from torch.multiprocessing.reductions import StorageWeakRef

        return StorageWeakRef(t.untyped_storage())
    except (RuntimeError, NotImplementedError):  # no storage (a sparse or nested tensor): shares none
        return None
