"""Dynamo's graph passes after its output graph is logged, and the readable text of the root graph.

Invariant: ``Frame.graph`` (nodes and ``code``) is the GraphModule the backend received: torch's
logged text is used only when it is the text of that graph, and every pass that changed the
graph between the log point and the backend is recorded as a ``GraphPass`` on the frame. The
pass hooks are installed for one capture and removed after it, also on error.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Optional

import torch.fx

from tracer._torch.patching import Patches
from tracer._torch.releases import MissingHookPoint, hook_point, lacking
from tracer._torch.structured import logged_graph_code
from tracer.model import GraphPass

__all__ = ["PassRecorder", "root_code"]

# Note [Dynamo passes after the output graph is logged]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# In torch 2.13 ``OutputGraph.compile_and_call_fx_graph`` (torch/_dynamo/output_graph.py) runs
# ``dedup_pass``, ``remove_unused_get_attr_nodes``, ``remove_unused_graphargs`` and
# ``dce_hop_extra_outputs`` *before* it logs the graph as "dynamo_output_graph" (the text
# Note [Graph text torch already rendered] reuses). After the log point, ``_call_user_compiler``
# runs one more pass on the same GraphModule, in place, right before calling the backend:
#   config.inline_invoke_subgraph             -> ``inline_invoke_subgraph(gm)``  (every call)
#   config.inline_single_use_invoke_subgraph  -> ``inline_single_use_invoke_subgraph(gm)`` (default)
# (torch/_higher_order_ops/passes/inline_invoke_subgraph.py). So a ``nested_compile_region``
# called once reaches the backend inlined, while the logged text still shows its
# ``invoke_subgraph``. ``_call_user_compiler`` imports the passes from their module when it runs,
# so we wrap the module attributes for the capture and record a pass that changed any graph of
# the tree; and ``root_code`` takes torch's text only when its statements name exactly the
# nodes of the graph the backend got, in order, rendering the graph otherwise (the same
# ``print_readable`` flavour torch logs).
#
# The passes came in recent releases: ``inline_invoke_subgraph`` in torch 2.12 (pytorch/pytorch#176082),
# ``inline_single_use_invoke_subgraph`` in 2.13 (pytorch/pytorch#180674). On a checked release that
# lacks one (``_symbols.py``), its Dynamo does not run it, so there is nothing to record; on 2.11,
# where neither exists, the backend always gets the graph Dynamo logged.
PASSES = (
    ("torch._higher_order_ops.passes.inline_invoke_subgraph", "inline_invoke_subgraph", "inline_invoke_subgraph"),  # 2.12
    ("torch._higher_order_ops.passes.inline_invoke_subgraph", "inline_single_use_invoke_subgraph",
     "inline_single_use_invoke_subgraph"),  # 2.13
)


def _shape(gm: Any) -> tuple[int, tuple]:
    """(root node count, node names of every graph of the tree): what a pass may change."""
    if not isinstance(gm, torch.fx.GraphModule):
        return 0, ()
    tree = tuple(
        (path, tuple(n.name for n in mod.graph.nodes))
        for path, mod in gm.named_modules()
        if isinstance(mod, torch.fx.GraphModule)
    )
    return len(gm.graph.nodes), tree


class PassRecorder:
    """Records the Dynamo passes of Note [Dynamo passes after the output graph is logged] that
    changed a graph; ``take(gm)`` returns (and forgets) those that produced ``gm``."""

    def __init__(self) -> None:
        self._by_gm: dict[int, list[GraphPass]] = {}  # id(GraphModule the pass returned) -> passes
        self._patches: Optional[Patches] = None
        self.problems: list[str] = []  # passes this torch lacks (Note [Releases nobody checked])

    def _wrap(self, fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(gm: Any, *args: Any, **kwargs: Any) -> Any:
            count, before = _shape(gm)
            out = fn(gm, *args, **kwargs)
            after_count, after = _shape(out)
            if after != before:
                self._by_gm.setdefault(id(out), []).append(GraphPass(name=name, nodes_before=count,
                                                                     nodes_after=after_count))
            return out

        return run

    def __enter__(self) -> PassRecorder:
        self._patches = Patches()
        try:
            for module, attr, name in PASSES:
                try:
                    owner, real = hook_point(module, attr)
                except MissingHookPoint as e:
                    if f"{module}:{attr}" not in lacking():  # a release nobody checked: listed, the others recorded
                        self.problems.append(str(e))
                    continue  # a checked release without this pass: its Dynamo does not run it, nothing to record
                self._patches.set(owner, attr, self._wrap(real, name))
        except BaseException:  # except: re-raises (after undoing the patches)
            self._patches.restore()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._patches is not None:
            self._patches.restore()
            self._patches = None
        self._by_gm.clear()
        self.problems.clear()

    def take(self, gm: Any) -> list[GraphPass]:
        return self._by_gm.pop(id(gm), [])


def root_code(gm: torch.fx.GraphModule) -> str:
    """Readable text of the root graph the backend received: torch's logged text when it is of
    this graph (Note [Dynamo passes after the output graph is logged]), rendered here otherwise."""
    text = logged_graph_code("dynamo_output_graph")
    if text is not None and _statement_names(text) == _expected_names(gm):
        return text
    return gm.print_readable(print_output=False, include_stride=True, include_device=True)


_TARGET = re.compile(r'(\w+)(?::\s*(?:"[^"]*"|[^=]*?))? = ')
_AUGMENTED = re.compile(r"\S+ (?:\*\*|//|<<|>>|[-+*/@%&|^])= ")
_SUBSCRIPT = re.compile(r"\w+\[.*\] = ")  # operator.setitem: ``x[i] = v;  setitem = x``


def _statement_names(text: str) -> list[str]:
    """Names assigned by the statements of the root ``forward`` in ``print_readable`` text, in order.

    fx emits one line per node (torch/fx/graph.py ``emit_node``): ``name: "ann" = ...``, an
    in-place operator as ``a += b;  name: "ann" = a`` (``operator.setitem`` as ``a[i] = v;  setitem = a``,
    torch/fx/graph.py ``inplace_methods``), a placeholder renamed as ``l_x_ = L_x_``,
    each maybe followed by ``;  dead = None``. Nested bodies start at ``\\n    class ``.
    """
    root = text.split("\n    class ", 1)[0]
    names = []
    for line in root.split("\n"):
        if not line.startswith("        ") or line[8:9] in ("", " ", "#"):
            continue
        first, _, rest = line[8:].partition(";  ")
        m = _TARGET.match(first)
        if m is None and (_AUGMENTED.match(first) or _SUBSCRIPT.match(first)) and rest:
            m = _TARGET.match(rest)
        if m is not None:
            names.append(m.group(1))
    return names


def _expected_names(gm: torch.fx.GraphModule) -> list[str]:
    out = []
    for n in gm.graph.nodes:
        if n.op == "output":
            continue
        if n.op == "placeholder" and str(n.target).replace("*", "") == n.name:
            continue  # a parameter of forward, no statement
        out.append(n.name)
    return out
