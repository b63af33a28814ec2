"""tensorsight._gc: the freeze held by dumps and comparisons, and what it restores."""

from __future__ import annotations

import gc

from tensorsight import _gc


def test_the_first_holder_freezes_and_the_last_unfreezes():
    assert gc.get_freeze_count() == 0, "an earlier test left a freeze held"
    _gc.hold()
    assert gc.get_freeze_count() > 0
    with _gc.frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() > 0  # the first holder still holds
    _gc.release()
    assert gc.get_freeze_count() == 0


def test_the_young_threshold_is_set_for_the_block_and_restored():
    """``tensorsight compare`` goes on to serve the board (--open) with the process's own
    settings."""
    before = gc.get_threshold()
    with _gc.frozen(young_threshold=10_000):
        assert gc.get_threshold() == (10_000, *before[1:])
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_itself_is_left_alone():
    gc.freeze()
    try:
        with _gc.frozen():
            assert not _gc._STATE["froze"]  # not ours to freeze
        # not ours to unfreeze either (the count itself drops as frozen objects are freed)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_disabled_collector_is_not_touched():
    gc.disable()
    try:
        with _gc.frozen():
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
