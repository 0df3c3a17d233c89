"""A logged graph text -> a Graph now (when its structure is needed at load) or a Graph parsed on first access;
a log's Inductor events -> ``Frame.inductor`` read on first access.

Invariant: both ways give the same nodes, roles and frame problems as one eager parse of the text
(:func:`parse_logged`); a text that cannot be parsed keeps its ``code``, has no nodes, and its
frame's ``problems`` say why (Note [Graphs parsed on first access] in tracer/model/graph.py).
"""

from __future__ import annotations

import contextlib
import contextvars
import operator
from collections import OrderedDict
from typing import Any, Callable, Hashable, NamedTuple, Optional

from tracer.inductor_events import inductor_graphs
from tracer.model.frame import Frame
from tracer.model.graph import Graph, Node
from tracer.model.lazy import on_first_read, peek, pending
from tracer.model.read_only import (
    freeze,
    freeze_flat,
    freeze_nodes,
    read_only_dict,
    read_only_list,
    read_only_node,
    thaw,
)
from tracer.shape_events import Event
from tracer.trace_log.fx_code import parse_readable
from tracer.trace_log.graph_text import ParsedModule

__all__ = ["deferred_graph", "deferred_inductor", "freeze_loaded", "has_bodies", "loading_read_only", "logged_nodes",
           "parse_finished", "parse_logged", "problems_wait_for_graphs", "read_only_graphs"]

# Note [Which logged graphs wait]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What the loader derives from a graph's nodes at load is the HOP bodies (``Frame.subgraphs``,
# ``Aot.subgraphs``: their inputs, call sites and roles, Note [Body input sources from a log] in
# assemble.py). fx prints a body as a class nested in the module's class (torch/fx/graph_module.py
# ``_print_readable``), and a nested class statement is a line that starts with indentation and
# then "class " (fx emits no decorators and one statement per line; a string constant in a node's
# arguments is printed as its repr, so it holds no newline). A text without such a line has no
# bodies: nothing at load needs its nodes, so it waits (``deferred_graph``). A text with one is
# parsed at load, as before. The test is sound (it may only send a text to the eager side): it
# looks at every "class " of the text (``str.find``, C speed; a regex over every line start is
# ten times slower) and asks whether only whitespace stands before it on its line (what the tokenizer
# takes for indentation: spaces, tabs, form feeds).


def has_bodies(text: str) -> bool:
    """Whether ``text`` may define nested classes (HOP bodies). See Note [Which logged graphs wait]."""
    i = text.find("class ")
    while i >= 0:
        head = text[text.rfind("\n", 0, i) + 1:i]
        if head.isspace():
            return True
        i = text.find("class ", i + 6)
    return False


# Note [One parse per distinct graph text]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A log repeats identical graph texts (every rank of a job, each recompile that gives the same
# graph, a step compiled again): ``parse_logged`` parses a text once and keeps the result, keyed by
# (text, name), for the last ``_SHARED_MAX`` distinct texts, in its read-only form (``_Kept``: the node
# list read-only hand-outs share, Note [Read-only graphs], and per node which meta values are
# containers, so that a copy copies only those). So a log read only for reading keeps one form of each
# parse, not a copyable one beside the shared one. No editable caller is handed what is kept: each
# gets fresh Graph, Node, list and dict objects (``_fresh``), so a caller changing its graph (roles set
# by the loader, a user editing nodes) changes no other frame's. A text that does not parse is not kept (its exception is
# raised again by the next parse). The key is the text itself, so a hit is an equal text, never a
# hash collision; tests/test_trace_log_parse_once.py compares both ways on every graph of real logs.
_SHARED_MAX = 32
_shared: OrderedDict[tuple[Any, ...], _Kept] = OrderedDict()  # (text, name) or (text, name, context key)


_Hint = tuple[tuple[tuple[str, bool], ...], bool]
_hints: dict[_Hint, _Hint] = {}  # one object per distinct hint (a graph's nodes have a few between them)


class _Kept(NamedTuple):
    """A kept parse: its read-only nodes (what read-only hand-outs share, what ``_fresh`` copies) and per
    node which meta values are containers."""

    nodes: list[Node]  # read-only (tracer/model/read_only.py), the one list read-only hand-outs share
    hints: list[_Hint]  # per node: ((meta key of a container, nested?), ...), args or kwargs nested?
    code: str
    name: str
    children: dict[str, _Kept]
    errors: list[str]


