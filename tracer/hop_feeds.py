"""How each HOP call feeds the placeholders of its bodies, on plain call data: one Feed per placeholder.

Invariant: a Feed comes from the call's own arguments laid out the way the HOP's runtime calls the
body (torch/_higher_order_ops/*.py); when the layout does not give exactly one value per
placeholder we return no Feeds and a problem string, never an alignment guess. No torch here: a
live capture reads the call from a ``torch.fx.Node`` (tracer/_torch/body_inputs.py), a log from the
graph text (tracer/trace_log/body_feeds.py); a :class:`CallReader` says what each leaf of the call is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

__all__ = ["CallReader", "Feed", "call_feeds", "leaves"]


@dataclass(eq=False)
class Feed:
    """What one call passes to one body placeholder."""

    node: Any = None  # the parent node passed (or sliced, or the initial carry), as the reader's leaf; None if none
    supplied: str = ""  # non-empty: the HOP makes this value at run time (Note [Inputs the HOP supplies])
    constant: str = ""  # text of a non-node value the call passes as is ("" when it passes a node)


@dataclass(frozen=True)
class CallReader:
    """What the table needs to know about the leaves of a call's arguments, in one parent graph."""

    is_node: Callable[[Any], bool]  # the leaf is a node of the parent graph (else a constant)
    body: Callable[[Any], str]  # attribute name of the body a leaf refers to (a get_attr of a body), "" if none
    result: Callable[[str], Any]  # what the body of that attribute returns (its output's argument); None: unknown
    constant: Callable[[Any], str] = repr  # the text of a constant leaf


def leaves(a: Any) -> list[Any]:
    """Leaves of the (list/tuple/dict) structure of a call argument, in order, constants included.

    >>> leaves([("x", 2), {"k": ["y"]}, ()])
    ['x', 2, 'y']
    """
    if isinstance(a, (list, tuple)):
        return [x for v in a for x in leaves(v)]
    if isinstance(a, dict):
        return [x for v in a.values() for x in leaves(v)]
    return [a]


@dataclass(frozen=True)
class _Call:
    args: Sequence[Any]
    kwargs: Mapping[str, Any]
    index: int  # which of the call's bodies, in argument order
    reader: CallReader

    def arg(self, position: int, keyword: str) -> Any:
        return self.args[position] if len(self.args) > position else self.kwargs.get(keyword, ())

    def passed(self, values: list[Any]) -> list[Feed]:
        return [Feed(v) if self.reader.is_node(v) else Feed(constant=self.reader.constant(v)) for v in values]

    def made(self, values: list[Any], what: Callable[[int], str]) -> list[Feed]:
        return [Feed(v, what(j)) if self.reader.is_node(v) else Feed(None, what(j), self.reader.constant(v))
                for j, v in enumerate(values)]


# Note [How each HOP calls its bodies]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The body's placeholders are exactly the values the HOP's implementation passes when it runs the
# body, in that order (the Dynamo graph calls the same HOP). Read from torch/_higher_order_ops:
#   cond(pred, true_fn, false_fn, operands)        both branches: (*operands)          cond.py cond_op_dense
#   while_loop(cond_fn, body_fn, carried, extra)   both: (*carried, *extra)            while_loop.py
#   map_impl(f, xs, pos_args)                      f(*[x[i] for x in xs], *pos_args)   map.py map_dense
#   scan(combine_fn, init, xs, extra)              (*carry, *[x[i] for x in xs], *extra)  scan.py generic_scan
#   associative_scan(combine_fn, xs, extra)        (*lhs elements, *rhs elements, *extra) associative_scan.py
#   flex_attention(q, k, v, score_mod, block_mask, scale, kernel_options, score_bufs, mask_bufs)
#       score_mod(score, b, h, q_idx, kv_idx, *score_bufs); block_mask[-1] is mask_mod:
#       mask_mod(b, h, q_idx, kv_idx, *mask_bufs)                     flex_attention.py _math_attention_inner
#   autograd_function_apply(fwd, bwd, *args)       fwd(*args) -> (output, saved_values);
#       bwd(*grads of output, *saved_values)                          torch/_functorch/autograd_function.py
#   invoke_subgraph(body, identifier, *operands)   body(*operands)                     invoke_subgraph.py
#   register_hook(tensor, hook_body, *freevars)    hook_body(grad, *freevars), grad the gradient autograd
#       computes for ``tensor`` in backward                           register_hook.py RegisterHookOp
#   wrap(body, *args), tag_activation_checkpoint(body, *args), wrap_activation_checkpoint(body, *args),
#       wrap_with_set_grad_enabled(enabled, body, *args), wrap_with_autocast(..., body, *args),
#       hints_wrapper(body, args, kwargs): body(*every positional value after the body)   wrap.py
# Constants keep their place (a constant the call passes still feeds its placeholder), so they
# never shift the Feeds after them. A HOP not in the table uses the last row and, if its values do
# not match the placeholders one to one, gets a problem instead of Feeds.

