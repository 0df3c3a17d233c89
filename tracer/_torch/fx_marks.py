"""Torch's own per-node profiler markers for the AOT graphs a profiled capture runs, and reading them back.

Owns the one switch (``torch.fx.experimental._config.enrich_profiler_metadata``, patched for one
profiled capture) and the map from each marked GraphModule's generated file to the Frame and graph
it is; ``node_times`` turns a ``torch.profiler`` run's events into self time per node
(Note [Profiler time per FX node], below).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

__all__ = ["Marks", "marking", "note_graph", "node_times"]

# Note [Profiler time per FX node]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# With ``enrich_profiler_metadata`` on, FX generates each GraphModule's code with two kinds of
# record-function markers (torch/fx/graph.py, ``python_code(record_func=True)``): the whole graph runs
# inside ``## fx_generated_<hash>.py ##`` (the file name of its generated code, which is also its
# ``forward.__code__.co_filename``) and each call node inside ``## <index> ##``, its position in
# ``graph.nodes``. torch's own ``map_recorded_events_to_aten_ops_with_stack_trace``
# (torch/profiler/_utils.py) reads the same markers. So every profiler event that runs inside a node
# has that node's marker as its nearest marker ancestor, under the graph's file marker: the
# attribution is exact, never by name or order. An event with no node marker above it (autograd's
# engine, AccumulateGrad, the compiled-function wrappers, the markers' own graph-level time) is not
# attributed to a node: it is kept by name, with its time, as unattributed.
#
# The GraphModules AOTAutograd hands to ``aot_eager``'s compilers are lazy: their code, and so the
# file name, exists only after the first call. ``Marks`` keeps the modules while the profiled capture
# runs and reads the names after its first call.

_ACTIVE: Optional["Marks"] = None  # the Marks of the profiled capture running now, else None


@dataclass
class Marks:
    """The marked AOT GraphModules of one profiled capture: (module, frame, graph kind)."""

    modules: list[tuple[Any, Any, str]] = field(default_factory=list)

    def files(self) -> dict[str, tuple[Any, str, list[str]]]:
        """generated file name -> (Frame, graph kind, node names by index), for modules that ran."""
        out: dict[str, tuple[Any, str, list[str]]] = {}
        for gm, frame, kind in self.modules:
            name = getattr(getattr(gm.forward, "__code__", None), "co_filename", "")
            if name.startswith("fx_generated"):  # a lazy module that never ran has no marked code
                out[name] = (frame, kind, [n.name for n in gm.graph.nodes])
        return out


@contextlib.contextmanager
def marking() -> Iterator[Marks]:
    """FX's profiler markers on for the GraphModules generated meanwhile (one profiled capture), then off."""
    global _ACTIVE
    import torch.fx.experimental._config as fx_config

    marks = Marks()
    _ACTIVE = marks
    try:
        with fx_config.patch(enrich_profiler_metadata=True):
            yield marks
    finally:
        _ACTIVE = None


def note_graph(gm: Any, frame: Any, kind: str) -> None:
    """Called by the AOT recorder's compilers with the module that will run: kept when profiling."""
    if _ACTIVE is not None:
        _ACTIVE.modules.append((gm, frame, kind))


def node_times(events: Any, files: dict[str, tuple[Any, str, list[str]]]
               ) -> tuple[dict[tuple[int, str, str], dict[str, float]], dict[str, float], float]:
    """(per (id(frame), graph kind, node): {op name: self µs}, unattributed {event name: self µs},
    total self µs) from ``torch.profiler``'s FunctionEvents (Note [Profiler time per FX node])."""
    nodes: dict[tuple[int, str, str], dict[str, float]] = {}
    other: dict[str, float] = {}
    total = 0.0
    for e in events:
        us = float(e.self_cpu_time_total)
        total += us
        where = _node_of(e, files)
        if where is None:
            other[e.name] = other.get(e.name, 0.0) + us
        else:
            ops = nodes.setdefault(where, {})
            name = "(python)" if _marker(e.name) else e.name  # a node marker's own time: Python around the op
            ops[name] = ops.get(name, 0.0) + us
    return nodes, other, total


def _marker(name: str) -> bool:
    return name.startswith("## ") and name.endswith(" ##")


def _node_of(e: Any, files: dict[str, tuple[Any, str, list[str]]]) -> Optional[tuple[int, str, str]]:
    index: Optional[int] = None
    q = e
    while q is not None:
        name = q.name
        if _marker(name):
            inner = name[3:-3]
            if inner.isdigit():
                if index is None:
                    index = int(inner)
            elif inner in files:
                if index is None:
                    return None  # the graph's own time, outside every node
                frame, kind, names = files[inner]
                return (id(frame), kind, names[index]) if index < len(names) else None
            else:
                return None  # a graph this capture did not record
        q = q.cpu_parent
    return None
