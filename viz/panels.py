"""HTML fragments for the explorer's panels: overview, speculations, lifted inputs, guards, partition, code.

Invariant: pure functions from ``tracer.model`` data to HTML text, rendered by the autoescaping
templates in ``viz/templates`` (:mod:`viz.markup`), so every string that came from user code (names,
reasons, source lines, reprs) is escaped unless a template is told otherwise, which it only is for
HTML that viz rendered itself (Note [Trusted fragments]).

>>> from tracer.model import Capture, Frame
>>> html = overview_html(Capture(frames=[Frame("0/0", "f.py:1 in f", status="no_graph", status_reason="<none>")]))
>>> '<tr class="ds-grey"><td>0/0</td><td>no_graph: <details><summary>&lt;none&gt;</summary>' in html
True
"""

from __future__ import annotations

import collections
import hashlib
import html
from collections.abc import Iterable, Sequence
from typing import Any, Optional

import msgspec

from tracer.model import TIME_PHASES, Aot, Capture, Frame, Graph, Guard, format_meta
from tracer.model.read_only import ReadOnlyGuard
from viz.export_view import export_run_html
from viz.graph_layout import source_line
from viz.guard_groups import group_guards, kind_counts
from viz.markup import fragment, human_bytes, json_block, render
from viz.style import ROLE_STYLE
from viz.time_chart import time_chart_svg

__all__ = [
    "code_html",
    "frame_trie",
    "esc",
    "guards_html",
    "lifted_html",
    "ops",
    "overview_html",
    "saved_html",
    "aot_tables_html",
    "speculations_html",
    "table",
]

# Pygments highlighting is linear but not free: a 16k-node graph's code is ~50k lines.
# Above this many lines the code view shows the plain (escaped) text instead.
MAX_HIGHLIGHT_LINES = 3000


def esc(value: Any) -> str:
    """HTML-escape ``str(value)``, quotes included, for the few callers outside the templates."""
    return html.escape(str(value), quote=True)


def panel(body: str) -> str:
    """Wrap a fragment viz rendered itself in the panel container with the shared styles."""
    return render("panel.html.j2", body=fragment(body))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, row_class: Sequence[str] | None = None) -> str:
    """An HTML table; every cell is escaped, a multi-line cell keeps its lines."""
    return render("table.html.j2", headers=list(headers), rows=[list(r) for r in rows], row_class=row_class)


def ops(g: Graph) -> int:
    """Nodes of ``g`` that are neither inputs nor its output."""
    return sum(1 for n in g.nodes if n.op not in ("placeholder", "output"))


def overview_html(cap: Capture, counts: Optional[list[tuple[int, int]]] = None,
                  anchors: Optional[list[str]] = None) -> str:
    """Frames (every attempt, the ones that did not compile greyed, with why) and their compile
    times, problems, graph breaks grouped by place, recompiles, and the counts. ``counts``: per frame
    (ops, guards) counted before its graphs and guards were let go (viz/report_file.py's ``release``);
    ``anchors``: per frame the id its compile id links to (``#ds-frame-<anchor>``), none by default."""
    counts = counts or [(ops(f.graph), len(f.guards)) for f in cap.frames]
    anchors = anchors or [""] * len(cap.frames)
    return render(
        "overview.html.j2",
        cap=cap,
        frames=[(f, n_ops, repr(f.aot) if f.aot is not None else "", n_guards, anchor)
                for f, (n_ops, n_guards), anchor in zip(cap.frames, counts, anchors, strict=True)],
        not_compiled=sum(1 for f in cap.frames if f.status != "compiled"),
        subgraphs=sum(len(f.subgraphs) for f in cap.frames),
        failed=sum(1 for f in cap.frames for s in f.speculations if not s.ok),
        guards=sum(guards for _, guards in counts),
        groups=cap.grouped_breaks(),
        chart=fragment(time_chart_svg(cap)),
        frames_trie=frame_trie(cap),
        has_stacks=any(f.meta.get("stack") for f in cap.frames),
        all_problems=cap.all_problems(),
        phases=TIME_PHASES,
        recompiles=[[r.compile_id, r.reason] for r in cap.recompiles],
        export=fragment(export_run_html(cap)),
    )


