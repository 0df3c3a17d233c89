"""``tracer.diff(a, b)``: compare two Frames (a recompile and the compile it replaced, two ranks,
a capture and a loaded log) and return a plain-data :class:`tracer.model.FrameDiff`.

Invariant: reads the two Frames only (no torch), changes neither, and every name in the result is
a node, graph or body of ``a`` or ``b`` (:func:`tracer.model.diff.diff_problems`); ``diff(f, f)``
is empty. Graphs are aligned by :func:`tracer.graph_align.align` (near-linear).

>>> from tracer.model import Frame
>>> diff(Frame("0/0", "f.py:1 in f"), Frame("0/0", "f.py:1 in f")).summary
'no difference'
"""

from __future__ import annotations

import functools
import re
from typing import Optional, Union

from tracer.graph_align import align
from tracer.model.capture import Capture
from tracer.model.diff import (
    AOT_GRAPHS,
    AotDiff,
    BodyChange,
    FrameDiff,
    GraphDiff,
    GuardChange,
    InputChange,
    SavedChange,
)
from tracer.model.frame import Frame
from tracer.model.graph import Node, format_meta
from tracer.model.guards import Recompile
from tracer.model.lazy import on_first_read
from tracer.model.profile import Profile
from tracer.model.profile_diff import ProfileDiff
from tracer.profile_compare import compare_profiles

__all__ = ["align", "attach_recompile_diffs", "diff", "recompile_frames"]  # align re-exported from tracer.graph_align

_SYMBOL = re.compile(r"\b[a-z]+\d+\b")
_ID_PREFIX = re.compile(r"^(?P<id>\d+/\d+): ")
_SIZE_SOURCES = (".size()", ".stride()", ".storage_offset()")
_CONSTANT_GUARDS = ("CONSTANT_MATCH", "EQUALS_MATCH")


def diff(a: Union[Frame, Profile], b: Union[Frame, Profile], *, reason: str = "") -> Union[FrameDiff, ProfileDiff]:
    """What differs from frame ``a`` to frame ``b``: guards, graph inputs, symbols, graphs (root,
    HOP bodies, AOT graphs), AOT saved values. ``reason``: the failed guard, when ``b`` recompiled ``a``.
    Two :class:`tracer.Profile` (say eager and compiled): a :class:`tracer.ProfileDiff`, their time per
    source line and module side by side (:func:`tracer.profile_compare.compare_profiles`).

    >>> from tracer.model import Frame, Guard
    >>> d = diff(Frame("0/0", "f", guards=[Guard("CONSTANT_MATCH", "L['n']", ["L['n'] == 4"])]),
    ...          Frame("0/1", "f", guards=[Guard("CONSTANT_MATCH", "L['n']", ["L['n'] == 8"])]))
    >>> print(d)
    diff 0/0 → 0/1: 1 guard differs (CONSTANT_MATCH)
    guards:
      ~ CONSTANT_MATCH L['n']
          - L['n'] == 4
          + L['n'] == 8
    """
    if isinstance(a, Profile) or isinstance(b, Profile):
        return compare_profiles(a, b)  # type: ignore[arg-type]  # it names the wrong type of either side
    d = FrameDiff(a=a.compile_id, b=b.compile_id, reason=reason)
    if a.status != b.status:
        d.status = [a.status, b.status]
    d.guards = _guards(a, b)
    d.inputs = _inputs(a, b)
    sa, sb = _symbols(a), _symbols(b)
    d.symbols_added, d.symbols_removed = sorted(sb - sa), sorted(sa - sb)
    root = align(a.graph, b.graph)
    d.graphs.append(root)
    _bodies(a, b, root, d)
    _aot(a, b, d)
    return d


# -- guards, inputs, symbols --------------------------------------------------------------------
def _guards(a: Frame, b: Frame) -> list[GuardChange]:
    """Guards matched by (kind, source), in order among equals; see the issue's rule: a check that
    changed value is "changed", not removed + added."""
    pool: dict[tuple[str, str], list] = {}
    for g in a.guards:
        pool.setdefault((g.kind, g.source), []).append(g)
    out = []
    for g in b.guards:
        same = pool.get((g.kind, g.source))
        if not same:
            out.append(GuardChange("added", g.kind, g.source, [], list(g.code)))
            continue
        old = same.pop(0)
        if old.code != g.code:
            out.append(GuardChange("changed", g.kind, g.source, list(old.code), list(g.code)))
    out += [GuardChange("removed", g.kind, g.source, list(g.code)) for rest in pool.values() for g in rest]
    return out


def _input_key(n: Node) -> str:
    return str(n.meta.get("graph_arg_source") or n.target)


