"""A paused InstructionTranslator -> plain PausedState parts (location, locals, tracer stack, guards).

Invariant: runs in the tracing thread while Dynamo is stopped, only reads Dynamo's state (it never
realizes a lazy variable, never loads a cell through SideEffects, never adds a guard), and returns
no torch object.
"""

from __future__ import annotations

import linecache
import os
import re
import sysconfig
from typing import Any, Optional

import torch
from torch._guards import CompileContext

from tracer._torch.breaks import format_stack
from tracer._torch.fx_graph import graph_from_fx, meta_of
from tracer._torch.subtracer import hop_name_of
from tracer._torch.unknowns import unknown
from tracer.model import Graph, Guard
from tracer.paused import LocalVar, Location, TracerState, value_text

__all__ = ["hop_name", "is_dynascope_file", "is_user_file", "snapshot"]

CONTEXT_LINES = 4  # source lines kept on each side of a paused line


# Note [Which lines are user lines]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo inlines torch's own Python (pytree, cond's wrappers) and some stdlib; ``step()`` would wander
# through hundreds of those lines. A line counts as the user's unless its file is under torch, under
# dynascope's ``tracer`` package, or in the standard library. ``break_at`` ignores this: it matches any
# file, so one can still stop inside torch's Python on purpose.
_NOT_USER = tuple(
    os.path.normcase(os.path.realpath(p)) + os.sep
    for p in (
        os.path.dirname(torch.__file__),
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # the tracer package
        sysconfig.get_paths()["stdlib"],
    )
)
_user_cache: dict[str, bool] = {}


def is_user_file(file: str) -> bool:
    hit = _user_cache.get(file)
    if hit is None:
        norm = os.path.normcase(os.path.realpath(file)) if not file.startswith("<") else file
        hit = _user_cache[file] = not (file.startswith("<frozen") or norm.startswith(_NOT_USER))
    return hit


def is_dynascope_file(file: str) -> bool:
    return os.path.normcase(os.path.realpath(file)).startswith(_NOT_USER[1])


def hop_name(tracer: Any) -> str:
    """The HOP a SubgraphTracer traces a body for: "cond", "wrap", ... ("" for the root tracer)."""
    return hop_name_of(getattr(tracer, "source_target", None))




def snapshot(tx: Any, inst: Any, line: int) -> dict[str, Any]:
    """Everything a PausedState holds except session/index/reason/label, read from ``tx``."""
    frames = []
    t = tx.parent if getattr(tx, "parent", None) is not None else None
    while t is not None:
        frames.append(_location(t, t.current_instruction, t.lineno))
        t = getattr(t, "parent", None)
    frames.reverse()
    location = _location(tx, inst, line)
    frames.append(location)
    tracers = []
    for tracer in list(tx.output.tracers):
        hop = hop_name(tracer)
        tracers.append(TracerState(
            hop=hop,
            description=str(tracer.description or ""),
            depth=int(tracer.debug_level),
            graph=_graph(tracer.graph, name=str(tracer.description or hop)),
            lifted=[_proxy_name(p) for p in tracer.lifted_freevars.values()],
            lifted_from=[_proxy_name(p) for p in tracer.lifted_freevars.keys()],
        ))
    trace_id = CompileContext.current_trace_id()
    problems: list[str] = []
    return {
        "compile_id": str(trace_id.compile_id) if trace_id is not None else "",
        "attempt": int(trace_id.attempt) if trace_id is not None else 0,
        "location": location,
        "frames": frames,
        "locals": {str(k): describe(str(k), v, tx, problems) for k, v in list(tx.symbolic_locals.items())},
        "tracers": tracers,
        "guards": _guards(tx, problems),
        "problems": problems,
    }


def _location(tx: Any, inst: Any, line: Optional[int]) -> Location:
    code = tx.f_code
    lineno = int(line) if line and line > 0 else int(code.co_firstlineno)
    offset = getattr(inst, "offset", None)
    argrepr = getattr(inst, "argrepr", "") or ("" if getattr(inst, "argval", None) is None else repr(inst.argval))
    first = max(1, lineno - CONTEXT_LINES)
    context = [linecache.getline(code.co_filename, n).rstrip() for n in range(first, lineno + CONTEXT_LINES + 1)]
    while context and not context[-1]:
        context.pop()
    return Location(
        context=context,
        context_start=first if context else 0,
        file=code.co_filename,
        line=lineno,
        function=code.co_name,
        code=linecache.getline(code.co_filename, lineno).strip(),
        offset=int(offset) if isinstance(offset, int) else -1,
        instruction=f"{getattr(inst, 'opname', '?')} {argrepr}".strip()[:120],
    )


