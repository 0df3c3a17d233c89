"""A logged graph text -> a Graph now (when its structure is needed at load) or a Graph parsed on first access.

Invariant: both ways give the same nodes, roles and frame problems as one eager parse of the text
(:func:`parse_logged`); a text that cannot be parsed keeps its ``code``, has no nodes, and its
frame's ``problems`` say why (Note [Graphs parsed on first access] in tracer/model/graph.py).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, NamedTuple, Optional

from tracer.model.frame import Frame
from tracer.model.graph import Graph, Node
from tracer.model.lazy import on_first_read, peek
from tracer.trace_log.graph_text import ParsedModule, parse_readable

__all__ = ["deferred_graph", "has_bodies", "parse_logged", "problems_wait_for_graphs"]

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
# (text, name), for the last ``_SHARED_MAX`` distinct texts, as one flat tuple per node (``_Kept``,
# the fastest to copy). What is kept is never handed out: each call gets fresh Graph, Node, list
# and dict objects (``_fresh``), so a caller changing its graph (roles set by the loader, a user
# editing nodes) changes no other frame's. A text that does not parse is not kept (its exception is
# raised again by the next parse). The key is the text itself, so a hit is an equal text, never a
# hash collision; tests/test_trace_log_parse_once.py compares both ways on every graph of real logs.
_SHARED_MAX = 32
_shared: OrderedDict[tuple[str, str], _Kept] = OrderedDict()


class _Kept(NamedTuple):
    """A kept parse as what ``_fresh`` copies: per node its fields, and which meta values are containers."""

    nodes: list[tuple[Any, ...]]  # (name, op, target, args, kwargs, inputs, users, role, calls, meta, container keys)
    code: str
    name: str
    children: dict[str, _Kept]
    errors: list[str]


def _keep(p: ParsedModule) -> _Kept:
    nodes = [(n.name, n.op, n.target, n.args, n.kwargs, n.inputs, n.users, n.role, n.calls, n.meta,
              tuple(k for k, v in n.meta.items() if type(v) is list or type(v) is dict)) for n in p.graph.nodes]
    return _Kept(nodes, p.graph.code, p.graph.name, {k: _keep(c) for k, c in p.children.items()}, p.errors)


def _parse_shared(text: str, name: str) -> ParsedModule:
    key = (text, name)
    kept = _shared.get(key)
    if kept is None:
        kept = _shared[key] = _keep(parse_readable(text, name))
        if len(_shared) > _SHARED_MAX:
            _shared.popitem(last=False)
    else:
        try:
            _shared.move_to_end(key)
        except KeyError:  # another thread's parse let it go meanwhile: ``kept`` is still whole
            pass
    return _fresh(kept)


def _fresh(p: _Kept) -> ParsedModule:
    """A ParsedModule of ``p`` sharing no mutable object with it (strings and numbers are immutable).
    A parsed node's meta values are strings, or lists ("shape", "stride") and a dict ("source") of
    strings and ints (graph_text.py ``meta_of_annotation``, ``_comments``), so copying each container
    once shares nothing mutable (a deep copy of any level costs three times more)."""
    nodes = []
    add = nodes.append
    for name, op, target, args, kwargs, inputs, users, role, calls, meta, containers in p.nodes:
        m = meta.copy()
        for k in containers:
            m[k] = m[k].copy()
        add(Node(name, op, target, args[:], kwargs.copy(), inputs[:], users[:], role, calls[:], m))
    return ParsedModule(Graph(nodes=nodes, code=p.code, name=p.name),
                        {k: _fresh(c) for k, c in p.children.items()}, list(p.errors))


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


def _errors(p: ParsedModule) -> list[str]:
    return [*p.errors, *(e for c in p.children.values() for e in _errors(c))]


def deferred_graph(frame: Frame, text: str, line: int, name: str,
                   finish: Optional[Callable[[Graph], None]] = None) -> Graph:
    """A Graph of ``text`` (which ``has_bodies`` said has none) whose nodes are parsed on first read,
    then passed to ``finish`` (e.g. setting roles); problems go to ``frame.problems`` at that moment
    (appended to the list as it is: parsing one graph does not parse its frame's other graphs)."""
    g = Graph(code=text, name=name)

    def parse() -> list[Node]:
        problems = peek(frame, "problems")
        try:
            parsed = parse_logged(problems, text, line, name)
            if parsed is not None and finish is not None:
                finish(parsed.graph)
        except Exception as e:  # except: records a problem (parsing runs inside whatever view reads the graph first)
            problems.append(f"line {line}: {name or 'output'} graph text not parsed ({type(e).__name__}: {e})"[:300])
            return []
        if parsed is None:
            return []
        if parsed.children:  # ruled out by Note [Which logged graphs wait]; said, not dropped silently
            problems.append(f"line {line}: {name or 'output'} graph has bodies {sorted(parsed.children)} that were not read")
        return parsed.graph.nodes

    def fill() -> None:
        g.nodes = parse()

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


def _reader(g: Graph) -> Callable[[], None]:
    return lambda: g.nodes  # noqa: B018 (the read runs the parse)
