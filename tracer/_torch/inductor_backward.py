"""Which Dynamo nodes each kernel of an Inductor *backward* compile differentiates, from torch's own records.

Invariant: installed for one Inductor capture and removed after it, also on error (through
:class:`~tracer._torch.patching.Patches`); the graphs are compiled exactly as without it, and a
post-grad node whose origin torch did not record maps to nothing (the kernel's problem says so),
never to a guess. See Note [Backward kernels and their Dynamo nodes].
"""

from __future__ import annotations

from typing import Any, Callable

from tracer._torch.patching import Patches
from tracer._torch.subtracer import compile_key

__all__ = ["BackwardOrigins"]

AttemptKey = tuple[int, int, int]

# Note [Backward kernels and their Dynamo nodes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# For a forward (or inference) graph Inductor logs ``cppCodeToPost`` (kernel -> post-grad nodes) and
# ``postToPre`` (post-grad -> pre-grad = Dynamo nodes, ``create_mapping_pre_post_grad_nodes`` in
# torch/_inductor/debug.py). For the backward graph, compiled lazily when ``.backward()`` first runs,
# it logs neither: ``dump_inductor_provenance_info`` maps nothing unless ``debug._pre_grad_graph_id``
# is set, and only the forward compile runs inside ``reset_provenance_globals()`` (compile_fx.py),
# which sets it. The kernel -> post-grad table itself is still filled, into a process-wide dict that
# is never cleared outside that context (so entries of an earlier backward compile would mix in).
# Two torch records make the backward mapping exact:
#   1. The backward compile (``compile_fx.compile_fx_backward``) is run inside torch's own
#      ``reset_provenance_globals()``: fresh tables for this compile, and ``_pre_grad_graph_id`` set,
#      so Inductor logs ``cppCodeToPost`` for the backward exactly as for a forward graph (its
#      ``postToPre`` stays empty: no backward node descends from the Dynamo graph by ``from_node``).
#   2. Each node of the backward graph AOTAutograd hands Inductor carries ``meta["seq_nr"]``: the
#      sequence number of the forward autograd node whose derivative it computes (the same number
#      the forward aten node carries), and each forward aten node names its Dynamo node through
#      ``meta["from_node"]``. Post-grad passes run on the backward graph in place: a node they keep
#      is the same Node, still with its ``seq_nr``; a node they create names what it replaced in
#      ``from_node`` (Inductor's GraphTransformObserver, on at provenance level 1).
# So a backward post-grad node maps to the Dynamo node(s) of the forward nodes sharing its seq_nr.
# Not mapped (the kernel's problem lists them): a node a pass created whose ``from_node`` names no
# node of the backward graph (seen: ``addmm_default`` from the mm+add -> addmm pattern, whose
# NodeSource has an empty name), and a node whose seq_nr no forward node from the Dynamo graph has
# (the autograd engine's gradient-accumulation adds).


class BackwardOrigins:
    """Per attempt: forward seq_nr -> Dynamo nodes, and for each backward compile (in order) its
    post-grad node -> the Dynamo nodes it differentiates (nodes with no recorded origin absent)."""

    def __init__(self) -> None:
        self.dynamo_graph_ids: set[int] = set()  # id(gm.graph) of every graph Dynamo handed Inductor
        self.forward: dict[AttemptKey, dict[int, list[str]]] = {}
        self.backward: dict[AttemptKey, list[dict[str, list[str]]]] = {}

    def install(self, patches: Patches) -> None:
        import torch._inductor.compile_fx as compile_fx
        from torch._inductor.debug import reset_provenance_globals

        forward: Callable[..., Any] = compile_fx.compile_fx_forward
        backward: Callable[..., Any] = compile_fx.compile_fx_backward

        def compile_fx_forward(gm: Any, *args: Any, **kwargs: Any) -> Any:
            self._on_forward(gm)
            return forward(gm, *args, **kwargs)

        def compile_fx_backward(gm: Any, *args: Any, **kwargs: Any) -> Any:
            given = {n.name: n.meta.get("seq_nr") for n in gm.graph.nodes}  # before passes erase any
            with reset_provenance_globals():  # Note [Backward kernels and their Dynamo nodes], 1.
                out = backward(gm, *args, **kwargs)
            self._on_backward(gm, given)
            return out

        patches.set(compile_fx, "compile_fx_forward", compile_fx_forward)
        patches.set(compile_fx, "compile_fx_backward", compile_fx_backward)

    def _akey(self) -> AttemptKey | None:
        key, attempt = compile_key()
        return (key[0], key[1], attempt) if key is not None else None

    def _on_forward(self, gm: Any) -> None:
        akey = self._akey()
        if akey is None:
            return
        table = self.forward.setdefault(akey, {})
        for n in gm.graph.nodes:
            seq, origin = n.meta.get("seq_nr"), self._dynamo_origin(n)
            if isinstance(seq, int) and origin is not None and origin not in table.setdefault(seq, []):
                table[seq].append(origin)

    def _dynamo_origin(self, node: Any) -> str | None:
        """The Dynamo node a forward node came from: the link of its ``from_node`` chain in a Dynamo graph."""
        sources = node.meta.get("from_node") or []
        while sources:
            src = sources[0]
            if src.graph_id in self.dynamo_graph_ids:
                return src.name or None
            sources = src.from_node
        return None

    def _on_backward(self, gm: Any, given: dict[str, Any]) -> None:
        """``given``: the seq_nr of each node of the backward graph as AOTAutograd handed it over."""
        akey = self._akey()
        if akey is None:
            return
        table = self.forward.get(akey, {})
        graph_id = id(gm.graph)
        origins: dict[str, list[str]] = {}
        for n in gm.graph.nodes:
            seq = n.meta.get("seq_nr")
            if not isinstance(seq, int):  # a pass made it: the seq_nr of the node it replaced, if named
                src = (n.meta.get("from_node") or [None])[0]
                seq = given.get(src.name) if src is not None and src.graph_id == graph_id and src.name else None
            if isinstance(seq, int) and table.get(seq):
                origins[n.name] = list(table[seq])
        self.backward.setdefault(akey, []).append(origins)

    def clear(self) -> None:
        self.dynamo_graph_ids.clear()
        self.forward.clear()
        self.backward.clear()
