"""Module groups of a logged graph: which module a node ran in, where the log proves it, else nothing.

Invariant: torch-free; a node gets ``meta["log_module"]`` only by the two rules of Note [Module
groups from a log], each recorded with what it was derived from (``via`` and the nodes or Sources it
rests on); a node neither rule reaches keeps no module (it is drawn ungrouped, never guessed).
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from tracer.model.graph import Graph, Node

__all__ = ["LOG_MODULE_RULE", "aot_input_index", "aot_owners", "infer_modules", "lines_with", "owner_of", "ran_twice",
           "root_owners", "tied_sources"]

# Note [Module groups from a log]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A live node's module is its ``nn_module_stack``, which no TORCH_TRACE payload carries (fx's
# print_readable writes a node's innermost user frame only, "# File: path:line in forward": the
# function, not which module instance ran it). What a log does name exactly is the Source of every
# graph input (``describe_source``): ``L['self']._modules['layer1']._modules['0']._modules['conv1']
# ._parameters['weight']`` is a parameter owned by the module ``L['self'].layer1.0.conv1`` (the path
# as Dynamo's nn_module_stack spells it). Two rules, both recorded in ``meta["log_module"]``:
#   "parameter"  a node that reads parameters or buffers directly, all owned by one module M, ran in
#                M (a module's weights are read by its own forward). A parameter the guards show
#                reachable from two Sources (``A is B``: tied weights, e.g. GPT-2's lm_head and wte)
#                has no single owner and places nothing. A node reading two modules' parameters
#                (MultiheadAttention's ``in_proj_weight`` and ``out_proj.weight``) gets none. An owned
#                input sits with its first reader, if that one is placed. This rests on one thing the
#                log cannot show: that a parent does not read one child's weights in its own forward
#                (``F.linear(x, self.child.weight)``); torch.nn's modules, GPT-2, ResNet and the
#                transformer of bench/ agree with their live stacks (tests/test_trace_log_modules.py).
#   "between"    Dynamo appends nodes in the order it traces them, so the nodes of one call of a
#                module are consecutive. Nodes lying between two "parameter" nodes, with none
#                between, ran in the innermost module path both of those are inside (their common
#                path prefix) -- provided that module ran once: when a parameter under it is read by
#                two nodes of the Dynamo graph (a module called twice), the run between is left
#                without a module; and so is a run whose common module is a frame local itself
#                (``L['self']``: the compiled forward's own module, which nn_module_stack never lists,
#                so a live capture leaves those nodes loose too; for the same reason a parameter of
#                a frame local itself, ``L['self']._parameters['w']``, names no owner). AOTAutograd's epilogue ``copy_`` of a mutated buffer back into
#                its input (BatchNorm's running stats) reads that module's buffer, so it is placed in
#                it, but it comes after the whole forward and bounds no run.
# Nodes before the first or after the last "parameter" node, and every node of a graph with no
# owned inputs, get no module. "between" applies only to the Dynamo graph, the one graph logged in
# traced order: in AOT graphs the partitioner moves nodes (GPT-2's forward ends with the weight
# transposes it saves for the backward) and the backward is in the autograd engine's order, so there
# only "parameter" applies: an AOT input is the idx-th Dynamo input by AOTAutograd's
# ``PlainAOTInput(idx)`` descriptor, and it names a module when every Dynamo node reading that input
# was placed in that module (an aten node, forward or backward, reading a parameter comes from a
# Dynamo node that read it). AOT inputs themselves stay loose, as torch leaves them live. Views mark
# groups made this way as inferred from the log.
LOG_MODULE_RULE = ("module groups inferred from parameter and buffer Sources: a node reading one module's "
                   "parameters, and nodes traced between two such nodes (their common module)")

_OWNED = re.compile(r"^(?P<root>[LG]\['[^']*'\])(?P<mods>(?:\._modules\['[^']*'\])*)\._(?:parameters|buffers)\['[^']*'\]$")
_MODULE = re.compile(r"\._modules\['([^']*)'\]")
_FRAME_LOCAL = re.compile(r"^L\['[^']*'\]$")  # the compiled frame's own module: in no nn_module_stack
_IS = re.compile(r"^(\S+) is (\S+)$")
_AOT_INPUT = re.compile(r"^\s*(\w+)\s*:[^#]*#\s*PlainAOTInput\(idx=(\d+)\)\s*$")
_SKIP = ("placeholder", "output", "get_attr")


def owner_of(source: str) -> Optional[str]:
    """The module path owning the parameter or buffer read from ``source``; None for any other Source.

    >>> owner_of("L['self']._modules['layer1']._modules['0']._modules['conv1']._parameters['weight']")
    "L['self'].layer1.0.conv1"
    >>> owner_of("L['x']") is None
    True
    """
    m = _OWNED.match(source)
    if m is None:
        return None
    return m.group("root") + "".join("." + name for name in _MODULE.findall(m.group("mods")))


def tied_sources(checks: Iterable[str]) -> set[str]:
    """Sources that an identity guard check (``A is B``) shows to be one tensor reachable two ways.

    >>> sorted(tied_sources(["L['a']._parameters['w'] is L['b']._parameters['w']", "___check_obj_id(L['x'], 7)"]))
    ["L['a']._parameters['w']", "L['b']._parameters['w']"]
    """
    out: set[str] = set()
    for code in checks:
        m = _IS.match(code.split("  #", 1)[0].strip())
        if m:
            out.update(m.groups())
    return out


def aot_input_index(graph: Graph) -> dict[str, int]:
    """AOT placeholder name -> index of the Dynamo graph input it is (its logged ``PlainAOTInput(idx)``)."""
    out: dict[str, int] = {}
    # a line without the descriptor cannot match; splitlines: the lines as str.splitlines cuts them
    for line in (ln for piece in lines_with(graph.code, "PlainAOTInput(idx=") for ln in piece.splitlines()
                 if "PlainAOTInput(idx=" in ln):
        m = _AOT_INPUT.match(line.rstrip().rstrip(","))
        if m is None:
            m = _AOT_INPUT.match(line.replace('",', '"', 1))
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def lines_with(text: str, needle: str) -> list[str]:
    """The pieces of ``text.split("\\n")`` that contain ``needle``, in order, found with ``str.find``
    (C speed) rather than by walking every line; ``needle`` holds no ``"\\n"``.

    >>> lines_with("a is b\\nx\\nc is d is e\\n", " is ")
    ['a is b', 'c is d is e']
    """
    out: list[str] = []
    i = text.find(needle)
    while i >= 0:
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        out.append(text[text.rfind("\n", 0, i) + 1:end])
        i = text.find(needle, end)
    return out


def ran_twice(graph: Graph, owners: dict[str, tuple[str, str]]) -> set[str]:
    """Modules of a Dynamo graph that may have run more than once: one of their inputs is read by two nodes."""
    readers: dict[str, int] = {}
    for n in graph.nodes:
        if n.op not in _SKIP:
            for i in set(n.inputs) & owners.keys():
                readers[i] = readers.get(i, 0) + 1
    return {owners[i][0] for i, c in readers.items() if c > 1}


def infer_modules(graph: Graph, owners: dict[str, tuple[str, str]], twice: Optional[set[str]],
                  upto: Optional[int] = None) -> None:
    """Set ``meta["log_module"]`` on the nodes of ``graph`` by Note [Module groups from a log].

    ``owners``: placeholder name -> (owning module path, the Source that says so), untied ones only.
    ``twice``: the modules that may have run twice (:func:`ran_twice`) for the Dynamo graph or a
    joint's forward half; None for another AOT graph (not in traced order: no "between").
    ``upto``: a joint graph's forward half ends there (Note [Joint forward half in traced order]):
    "between" only before it, and its inputs, which torch gives no module stack, stay loose.
    """
    nodes = graph.nodes
    placed: list[int] = []
    for k, n in enumerate(nodes):
        if n.op in _SKIP:
            continue
        read = [i for i in dict.fromkeys(n.inputs) if i in owners]
        paths = {owners[i][0] for i in read}
        if len(paths) == 1:
            n.meta["log_module"] = {"path": paths.pop(), "via": "parameter", "reads": [owners[i][1] for i in read]}
            if not _writes_back(n, nodes):
                placed.append(k)
    if twice is None:
        return
    if upto is None:
        _first_readers(nodes, owners)
    else:
        placed = [k for k in placed if k < upto]
    for a, b in zip(placed, placed[1:], strict=False):
        pa, pb = nodes[a].meta["log_module"]["path"], nodes[b].meta["log_module"]["path"]
        common = _common(pa, pb)
        if common is None or _FRAME_LOCAL.match(common) or any(_inside(m, common) for m in twice):
            continue
        for k in range(a + 1, b):
            if nodes[k].op not in _SKIP:
                nodes[k].meta["log_module"] = {"path": common, "via": "between",
                                               "after": nodes[a].name, "before": nodes[b].name}


def _first_readers(nodes: list[Node], owners: dict[str, tuple[str, str]]) -> None:
    """An owned input sits where it was first read (as Dynamo records a lifted input's stack): with its
    first reader when that one was placed by "parameter", else nowhere (MultiheadAttention reads
    ``out_proj.weight`` in its own forward, beside ``in_proj_weight``: two owners, no module)."""
    by_name = {n.name: n for n in nodes}
    for n in nodes:
        if n.op != "placeholder" or n.name not in owners or not n.users:
            continue
        first = by_name.get(n.users[0])
        lm = first.meta.get("log_module") if first is not None else None
        if lm is not None and lm["via"] == "parameter":
            n.meta["log_module"] = {"path": lm["path"], "via": "parameter", "reads": [owners[n.name][1]]}


def _writes_back(n: Node, nodes: list[Node]) -> bool:
    """An AOT epilogue ``copy_`` of a mutated input (a BatchNorm running stat) back into it: it is
    placed after the whole forward, not where the module ran, so it bounds no "between" run."""
    return n.target.startswith("aten.copy_") and bool(n.inputs) and any(
        m.name == n.inputs[0] and m.op == "placeholder" for m in nodes)


def _prefixes(path: str) -> list[str]:
    """``"L['self'].h.0"`` -> ``["L['self']", "L['self'].h", "L['self'].h.0"]`` (paths made by :func:`owner_of`)."""
    root = path[:path.index("]") + 1] if "]" in path else path
    out = [root]
    for name in path[len(root):].split(".")[1:]:
        out.append(out[-1] + "." + name)
    return out


def _common(a: str, b: str) -> Optional[str]:
    """The innermost module path that both ``a`` and ``b`` are (or are inside)."""
    out = None
    for x, y in zip(_prefixes(a), _prefixes(b), strict=False):
        if x != y:
            break
        out = x
    return out


def _inside(path: str, outer: str) -> bool:
    return path == outer or outer in _prefixes(path)


def root_owners(graph: Graph, tied: set[str]) -> dict[str, tuple[str, str]]:
    """Placeholder name -> (owning module path, Source) of a Dynamo root graph whose placeholders
    carry ``meta["graph_arg_source"]`` (Note [Root roles from a log] in assemble.py)."""
    out: dict[str, tuple[str, str]] = {}
    for n in graph.placeholders:
        src = n.meta.get("graph_arg_source")
        path = owner_of(src) if isinstance(src, str) and src not in tied else None
        if path is not None and not _FRAME_LOCAL.match(path):  # the frame's own module: in no nn_module_stack
            out[n.name] = (path, src)
    return out


def aot_owners(graph: Graph, dynamo: Graph, root: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """Placeholder name -> (module path, Source) of an AOT graph: its ``PlainAOTInput(idx)`` is the
    idx-th input of the Dynamo graph, which gives a module only when every Dynamo node reading it
    was placed in that one module (an aten node reading a parameter comes from a Dynamo node that
    read it: MultiheadAttention's ``out_proj.weight`` is read with ``in_proj_weight``, so its
    decomposed ``t`` has no module)."""
    inputs = [n for n in dynamo.nodes if n.op == "placeholder"]
    by_name = {n.name: n for n in dynamo.nodes}
    out: dict[str, tuple[str, str]] = {}
    for name, idx in aot_input_index(graph).items():
        if not 0 <= idx < len(inputs) or inputs[idx].name not in root:
            continue
        readers = [by_name[u] for u in inputs[idx].users if u in by_name and by_name[u].op not in _SKIP]
        paths = {(r.meta.get("log_module") or {}).get("path") for r in readers}
        if readers and len(paths) == 1 and None not in paths:
            out[name] = (paths.pop(), root[inputs[idx].name][1])
    return out