def frame_trie(cap: Capture) -> list[tuple[str, list[Any], list[Frame]]]:
    """The frames as tlparse's stack trie: nested (label, children, attempts) by the user stack at
    ``dynamo_start`` (``Frame.meta["stack"]``, outermost first, recorded live and read from
    TORCH_TRACE logs alike); a frame whose stack is not in the record hangs under its file and code
    location instead."""
    root: dict[str, Any] = {}
    for f in cap.frames:
        stack = f.meta.get("stack")
        if isinstance(stack, list) and stack:
            path = [str(s) for s in stack]
        else:
            where = f.code.partition(" in ")[0]
            path = [where.rsplit(":", 1)[0] if ":" in where else where, f.code]
        node = root
        for part in path:
            node = node.setdefault(part, {"kids": {}, "frames": []})
            last = node
            node = node["kids"]
        last["frames"].append(f)

    def walk(level: dict[str, Any]) -> list[tuple[str, list[Any], list[Frame]]]:
        return [(label, walk(n["kids"]), n["frames"]) for label, n in level.items()]

    return walk(root)


def speculations_html(frame: Frame, *, compact: bool = False) -> str:
    """The frame's SubgraphTracer runs in start order; failed ones in red with their reason.

    ``compact``: one column (for a narrow sidebar): "ok wrap/wrap -> wrap_body_0 (lifted: y)".
    """
    rows, classes = [], []
    for s in frame.speculations:
        status = "ok" if s.ok else f"failed: {s.reason}"
        indent = "  " * (s.depth - 1)
        if compact:
            body = f" -> {s.subgraph}" if s.subgraph else ""
            lifted = f" (lifted: {', '.join(s.lifted)})" if s.lifted else ""
            rows.append([f"{indent}{'ok' if s.ok else 'FAILED'} {s.hop}/{s.description}{body}{lifted}"
                         + ("" if s.ok else f"\n{indent}  {s.reason}")])
        else:
            rows.append([f"{indent}{s.hop}/{s.description}", s.subgraph or "", ", ".join(s.lifted), status])
        classes.append("" if s.ok else "ds-bad")
    headers = ["speculation"] if compact else ["hop/description", "body", "lifted", "status"]
    return render("speculations.html.j2", headers=headers, rows=rows, row_class=classes)


def lifted_html(frame: Frame, graph_name: str) -> str:
    """The placeholders of the selected graph: for a HOP body, each input's kind and its source in
    the parent, or for an input the HOP supplies (kind "hop_supplied"), what the HOP passes."""
    if graph_name == "":
        rows = [[n.name, n.role, n.target, format_meta(n.meta)] for n in frame.graph.placeholders]
        return render("lifted.html.j2", sg=None, rows=rows)
    sg = frame.subgraphs[graph_name]
    return render(
        "lifted.html.j2", sg=sg, inputs=[(i, format_meta(i.meta)) for i in sg.inputs],
        supplied=sum(1 for i in sg.inputs if i.kind == "hop_supplied"),
        supplied_fill=ROLE_STYLE["hop_supplied"].fill,
    )


def filter_guards(guards: Sequence[Guard], text: str) -> list[Guard]:
    """Guards whose kind, source, code or user stack contains ``text`` (case-insensitive)."""
    needle = text.strip().lower()
    if not needle:
        return list(guards)
    return [g for g in guards if needle in " ".join([g.kind, g.source, *g.code, *g.user_stack]).lower()]


# Note [Packed guard rows]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# A guard's code usually repeats its source (``L['self']._modules['layers']._modules['0'].training ==
# True``) and its source starts with its group's title; the report's JSON row writes the source without
# the title (a leading "\u0002" stands for it) and "\u0001" in a code line for the source, only when
# the text contains neither character already, so report.js restores the exact strings.
def _guard_row(g: Guard, title: str, stack: int, related: bool) -> list[Any]:
    src, code = g.source, list(g.code)
    if src and not any("\x01" in c for c in code) and "\x01" not in src:
        code = [c.replace(src, "\x01") for c in code]
    if src.startswith(title) and "\x02" not in src:
        src = "\x02" + src[len(title):]
    return [src, g.kind, code, stack, int(related)]


