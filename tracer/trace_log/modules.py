"""Module groups of a logged graph: which module a node ran in, where the log proves it, else nothing.

Invariant: torch-free; a node gets ``meta["log_module"]`` only by the two rules of Note [Module
groups from a log], each recorded with what it was derived from (``via`` and the nodes or Sources it
rests on); a node neither rule reaches keeps no module (it is drawn ungrouped, never guessed).
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from tracer.model.graph import Graph, Node
from tracer.model.guards import Guard

__all__ = ["LOG_MODULE_RULE", "aot_input_index", "aot_owners", "infer_modules", "owner_of", "ran_twice", "root_owners",
           "tied_sources"]

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
#                has no single owner and places nothing.
#   "between"    Dynamo appends nodes in the order it traces them, so the nodes of one call of a
#                module are consecutive. Nodes lying between two "parameter" nodes, with none
#                between, ran in the innermost module path both of those are inside (their common
#                path prefix) -- provided that module ran once: when a parameter under it is read by
#                two nodes of the Dynamo graph (a module called twice), the run between is left
#                without a module. AOTAutograd's epilogue ``copy_`` of a mutated buffer back into
#                its input (BatchNorm's running stats) reads that module's buffer, so it is placed in
#                it, but it comes after the whole forward and bounds no run.
# Nodes before the first or after the last "parameter" node, and every node of a graph with no
# owned inputs, get no module. "between" applies only to the Dynamo graph, the one graph logged in
# traced order: in AOT graphs the partitioner moves nodes (GPT-2's forward ends with the weight
# transposes it saves for the backward) and the backward is in the autograd engine's order, so there
# only "parameter" applies (an AOT input is the forward's parameter by AOTAutograd's
# ``PlainAOTInput(idx)`` descriptor). Views mark groups made this way as inferred from the log.
LOG_MODULE_RULE = ("module groups inferred from parameter and buffer Sources: a node reading one module's "
                   "parameters, and nodes traced between two such nodes (their common module)")

_OWNED = re.compile(r"^(?P<root>[LG]\['[^']*'\])(?P<mods>(?:\._modules\['[^']*'\])*)\._(?:parameters|buffers)\['[^']*'\]$")
_MODULE = re.compile(r"\._modules\['([^']*)'\]")
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


def tied_sources(guards: Iterable[Guard]) -> set[str]:
    """Sources that an identity guard (``A is B``) shows to be one tensor reachable two ways."""
    out: set[str] = set()
    for g in guards:
        for code in g.code:
            m = _IS.match(code.split("#", 1)[0].strip())
            if m:
                out.update(m.groups())
    return out


def aot_input_index(graph: Graph) -> dict[str, int]:
    """AOT placeholder name -> index of the Dynamo graph input it is (its logged ``PlainAOTInput(idx)``)."""
    out: dict[str, int] = {}
    for line in graph.code.splitlines():
        m = _AOT_INPUT.match(line.rstrip().rstrip(","))
        if m is None:
            m = _AOT_INPUT.match(line.replace('",', '"', 1))
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def ran_twice(graph: Graph, owners: dict[str, tuple[str, str]]) -> set[str]:
    """Modules of a Dynamo graph that may have run more than once: one of their inputs is read by two nodes."""
    readers: dict[str, int] = {}
    for n in graph.nodes:
        if n.op not in _SKIP:
            for i in set(n.inputs) & owners.keys():
                readers[i] = readers.get(i, 0) + 1
    return {owners[i][0] for i, c in readers.items() if c > 1}


def infer_modules(graph: Graph, owners: dict[str, tuple[str, str]], twice: Optional[set[str]]) -> None:
    """Set ``meta["log_module"]`` on the nodes of ``graph`` by Note [Module groups from a log].

    ``owners``: placeholder name -> (owning module path, the Source that says so), untied ones only.
    ``twice``: the modules that may have run twice (:func:`ran_twice` of the Dynamo graph), or None
    for a graph not in traced order (no "between").
    """
    nodes = graph.nodes
    for n in nodes:
        if n.op == "placeholder" and n.name in owners:
            path, src = owners[n.name]
            n.meta["log_module"] = {"path": path, "via": "parameter", "reads": [src]}
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
    for a, b in zip(placed, placed[1:], strict=False):
        pa, pb = nodes[a].meta["log_module"]["path"], nodes[b].meta["log_module"]["path"]
        common = _common(pa, pb)
        if common is None or any(_inside(m, common) for m in twice):
            continue
        for k in range(a + 1, b):
            if nodes[k].op not in _SKIP:
                nodes[k].meta["log_module"] = {"path": common, "via": "between",
                                               "after": nodes[a].name, "before": nodes[b].name}


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
        if path is not None:
            out[n.name] = (path, src)
    return out


def aot_owners(graph: Graph, dynamo_inputs: list[Node], root: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """Placeholder name -> (module path, Source) of an AOT graph, through its ``PlainAOTInput(idx)``
    descriptors to the idx-th Dynamo graph input."""
    out: dict[str, tuple[str, str]] = {}
    for name, idx in aot_input_index(graph).items():
        if 0 <= idx < len(dynamo_inputs) and dynamo_inputs[idx].name in root:
            out[name] = root[dynamo_inputs[idx].name]
    return out
