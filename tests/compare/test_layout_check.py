"""The moment pre-check never rejects a pair the sorted comparison would accept."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tensorsight.compare.layout import may_be_permuted, sorted_equal
from tensorsight.compare.metrics import compare_arrays


def _check(bench, target):
    values = compare_arrays(bench, target).values
    rel = values["rel_euclidean"]
    return may_be_permuted(values, rel), sorted_equal(bench, target, rel)


@pytest.mark.parametrize("seed", range(20))
def test_permutations_and_near_permutations_pass_the_pre_check(seed):
    rng = np.random.default_rng(seed)
    bench = (rng.standard_normal(4096) * rng.uniform(0.1, 10) + rng.uniform(-5, 5)).astype(
        np.float32
    )
    target = rng.permutation(bench)
    if seed % 2:  # values a little off as well: still sorted-equal for most seeds
        target = target * np.float32(1 + rng.uniform(-1e-3, 1e-3))
    pre, exact = _check(bench, target)
    assert pre or not exact
    if seed % 2 == 0:
        assert pre
        assert exact


def test_scale_shift_and_noise_errors_skip_the_sort():
    rng = np.random.default_rng(1)
    bench = rng.standard_normal(4096).astype(np.float32)
    for target in (bench * 1.2, bench + 0.3, bench + rng.standard_normal(4096) * 0.5):
        pre, exact = _check(bench, target.astype(np.float32))
        assert not pre
        assert not exact


def test_the_pre_check_is_necessary_on_random_pairs():
    """Over many random pairs near the boundary the pre-check only drops non-permutations."""
    rng = np.random.default_rng(2)
    seen = set()
    for _ in range(200):
        bench = rng.standard_normal(256)
        target = rng.permutation(bench) * (1 + rng.uniform(-0.02, 0.02)) + rng.normal(0, 0.005)
        pre, exact = _check(bench, target)
        assert pre or not exact
        seen.add((pre, exact))
    assert seen == {(True, True), (True, False), (False, False)}  # the boundary is exercised


def test_float32_tensors_beyond_the_float32_square_range_still_compare():
    """Values whose squares overflow float32 (> 1.8e19): the sums of squares are float64."""
    rng = np.random.default_rng(4)
    bench = (rng.standard_normal(4096) * 1e25).astype(np.float32)
    assert sorted_equal(bench, rng.permutation(bench), 0.5)
    assert not sorted_equal(bench, bench * np.float32(1.5), 0.5)


class _RollThenDeep(torch.nn.Module):
    """A permutation early, then many layers whose tensors all inherit the difference."""

    shift = 1

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(32, 32)
        self.rest = torch.nn.ModuleList(torch.nn.Linear(32, 32) for _ in range(12))

    def forward(self, x):
        h = torch.roll(self.first(x), shifts=_RollThenDeep.shift, dims=1)
        for layer in self.rest:
            h = torch.tanh(layer(h))
        return h.sum()


def test_only_ops_that_add_error_are_sorted(tmp_path, monkeypatch):
    """Inherited rows with look-alike moments are candidates but are not sorted; the op
    that introduces the permutation still gets ``layout-transpose``."""
    from tensorsight import dump
    from tensorsight.compare import compare, layout

    torch.manual_seed(0)
    model, x = _RollThenDeep(), torch.randn(16, 32)
    paths = []
    for shift, name in ((1, "a"), (2, "b")):
        _RollThenDeep.shift = shift
        with dump(tmp_path / name, mode="tensor", steps=[0]) as d:
            model(x).backward()
            d.step()
        model.zero_grad()
        paths.append(tmp_path / name)
    _RollThenDeep.shift = 1
    counts = {"candidates": 0, "sorted": 0}
    pre, sort = layout.may_be_permuted, layout.sorted_equal

    def counted_pre(values, rel):
        ok = pre(values, rel)
        counts["candidates"] += ok
        return ok

    def counted_sort(bench, target, rel):
        counts["sorted"] += 1
        return sort(bench, target, rel)

    monkeypatch.setattr(layout, "may_be_permuted", counted_pre)
    monkeypatch.setattr(layout, "sorted_equal", counted_sort)
    result = compare(*paths)
    first = result.first_divergence
    assert first is not None
    assert first.op == "aten.roll.default"
    assert first.mechanism == "layout-transpose"
    errors = sum(r.verdict == "error" for r in result.rows)
    assert counts["sorted"] <= errors < counts["candidates"]
    assert not any((r.mechanism or "").startswith("layout?") for r in result.rows)
    assert not any(r.mechanism == "layout-transpose" for r in result.rows if r.verdict != "error")


def test_the_sort_budget_counts_sorts_not_candidates(monkeypatch):
    """Candidates on passing rows are dropped without a sort and use none of the budget:
    with room for one sort, the error row after them still gets it."""
    from tensorsight.compare import engine, layout
    from tensorsight.compare.result import OpComparison

    rng = np.random.default_rng(0)
    bench = rng.standard_normal(64).astype(np.float32)
    arrays = {"b": bench, "t": rng.permutation(bench)}

    class _Side:
        def load(self, rec):
            return arrays[rec]

    monkeypatch.setattr(layout, "CHECKS_MAX", 1)
    measure = engine._Measure(_Side(), _Side(), (), {})
    rows = []
    for i, verdict in enumerate(["pass", "warning", "error"]):
        token = f"{layout.CANDIDATE}{i}"
        measure.layout[token] = ("b", "t", 0.5)
        rows.append(
            OpComparison(
                index=i,
                op="aten.roll.default",
                module_path="",
                direction="forward",
                tensor="output.0",
                verdict=verdict,
                mechanism=token,
            )
        )
    measure.resolve_layout(rows)
    assert [r.mechanism for r in rows] == [None, None, "layout-transpose"]
    assert measure.layout == {}