def _keep(p: ParsedModule) -> _Kept:
    """``p`` as kept: its nodes made read-only in one copy, sharing no list or dict with ``p`` (so ``p``
    itself is the first editable hand-out). See Note [Keeping a parse in one pass]."""
    nodes, hints = [], []
    for n in p.graph.nodes:
        containers = []
        m = {}
        for k, v in n.meta.items():
            t = type(v)
            if t is list:
                deep = not _flat(map(type, v))
                v = freeze(v) if deep else read_only_list(v)
                containers.append((k, deep))
            elif t is dict:
                deep = not _flat(map(type, v.values()))
                v = freeze(v) if deep else read_only_dict(v)
                containers.append((k, deep))
            m[k] = v
        args, kwargs = n.args, n.kwargs
        deep_args = not (_flat(map(type, args)) and _flat(map(type, kwargs.values())))
        hint = (tuple(containers), deep_args)
        hints.append(_hints.setdefault(hint, hint))
        args, kwargs = (freeze(args), freeze(kwargs)) if deep_args else (freeze_flat(args), freeze_flat(kwargs))
        nodes.append(read_only_node(n.name, n.op, n.target, args, kwargs, read_only_list(n.inputs), read_only_list(n.users),
                                    n.role, read_only_list(n.calls), read_only_dict(m)))
    return _Kept(read_only_list(nodes), hints, p.graph.code, p.graph.name,
                 {k: _keep(c) for k, c in p.children.items()}, list(p.errors))


# Note [Keeping a parse in one pass]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Freezing the kept parses was the largest single cost of a read-only fully read load of a real job's
# logs (bench/RESULTS.md, 2026-11-27). ``_keep`` walks each node's meta once, deciding per container
# whether it holds a container (then the hand-outs copy it all the way down) while it freezes it; that
# test is ``frozenset.isdisjoint(map(type, values))``, all at C speed, where a generator under ``any``
# resumed a Python frame per item. The result is what the two-pass walk gave: the same hints, the same
# read-only values in the same key order (tests/test_job_real.py checks every kept container is
# read-only and shares nothing with an editable hand-out).
_flat = frozenset((list, dict, tuple)).isdisjoint  # _flat(map(type, items)): no item is a container


_FIELDS_OF = operator.attrgetter("name", "op", "target", "args", "kwargs", "inputs", "users", "role", "calls", "meta")
_deep = thaw  # ``v`` with every list, dict and tuple in it new and plain (the rest -- strings, numbers, None -- immutable)


def _parse_shared(text: str, name: str) -> ParsedModule:
    key = (text, name)
    kept = _shared.get(key)
    if kept is None:
        p = parse_readable(text, name)
        _shared[key] = _keep(p)
        if len(_shared) > _SHARED_MAX:
            _shared.popitem(last=False)
        return p  # the kept copy shares nothing with it
    else:
        try:
            _shared.move_to_end(key)
        except KeyError:  # another thread's parse let it go meanwhile: ``kept`` is still whole
            pass
    return _fresh(kept)


def _fresh(p: _Kept) -> ParsedModule:
    """A ParsedModule of ``p`` sharing no mutable object with it (strings and numbers are immutable).
    A parsed node's meta values are mostly strings, or flat lists ("shape", "stride") and a flat dict
    ("source"), so each container is copied once; one holding containers (a finished node's
    ``log_module`` with its lists, nested arguments) is copied all the way down (``_deep``); a deep
    copy of every level would cost three times more."""
    nodes = []
    add = nodes.append
    for n, (containers, deep_args) in zip(p.nodes, p.hints, strict=True):  # .copy(), [:] of a read-only one: plain
        name, op, target, args, kwargs, inputs, users, role, calls, meta = _FIELDS_OF(n)
        m = meta.copy()
        for k, deep in containers:
            m[k] = _deep(m[k]) if deep else m[k].copy()
        if deep_args:
            args, kwargs = _deep(args), _deep(kwargs)
        else:
            args, kwargs = args[:], kwargs.copy()
        add(Node(name, op, target, args, kwargs, inputs[:], users[:], role, calls[:], m))
    return ParsedModule(Graph(nodes=nodes, code=p.code, name=p.name),
                        {k: _fresh(c) for k, c in p.children.items()}, list(p.errors))


