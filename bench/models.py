"""The models every benchmark measures, built fresh and seeded: same name, same model and input.

Invariant: ``make(name, size)`` is a pure function of its arguments (fixed seed), so a capture and a
plain ``torch.compile`` in one run see the same module and the same input.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch.nn.attention.flex_attention import flex_attention

from tracer._torch.bench_support import wrap_hop

__all__ = ["MODELS", "SIZES", "ZOO", "big_mlp", "make", "resnet18"]

SIZES = ("full", "tiny")


class MLP(torch.nn.Module):
    """A small MLP: Linear/ReLU x3."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(width, 2 * width), torch.nn.ReLU(),
            torch.nn.Linear(2 * width, 2 * width), torch.nn.ReLU(),
            torch.nn.Linear(2 * width, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Transformer(torch.nn.Module):
    """A stack of ``nn.TransformerEncoderLayer`` (dropout 0 so runs are deterministic)."""

    def __init__(self, layers: int, hidden: int, heads: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(hidden, heads, dim_feedforward=4 * hidden, dropout=0.0,
                                             batch_first=True)
            for _ in range(layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class HopLayer(torch.nn.Module):
    """One layer using every HOP dynascope shows: ``wrap``, ``torch.cond`` and a checkpoint."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.a = torch.nn.Linear(hidden, hidden)
        self.b = torch.nn.Linear(hidden, hidden)
        self.c = torch.nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = wrap_hop()(lambda t: self.a(t).relu(), x)
        y = torch.cond(y.sum() > 0, lambda t: self.b(t).sin(), lambda t: self.b(t).cos(), (y,))
        return torch.utils.checkpoint.checkpoint(lambda t: self.c(t).tanh(), y, use_reentrant=False)


class HopStack(torch.nn.Module):
    """``HopLayer`` repeated: a wrap, a cond and a checkpoint in every layer."""

    def __init__(self, layers: int, hidden: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(HopLayer(hidden) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class GPT2Block(torch.nn.Module):
    """A GPT-2 block written with torch.nn: pre-LayerNorm causal self-attention through
    ``F.scaled_dot_product_attention``, then a GELU MLP, each with a residual."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(hidden)
        self.c_attn = torch.nn.Linear(hidden, 3 * hidden)
        self.c_proj = torch.nn.Linear(hidden, hidden)
        self.ln_2 = torch.nn.LayerNorm(hidden)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(4 * hidden, hidden)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln_2(x))


class GPT2(torch.nn.Module):
    """Token + position embeddings, ``GPT2Block`` x layers, final LayerNorm and a tied LM head."""

    def __init__(self, layers: int, hidden: int, heads: int, vocab: int, seq: int) -> None:
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, hidden)
        self.wpe = torch.nn.Embedding(seq, hidden)
        self.blocks = torch.nn.ModuleList(GPT2Block(hidden, heads) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(hidden)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T


class FlexBlock(torch.nn.Module):
    """A transformer block whose attention is ``flex_attention`` with a relative-position score_mod
    (the flex_attention HOP plus its score_mod subgraph), then a GELU MLP."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.ln_2 = torch.nn.LayerNorm(hidden)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(), torch.nn.Linear(4 * hidden, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))

        def relative(score, batch, head, q_idx, kv_idx):
            return score + (q_idx - kv_idx) * 0.01

        y = flex_attention(q, k, v, score_mod=relative)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln_2(x))


class SmallCNN(torch.nn.Module):
    """conv/bn/relu/pool x3, then a linear classifier (a ResNet-style stem without the downloads)."""

    def __init__(self, width: int, classes: int = 10) -> None:
        super().__init__()
        layers: list[torch.nn.Module] = []
        c_in = 3
        for c_out in (width, 2 * width, 4 * width):
            layers += [torch.nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), torch.nn.BatchNorm2d(c_out),
                       torch.nn.ReLU(), torch.nn.MaxPool2d(2)]
            c_in = c_out
        self.features = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(c_in, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


class BasicBlock(torch.nn.Module):
    """torchvision's ResNet BasicBlock: conv/bn/relu, conv/bn, a downsample branch when the shape changes."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c_out)
        self.relu = torch.nn.ReLU(inplace=True)
        self.conv2 = torch.nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = torch.nn.Sequential(torch.nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                                  torch.nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18(torch.nn.Module):
    """torchvision's resnet18 layout (stem, four stages of two BasicBlocks, pool, fc) without the download."""

    def __init__(self, widths: tuple[int, int, int, int] = (64, 128, 256, 512), classes: int = 10) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(widths[0])
        self.relu = torch.nn.ReLU(inplace=True)
        self.maxpool = torch.nn.MaxPool2d(3, 2, 1)
        c = widths[0]
        for i, w in enumerate(widths):
            setattr(self, f"layer{i + 1}", torch.nn.Sequential(BasicBlock(c, w, 1 if i == 0 else 2), BasicBlock(w, w, 1)))
            c = w
        self.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
        self.fc = torch.nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(size: str = "full") -> tuple[torch.nn.Module, tuple]:
    """``(model, args)``: a resnet18-equivalent CNN in training mode, seeded (not in MODELS: the
    overhead benchmarks keep their set); ``size="tiny"`` has 1/16 of the channels and a 16x16 input."""
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r} (must be one of {list(SIZES)})")
    torch.manual_seed(0)
    widths, hw = ((64, 128, 256, 512), 64) if size == "full" else ((4, 8, 16, 32), 16)
    return ResNet18(widths), (torch.randn(2, 3, hw, hw),)


class HFLoss(torch.nn.Module):
    """A ``transformers`` causal LM whose forward returns its own loss on the input ids (a training step's graph)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(ids, labels=ids).loss


class HFLabelled(torch.nn.Module):
    """A ``transformers`` model whose forward returns its own loss on given labels (a training step's
    graph): ``model(inputs, labels=labels).loss``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.model(inputs, labels=labels).loss


def _mlp(size: str) -> tuple[torch.nn.Module, tuple]:
    w = 64 if size == "full" else 8
    return MLP(w), (torch.randn(8, w),)


def _transformer12(size: str) -> tuple[torch.nn.Module, tuple]:
    layers, hidden, heads, seq = (12, 256, 4, 16) if size == "full" else (1, 16, 2, 4)
    return Transformer(layers, hidden, heads), (torch.randn(2, seq, hidden),)


def _hops(size: str) -> tuple[torch.nn.Module, tuple]:
    layers, hidden = (4, 64) if size == "full" else (1, 8)
    return HopStack(layers, hidden), (torch.randn(4, hidden),)


def _gpt2(size: str) -> tuple[torch.nn.Module, tuple]:
    layers, hidden, heads, vocab, seq = (6, 128, 4, 512, 32) if size == "full" else (1, 16, 2, 32, 4)
    return GPT2(layers, hidden, heads, vocab, seq), (torch.randint(0, vocab, (2, seq)),)


def _flex(size: str) -> tuple[torch.nn.Module, tuple]:
    # FlexAttention has no CPU backward (flex_attention.py ``_validate_device``): an inference model.
    layers, hidden, heads, seq = (2, 128, 4, 32) if size == "full" else (1, 16, 2, 16)
    model = torch.nn.Sequential(*(FlexBlock(hidden, heads) for _ in range(layers))).requires_grad_(False)
    return model, (torch.randn(2, seq, hidden),)


def _cnn(size: str) -> tuple[torch.nn.Module, tuple]:
    width, hw = (32, 32) if size == "full" else (4, 8)
    return SmallCNN(width), (torch.randn(4, 3, hw, hw),)


def _resnet18(size: str) -> tuple[torch.nn.Module, tuple]:
    return resnet18(size)


def _gpt2_hf(size: str) -> tuple[torch.nn.Module, tuple]:
    # transformers' own GPT-2 from its config, random weights (no download); its graph breaks are real
    import transformers

    layers, hidden, seq = (4, 256, 64) if size == "full" else (1, 32, 8)
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=hidden, n_head=4, vocab_size=1000, n_positions=128)
    return HFLoss(transformers.GPT2LMHeadModel(cfg)), (torch.randint(0, 1000, (2, seq)),)


def _bert_hf(size: str) -> tuple[torch.nn.Module, tuple]:
    # transformers' BertForMaskedLM from its config, random weights; its masked-LM loss on the ids
    import transformers

    layers, hidden, seq = (4, 256, 64) if size == "full" else (1, 32, 8)
    cfg = transformers.BertConfig(vocab_size=1000, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                                  intermediate_size=4 * hidden, max_position_embeddings=128)
    ids = torch.randint(0, 1000, (2, seq))
    return HFLabelled(transformers.BertForMaskedLM(cfg)), (ids, ids)


def _llama_hf(size: str) -> tuple[torch.nn.Module, tuple]:
    # transformers' LlamaForCausalLM from its config (grouped-query attention, RoPE, RMSNorm, SwiGLU)
    import transformers

    layers, hidden, seq = (4, 256, 64) if size == "full" else (1, 32, 8)
    cfg = transformers.LlamaConfig(vocab_size=1000, hidden_size=hidden, intermediate_size=2 * hidden,
                                   num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=128)
    ids = torch.randint(0, 1000, (2, seq))
    return HFLabelled(transformers.LlamaForCausalLM(cfg)), (ids, ids)


def _t5_hf(size: str) -> tuple[torch.nn.Module, tuple]:
    # transformers' T5ForConditionalGeneration: encoder and decoder stacks; the labels make the decoder's input
    import transformers

    layers, hidden, seq = (4, 256, 64) if size == "full" else (1, 32, 8)
    cfg = transformers.T5Config(vocab_size=1000, d_model=hidden, d_kv=hidden // 4, d_ff=2 * hidden, num_layers=layers,
                                num_decoder_layers=layers, num_heads=4, decoder_start_token_id=0, pad_token_id=0)
    ids = torch.randint(0, 1000, (2, seq))
    return HFLabelled(transformers.T5ForConditionalGeneration(cfg)), (ids, ids)


def _vit_tiny(size: str) -> tuple[torch.nn.Module, tuple]:
    # transformers' ViTForImageClassification at ViT-Ti's width and depth (d 192, 3 heads, 12 layers), 64 px
    import transformers

    layers, hidden, heads, hw = (12, 192, 3, 64) if size == "full" else (1, 24, 2, 16)
    cfg = transformers.ViTConfig(image_size=hw, patch_size=8, hidden_size=hidden, num_hidden_layers=layers,
                                 num_attention_heads=heads, intermediate_size=4 * hidden, num_labels=10)
    return HFLabelled(transformers.ViTForImageClassification(cfg)), (torch.randn(2, 3, hw, hw), torch.tensor([1, 7]))


MODELS: dict[str, Callable[[str], tuple[torch.nn.Module, tuple]]] = {
    "mlp": _mlp,
    "transformer12": _transformer12,
    "hops": _hops,
    "gpt2": _gpt2,
    "flex_attention": _flex,
    "cnn": _cnn,
}
# Models only the report-size benchmark builds (bench/report_bytes.py): real architectures at their size.
ZOO: dict[str, Callable[[str], tuple[torch.nn.Module, tuple]]] = {
    "resnet18": _resnet18,
    "gpt2_hf": _gpt2_hf,  # needs transformers, as the four below
    "bert_hf": _bert_hf,
    "llama_hf": _llama_hf,
    "t5_hf": _t5_hf,
    "vit_tiny": _vit_tiny,
}


def make(name: str, size: str = "full") -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """``(model, args)`` for a benchmark model, seeded; ``size="tiny"`` for smoke tests."""
    if name not in MODELS and name not in ZOO:
        raise ValueError(f"unknown benchmark model {name!r} (must be one of {[*MODELS, *ZOO]})")
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r} (must be one of {list(SIZES)})")
    torch.manual_seed(0)
    return {**MODELS, **ZOO}[name](size)


def big_mlp(param_bytes: int, width: int = 2048) -> tuple[torch.nn.Module, tuple]:
    """An MLP with at least ``param_bytes`` bytes of float32 parameters (square layers of ``width``)."""
    per_layer = (width * width + width) * 4
    layers = max(1, -(-param_bytes // per_layer))
    torch.manual_seed(0)
    mods: list[torch.nn.Module] = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods), (torch.randn(4, width),)