def _inputs(a: Frame, b: Frame) -> list[InputChange]:
    pa = {_input_key(n): n for n in a.graph.placeholders}
    pb = {_input_key(n): n for n in b.graph.placeholders}
    const_a = {g.source: "; ".join(g.code) for g in a.guards if g.kind in _CONSTANT_GUARDS}
    const_b = {g.source: "; ".join(g.code) for g in b.guards if g.kind in _CONSTANT_GUARDS}
    out: list[InputChange] = []
    for key, nb in pb.items():
        na = pa.get(key)
        if na is None:
            if key in const_a:
                out.append(InputChange(key, "constant_to_input", const_a[key], format_meta(nb.meta), b=nb.name))
            elif not _is_size_input(nb, key):
                out.append(InputChange(key, "added", "", format_meta(nb.meta), b=nb.name))
            continue
        out += _input_changes(key, na, nb)
    for key, na in pa.items():
        if key not in pb:
            if key in const_b:
                out.append(InputChange(key, "input_to_constant", format_meta(na.meta), const_b[key], a=na.name))
            elif not _is_size_input(na, key):
                out.append(InputChange(key, "removed", format_meta(na.meta), "", a=na.name))
    return out


def _is_size_input(n: Node, source: str) -> bool:
    """A symbol placeholder for a size/stride: its change is reported as the tensor's "dynamic"/"static"."""
    return n.role == "lifted_symbol" or any(s in source for s in _SIZE_SOURCES)


def _input_changes(key: str, na: Node, nb: Node) -> list[InputChange]:
    ma, mb = na.meta, nb.meta
    names = {"a": na.name, "b": nb.name}
    if ma.get("kind") != mb.get("kind"):
        return [InputChange(key, "kind", format_meta(ma), format_meta(mb), **names)]
    out = []
    for what in ("dtype", "requires_grad", "device"):
        if ma.get(what) != mb.get(what):
            out.append(InputChange(key, what, str(ma.get(what, "")), str(mb.get(what, "")), **names))
    sa, sb = list(ma.get("shape") or []), list(mb.get("shape") or [])
    if len(sa) != len(sb):
        out.append(InputChange(key, "size", format_meta(ma), format_meta(mb), **names))
    else:
        for dim, x in enumerate(sa):
            y = sb[dim]
            if x == y or (isinstance(x, str) and isinstance(y, str)):  # same, or only the symbol renamed
                continue
            what = "dynamic" if isinstance(y, str) else "static" if isinstance(x, str) else "size"
            out.append(InputChange(key, what, str(x), str(y), dim=dim, **names))
    if ma.get("kind") in ("int", "float", "bool") and ma.get("value") != mb.get("value"):
        out.append(InputChange(key, "value", str(ma.get("value")), str(mb.get("value")), **names))
    return out


def _symbols(f: Frame) -> set[str]:
    """Free symbols the frame's graphs use: symbol placeholders' values and symbolic sizes."""
    out: set[str] = set()
    for g in f.graphs().values():
        for n in g.nodes:
            m = n.meta
            texts = list(m.get("shape") or ())
            if m.get("kind") in ("symint", "symfloat", "symbool") and n.op == "placeholder":
                texts.append(m.get("value"))
            for s in texts:
                if isinstance(s, str):
                    out.update(_SYMBOL.findall(s))
    return out


# -- HOP bodies and AOT ------------------------------------------------------------------------
def _bodies(a: Frame, b: Frame, root: GraphDiff, d: FrameDiff) -> None:
    """Pair bodies through their aligned call nodes (parents first; the k-th body a call node of
    ``b`` calls with the k-th of its partner), else by equal name and HOP."""
    partners = {"": {p.b: p.a for p in root.pairs}}  # paired graph of b -> its nodes' partners in a
    b_to_a = {"": ""}
    used: set[str] = set()
    for sb in b.subgraphs.values():
        partner = None
        call_a = partners.get(sb.parent, {}).get(sb.call_node)  # None too when the parent has no partner
        if call_a is not None:
            same_call = [s for s in a.subgraphs.values() if s.parent == b_to_a[sb.parent] and s.call_node == call_a
                         and s.hop == sb.hop]
            order = [s for s in b.subgraphs.values() if s.parent == sb.parent and s.call_node == sb.call_node].index(sb)
            if order < len(same_call) and same_call[order].name not in used:
                partner = same_call[order]
        if partner is None and sb.name in a.subgraphs and sb.name not in used and a.subgraphs[sb.name].hop == sb.hop:
            partner = a.subgraphs[sb.name]
        if partner is None:
            d.bodies.append(BodyChange("added", "", sb.name, sb.hop))
            continue
        used.add(partner.name)
        b_to_a[sb.name] = partner.name
        gd = align(partner.graph, sb.graph, partner.name, sb.name)
        partners[sb.name] = {p.b: p.a for p in gd.pairs}
        d.graphs.append(gd)
        changes = []
        if gd:
            changes.append(f"{len(gd.changed)} changed, {len(gd.added)} added, {len(gd.removed)} removed nodes")
        ka, kb = [i.kind for i in partner.inputs], [i.kind for i in sb.inputs]
        if ka != kb:
            changes.append(f"inputs {','.join(ka)} → {','.join(kb)}")
        if changes:
            d.bodies.append(BodyChange("changed", partner.name, sb.name, sb.hop, changes))
    d.bodies += [BodyChange("removed", s.name, "", s.hop) for s in a.subgraphs.values() if s.name not in used]


