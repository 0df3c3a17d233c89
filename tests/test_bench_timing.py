"""bench/timing.py's collector helpers: what ``collections()`` counts and what ``frozen_heap()`` freezes
(Note [The zoo's heap frozen while timed]); the zoo measures every side inside both."""

from __future__ import annotations

import gc

import pytest

from bench.timing import collections, frozen_heap


def test_collections_counts_each_generation_and_leaves_no_callback():
    before = list(gc.callbacks)
    with collections() as col:
        gc.collect(0)
        gc.collect(2)
        gc.collect(2)
    assert col.counts == [1, 0, 2] and col.seconds > 0
    assert gc.callbacks == before
    gc.collect()
    assert col.counts == [1, 0, 2]  # not counted after the block


def test_collections_removes_its_callback_when_the_block_raises():
    before = list(gc.callbacks)
    with pytest.raises(RuntimeError), collections():
        raise RuntimeError("boom")
    assert gc.callbacks == before


def test_frozen_heap_freezes_what_was_alive_and_not_what_the_block_makes():
    class Cyclic:
        pass

    old = Cyclic()
    old.me = old
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen > 0 and gc.is_tracked(old)
        new = Cyclic()
        new.me = new
        gc.collect()
        assert gc.get_freeze_count() == frozen  # made in the block: collected as usual, never frozen
        young = gc.get_objects(generation=2)
        assert not any(o is old for o in young)  # the frozen heap is in no generation a collection walks
    assert gc.get_freeze_count() == 0
    assert any(o is old for o in gc.get_objects(generation=2))  # back in the oldest generation


def test_frozen_heap_unfreezes_when_the_block_raises():
    with pytest.raises(ValueError), frozen_heap():
        raise ValueError("boom")
    assert gc.get_freeze_count() == 0
