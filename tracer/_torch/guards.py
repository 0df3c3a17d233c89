"""Dynamo guards -> ``tracer.model.Guard``: from the guard export hook and the cache entries.

Invariant: every Guard recorded is one Dynamo installed (from ``guard_export_fn``'s GuardsSet)
or one it checks on the cache entry it made (BACKEND_MATCH); nothing is invented.
"""

from __future__ import annotations

import types
from typing import Any, Optional

from tracer._torch.breaks import format_stack
from tracer._torch.releases import MissingHookPoint
from tracer._torch.since_2_13 import cache_entries
from tracer._torch.unknowns import unknown
from tracer.model import Guard

__all__ = ["guards_from_set", "backend_match_guards"]


def _sort_key(g: Any) -> Any:
    try:
        return g.sort_key()
    except Exception:  # except: display text only (the order guards are listed in)
        return (str(getattr(g, "name", "")),)


def guards_from_set(guards: Any) -> list[Guard]:
    """Guards of one frame from Dynamo's GuardsSet, in Dynamo's own sort order."""
    out: list[Guard] = []
    try:
        items = sorted(guards, key=_sort_key)
    except Exception:  # except: display text only (the order guards are listed in)
        items = list(guards)
    lines: dict[tuple[Any, Any, Any], str] = {}  # one string per distinct user frame (format_stack)
    # one string per distinct source and check text: Note [Equal texts held once per conversion] in tracer/_torch/fx_graph.py
    keep = {}.setdefault
    for g in items:
        try:
            kind = g.create_fn_name()
        except Exception as e:  # except: records a problem (kind "unknown")
            unknown("a guard's kind", e)
            kind = "unknown"
        try:
            source = keep(t := str(g.name), t)
        except Exception as e:  # except: records a problem (source "")
            unknown(f"the source of a {kind} guard", e)
            source = ""
        code = [keep(t := str(c), t) for c in (getattr(g, "code_list", None) or [])].copy()  # exact size
        out.append(Guard(kind=str(kind), source=source, code=code, user_stack=format_stack(getattr(g, "user_stack", None), lines)))
    return out


# Note [BACKEND_MATCH in torch 2.13]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Older Dynamo put a BACKEND_MATCH guard in the GuardsSet. In 2.13 the backend is stored on the
# cache entry itself (``CacheEntry.backend``) and eval_frame compares it on lookup; a mismatch is
# reported as "BACKEND_MATCH failure" among recompile reasons (torch/_dynamo/guards.py). It is
# still a guard on the frame, just not an exported one, so we read it from the real cache entry
# that carries the frame's compile id and record it with that name.
def backend_match_guards(codes: list[types.CodeType], region: Optional[int]) -> dict[str, Guard]:
    """str(CompileId) -> the BACKEND_MATCH guard of the cache entry compiled under that id."""
    try:
        listed = cache_entries(region)
    except MissingHookPoint as err:  # a release without the cache-entry API: these guards are unknown, said once
        unknown("the cache entries (BACKEND_MATCH guards) of every frame", err)
        return {}

    out: dict[str, Guard] = {}
    for code in codes:
        try:
            entries = listed(code)
        except Exception as err:  # except: records a problem (no BACKEND_MATCH guard for its compiles)
            unknown(f"the cache entries (BACKEND_MATCH guards) of {code.co_name}", err)
            continue
        for e in entries:
            try:
                backend = e.backend
                name = getattr(backend, "__qualname__", None) or type(backend).__qualname__
                cid = str(e.compile_id)
            except Exception as err:  # except: records a problem (that entry's BACKEND_MATCH guard is missing)
                unknown(f"a cache entry's backend or compile id (BACKEND_MATCH) of {code.co_name}", err)
                continue
            out[cid] = Guard(
                kind="BACKEND_MATCH",
                source="",
                code=[f"cache entry backend is {name} (checked by eval_frame on lookup)"],
                user_stack=[],
            )
    return out
