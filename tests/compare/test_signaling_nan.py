"""Signalling NaNs (what uninitialised memory often holds) pass through every step silently.

Converting a signalling NaN to float64 raises the CPU's "invalid" flag, which numpy turns into
``RuntimeWarning: invalid value encountered in cast``. A dump records whatever memory an op saw,
``torch.empty`` outputs included, so such values are input like any other: they are counted as
NaN and compared by the NaN rule, on every kernel path, with no warning (the suite turns
warnings into errors) and no failed dump.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorsight
from tensorsight.board.views.tensors import stats as tensor_view_stats
from tensorsight.capture import read_dump
from tensorsight.compare.metrics.kernel import compare_arrays, value_range
from tensorsight.dumpformat._np_stats import array_stats

torch = pytest.importorskip("torch")

# (dtype, bit patterns): two signalling NaNs, a quiet NaN, +Inf, -Inf, a subnormal
_SPECIALS = {
    "float32": (np.uint32, [0x7F800001, 0xFFA00000, 0x7FC00000, 0x7F800000, 0xFF800000, 1]),
    "float16": (np.uint16, [0x7C01, 0xFE01, 0x7E00, 0x7C00, 0xFC00, 1]),
    "float64": (
        np.uint64,
        [0x7FF0000000000001, 0xFFF4000000000000, 0x7FF8000000000000,
         0x7FF0000000000000, 0xFFF0000000000000, 1],
    ),
}  # fmt: skip


def _with_specials(dtype: str, n: int = 64) -> np.ndarray:
    uint, bits = _SPECIALS[dtype]
    a = np.linspace(-2.0, 2.0, n).astype(dtype)
    raw = a.view(uint)
    raw[[3, 10, 20, 30, 40, 50]] = np.array(bits, dtype=uint)
    return a


@pytest.mark.parametrize("dtype", sorted(_SPECIALS))
@pytest.mark.parametrize("native", [True, False], ids=["native", "numpy"])
def test_statistics_count_signalling_nans_as_nan(dtype, native):
    values = array_stats(_with_specials(dtype), native=native)
    assert values is not None
    _mn, _mx, _s, _sq, nan, pinf, ninf, n = values
    assert (nan, pinf, ninf, n) == (3, 1, 1, 64)


@pytest.mark.parametrize("dtype", sorted(_SPECIALS))
@pytest.mark.parametrize("native", [True, False], ids=["native", "numpy"])
def test_metrics_apply_the_nan_rule_to_signalling_nans(dtype, native):
    a = _with_specials(dtype)
    same = compare_arrays(a, a.copy(), native=native)
    assert same.values["max_abs_err"] == 0.0
    assert not same.nonfinite_mismatch
    moved = a.copy()
    moved.view(_SPECIALS[dtype][0])[[3, 4]] = moved.view(_SPECIALS[dtype][0])[[4, 3]]
    assert compare_arrays(a, moved, native=native).nonfinite_mismatch
    lo, hi = value_range(a, chunk=16)
    assert (lo, hi) == (-2.0, 2.0)


@pytest.mark.parametrize("dtype", sorted(_SPECIALS))
def test_board_tensor_statistics_count_signalling_nans(dtype):
    out = tensor_view_stats(_with_specials(dtype))
    assert (out["nan_count"], out["pos_inf_count"], out["neg_inf_count"]) == (3, 1, 1)


def _model(poison: bool):
    def run() -> None:
        torch.manual_seed(0)
        x = torch.randn(4, 16)
        bits = torch.arange(64, dtype=torch.int32)  # subnormal floats
        if poison:
            bits[:4] = 0x7F800001  # signalling NaNs, as uninitialised memory may hold
        lin = torch.nn.Linear(16, 16)
        (lin(x) + bits.view(torch.float32).view(4, 16)).sum()

    return run


@pytest.mark.parametrize("mode", ["statistics", "md5", "tensor"])
def test_dump_and_compare_of_signalling_nans_give_no_warning(tmp_path, mode):
    dumps = {}
    for name, poison in (("bench", False), ("target", True), ("again", True)):
        path = tmp_path / name
        with tensorsight.dump(path, mode=mode):
            _model(poison)()
        dumps[name] = path
        assert read_dump(path).manifest().complete
    step = read_dump(dumps["target"]).step()
    view = next(o for o in step.ops if o.op == "aten.view.dtype")
    assert view.outputs[0].stats is not None
    assert view.outputs[0].stats.nan_count == 4  # the four signalling NaNs
    if mode == "tensor":
        assert np.isnan(step.load(view.outputs[0], dtype=np.float64)).sum() == 4
    same = tensorsight.compare(dumps["target"], dumps["again"])
    assert same.first_divergence is None
    planted = tensorsight.compare(dumps["bench"], dumps["target"])
    assert planted.first_divergence is not None
    # the poisoned bits are first read as floats by the reinterpreting view
    assert planted.first_divergence.op == "aten.view.dtype"