# Note [Equal guards rendered once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``guards_html`` is a pure function of the guards' fields, the filter text and ``report``; a report
# of a job or of a long log renders equal guard lists again and again (every rank, every step
# compiled again: 1,650 guards a frame of the 12-layer training log, a third of a payload's time).
# The last ``_GUARDS_KEPT_MAX`` texts are kept by a digest of all of those (msgspec's JSON of the
# guards, as Note [Drawings of equal graphs] in viz/report_graphs.py keys drawings), so the output
# is the same byte for byte with or without the cache.
_GUARDS_KEPT_MAX = 8
_GUARDS_KEPT: collections.OrderedDict[bytes, str] = collections.OrderedDict()

# Note [Shared guards rendered once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# In a read-only capture, frames that logged an equal guard tree hold the very same ReadOnlyGuard
# objects (Note [Read-only graphs] in tracer/trace_log/deferred.py), which refuse every write. Encoding
# and hashing 1,650 of them was still 1.5 ms of each repeated training frame of the 106 MB log
# (bench/RESULTS.md, 2026-11-27). So a list made only of read-only guards is also kept by the *identity*
# of its guards (with the filter text and ``report``), the guards held so that no id names another
# object meanwhile: a hit is the same objects, whose fields cannot have changed, so the text is the one
# Note [Equal guards rendered once] gives. A list holding any editable Guard goes by digest only.
_SHARED_GUARDS: collections.OrderedDict[tuple[Any, ...], tuple[tuple[Guard, ...], str]] = collections.OrderedDict()


_READ_ONLY_ONLY = {ReadOnlyGuard}


def guards_html(guards: Sequence[Guard], text: str = "", *, report: bool = False) -> str:
    """Guards grouped by the variable they guard (:func:`viz.guard_groups.group_guards`), folded, with
    the count of every kind; filtered by ``text`` (then the groups that match are open).

    ``report``: for the static report, a filter box, and the rows sent as one JSON block (user stacks
    stored once) that report.js turns into table rows when a group opens or the filter changes: 1,700
    guards as markup were most of a report's bytes. See Note [Trusted fragments] for the JSON block.
    Equal guards give the same text, rendered once (Note [Equal guards rendered once], Note [Shared
    guards rendered once])."""
    if guards and set(map(type, guards)) == _READ_ONLY_ONLY:  # all read-only (at C speed: 1,600 guards a frame)
        held = tuple(guards)
        ids = (text, report, *map(id, held))
        hit = _SHARED_GUARDS.get(ids)
        if hit is None:
            hit = _SHARED_GUARDS[ids] = (held, _guards_by_digest(held, text, report))
            while len(_SHARED_GUARDS) > _GUARDS_KEPT_MAX:
                _SHARED_GUARDS.popitem(last=False)
        else:
            _SHARED_GUARDS.move_to_end(ids)
        return hit[1]
    return _guards_by_digest(guards, text, report)


def _guards_by_digest(guards: Sequence[Guard], text: str, report: bool) -> str:
    """See Note [Equal guards rendered once]."""
    try:
        key = hashlib.sha256(msgspec.json.encode([text, report, guards])).digest()
    except (TypeError, msgspec.EncodeError):  # a field JSON cannot hold: rendered without the cache
        return _guards_html(guards, text, report)
    kept = _GUARDS_KEPT.get(key)
    if kept is None:
        kept = _GUARDS_KEPT[key] = _guards_html(guards, text, report)
        while len(_GUARDS_KEPT) > _GUARDS_KEPT_MAX:
            _GUARDS_KEPT.popitem(last=False)
    return kept


def _guards_html(guards: Sequence[Guard], text: str, report: bool) -> str:
    shown = filter_guards(guards, text)
    groups = group_guards(shown)
    data = None
    if report:
        stacks: dict[str, int] = {}
        rows = [[_guard_row(g, grp.title, stacks.setdefault("\n".join(g.user_stack), len(stacks)), rel)
                 for g, rel in grp.rows] for grp in groups]
        data = fragment(json_block({"stacks": list(stacks), "groups": rows}))
    return render("guards.html.j2", shown=len(shown), total=len(guards), groups=groups,
                  kinds=kind_counts(list(guards)), open=bool(text.strip()), data=data)


