"""The first view (viz.grouping.first_expanded) of real training captures: bench.models' T5 and Llama
(``transformers`` configs, random weights, 4 layers, d 256), as the report and the explorer first show them.

Checked against torch itself: a plain ``torch.compile`` of the same step, with a backend that counts the
nodes of the GraphModules it is given (Dynamo's, then AOTAutograd's forward and backward, aot_eager's
min-cut partition), says how many nodes each graph has; the first view's boxes must hold exactly those.
What a user sees is pinned where Dynamo traces the step as one graph: the wrappers (Note [The first view
opens wrappers]) open, the stacks of layers stay one folded box each, the view stays readable.
"""

from __future__ import annotations

import pytest
import torch

import tracer
from viz.grouping import BACKWARD_SUFFIX, FIRST_VIEW_BOXES, WRAPPER_BUDGETS, first_expanded, group_id, visible

pytestmark = pytest.mark.slow  # two captures and two plain compiles of 4-layer models: ~20 s on 2 cores

M = "L['self'].model"


def _torch_counts(model: torch.nn.Module, args: tuple) -> dict[str, list[int]]:
    """Node counts of the GraphModules torch hands a backend, per kind, in compile order."""
    from functorch.compile import aot_module_simplified, make_boxed_func, min_cut_rematerialization_partition

    counts: dict[str, list[int]] = {"root": [], "forward": [], "backward": []}

    def counter(kind: str):
        def compiler(gm: torch.fx.GraphModule, example_inputs):
            counts[kind].append(len(gm.graph.nodes))
            return make_boxed_func(gm.forward)
        return compiler

    def backend(gm: torch.fx.GraphModule, example_inputs):
        counts["root"].append(len(gm.graph.nodes))
        return aot_module_simplified(gm, example_inputs, fw_compiler=counter("forward"),
                                     bw_compiler=counter("backward"),
                                     partition_fn=min_cut_rematerialization_partition,
                                     keep_inference_input_mutations=True)

    torch._dynamo.reset()
    try:
        torch.compile(model, backend=backend)(*args).backward()
    finally:
        torch._dynamo.reset()
    model.zero_grad(set_to_none=True)
    return counts


def _build(name: str):
    pytest.importorskip("transformers")
    from bench import models

    model, args = models.make(name)
    torch._dynamo.reset()
    cap = tracer.capture(model, *args)
    return cap, _torch_counts(model, args)


@pytest.fixture(scope="module")
def t5():
    return _build("t5_hf")


@pytest.fixture(scope="module")
def llama():
    return _build("llama_hf")


def _graphs(cap) -> dict[str, list]:
    out: dict[str, list] = {"root": [], "forward": [], "backward": [], "joint": []}
    for f in cap.frames:
        if f.graph.nodes:
            out["root"].append(f.graph)
            for kind in ("forward", "backward", "joint"):
                g = getattr(f.aot, kind, None) if f.aot else None
                if g is not None and g.nodes:
                    out[kind].append(g)
    return out


def _view(g):
    """(opened paths, {box id: node count}) of ``g``'s first view."""
    opened = first_expanded(g)
    return opened, {it.id: it.count for it in visible(g, opened, threshold=0).items}


def _no_node_lost(cap, counts) -> None:
    graphs = _graphs(cap)
    for kind in ("root", "forward", "backward"):
        # the capture has torch's graphs (sorted: several graphs' backwards compile in reverse order)
        assert sorted(len(g.nodes) for g in graphs[kind]) == sorted(counts[kind]), kind
    for kind, gs in graphs.items():
        for g in gs:
            opened, boxes = _view(g)
            assert sum(boxes.values()) == len(g.nodes), (kind, boxes)  # each node in exactly one box
            # readable: a module's backward half counted with its forward half (they open together,
            # Note [Joint graph groups]), at most the boxes a wrapper may take the first view to
            assert len({b.removesuffix(BACKWARD_SUFFIX) for b in boxes}) <= WRAPPER_BUDGETS * FIRST_VIEW_BOXES, (kind, boxes)


def _one_graph(cap) -> None:
    if len(_graphs(cap)["root"]) != 1:
        pytest.skip("Dynamo broke this step into several graphs on this torch release (2.11 does for T5)")


def test_t5_first_views_hold_every_node_torch_counts(t5):
    _no_node_lost(*t5)


def test_t5_first_views_open_encoder_and_decoder_around_folded_blocks(t5):
    cap, _ = t5
    _one_graph(cap)
    (root,) = _graphs(cap)["root"]
    enc, dec = f"{M}.encoder", f"{M}.decoder"
    opened, boxes = _view(root)
    # both stacks open (the decoder, over half the graph, as a wrapper); their layers are one box each
    assert {enc, dec} <= opened and not any(p.startswith((f"{enc}.block", f"{dec}.block")) for p in opened), opened
    assert boxes[group_id(f"{enc}.block")] + boxes[group_id(f"{dec}.block")] > 0.9 * len(root.nodes), boxes
    assert {group_id(f"{s}.final_layer_norm") for s in (enc, dec)} <= set(boxes), boxes
    # no box but the decoder's blocks holds over half of the graph: the wrappers model and decoder are open
    assert [b for b, c in boxes.items() if c > len(root.nodes) / 2] == [group_id(f"{dec}.block")], boxes
    for kind in ("forward", "backward", "joint"):
        (g,) = _graphs(cap)[kind]
        opened, boxes = _view(g)
        assert dec in opened and group_id(f"{dec}.block") in boxes, (kind, opened)
        assert not any(p.startswith(f"{dec}.block") for p in opened), (kind, opened)


def test_llama_first_views_hold_every_node_torch_counts(llama):
    _no_node_lost(*llama)


def test_llama_first_views_open_the_base_model_around_its_folded_layers(llama):
    cap, _ = llama
    _one_graph(cap)
    base = f"{M}.model"  # LlamaForCausalLM.model, around the decoder layers: a wrapper
    graphs = _graphs(cap)
    for kind in ("root", "forward", "joint"):
        (g,) = graphs[kind]
        opened, boxes = _view(g)
        assert base in opened and not any(p.startswith(f"{base}.layers") for p in opened), (kind, opened)
        layers = group_id(f"{base}.layers")
        assert boxes[layers] + boxes.get(layers + BACKWARD_SUFFIX, 0) > len(g.nodes) / 2, (kind, boxes)  # the bulk
        assert group_id(f"{base}.norm") in boxes and group_id(f"{M}.lm_head") in boxes, (kind, boxes)
    # the backward graph has room for one layer box each (the budget of 20 boxes)
    opened, boxes = _view(graphs["backward"][0])
    assert f"{base}.layers" in opened and [b for b in boxes if b.startswith(group_id(f"{base}.layers"))] == [
        group_id(f"{base}.layers.{i}") for i in range(4)], boxes
