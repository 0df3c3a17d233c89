"""Shape symbols, shape guards and specializations of one compile attempt, from ShapeEnv's own events.

Invariant: everything here is read from the structured-trace events ShapeEnv emits
(torch/fx/experimental/symbolic_shapes.py: ``create_symbol``, ``create_unbacked_symbol``,
``guard_added_fast``, ``symbolic_shape_specialization``); nothing is re-derived from the graph.
A user line torch did not log stays ``None``. Torch-free: a live capture (the events its
structured-trace handler kept, tracer/_torch/trace_events.py) and a loaded TORCH_TRACE log (the
same events read from the file, tracer/trace_log/events.py) both call :func:`shape_records`, so
the two cannot read them differently.
"""

from __future__ import annotations

import ast
from typing import Any, Callable, Optional

from tracer.model.shapes import ShapeGuard, ShapeSymbol, SourceLine, Specialization

__all__ = ["SHAPE_EVENTS", "Event", "shape_records"]

# The events shape_records reads (trace_structured's first argument), in the order torch emits them.
SHAPE_EVENTS = ("create_symbol", "create_unbacked_symbol", "guard_added_fast", "symbolic_shape_specialization")
Event = tuple[str, Any, Any]  # (event name, its metadata value, payload or None)


# Note [Where a specialization came from]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ShapeEnv logs ``symbolic_shape_specialization`` in ``_set_replacement`` when a symbol is replaced
# by a constant, with a ``user_stack`` only when a TracingContext stack is at hand (often it is not).
# The replacement comes from ``_maybe_guard_rel(g)`` on the guard just added: ``_evaluate_expr``
# (and ``guard_or_defer_runtime_assert``) first ``_log_guard(g)`` — our ``guard_added_fast`` event,
# with the user stack — then ``_maybe_guard_rel(g)``. So, in trace order, the guard event right
# before a specialization event of the same attempt is the guard that caused it, and its user line
# is the line that made the dimension static. A symbol replaced by another one first ("find":
# ``Eq(s0, s1)`` then ``Eq(s1, 8)``) is caused by the same last guard. When no guard precedes it
# (a specialization from framework code) ``guard`` is "" and ``user_line`` None. A replacement
# found lazily (reason "find": ``_find`` compresses s0 -> s1 -> 8 when s0 is next *read*) is logged
# at that later read, so its own user stack is not the cause: we name the static specialization of
# the symbol an earlier guard tied it to (``Eq(s0, s1)``), and that specialization's line.
#
# 0/1 specialization is not an event: ``create_symbol`` gives a backed size symbol the range
# [2, int_oo] when ShapeEnv specializes 0 and 1 (torch's own comment there: "the guard itself is not
# due user code but due to 0/1 specialization in the framework"). We record it from that range,
# with the line where the symbol was created.
#
# Note [The user line of a shape guard]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo's user stack holds user frames only, so its innermost frame is the user line. A non-strict
# export logs the Python stack instead, torch's frames included: a guard added in a ``while_loop`` or
# ``cond`` body has ``while_loop.py`` / ``non_strict_utils.py`` frames around the user's, and a symbol
# created for a HOP operand has torch frames only. So a caller that can tell a user file (the live
# export, which knows where torch is installed) passes ``user_file`` and the line is the innermost
# frame it accepts, None when it accepts none (the stack is kept whole either way); without it (a
# capture, a log, read torch-free) the innermost frame is the line, as before. The same rule gives a
# symbol's ``user_line`` (where it was created) and a 0/1 specialization's.
def shape_records(events: list[Event], strings: dict[int, str], user_file: Optional[Callable[[str], bool]] = None
                  ) -> tuple[list[ShapeSymbol], list[ShapeGuard], list[Specialization]]:
    """(symbols, shape guards, specializations) from the events of one attempt, in trace order.

    ``strings`` resolves a stack frame's interned ``filename`` number (torch/_logging/structured.py
    ``intern_string``); events of other names are skipped. ``user_file`` tells a user frame from
    torch's, see Note [The user line of a shape guard].
    """

    def innermost(stack: list[SourceLine]) -> Optional[SourceLine]:
        return next((f for f in reversed(stack) if user_file is None or user_file(f.file)), None)

    symbols: list[ShapeSymbol] = []
    guards: list[ShapeGuard] = []
    specs: list[Specialization] = []
    last_guard: Optional[ShapeGuard] = None
    for name, meta, _payload in events:
        if not isinstance(meta, dict):
            continue
        if name in ("create_symbol", "create_unbacked_symbol"):
            unbacked = name == "create_unbacked_symbol"
            sym = ShapeSymbol(name=str(meta.get("symbol", "")), source=str(meta.get("source") or ""),
                              value="" if unbacked else str(meta.get("val", "")), range=str(meta.get("vr", "")),
                              unbacked=unbacked, user_stack=_stack(meta.get("user_stack"), strings))
            sym.user_line = innermost(sym.user_stack)
            symbols.append(sym)
            if not unbacked and sym.range.startswith("[2,"):
                specs.append(Specialization(kind="zero_one", symbol=sym.name, sources=[sym.source] if sym.source else [],
                                            value=sym.range, reason="0/1 specialization",
                                            user_line=sym.user_line))
        elif name == "guard_added_fast":
            stack = _stack(meta.get("user_stack"), strings)
            last_guard = ShapeGuard(expr=str(meta.get("expr", "")), user_stack=stack, user_line=innermost(stack))
            guards.append(last_guard)
            for symbol, divisor in _divisibility(last_guard.expr):
                specs.append(Specialization(kind="divisibility", symbol=symbol, value=divisor, reason=last_guard.expr,
                                            guard=last_guard.expr, sources=_sources(symbol, symbols),
                                            user_line=last_guard.user_line))
        elif name == "symbolic_shape_specialization":
            symbol, reason = str(meta.get("symbol", "")), str(meta.get("reason", ""))
            own = _stack(meta.get("user_stack"), strings)
            line = innermost(own) if own else (last_guard.user_line if last_guard else None)
            guard = last_guard.expr if last_guard is not None else ""
            tied = _tied_to(symbol, specs, guards) if reason == "find" else None
            if tied is not None:  # Note [Where a specialization came from]: "find" is lazy, its stack is not the cause
                (other, via) = tied
                line, guard, reason = other.user_line, other.guard, f"find: {via} ties it to {other.symbol}"
            sources = meta.get("sources")
            specs.append(Specialization(kind="static", symbol=symbol,
                                        sources=[str(s) for s in sources] if isinstance(sources, list) else [],
                                        value=str(meta.get("value", "")), reason=reason, guard=guard, user_line=line))
    return symbols, guards, specs


