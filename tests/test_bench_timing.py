"""bench/timing.py's ``collections()``: what it counts (Note [Collections counted per side] in bench/zoo.py);
the zoo measures every side inside it."""

from __future__ import annotations

import gc

import pytest

from bench.timing import collections


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