def _graph(fx_graph: torch.fx.Graph, name: str) -> Graph:
    try:
        return graph_from_fx(fx_graph, name=name)
    except Exception as e:  # except: records a problem (a half-built graph must never break the pause)
        unknown(f"the graph {name or 'root'} at the pause", e)
        return Graph(nodes=[], code=f"<graph unavailable: {type(e).__name__}: {e}>"[:300], name=name)


def _proxy_name(p: Any) -> str:
    node = getattr(p, "node", None)
    return str(getattr(node, "name", p))


def _unread(problems: list[str], what: str, e: Exception) -> None:
    """Note that part of the paused state could not be read (PausedState.problems), instead of guessing."""
    problems.append(f"{what}: {type(e).__name__}: {e}"[:300])


def describe(name: str, vt: Any, tx: Any, problems: list[str], depth: int = 0) -> LocalVar:
    """One VariableTracker as a LocalVar, without realizing or loading anything; what fails goes to ``problems``."""
    from torch._dynamo.variables import CellVariable
    from torch._dynamo.variables.lazy import LazyVariableTracker

    if isinstance(vt, LazyVariableTracker):
        if not vt.is_realized():
            # Note [Lazy locals]: realizing would install guards and graph inputs, changing the trace.
            try:
                value = vt.peek_value()
                meta = meta_of(value)
                meta["lazy"] = True
                text = value_text(meta) or type(value).__name__
            except Exception as e:  # except: records a problem
                _unread(problems, f"local {name!r}: the value of a lazy variable", e)
                meta, text = {"lazy": True}, ""
            return LocalVar(name=name, kind="LazyVariableTracker", value=f"{text} (not yet realized)".strip(),
                            meta=meta)
        vt = vt.unwrap()
    kind = type(vt).__name__
    if isinstance(vt, CellVariable):
        contents = None
        if depth < 3:
            inner = _cell_contents(vt, tx, problems)
            if inner is not None:
                contents = describe(name, inner, tx, problems, depth + 1)
        return LocalVar(name=name, kind=kind, is_cell=True, cell_contents=contents)
    proxy = None
    try:
        proxy = vt.as_proxy() if hasattr(vt, "proxy") else None
    except Exception as e:  # except: records a problem
        _unread(problems, f"local {name!r}: its graph proxy", e)
        proxy = None
    node = getattr(proxy, "node", None)
    if isinstance(node, torch.fx.Node):
        example = node.meta.get("example_value")
        meta = meta_of(example) if example is not None else {}
        return LocalVar(name=name, kind=kind, value=value_text(meta), meta=meta, node=node.name)
    try:
        if vt.is_python_constant():
            const = vt.as_python_constant()
            meta = meta_of(const)
            return LocalVar(name=name, kind=kind, value=_short(repr(const)), meta=meta)
    except Exception as e:  # except: records a problem
        _unread(problems, f"local {name!r}: its constant value", e)
    value = getattr(vt, "value", None)
    text = type(value).__name__ if value is not None else ""
    return LocalVar(name=name, kind=kind, value=text)


def _cell_contents(cell: Any, tx: Any, problems: list[str]) -> Any:
    side_effects = tx.output.side_effects
    mutations = side_effects.store_attr_mutations
    try:
        pending = mutations.get(cell, {})
    except Exception as e:  # except: records a problem
        _unread(problems, "a cell's pending store", e)
        pending = {}
    if "cell_contents" in pending:
        return pending["cell_contents"]
    return getattr(cell, "pre_existing_contents", None)


_ADDRESS = re.compile(r" (?:object )?at 0x[0-9a-fA-F]+")


def _short(text: str) -> str:
    """Shortened repr without memory addresses, so a pause's text is deterministic."""
    text = _ADDRESS.sub("", text)
    return text if len(text) <= 200 else text[:197] + "..."


def _guards(tx: Any, problems: list[str]) -> list[Guard]:
    out = []
    for g in list(tx.output.guards):
        try:
            kind = g.create_fn_name()
        except Exception as e:  # except: records a problem
            _unread(problems, "a guard's kind", e)
            kind = "?"
        try:
            source = str(g.name)
        except Exception as e:  # except: records a problem
            _unread(problems, "a guard's source", e)
            source = ""
        # Basenames, as everywhere else ("file.py:LINE in fn"), so a notebook's stored output does not
        # depend on where the repository is checked out; dynascope's own frames (the pause call) are
        # not the user's stack.
        frames = [fs for fs in list(g.user_stack or []) if not is_dynascope_file(fs.filename)]
        out.append(Guard(kind=kind, source=source, user_stack=format_stack(frames[-8:])))
    out.sort(key=lambda g: (g.source, g.kind))
    return out
