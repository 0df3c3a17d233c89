"""Inductor's record of one Dynamo graph: post-grad graph(s), output code, kernels with provenance.

Invariant: every field is what Inductor itself logged for the compile (structured-trace artifacts
``inductor_post_grad_graph``, ``inductor_output_code``, ``inductor_provenance_tracking_node_mappings``
and ``..._kernel_stack_traces``, torch/_inductor/compile_fx.py); a kernel's ``dynamo_nodes`` name
nodes of ``Frame.graph`` (Inductor's "pre-grad" graph is the graph Dynamo handed the backend).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracer.model.shapes import SourceLine

__all__ = ["InductorGraph", "Kernel"]


@dataclass
class Kernel:
    """One generated kernel (or extern call) and the nodes it computes."""

    name: str  # as in the output code, "cpp_fused_add_mul_0"
    handle: int  # Inductor's provenance debug handle ("cpp_fused_add_mul_0:1" in its mappings)
    post_grad_nodes: list[str] = field(default_factory=list)  # nodes of InductorGraph.post_grad_graph
    # nodes of Frame.graph (Inductor's pre-grad graph): those it computes; for a backward graph's
    # kernel, those whose derivative it computes (by autograd seq_nr, tracer/_torch/inductor_backward.py)
    dynamo_nodes: list[str] = field(default_factory=list)
    source_lines: list[SourceLine] = field(default_factory=list)  # user lines, from Inductor's kernel stack traces

    def __repr__(self) -> str:
        return f"Kernel({self.name}, {len(self.post_grad_nodes)} post-grad nodes)"


@dataclass
class InductorGraph:
    """One Inductor compile of one graph of the frame (inference, forward or backward)."""

    aot_id: str  # the "# AOT ID" header of the output code: "0_inference", "0_forward", "0_backward"
    post_grad_graph: str = ""  # Inductor's post-grad graph, print_readable text
    output_code: str = ""  # the generated Python wrapper with its kernels (C++/Triton source inline)
    kernels: list[Kernel] = field(default_factory=list)  # in the order Inductor named them
    provenance: bool = False  # whether Inductor logged its provenance mapping for this compile

    def kernel(self, name: str) -> Kernel:
        """The kernel called ``name`` (KeyError naming the kernels otherwise)."""
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"no kernel {name!r} (kernels: {[k.name for k in self.kernels]})")

    def __repr__(self) -> str:
        from tracer._text import plural

        return f"InductorGraph({self.aot_id}, {plural(len(self.kernels), 'kernel')})"
