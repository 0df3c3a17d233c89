"""Synthetic ``tracer.model`` graphs shaped like real FX graphs, for tests and benchmarks.

Invariant: pure functions of their arguments (same arguments, same Graph), no torch; every graph
passes ``tracer.model`` validation (nodes in topological order, ``users`` consistent with ``inputs``).
"""

from __future__ import annotations

from typing import Any

from tracer.model import Graph, Node

__all__ = ["chain_graph", "joint_like_graph"]

# One transformer-ish layer: (submodule, module type, op targets). Each op reads the previous op;
# the first op of "norm2"/"linear1" also reads the layer input (a residual), like the real thing.
_LAYER = (
    ("self_attn", "torch.nn.modules.activation.MultiheadAttention",
     ("aten.linear", "aten.view", "aten.transpose", "aten.bmm", "aten.softmax", "aten.bmm", "aten.view", "aten.linear")),
    ("norm1", "torch.nn.modules.normalization.LayerNorm", ("aten.add", "aten.layer_norm")),
    ("linear1", "torch.nn.modules.linear.Linear", ("aten.linear",)),
    ("activation", "torch.nn.modules.activation.ReLU", ("aten.relu",)),
    ("linear2", "torch.nn.modules.linear.Linear", ("aten.linear",)),
    ("norm2", "torch.nn.modules.normalization.LayerNorm", ("aten.add", "aten.layer_norm")),
)
_ROOT = "L['self']"
_SHAPE = ["s0", 128, 512]


def _tensor(shape: list[Any] | None = None) -> dict[str, Any]:
    return {"kind": "tensor", "dtype": "float32", "shape": list(shape or _SHAPE), "device": "cpu"}


class _Builder:
    def __init__(self, name: str) -> None:
        self.nodes: list[Node] = []
        self.by_name: dict[str, Node] = {}
        self.name = name

    def add(self, name: str, op: str, target: str, inputs: list[str], *, role: str = "op",
            meta: dict[str, Any] | None = None) -> str:
        node = Node(name=name, op=op, target=target, args=list(inputs), inputs=list(dict.fromkeys(inputs)),
                    role=role, meta=meta if meta is not None else _tensor())
        for i in node.inputs:
            self.by_name[i].users.append(name)
        self.nodes.append(node)
        self.by_name[name] = node
        return name

    def graph(self) -> Graph:
        code = "\n".join(str(n) for n in self.nodes)
        return Graph(nodes=self.nodes, code=code, name=self.name)


def _stack(*pairs: tuple[str, str]) -> list[list[str]]:
    return [[p, t] for p, t in pairs]


def chain_graph(n: int, layers: int = 12, name: str = "") -> Graph:
    """A Dynamo-like graph of about ``n`` nodes: ``layers`` transformer-ish layers repeated as needed.

    Node meta carries ``nn_module_stack`` like Dynamo's (``L['self']`` > ``L['self'].layers.3`` >
    ``L['self'].layers.3.norm1``), so grouping sees the real nesting. Edges are short (a chain with
    residuals), the shape ``dot`` lays out best.

    >>> g = chain_graph(100, layers=2)
    >>> len(g.nodes) >= 100, g.nodes[0].role, g.nodes[-1].op
    (True, 'operand', 'output')
    """
    if n < 3 or layers < 1:
        raise ValueError(f"chain_graph needs n >= 3 and layers >= 1 (got n={n}, layers={layers})")
    b = _Builder(name)
    x = b.add("l_x_", "placeholder", "L_x_", [], role="operand")
    per_layer = sum(len(ops) for _, _, ops in _LAYER)
    reps = max(1, (n - 2) // (per_layer * layers) + (1 if (n - 2) % (per_layer * layers) else 0))
    count = 1
    cur = x
    k = 0
    for layer in range(layers):
        lpath = f"{_ROOT}.layers.{layer}"
        layer_in = cur
        for rep in range(reps):
            for sub, typ, ops in _LAYER:
                spath = f"{lpath}.{sub}" if rep == 0 else f"{lpath}.{sub}_{rep}"
                stack = _stack((_ROOT, "Model"), (lpath, "torch.nn.modules.transformer.TransformerEncoderLayer"),
                               (spath, typ))
                for j, target in enumerate(ops):
                    if count >= n - 1:
                        break
                    inputs = [cur]
                    if j == 0 and sub in ("norm1", "norm2"):
                        inputs.append(layer_in)
                    meta = _tensor()
                    meta["nn_module_stack"] = stack
                    meta["source"] = {"file": "model.py", "line": 10 + j, "fn": "forward", "code": f"x = {sub}(x)"}
                    cur = b.add(f"{target.split('.')[-1]}_{k}", "call_function", f"{target}.default", inputs, meta=meta)
                    k += 1
                    count += 1
                if sub in ("norm1", "norm2"):
                    layer_in = cur
    b.add("output", "output", "output", [cur], role="output", meta={})
    return b.graph()


def joint_like_graph(n: int, layers: int = 12, name: str = "joint") -> Graph:
    """An AOT-joint-like graph of ``n`` nodes: a forward chain, then a backward chain that reads saved
    forward values in reverse order (the long edges that make ``dot`` slow).

    Nodes carry ``meta["partition"]`` ("forward"/"backward") and an ``nn_module_stack``.

    >>> g = joint_like_graph(40, layers=2)
    >>> len(g.nodes), sorted({m.meta.get("partition") for m in g.nodes if m.op == "call_function"})
    (40, ['backward', 'forward'])
    """
    if n < 6 or layers < 1:
        raise ValueError(f"joint_like_graph needs n >= 6 and layers >= 1 (got n={n}, layers={layers})")
    b = _Builder(name)
    primal = b.add("primals_1", "placeholder", "primals_1", [], role="operand")
    tangent = b.add("tangents_1", "placeholder", "tangents_1", [], role="operand")
    body = n - 3
    nf = body // 2
    nb = body - nf
    per_layer = max(1, -(-nf // layers))
    fwd: list[str] = []
    cur = primal
    for i in range(nf):
        layer = min(i // per_layer, layers - 1)
        meta = _tensor()
        meta["partition"] = "forward"
        meta["nn_module_stack"] = _stack((_ROOT, "Model"), (f"{_ROOT}.layers.{layer}", "Layer"))
        cur = b.add(f"fwd_{i}", "call_function", "aten.mm.default" if i % 3 == 0 else "aten.relu.default", [cur],
                    meta=meta)
        fwd.append(cur)
    grad = tangent
    grads: list[str] = []
    for i in range(nb):
        saved = fwd[max(0, nf - 1 - i * nf // max(1, nb))] if fwd else primal
        layer = min(max(0, nf - 1 - i * nf // max(1, nb)) // per_layer, layers - 1)
        meta = _tensor()
        meta["partition"] = "backward"
        meta["nn_module_stack"] = _stack((_ROOT, "Model"), (f"{_ROOT}.layers.{layer}", "Layer"))
        grad = b.add(f"bwd_{i}", "call_function", "aten.threshold_backward.default" if i % 2 else "aten.mm.default",
                     [grad, saved], meta=meta)
        grads.append(grad)
    b.add("output", "output", "output", [cur, grad], role="output", meta={})
    return b.graph()
