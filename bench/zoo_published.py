"""``python -m bench --zoo-published``: the bytes a capture holds against the parameter bytes of the zoo's
architectures at the sizes their published checkpoints have, beside the zoo's own small configs.

Invariant: each model is the zoo's ``transformers`` architecture built from the config of a published
checkpoint (named in ``PUBLISHED``), random weights, no download; where the whole checkpoint's
parameters and gradients would not fit this machine's memory (the 7B-class decoders), its published
width at the zoo's depth, and the row says so. "Held" is measured as ``bench.zoo`` measures it (what
tracemalloc sees freed when the capture, every lazy field read, is deleted), on the same inputs
(``bench.zoo.BATCH`` × ``SEQ`` tokens; images at the config's size). See Note [Bytes follow nodes].
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any, Callable

import torch

import tracer
from bench.timing import fresh
from bench.zoo import BATCH, _ids, make

__all__ = ["PUBLISHED", "held", "run"]

# Note [Bytes follow nodes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# A capture holds per fx node (its name, inputs, value meta, source line, module stack) of each of the
# Dynamo, joint, forward and backward graphs, and per guard: its bytes grow with the number of ops the
# model runs, not with its width, while the parameter bytes grow with the width squared. The zoo uses
# small widths (hidden 192-256) so that a compile, not the model's run, is what its timing rows measure;
# at those widths the "held ≤ 2 % of the parameter bytes" compares a capture with a model a
# hundred times smaller than the checkpoint its architecture comes from. This bench measures the same
# architectures at their published sizes, so both ratios are on the page: the one a user of the real
# model sees, and the zoo's.

Builder = Callable[[], tuple[torch.nn.Module, tuple]]


def _decoder(cls_name: str, config_name: str, **config: Any) -> Builder:
    def build() -> tuple[torch.nn.Module, tuple]:
        import transformers

        return getattr(transformers, cls_name)(getattr(transformers, config_name)(**config)), (_ids(),)
    return build


def _gpt2() -> tuple[torch.nn.Module, tuple]:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config()), (_ids(),)  # the config's defaults are gpt2 (124M)


def _bert() -> tuple[torch.nn.Module, tuple]:
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig()), (_ids(),)  # defaults: bert-base-uncased


def _t5() -> tuple[torch.nn.Module, tuple]:
    from transformers import T5Config, T5Model

    return T5Model(T5Config()), (_ids(), None, _ids())  # defaults: t5-small


def _vit() -> tuple[torch.nn.Module, tuple]:
    from transformers import ViTConfig, ViTModel

    return ViTModel(ViTConfig()), (torch.randn(BATCH, 3, 224, 224),)  # defaults: ViT-B/16 at 224


def _swin() -> tuple[torch.nn.Module, tuple]:
    from transformers import SwinConfig, SwinModel

    return SwinModel(SwinConfig()), (torch.randn(BATCH, 3, 224, 224),)  # defaults: Swin-T at 224


_MISTRAL_WIDTH = dict(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                      num_key_value_heads=8, max_position_embeddings=4096, num_hidden_layers=2)

# name -> (the checkpoint whose config is followed, its size here, the builder)
PUBLISHED: dict[str, tuple[str, str, Builder]] = {
    "gpt2": ("gpt2", "whole", _gpt2),
    "bert": ("bert-base-uncased", "whole", _bert),
    "t5": ("t5-small", "whole", _t5),
    "llama": ("TinyLlama-1.1B", "whole", _decoder(
        "LlamaForCausalLM", "LlamaConfig", vocab_size=32000, hidden_size=2048, intermediate_size=5632,
        num_hidden_layers=22, num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048)),
    "mistral": ("Mistral-7B", "width, 2 layers", _decoder("MistralForCausalLM", "MistralConfig", **_MISTRAL_WIDTH)),
    "qwen2": ("Qwen2-0.5B", "whole", _decoder(
        "Qwen2ForCausalLM", "Qwen2Config", vocab_size=151936, hidden_size=896, intermediate_size=4864,
        num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
        tie_word_embeddings=True)),
    "mixtral": ("Mixtral-8x7B", "width, 2 layers, 4 experts", _decoder(
        "MixtralForCausalLM", "MixtralConfig", num_local_experts=4, num_experts_per_tok=2, **_MISTRAL_WIDTH)),
    "vit": ("ViT-B/16", "whole", _vit),
    "swin": ("Swin-T", "whole", _swin),
}


def _nodes(cap: Any) -> int:
    """Nodes of every graph the capture holds (Dynamo, HOP bodies, AOT), each graph once."""
    graphs: dict[int, Any] = {}
    for frame in cap.frames:
        for g in frame.graphs().values():
            graphs[id(g)] = g
        for aot in [frame.aot, *(p.aot for p in frame.pieces)]:
            if aot is not None:
                for g in (aot.joint, aot.forward, aot.backward, aot.inference, *aot.subgraphs.values()):
                    if g is not None:
                        graphs[id(g)] = g
    return sum(len(g.nodes) for g in graphs.values())


def held(model: torch.nn.Module, args: tuple) -> dict[str, Any]:
    """Bytes one ``tracer.capture(..., backward=True)`` of ``model`` holds (Python objects, every lazy field
    read first, its result dropped), its graphs' nodes, and the model's parameter bytes."""
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    fresh()
    tracemalloc.start()
    try:
        cap = tracer.capture(model, *args, backward=True)
        cap.result = None
        cap.to_json()  # every lazy field read: the bytes it holds once fully read
        nodes = _nodes(cap)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        del cap
        gc.collect()
        freed = before - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    fresh()
    return {"held_bytes": freed, "param_bytes": param_bytes, "held_share": round(freed / param_bytes, 4), "nodes": nodes,
            "held_per_node": round(freed / max(nodes, 1))}


HEADER = ("model", "published config", "size here", "param bytes", "nodes", "held bytes", "held share",
          "zoo config: nodes", "zoo held share")


def run(names: tuple[str, ...] = tuple(PUBLISHED), log: Callable[[str], None] = print) -> dict[str, Any]:
    """Per model, the capture's held bytes at the published size and at the zoo's config; ``log`` gets a
    header and one row per model."""
    out: dict[str, Any] = {}
    log(" | ".join(HEADER))
    for name in names:
        checkpoint, size, build = PUBLISHED[name]
        torch.manual_seed(0)
        model, args = build()
        big = held(model.train(), args)
        del model, args
        gc.collect()
        small = held(*make(name))
        out[name] = {"checkpoint": checkpoint, "size": size, "published": big, "zoo": small}
        log(" | ".join((name, checkpoint, size, f"{big['param_bytes'] / 1e6:,.0f} MB", f"{big['nodes']:,}",
                        f"{big['held_bytes']:,}", f"{big['held_share']:.4f}", f"{small['nodes']:,}",
                        f"{small['held_share']:.4f}")))
    return out
