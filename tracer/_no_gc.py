"""Python's cyclic garbage collector paused while a loader builds a large acyclic structure.

Invariant: :func:`no_cyclic_gc` leaves ``gc.isenabled()`` as it found it, also when the body
raises, also when scopes nest or overlap across threads; it changes no setting (no threshold, no
object left frozen), and reference counting frees memory as always while it is paused.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["no_cyclic_gc"]

# Note [No cyclic GC while a log is read]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A graph read from a log becomes ~8 GC-tracked containers per node (the Node, its lists, its meta
# dict and the lists in it); a fully read 100 MB log is millions of them. CPython's collector runs a
# young collection every 700 allocations and a full one whenever the long-lived heap grew by a
# quarter (Modules/gcmodule.c ``gc_collect_generations``), so reading a growing capture walks the
# whole of it again and again: half of a fully read load was the collector, finding nothing (the
# model is acyclic; reference counting frees it). So the loader's bulk steps (``load_trace``, the
# first read of a lazy field: a graph's parse, a guard tree) run with the collector off and turn it
# back on after, whatever happens. Scopes count: the first one in records whether the collector was
# on, the last one out turns it back on if so. A collection that would have run meanwhile runs at the
# next allocation after, so garbage cycles made by user code in another thread meanwhile are
# collected later, never lost.
#
# What a scope built would still be walked by the young collections after it, and the full ones,
# as the long-lived heap grows. So the last scope out moves every tracked object to the oldest
# generation at once (``gc.freeze()`` then ``gc.unfreeze()``: "put them back into the oldest
# generation", Python's ``gc`` docs; both are list splices, O(1)), as a young collection that
# found nothing would: objects promoted this way do not count towards the next full collection
# (Modules/gcmodule.c counts ``long_lived_pending`` from young collections only), so the loaded
# structure is walked once by the next full collection, not at every quarter of growth. A cycle
# that was garbage already is collected by that full collection (later than a young one would
# have). When something else froze objects (``gc.get_freeze_count()``), nothing is moved: an
# ``unfreeze`` would thaw them.
#
# Note [No cyclic GC while the explorer builds]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``viz.Explorer(cap)`` allocates a few surviving containers per node (layout boxes, the drawing, the
# search index, the module tree): enough to set off full collections that walk the whole capture.
# Measured on a 16k-node synthetic graph (bench/RESULTS.md), the collections made the 16k/4k build
# ratio swing from 4.3 to 13 with the heap's history, against 3.2 without them. The explorer's build
# runs in this same scope (torch-free, so viz may use it), for the same reasons and with the same
# guarantees as the loader.
_LOCK = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Run the body with ``gc`` disabled; restore it after (Note [No cyclic GC while a log is read])."""
    global _depth, _was_enabled
    with _LOCK:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                if gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
