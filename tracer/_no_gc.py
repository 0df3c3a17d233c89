"""Python's cyclic garbage collector paused while a loader or a capture builds a large acyclic structure.

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
# ``unfreeze`` would thaw them. Counting them walks every frozen object (Modules/gcmodule.c
# ``gc_list_size``): 57 ms for the 475k objects of a process that froze torch and transformers, six
# times per capture of GPT-2, 17 % of its compile. So once objects were found frozen, the next
# ``_RECHECK_EVERY - 1`` outermost scopes take them to be frozen still (nothing moved, nothing
# counted) and the one after counts again: a heap frozen for good (a pre-fork server's) costs one
# count per ``_RECHECK_EVERY`` scopes, and a heap thawed meanwhile is promoted into again soon after.
#
# Note [No cyclic GC while the explorer builds]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``viz.Explorer(cap)`` allocates a few surviving containers per node (layout boxes, the drawing, the
# search index, the module tree): enough to set off full collections that walk the whole capture.
# Measured on a 16k-node synthetic graph (bench/RESULTS.md), the collections made the 16k/4k build
# ratio swing from 4.3 to 13 with the heap's history, against 3.2 without them. The explorer's build
# runs in this same scope (torch-free, so viz may use it), for the same reasons and with the same
# guarantees as the loader.
#
# Note [What a capture records is not the heap's growth]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A capture converts each graph torch hands it (the Dynamo graph, the joint, forward and backward
# graphs), its guards and, at the end, the whole record: ~12 tracked containers per fx node that stay
# alive (31k for the zoo bench's BERT). Promoted by young collections, they count towards the next
# full collection like any other growth, and torch's own compile of a small transformer promotes
# almost a quarter of the heap already: the record tipped it over, and a capture of BERT or GPT-2
# ran one full collection (0.25-0.3 s CPU of a ~2 s compile: it walks all of torch's and the
# model's ~0.5M objects) where the plain ``torch.compile`` ran none. Measured with ``gc.callbacks``
# (bench/RESULTS.md). So these recording steps run in :func:`no_cyclic_gc` with
# ``young_first=True``: what torch allocated before the step is first collected by a young
# collection, exactly as one would have (its survivors count towards the next full collection, as
# in a plain compile, at worst a little early); then the step runs with the collector off and what
# it built joins the oldest generation uncounted, as the loader's structures do. The record is
# still walked by every full collection that runs later; it just does not make one run. Torch's
# compile is unchanged: only the collector's timing around our own steps is.
_LOCK = threading.Lock()
_depth = 0
_was_enabled = False
_RECHECK_EVERY = 64
_frozen_skip = 0  # outermost scopes left that take others' objects to be frozen without counting them


@contextmanager
def no_cyclic_gc(*, young_first: bool = False) -> Iterator[None]:
    """Run the body with ``gc`` disabled; restore it after (Note [No cyclic GC while a log is read]).

    ``young_first``: when this is the outermost scope and the collector is on, first run a young
    collection (generations 0 and 1), so that only what the body builds joins the oldest generation
    uncounted (Note [What a capture records is not the heap's growth])."""
    global _depth, _was_enabled, _frozen_skip
    with _LOCK:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            if young_first and _was_enabled:
                gc.collect(1)
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                if _frozen_skip:  # See Note [No cyclic GC while a log is read]: others' objects frozen a moment ago
                    _frozen_skip -= 1
                elif gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                else:
                    _frozen_skip = _RECHECK_EVERY - 1
                gc.enable()