# Note [Inputs the HOP supplies]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# kind "hop_supplied" is for a placeholder whose value, when the body runs, is made by the HOP,
# not read from a parent node: flex_attention's score and indices, an autograd.Function backward's
# gradients and saved values, a tensor hook's gradient, a scan/map slice, a scan/while_loop carry.
# ``supplied`` says what it is. Where a parent node determines the value we keep it as ``source``
# too, because that is exact: a slice "slice of xs[0]" comes from the parent node xs[0] (element i at run i); a carry
# "carry[1]" *is* the parent node at the first iteration and the body's own output afterwards, so
# source = the initial value and supplied = "carry[1]" together say both. flex's score/b/h/q_idx/
# kv_idx, the backward's gradients and saved values and a hook's gradient have no parent node: source "".
def _cond(c: _Call) -> list[Feed]:
    return c.passed(leaves(c.arg(3, "operands")))


def _while_loop(c: _Call) -> list[Feed]:
    carried = leaves(c.arg(2, "carried_inputs"))
    return c.made(carried, lambda j: f"carry[{j}]") + c.passed(leaves(c.arg(3, "additional_inputs")))


def _map(c: _Call) -> list[Feed]:
    xs = leaves(c.arg(1, "xs"))
    return c.made(xs, lambda j: f"slice of xs[{j}]") + c.passed(leaves(c.arg(2, "pos_args")))


def _scan(c: _Call) -> list[Feed]:
    init, xs = leaves(c.arg(1, "init")), leaves(c.arg(2, "xs"))
    return (c.made(init, lambda j: f"carry[{j}]") + c.made(xs, lambda j: f"slice of xs[{j}]")
            + c.passed(leaves(c.arg(3, "additional_inputs"))))


def _associative_scan(c: _Call) -> list[Feed]:
    xs = leaves(c.arg(1, "xs"))
    return (c.made(xs, lambda j: f"lhs element of xs[{j}]") + c.made(xs, lambda j: f"rhs element of xs[{j}]")
            + c.passed(leaves(c.arg(2, "additional_inputs"))))


_SCORE_MOD = ("score", "b", "h", "q_idx", "kv_idx")


def _flex_attention(c: _Call) -> list[Feed]:
    if c.index == 0:
        return [Feed(supplied=s) for s in _SCORE_MOD] + c.passed(leaves(c.arg(7, "score_mod_other_buffers")))
    return [Feed(supplied=s) for s in _SCORE_MOD[1:]] + c.passed(leaves(c.arg(8, "mask_mod_other_buffers")))


def _autograd_function_apply(c: _Call) -> list[Feed]:
    if c.index == 0:
        return c.passed(leaves(c.args[2:]))
    fwd = c.reader.body(c.args[0])
    result = c.reader.result(fwd) if fwd else None
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        return []
    outputs, saved = leaves(result[0]), leaves(result[1])
    return ([Feed(supplied=f"grad of output {j}") for j in range(len(outputs))]
            + [Feed(supplied=f"saved[{j}] of {fwd}") for j in range(len(saved))])


def _invoke_subgraph(c: _Call) -> list[Feed]:
    return c.passed(leaves(c.args[2:]))


def _register_hook(c: _Call) -> list[Feed]:
    return [Feed(supplied="grad of the hooked tensor")] + c.passed(leaves(c.args[2:]))


def _after_body(c: _Call) -> list[Feed]:
    tops = [i for i, a in enumerate(c.args) if c.reader.body(a)]
    return c.passed(leaves(c.args[tops[-1] + 1:])) if tops else []


_LAYOUTS: dict[str, Callable[[_Call], list[Feed]]] = {
    "cond": _cond,
    "while_loop": _while_loop,
    "while_loop_stack_output": _while_loop,
    "map_impl": _map,
    "scan": _scan,
    "associative_scan": _associative_scan,
    "flex_attention": _flex_attention,
    "autograd_function_apply": _autograd_function_apply,
    "invoke_subgraph": _invoke_subgraph,
    "register_hook": _register_hook,
    "wrap": _after_body,
    "tag_activation_checkpoint": _after_body,
    "wrap_activation_checkpoint": _after_body,
    "wrap_with_set_grad_enabled": _after_body,
    "wrap_with_autocast": _after_body,
    "hints_wrapper": _after_body,
}


def call_feeds(hop: str, args: Sequence[Any], kwargs: Mapping[str, Any], index: int, n: int, reader: CallReader,
               body: str = "", call: str = "") -> tuple[list[Feed], list[str]]:
    """Feeds of the ``n`` placeholders of body number ``index`` (in argument order) of a ``hop`` call
    with these ``args``/``kwargs``, and problems; ``body`` and ``call`` name them in a problem.

    On a problem the Feeds are empty: the placeholders' sources are unknown (See Note [How each
    HOP calls its bodies]).

    >>> r = CallReader(is_node=lambda v: isinstance(v, str), body=lambda v: v if v == "map_body_0" else "",
    ...                result=lambda attr: None)
    >>> feeds, _ = call_feeds("map_impl", ["map_body_0", ["x"], [2]], {}, 0, 2, r)
    >>> [(f.node, f.supplied, f.constant) for f in feeds]
    [('x', 'slice of xs[0]', ''), (None, '', '2')]
    """
    layout: Optional[Callable[[_Call], list[Feed]]] = _LAYOUTS.get(hop)
    feeds = (layout or _after_body)(_Call(args, kwargs, index, reader))
    if len(feeds) == n:
        return feeds, []
    known = "" if layout else f" (no layout known for HOP {hop!r}; read as body(*values after the body))"
    return [], [f"body {body!r} called by {call!r}: the call passes {len(feeds)} values for {n} "
                f"placeholders{known}; their sources are unknown"]