# Note [Read-only graphs]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A reader that only reads (``dynascope report``, a notebook that looks at every frame of a big job)
# pays for hand-outs it does not need: copying a kept parse node by node is most of what reading a
# repeated graph costs, and holding the copies most of a fully read log's memory (bench/RESULTS.md:
# 3.1x the log's bytes with copies, 0.15x shared). ``load_trace(path, read_only=True)`` (also the
# default inside ``with read_only_graphs():``, which the CLI's report uses) loads a capture whose
# waiting graphs, on their first read, get a Graph of their own whose ``nodes`` is *one list shared by
# every equal graph read that way* when their finished parse is kept (``parse_finished``: the Dynamo
# graph and its AOT graphs, Note [One finish per distinct graph and context]), built once per kept
# parse: equal graphs then share their Node objects, and a reader can tell equal graphs by
# ``a.nodes is b.nodes``. The mode is the capture's, fixed when it is loaded (``deferred_graph``
# keeps it), not the context of the first read.
# A change to a shared node would show in every equal graph of every frame, so shared nodes are
# really read-only (tracer/model/read_only.py): the list, each node's fields and every list and dict
# in a node (``args``, ``meta`` and what it holds) raise ``ReadOnlyError`` on a write through their
# own methods, naming how to get an editable graph. They stay a list, ``Node``s, lists and dicts
# (subclasses whose ``repr``, ``==``, ``isinstance`` and JSON are the plain ones'), so every reader --
# views, ``validate``, ``diff``, ``to_json``, ``load_job`` -- reads them as it reads copies, and the
# report of either is byte for byte the same (tests/test_read_only_load.py). For one contract per
# capture, every other graph of a read-only capture is made read-only too (those parsed at load,
# with HOP bodies, by ``freeze_loaded`` once the loader is done with them; the rest as they are
# parsed), unshared. Guards are shared the same way: frames that logged an equal C++ guard tree get
# the same read-only Guards (``shared_guards_of`` in guards.py: a step compiled again, a recompile
# to the same guards; a job's ranks rarely do, their trees name per-process object ids). What stays writable is per frame:
# a Graph's own fields (``let_go`` empties ``nodes`` by assigning a new list), the frame's own
# ``guards`` list (of shared Guards) and its other records, none shared.
# Why opt-in and not the default: a loaded capture has always been plain editable data, like a live
# capture and one read from JSON (fx's ``meta`` is an escape hatch users write into); a default that
# starts raising on ``node.meta[k] = v`` breaks that code and makes a log's capture behave unlike the
# same capture live or from JSON, while a reader that wants the speed says so in one word (the
# report and ``load_job(dir, read_only=True)``, whose loader "trace-read-only" ``job.rank(r)`` reuses,
# do). Protection by other types (``MappingProxyType`` meta, tuples for lists) was not taken: readers
# would see other types (a tuple's repr in a view, ``list + tuple`` failing), so the page could no
# longer be the editable load's byte for byte. Python cannot stop every write (``list.append(nodes, x)`` called on the class, or
# ``object.__setattr__``, still get through): the guard stops the ordinary ones, which is what keeps
# one frame's edit out of another's. ``copy.deepcopy(graph)`` gives an editable copy.
_READ_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("dynascope_read_only_graphs", default=False)


@contextlib.contextmanager
def read_only_graphs():  # type: ignore[no-untyped-def]
    """Within: ``load_trace`` loads read-only captures unless told otherwise (Note [Read-only graphs])."""
    token = _READ_ONLY.set(True)
    try:
        yield
    finally:
        _READ_ONLY.reset(token)


def loading_read_only() -> bool:
    """Whether a capture loaded now is read-only (Note [Read-only graphs])."""
    return _READ_ONLY.get()


def _hand_out(p: _Kept, read_only: bool) -> ParsedModule:
    """A fresh copy of ``p``, or for a read-only capture its one shared node list (Note [Read-only graphs])."""
    if not read_only or p.children:
        return _fresh(p)
    return ParsedModule(Graph(nodes=p.nodes, code=p.code, name=p.name), {}, list(p.errors))