def _aot(a: Frame, b: Frame, d: FrameDiff) -> None:
    if a.aot is None and b.aot is None:
        return
    xa, xb = a.aot, b.aot
    d.aot = AotDiff(mode_a=xa.mode if xa else "", mode_b=xb.mode if xb else "",
                    saved_bytes_a=xa.saved_bytes if xa else 0, saved_bytes_b=xb.saved_bytes if xb else 0)
    fwd: dict[str, str] = {}  # forward node of b -> its partner in a
    for name in AOT_GRAPHS:
        ga, gb = (getattr(xa, name) if xa else None), (getattr(xb, name) if xb else None)
        if name == "forward" and xa and xb and xa.mode == xb.mode == "inference" and xa.inference is not None:
            continue  # in inference mode ``forward`` is the inference graph again
        if ga is not None and gb is not None:
            gd = align(ga, gb, f"aot.{name}", f"aot.{name}")
            d.graphs.append(gd)
            if name == "forward":
                fwd = {p.b: p.a for p in gd.pairs}
    saved_a = {s.name: s for s in (xa.saved if xa else [])}
    matched: set[str] = set()
    for s in xb.saved if xb else []:
        old = saved_a.get(fwd.get(s.name))  # type: ignore[arg-type]  # get(None): no forward partner
        if old is None or old.name in matched:
            d.aot.saved.append(SavedChange("added", "", s.name, 0, s.nbytes))
            continue
        matched.add(old.name)
        if old.nbytes != s.nbytes or old.kind != s.kind:
            d.aot.saved.append(SavedChange("changed", old.name, s.name, old.nbytes, s.nbytes))
    d.aot.saved += [SavedChange("removed", s.name, "", s.nbytes) for s in saved_a.values() if s.name not in matched]
    if xa is not None and xb is not None and xa.subgraphs != xb.subgraphs:
        d.problems.append("the HOP bodies the AOT graphs call (Aot.subgraphs) differ and are not aligned")


# -- recompiles ---------------------------------------------------------------------------------
def _final_attempt(cap: Capture, compile_id: str) -> Optional[Frame]:
    """The attempt of compile ``compile_id`` whose guards Dynamo installed (the last that compiled)."""
    attempts = [f for f in cap.frames if f.compile_id == compile_id or f.compile_id.startswith(compile_id + "_")]
    done = [f for f in attempts if f.status in ("compiled", "no_graph")]
    return (done or attempts or [None])[-1]


def recompile_frames(cap: Capture, r: Recompile) -> Optional[tuple[Frame, Frame]]:
    """The two attempts :func:`attach_recompile_diffs` diffs for ``r`` (the final attempt of the compile
    it replaced, then its own), or None when it diffs none; reads no graph (``dynascope report -j N``
    gives each diff to the worker that renders the later one, viz/report_frames.py)."""
    if not r.replaced:
        return None
    fa, fb = _final_attempt(cap, r.replaced), _final_attempt(cap, r.compile_id)
    return None if fa is None or fb is None else (fa, fb)


def attach_recompile_diffs(cap: Capture, *, on_read: bool = False) -> Capture:
    """Fill ``Recompile.replaced`` (from the "0/0: ..." prefix Dynamo gives a failed guard,
    torch/_dynamo/guards.py ``get_guard_fail_reason_helper``) and ``Recompile.diff`` against it.

    ``on_read``: compute each diff on the first read of ``r.diff`` (a loaded log's frames parse
    their graphs and guards on first read too, Note [Fields filled on first read]); a diff that
    fails then adds its problem to ``cap.problems`` at that read."""
    for r in cap.recompiles:
        m = _ID_PREFIX.match(r.reason)
        if m is None:
            cap.problems.append(f"recompile {r.compile_id}: the reason names no compile id, no diff: {r.reason[:80]!r}")
            continue
        r.replaced = m.group("id")
        fa, fb = _final_attempt(cap, r.replaced), _final_attempt(cap, r.compile_id)
        if fa is None or fb is None:
            cap.problems.append(f"recompile {r.compile_id}: compile {r.replaced if fa is None else r.compile_id} "
                                "is not a frame of this capture, no diff")
            continue
        if on_read:
            on_first_read(r, "diff", functools.partial(_fill_diff, cap, r, fa, fb, r.reason[m.end():]))
        else:
            _fill_diff(cap, r, fa, fb, r.reason[m.end():])
    return cap


def _fill_diff(cap: Capture, r: Recompile, fa: Frame, fb: Frame, reason: str) -> None:
    try:
        r.diff = diff(fa, fb, reason=reason)
    except Exception as e:  # except: records a problem (a diff must never lose the capture it describes)
        cap.problems.append(f"recompile {r.compile_id}: diff failed: {type(e).__name__}: {e}")