# Sections of the saved-values table, by SavedValue.origin (SAVED_ORIGINS).
_SAVED_SECTIONS = (
    ("Activations", ("activation",)),
    ("Parameters and buffers", ("parameter", "buffer")),
    ("Inputs and unknown origin", ("input", "unknown")),
)


def saved_html(aot: Aot) -> str:
    """Saved values (forward to backward): activations apart from parameters and buffers, each
    section sorted by size (largest first), sizes in binary units, with the totals."""
    sections = []
    fwd = {n.name: n for n in aot.forward.nodes} if aot.forward is not None else {}
    for title, origins in _SAVED_SECTIONS:
        values = sorted((s for s in aot.saved if s.origin in origins), key=lambda s: -s.nbytes)
        if values:
            rows = [[s.name, s.origin, s.kind,
                     format_meta({"kind": "tensor", "shape": s.shape, "dtype": s.dtype}) if s.kind == "tensor" else s.kind,
                     human_bytes(s.nbytes), source_line(fwd[s.name].meta) if s.name in fwd else ""] for s in values]
            sections.append((f"{title}: {len(values)}, {human_bytes(sum(s.nbytes for s in values))}", rows))
    other = sum(s.nbytes for s in aot.saved if s.origin in ("input", "unknown"))
    return render("saved.html.j2", aot=aot, sections=sections, other_bytes=other)


def aot_tables_html(aot: Aot) -> str:
    """Mode, saved values, input mutations, output aliasing, synthetic bases, effect tokens, hooks."""
    hooks = aot.saved_tensor_hooks
    hook_graphs = [] if hooks is None else [
        (label, g, fragment(code_html(g))) for label, g in (("pack", hooks.pack), ("unpack", hooks.unpack))
        if g is not None]
    return render(
        "aot.html.j2", aot=aot, saved=fragment(saved_html(aot)),
        inputs=[[i.name, i.mutates_data, i.mutates_metadata, i.mutation_in_graph, i.requires_grad, i.is_parameter]
                for i in aot.inputs],
        input_class=["ds-bad" if (i.mutates_data or i.mutates_metadata) else "" for i in aot.inputs],
        outputs=[[o.name, o.alias, "" if o.base_index is None else o.base_index] for o in aot.outputs],
        output_class=["" if o.alias == "none" else "ds-bad" for o in aot.outputs],
        bases=[[i, ", ".join(map(str, b))] for i, b in enumerate(aot.synthetic_bases)],
        hooks=hooks, hook_graphs=hook_graphs,
    )


def code_html(graph: Graph, *, highlight: str = "", plain: bool = False, link: str = "") -> str:
    """``Graph.code`` highlighted with Pygments (escaped by its formatter); the line defining ``highlight``
    marked. ``plain``: escaped text only (the report: Pygments' inline styles triple the bytes).
    ``link``: the drawing of ``graph`` (a canvas's ``graph``, a report's graph index) that a click on a
    line defining a node shows it in (Note [Code lines link to nodes] in viz/view.js)."""
    text = graph.code or str(graph)
    lines = text.splitlines()
    if plain or len(lines) > MAX_HIGHLIGHT_LINES:
        return render("code.html.j2", highlighted=None, lines=len(lines), text=text, link=link)
    from pygments import highlight as pyg_highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    marked = []
    if highlight:
        prefixes = (f"{highlight} = ", f"{highlight}: ", f"{highlight} : ")
        marked = [i + 1 for i, line in enumerate(lines) if line.lstrip().startswith(prefixes)]
    fmt = HtmlFormatter(noclasses=True, nowrap=False, hl_lines=marked, style="default")
    # Pygments' HtmlFormatter escapes the source text itself: its output is a trusted fragment.
    return render("code.html.j2", highlighted=fragment(pyg_highlight(text, PythonLexer(), fmt)), link=link)