def freeze_loaded(graphs: list[Graph]) -> None:
    """Make every graph of ``graphs`` already parsed read-only (those still waiting are when they are
    parsed): Note [Read-only graphs]."""
    for g in graphs:
        if g.parsed:
            g.nodes = freeze_nodes(g.nodes)


def parse_logged(problems: list[str], text: str, line: int, name: str) -> Optional[ParsedModule]:
    """Parse one logged graph text; what it cannot read goes to ``problems`` (None: not parsed).
    Each distinct text is parsed once (Note [One parse per distinct graph text])."""
    try:
        parsed = _parse_shared(text, name)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        problems.append(f"line {line}: {name or 'output'} graph text not parsed ({type(e).__name__}: {e})"[:300])
        return None
    problems.extend(f"line {line}: {e}" for e in _errors(parsed))
    parsed.graph.code = text
    return parsed


def logged_nodes(text: str, name: str) -> Optional[list[Node]]:
    """``text``'s plain parse's nodes, only to read (the kept read-only list, not a copy); None: not parsed."""
    if (kept := _shared.get((text, name))) is not None:
        with contextlib.suppress(KeyError):  # another thread's parse let it go meanwhile: ``kept`` is still whole
            _shared.move_to_end((text, name))
        return kept.nodes
    try:
        return _parse_shared(text, name).graph.nodes  # a new parse: the kept copy shares nothing with it
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# Note [One finish per distinct graph and context]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# After its parse a logged graph is *finished* by the loader: roots get their roles from the Sources
# the attempt names, nodes their modules (tracer/trace_log/assemble.py). That work depends on the text
# and on a context -- the attempt's Sources and tied Sources, for an AOT graph also the Dynamo graph
# of its frame as loaded -- and a log repeats the same (text, context) as it repeats texts (every
# rank, every step compiled again). ``parse_finished`` keeps the finished parse keyed by (text, name,
# context key) beside the plain parses of Note [One parse per distinct graph text], and hands out fresh
# copies the same way. It is exact only if the finish reads nothing but the text and what the key
# holds: the caller builds the key from exactly the finish's inputs, and a finish that needs another
# graph reads it *as loaded* (a fresh copy of its own kept parse), never the frame's object a user may
# have changed, so a kept result cannot carry one frame's edits to another. ``reads`` is what the
# finish used to read first (the frame's Dynamo graph), run on every hand-out so that a frame's
# problems come in the same order as when each graph was finished on its own. The plain parse is kept
# beside the finished one (a joint's finish reads the forward and backward node names plain: ``logged_nodes``),
# and a text whose plain parse is kept is finished on a fresh copy of it, not parsed again (``_fresh`` of a
# kept parse equals the parse). A finish only reads another graph's kept nodes, read-only, never a copy (an
# AOT graph's its Dynamo graph; a forward's its joint as finished, by the joint's own key: assemble.py).
def parse_finished(problems: list[str], text: str, line: int, name: str, finish: Callable[[Graph], None],
                   key: Hashable, reads: Optional[Callable[[], None]] = None,
                   read_only: bool = False) -> Optional[ParsedModule]:
    """``parse_logged``, then ``reads()``, then ``finish(graph)``; the finished parse kept per (text,
    name, ``key``) (Note [One finish per distinct graph and context]). An exception of ``finish``
    propagates and nothing is kept."""
    k = (text, name, key)
    kept = _shared.get(k)
    if kept is None:
        try:  # the text's plain parse, kept too: its partners' finishes read it (one parse per text)
            p = _parse_shared(text, name)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            problems.append(f"line {line}: {name or 'output'} graph text not parsed ({type(e).__name__}: {e})"[:300])
            return None
        problems.extend(f"line {line}: {e}" for e in _errors(p))
        if reads is not None:
            reads()
        p.graph.code = text
        finish(p.graph)
        kept = _shared[k] = _keep(p)
        while len(_shared) > _SHARED_MAX:  # two entries may have come in
            _shared.popitem(last=False)
        out = _hand_out(kept, read_only) if read_only and not kept.children else p  # p: shares nothing with kept
    else:
        try:
            _shared.move_to_end(k)
        except KeyError:  # another thread's parse let it go meanwhile: ``kept`` is still whole
            pass
        out = _hand_out(kept, read_only)
        problems.extend(f"line {line}: {e}" for e in _errors(out))
        if reads is not None:
            reads()
    out.graph.code = kept.code if read_only else text  # read-only: equal texts one string (Note [Read-only graphs])
    return out