def _stack(frames: Any, strings: dict[int, str]) -> list[SourceLine]:
    out = []
    for fr in frames if isinstance(frames, list) else []:
        if isinstance(fr, dict):
            file = fr.get("filename")
            file = strings.get(file, f"<file #{file}>") if isinstance(file, int) else str(file or "")
            line = fr.get("line")  # an int as torch logs it; anything else (a damaged log) is line 0
            out.append(SourceLine(file=file, line=line if isinstance(line, int) else 0, fn=str(fr.get("name") or ""),
                                  code=str(fr.get("loc") or "")))
    return out


def _names(expr: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}
    except (SyntaxError, ValueError, RecursionError):  # not sympy text fx would print (a damaged log)
        return set()


def _tied_to(symbol: str, specs: list[Specialization], guards: list[ShapeGuard]) -> Optional[tuple[Specialization, str]]:
    """The latest static specialization of a symbol that a guard ties ``symbol`` to, and that guard."""
    for other in reversed(specs):
        if other.kind != "static" or other.symbol == symbol:
            continue
        for g in guards:
            if {symbol, other.symbol} <= _names(g.expr):
                return other, g.expr
    return None


def _sources(symbol: str, symbols: list[ShapeSymbol]) -> list[str]:
    return [s.source for s in symbols if s.name == symbol and s.source]


def _divisibility(expr: str) -> list[tuple[str, str]]:
    """(symbol, divisor) for each ``Eq(Mod(symbol, N), 0)`` in a guard's sympy text (parsed with ast)."""
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError, RecursionError):  # not sympy text fx would print (a damaged log)
        return []
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Eq"
                and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == 0):
            mod = node.args[0]
            if (isinstance(mod, ast.Call) and isinstance(mod.func, ast.Name) and mod.func.id == "Mod"
                    and len(mod.args) == 2 and isinstance(mod.args[0], ast.Name) and isinstance(mod.args[1], ast.Constant)):
                out.append((mod.args[0].id, str(mod.args[1].value)))
    return out
