"""``no_cyclic_gc`` (Note [No cyclic GC while a log is read] in tracer/_no_gc.py) leaves the collector
as it found it: enabled or not, also on error, nested, across threads, with others' frozen objects
still frozen; and the loader's bulk steps (``load_trace``, a lazy graph's first read) run inside it. With
``young_first`` (a capture's recording steps) one young collection runs first and what the body built
lands in the oldest generation (Note [What a capture records is not the heap's growth])."""

from __future__ import annotations

import gc
import glob
import threading
import weakref

import pytest

from tracer import _no_gc
from tracer._no_gc import no_cyclic_gc
from tracer.trace_log import load_trace


@pytest.fixture(autouse=True)
def _gc_restored(monkeypatch):
    was = gc.isenabled()
    monkeypatch.setattr(_no_gc, "_frozen_skip", 0)  # each test starts with no frozen heap remembered
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def test_paused_inside_restored_after_also_on_error():
    gc.enable()
    with no_cyclic_gc():
        assert not gc.isenabled()
        with no_cyclic_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer scope still runs
    assert gc.isenabled()
    with pytest.raises(RuntimeError), no_cyclic_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    with no_cyclic_gc():
        pass
    assert not gc.isenabled()


def test_objects_someone_froze_stay_frozen_and_cycles_are_still_collected():
    gc.enable()
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    with no_cyclic_gc():
        pass
    # not thawed (an unfreeze would leave 0); frozen objects may still be freed meanwhile, so not == frozen
    assert gc.get_freeze_count() > frozen // 2
    gc.unfreeze()

    class Cycle:
        pass

    with no_cyclic_gc():
        a = Cycle()
        a.self = a
        ref = weakref.ref(a)
        del a
    assert gc.get_freeze_count() == 0  # promoted to the oldest generation, not left frozen
    gc.collect()
    assert ref() is None


def test_overlapping_scopes_in_threads_restore_once_all_are_out():
    gc.enable()
    inside, release = threading.Barrier(3), threading.Event()

    def scope():
        with no_cyclic_gc():
            inside.wait()
            release.wait()

    ts = [threading.Thread(target=scope) for _ in range(2)]
    for t in ts:
        t.start()
    inside.wait()
    assert not gc.isenabled()
    release.set()
    for t in ts:
        t.join()
    assert gc.isenabled()


def test_loading_and_first_reads_leave_the_collector_as_it_was(child_trace_dir):
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    for on in (True, False):
        (gc.enable if on else gc.disable)()
        cap = load_trace(path)
        assert gc.isenabled() is on
        assert [len(f.graph.nodes) for f in cap.frames] and any(f.guards for f in cap.frames)
        assert gc.isenabled() is on and gc.get_freeze_count() == 0


def _collections(body):
    """The generations of the collections that ran during ``body()``."""
    seen = []

    def cb(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(cb)
    try:
        body()
    finally:
        gc.callbacks.remove(cb)
    return seen


def test_young_first_collects_the_young_generations_once_then_builds_into_the_oldest():
    gc.enable()
    built = []

    def body():
        with no_cyclic_gc(young_first=True):
            assert not gc.isenabled()
            with no_cyclic_gc(young_first=True):  # nested: no second collection
                built.append([[i] for i in range(5000)])  # more than a young generation's threshold

    assert _collections(body) == [1]  # one young collection at entry, none while the body built
    assert gc.isenabled() and gc.get_freeze_count() == 0
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert id(built[0]) in oldest and id(built[0][-1]) in oldest  # Note [What a capture records is not the heap's growth]


def test_young_first_runs_no_collection_when_the_collector_is_off():
    gc.disable()

    def body():
        with no_cyclic_gc(young_first=True):
            pass

    assert _collections(body) == []
    assert not gc.isenabled()


def test_a_capture_leaves_the_collector_as_it_was():
    import torch

    import tracer

    for on in (True, False):
        (gc.enable if on else gc.disable)()
        cap = tracer.capture(lambda x: torch.sin(x).sum(), torch.randn(3, requires_grad=True))
        assert cap.frames[0].aot is not None and cap.frames[0].guards
        assert gc.isenabled() is on and gc.get_freeze_count() == 0


def test_a_frozen_heap_is_counted_once_per_recheck_period_not_at_every_scope(monkeypatch):
    """Counting frozen objects walks them all (57 ms for a frozen torch process): once found, the next
    scopes take them to be frozen without counting, until the period is over (Note [No cyclic GC while a log is read])."""
    gc.enable()
    real, counted = gc.get_freeze_count, []
    monkeypatch.setattr(gc, "get_freeze_count", lambda: counted.append(1) or real())
    gc.freeze()
    for _ in range(_no_gc._RECHECK_EVERY):
        with no_cyclic_gc():
            pass
        assert gc.isenabled() and real() > 0  # nothing thawed
    assert len(counted) == 1
    with no_cyclic_gc():
        pass
    assert len(counted) == 2  # the period is over: counted again
    gc.unfreeze()
    for _ in range(_no_gc._RECHECK_EVERY):  # thawed meanwhile: promoted into again after at most one period
        with no_cyclic_gc():
            pass
    assert len(counted) == 3 and _no_gc._frozen_skip == 0