def _errors(p: ParsedModule) -> list[str]:
    return [*p.errors, *(e for c in p.children.values() for e in _errors(c))]


def deferred_graph(frame: Frame, text: str, line: int, name: str,
                   finish: Optional[Callable[[Graph], None]] = None, key: Optional[Callable[[], Hashable]] = None,
                   reads: Optional[Callable[[], None]] = None) -> Graph:
    """A Graph of ``text`` (which ``has_bodies`` said has none) whose nodes are parsed on first read,
    then passed to ``finish`` (e.g. setting roles); problems go to ``frame.problems`` at that moment
    (appended to the list as it is: parsing one graph does not parse its frame's other graphs). With
    ``key`` (what the finish depends on besides the text) the finished parse is kept for equal texts
    and keys (``parse_finished``, with ``reads``). In a read-only capture (``loading_read_only()`` now,
    at load) the nodes are read-only, shared with equal graphs where the parse is kept (Note [Read-only graphs])."""
    g = Graph(code=text, name=name)
    read_only = _READ_ONLY.get()

    def parse() -> Optional[Graph]:
        problems = peek(frame, "problems")
        try:
            if key is not None and finish is not None:
                parsed = parse_finished(problems, text, line, name, finish, key(), reads, read_only)
            else:
                parsed = parse_logged(problems, text, line, name)
                if parsed is not None and finish is not None:
                    finish(parsed.graph)
        except Exception as e:  # except: records a problem (parsing runs inside whatever view reads the graph first)
            problems.append(f"line {line}: {name or 'output'} graph text not parsed ({type(e).__name__}: {e})"[:300])
            return None
        if parsed is not None and parsed.children:  # ruled out by Note [Which logged graphs wait]; said, not dropped silently
            problems.append(f"line {line}: {name or 'output'} graph has bodies {sorted(parsed.children)} that were not read")
        return None if parsed is None else parsed.graph

    def fill() -> None:
        parsed = parse()
        nodes = [] if parsed is None else parsed.nodes
        if read_only:  # a kept parse's text: equal graphs of other frames and ranks share one string too
            # not ``sys.intern``: interned strings are immortal on Python 3.12, a graph's text would stay for good
            g.nodes, g.code = freeze_nodes(nodes), parsed.code if parsed is not None and parsed.code == text else text
        else:
            g.nodes = nodes

    on_first_read(g, "nodes", fill)
    return g


def problems_wait_for_graphs(frame: Frame) -> None:
    """Once ``frame`` is assembled: each of its graphs still waiting is parsed before ``frame.problems``
    is first read (Note [Problems of deferred parses]). Registered last, so that the loader's own
    appends to ``frame.problems`` do not parse anything."""
    aot = [] if frame.aot is None else [frame.aot.joint, frame.aot.forward, frame.aot.backward, frame.aot.inference]
    waiting = {id(g): g for g in [frame.graph, *aot] if g is not None and not g.parsed}  # inference is forward
    for g in waiting.values():
        on_first_read(frame, "problems", _reader(g))
    if pending(frame, "inductor"):
        on_first_read(frame, "problems", lambda: frame.inductor)


def deferred_inductor(frame: Frame, events: list[Event]) -> None:
    """``frame.inductor`` from the attempt's Inductor events, read on its first access by the code a
    live capture reads them with (Note [What Inductor tells us] in tracer/inductor_events.py); what
    cannot be known goes to ``frame.problems`` then (``problems_wait_for_graphs`` makes them wait)."""
    if not events:
        return

    def fill() -> None:
        frame.inductor = inductor_graphs(events, peek(frame, "problems"))

    on_first_read(frame, "inductor", fill)


def _reader(g: Graph) -> Callable[[], None]:
    return lambda: g.nodes  # noqa: B018 (the read runs the parse)
