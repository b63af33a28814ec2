from __future__ import annotations

import numpy as np
import pytest

from tensorsight.data import InMemoryProvider, Limits, TextRecord


def test_scalars_append_and_run_info():
    p = InMemoryProvider()
    p.add_scalars("b", "loss", steps=[0, 1], values=[1.0, float("nan")], wall_times=[100, 101])
    p.add_scalars("b", "loss", steps=[2], values=[0.25], wall_times=[105])
    p.add_text("a", "notes", TextRecord(0, 50.0, "hi"))
    runs = p.list_runs()
    assert [r.name for r in runs] == ["a", "b"]
    b = p.run_info("b")
    assert b.first_wall_time == 100.0
    assert b.last_wall_time == 105.0
    assert b.tag_count == 1
    s = p.read_scalars("b", "loss")
    assert s.steps.tolist() == [0, 1, 2]
    assert np.isnan(s.values[1])
    assert p.generation == 3
    assert p.is_active("b", now=110.0)
    assert not p.is_active("b", now=1000.0)


def test_unknown_names_raise_key_error():
    p = InMemoryProvider(Limits(max_tags_per_run=3))
    assert p.limits.max_tags_per_run == 3
    with pytest.raises(KeyError):
        p.read_scalars("nope", "loss")
    with pytest.raises(KeyError):
        p.run_info("nope")
    assert p.reload() is False
