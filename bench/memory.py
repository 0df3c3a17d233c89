"""Memory: what a Capture keeps alive after its model is gone, and how big a saved notebook output is.

Invariant: "held by the Capture" is measured as what dropping the Capture gives back (tracemalloc for
Python objects, RSS for tensor storage), with the model, its input and Dynamo's caches already gone,
so nothing else can be counted; the notebook is built with ``nbformat`` exactly as Jupyter saves it.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import tracemalloc
from typing import Any

import torch

import tracer
import viz
from bench import models
from bench.timing import fresh
from tracer.model import Capture

__all__ = ["notebook_bytes", "real_tensors", "retained", "rss_bytes", "run"]


def rss_bytes() -> int:
    """Resident set size of this process (Linux ``/proc/self/statm``), after handing freed heap back.

    glibc keeps freed memory in its arenas and returns it to the OS at moments of its choosing, so
    an RSS delta around one ``del`` could count garbage freed long before (seen: 35 MB "held" by a
    Capture whose Python objects were 1.4 MB). ``malloc_trim(0)`` first makes both readings comparable.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the readings are just noisier
        pass
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def real_tensors(obj: Any, _seen: set[int] | None = None, path: str = "cap") -> list[str]:
    """Paths of real ``torch.Tensor`` objects reachable through a Capture's fields (excluding ``result``)."""
    seen = _seen if _seen is not None else set()
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return [path]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [p for f in dataclasses.fields(obj) if f.name != "result"
                for p in real_tensors(getattr(obj, f.name), seen, f"{path}.{f.name}")]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in real_tensors(v, seen, f"{path}[{k!r}]")]
    if isinstance(obj, (list, tuple, set)):
        return [p for i, v in enumerate(obj) for p in real_tensors(v, seen, f"{path}[{i}]")]
    return []


def retained(param_bytes: int = 256 * 2**20, *, keep_result: bool = True, width: int = 2048) -> dict[str, Any]:
    """Capture an MLP with ``param_bytes`` of parameters, delete the model and input, and measure what
    the Capture still holds (tracemalloc and RSS given back by deleting it), over the parameter bytes.

    ``keep_result=False`` clears ``cap.result`` (the function's own output, whose autograd graph can
    keep the parameters alive) before measuring."""
    fresh()
    model, args = models.big_mlp(param_bytes, width)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    tracemalloc.start()
    try:
        cap = tracer.capture(model, *args)
        del model, args
        if not keep_result:
            cap.result = None
        fresh()
        traced_with, rss_with = tracemalloc.get_traced_memory()[0], rss_bytes()
        tensors = real_tensors(cap)
        del cap
        gc.collect()
        traced_without, rss_without = tracemalloc.get_traced_memory()[0], rss_bytes()
    finally:
        tracemalloc.stop()
    held = max(traced_with - traced_without, rss_with - rss_without, 0)
    return {
        "param_bytes": params,
        "tracemalloc_bytes": traced_with - traced_without,
        "rss_bytes": rss_with - rss_without,
        "retained_bytes": held,
        "retained_over_params": round(held / params, 5),
        "real_tensors_in_capture": tensors[:10],
    }


def notebook_bytes(cap: Capture) -> dict[str, Any]:
    """Size of a saved ``.ipynb`` whose one cell shows ``cap`` (its mimebundle as an execute_result),
    and the size the explorer's widget state adds when the notebook also saves widget state."""
    import nbformat

    bundle = cap._repr_mimebundle_()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("cap", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("execute_result", data=bundle, execution_count=1)]
    nb.cells = [cell]
    text = nbformat.writes(nb)
    state = _widget_state(viz.Explorer(cap).widget)
    return {
        "notebook_output_bytes": len(text.encode()),
        "html_bytes": len(bundle.get("text/html", "").encode()),
        "widget_state_bytes": len(json.dumps(state).encode()),
    }


def _widget_state(root: Any) -> dict[str, Any]:
    """The widget state a notebook stores for ``root`` and every widget it holds (``dependency_state``)."""
    from ipywidgets.embed import dependency_state

    return dependency_state([root], drop_defaults=True)


def run(param_bytes: int = 256 * 2**20, transformer: Capture | None = None) -> dict[str, Any]:
    """``retained_over_params`` (Capture as returned, and with ``result`` cleared) and the notebook size."""
    out: dict[str, Any] = {}
    with_result = retained(param_bytes, keep_result=True)
    without = retained(param_bytes, keep_result=False)
    out["retained_over_params"] = with_result["retained_over_params"]
    out["retained_over_params_without_result"] = without["retained_over_params"]
    out["memory"] = {"with_result": with_result, "without_result": without}
    if transformer is not None:
        out.update(notebook_bytes(transformer))
    return out
