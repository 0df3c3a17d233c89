"""How each HOP call feeds the placeholders of its bodies: one Feed per placeholder, per call.

Invariant: a Feed comes from the call's own arguments laid out the way the HOP's runtime calls
the body (torch/_higher_order_ops/*.py); when the layout does not give exactly one value per
placeholder we return no Feeds and a problem string, never an alignment guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch.fx

__all__ = ["Feed", "call_feeds", "leaves"]


@dataclass(eq=False)
class Feed:
    """What one call passes to one body placeholder."""

    node: Optional[torch.fx.Node] = None  # the parent node passed (or sliced, or the initial carry)
    supplied: str = ""  # non-empty: the HOP makes this value at run time (Note [Inputs the HOP supplies])
    constant: str = ""  # repr of a non-node value the call passes as is ("" when it passes a node)


def leaves(a: Any) -> list[Any]:
    """Leaves of the (list/tuple/dict) structure of an fx call argument, in order, constants included."""
    if isinstance(a, (list, tuple)):
        return [x for v in a for x in leaves(v)]
    if isinstance(a, dict):
        return [x for v in a.values() for x in leaves(v)]
    return [a]


def _passed(values: list[Any]) -> list[Feed]:
    return [Feed(v) if isinstance(v, torch.fx.Node) else Feed(constant=repr(v)) for v in values]


def _made(values: list[Any], what: Callable[[int], str]) -> list[Feed]:
    return [Feed(v, what(j)) if isinstance(v, torch.fx.Node) else Feed(None, what(j), repr(v))
            for j, v in enumerate(values)]


def _arg(call: torch.fx.Node, position: int, keyword: str) -> Any:
    return call.args[position] if len(call.args) > position else call.kwargs.get(keyword, ())


# Note [How each HOP calls its bodies]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The body's placeholders are exactly the values the HOP's implementation passes when it runs the
# body, in that order (the Dynamo graph calls the same HOP). Read from torch/_higher_order_ops:
#   cond(pred, true_fn, false_fn, operands)        both branches: (*operands)          cond.py
#   while_loop(cond_fn, body_fn, carried, extra)   both: (*carried, *extra)            while_loop.py
#   map_impl(f, xs, pos_args)                      f(*[x[i] for x in xs], *pos_args)   map.py map_dense
#   scan(combine_fn, init, xs, extra)              (*carry, *[x[i] for x in xs], *extra)  scan.py generic_scan
#   associative_scan(combine_fn, xs, extra)        (*lhs elements, *rhs elements, *extra) associative_scan.py
#   flex_attention(q, k, v, score_mod, block_mask, scale, kernel_options, score_bufs, mask_bufs)
#       score_mod(score, b, h, q_idx, kv_idx, *score_bufs); block_mask[-1] is mask_mod:
#       mask_mod(b, h, q_idx, kv_idx, *mask_bufs)                                      flex_attention.py
#   autograd_function_apply(fwd, bwd, *args)       fwd(*args) -> (output, saved_values);
#       bwd(*grads of output, *saved_values)                          torch/_functorch/autograd_function.py
#   invoke_subgraph(body, identifier, *operands)   body(*operands)                     invoke_subgraph.py
#   wrap(body, *args), tag_activation_checkpoint(body, *args), wrap_with_set_grad_enabled(enabled,
#       body, *args), wrap_with_autocast(..., body, *args), hints_wrapper(body, args, kwargs):
#       body(*every positional value after the body)                                   wrap.py
# Constants keep their place (a constant the call passes still feeds its placeholder), so they
# never shift the Feeds after them. A HOP not in the table uses the last row and, if its values do
# not match the placeholders one to one, gets a problem instead of Feeds.

# Note [Inputs the HOP supplies]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# kind "hop_supplied" is for a placeholder whose value, when the body runs, is made by the HOP,
# not read from a parent node: flex_attention's score and indices, an autograd.Function backward's
# gradients and saved values, a scan/map slice, a scan/while_loop carry. ``supplied`` says what it
# is. Where a parent node determines the value we keep it as ``source`` too, because that is
# exact: a slice "slice of xs[0]" comes from the parent node xs[0] (element i at run i); a carry
# "carry[1]" *is* the parent node at the first iteration and the body's own output afterwards, so
# source = the initial value and supplied = "carry[1]" together say both. flex's score/b/h/q_idx/
# kv_idx and the backward's gradients and saved values have no parent node: source "".
def _cond(call: torch.fx.Node, index: int, mod: torch.fx.GraphModule) -> list[Feed]:
    return _passed(leaves(_arg(call, 3, "operands")))


def _while_loop(call: torch.fx.Node, index: int, mod: torch.fx.GraphModule) -> list[Feed]:
    carried = leaves(_arg(call, 2, "carried_inputs"))
    return _made(carried, lambda j: f"carry[{j}]") + _passed(leaves(_arg(call, 3, "additional_inputs")))


def _map(call: torch.fx.Node, index: int, mod: torch.fx.GraphModule) -> list[Feed]:
    xs = leaves(_arg(call, 1, "xs"))
    return _made(xs, lambda j: f"slice of xs[{j}]") + _passed(leaves(_arg(call, 2, "pos_args")))


def _scan(call: torch.fx.Node, index: int, mod: torch.fx.GraphModule) -> list[Feed]:
    init, xs = leaves(_arg(call, 1, "init")), leaves(_arg(call, 2, "xs"))
    return (_made(init, lambda j: f"carry[{j}]") + _made(xs, lambda j: f"slice of xs[{j}]")
            + _passed(leaves(_arg(call, 3, "additional_inputs"))))


def _associative_scan(call: torch.fx.Node, index: int, mod: torch.fx.GraphModule) -> list[Feed]:
    xs = leaves(_arg(call, 1, "xs"))
    return (_made(xs, lambda j: f"lhs element of xs[{j}]") + _made(xs, lambda j: f"rhs element of xs[{j}]")
            + _passed(leaves(_arg(call, 2, "additional_inputs"))))


_SCORE_MOD = ("score", "b", "h", "q_idx", "kv_idx")


def _flex_attention(call: torch.fx.Node, index: int, mod: torch.fx.GraphModule) -> list[Feed]:
    if index == 0:
        return [Feed(supplied=s) for s in _SCORE_MOD] + _passed(leaves(_arg(call, 7, "score_mod_other_buffers")))
    return [Feed(supplied=s) for s in _SCORE_MOD[1:]] + _passed(leaves(_arg(call, 8, "mask_mod_other_buffers")))


def _autograd_function_apply(call: torch.fx.Node, index: int, mod: torch.fx.GraphModule) -> list[Feed]:
    if index == 0:
        return _passed(leaves(call.args[2:]))
    fwd = call.args[0]
    fwd_mod = mod.get_submodule(fwd.target) if isinstance(fwd, torch.fx.Node) and fwd.op == "get_attr" else None
    if not isinstance(fwd_mod, torch.fx.GraphModule):
        return []
    (out,) = fwd_mod.graph.find_nodes(op="output")
    result = out.args[0]
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        return []
    outputs, saved = leaves(result[0]), leaves(result[1])
    return ([Feed(supplied=f"grad of output {j}") for j in range(len(outputs))]
            + [Feed(supplied=f"saved[{j}] of {fwd.target}") for j in range(len(saved))])


def _invoke_subgraph(call: torch.fx.Node, index: int, mod: torch.fx.GraphModule) -> list[Feed]:
    return _passed(leaves(call.args[2:]))


def _after_body(call: torch.fx.Node, index: int, mod: torch.fx.GraphModule) -> list[Feed]:
    tops = [i for i, a in enumerate(call.args) if _is_body(a, mod)]
    return _passed(leaves(call.args[tops[-1] + 1:])) if tops else []


_LAYOUTS: dict[str, Callable[[torch.fx.Node, int, torch.fx.GraphModule], list[Feed]]] = {
    "cond": _cond,
    "while_loop": _while_loop,
    "while_loop_stack_output": _while_loop,
    "map_impl": _map,
    "scan": _scan,
    "associative_scan": _associative_scan,
    "flex_attention": _flex_attention,
    "autograd_function_apply": _autograd_function_apply,
    "invoke_subgraph": _invoke_subgraph,
    "wrap": _after_body,
    "tag_activation_checkpoint": _after_body,
    "wrap_with_set_grad_enabled": _after_body,
    "wrap_with_autocast": _after_body,
    "hints_wrapper": _after_body,
}


def _is_body(a: Any, mod: torch.fx.GraphModule) -> bool:
    if not (isinstance(a, torch.fx.Node) and a.op == "get_attr"):
        return False
    try:
        return isinstance(mod.get_submodule(a.target), torch.fx.GraphModule)
    except AttributeError:
        return False


def call_feeds(call: torch.fx.Node, hop: str, index: int, body: str, n: int, mod: torch.fx.GraphModule
               ) -> tuple[list[Feed], list[str]]:
    """Feeds of the ``n`` placeholders of body number ``index`` of ``call``, and problems.

    On a problem the Feeds are empty: the placeholders' sources are unknown (See Note [How each
    HOP calls its bodies]).
    """
    layout = _LAYOUTS.get(hop)
    feeds = (layout or _after_body)(call, index, mod)
    if len(feeds) == n:
        return feeds, []
    known = "" if layout else f" (no layout known for HOP {hop!r}; read as body(*values after the body))"
    return [], [f"body {body!r} called by {call.name!r}: the call passes {len(feeds)} values for {n} "
                f"placeholders{known}; their sources are unknown"]
