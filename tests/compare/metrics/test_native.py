"""The compiled C kernel agrees with the numpy kernel (the reference) to rounding.

Every loop of ``_kernel.c`` (AVX-512, AVX2 + FMA, portable) is checked where the CPU runs it;
a loop the CPU cannot run is skipped with the feature it lacks.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tensorsight import _cbuild
from tensorsight.compare.metrics import KERNEL_KEYS, _native, compare_arrays
from tensorsight.compare.metrics.kernel import NATIVE_CHUNK_ELEMS

pytestmark = pytest.mark.skipif(
    _native.load() is None, reason="C kernel off (no compiler, or TENSORSIGHT_KERNEL=numpy)"
)


def _skip_unless_cpu_runs(isa: str) -> None:
    features = _native.features()
    assert features is not None
    missing = _cbuild.missing_features(isa, features)
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)} (the {isa} loop)")


@pytest.fixture(params=_cbuild.KERNEL_PATHS, autouse=True)
def kernel(request, monkeypatch):
    """Run every test with each loop of the C kernel the CPU runs."""
    _skip_unless_cpu_runs(request.param)
    lib = _native.build(request.param)
    assert lib is not None
    assert lib.isa == request.param
    monkeypatch.setitem(_native._STATE, "kernel", lib)
    return lib


def _agree(bench, target, **kw):
    c = compare_arrays(bench, target, **kw)
    n = compare_arrays(bench, target, native=False, **kw)
    for key in KERNEL_KEYS:
        a, b = c.values[key], n.values[key]
        if math.isnan(b):
            assert math.isnan(a), key
        else:
            assert a == pytest.approx(b, rel=1e-9, abs=1e-13), key
    assert (c.nonfinite_bench, c.nonfinite_target) == (n.nonfinite_bench, n.nonfinite_target)
    assert c.nonfinite_mismatch == n.nonfinite_mismatch
    return c


def test_each_loop_reports_itself_and_every_cpu_runs_the_portable_one(kernel):
    assert kernel.isa in _cbuild.KERNEL_PATHS
    assert _native.build("portable").isa == "portable"
    assert kernel.features == _native.features()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_matches_numpy_over_several_chunks(dtype):
    rng = np.random.default_rng(5)
    n = 2 * NATIVE_CHUNK_ELEMS + 123
    bench = (rng.standard_normal(n) * 3 + 10).astype(dtype)
    target = (bench * (1 + rng.standard_normal(n) * 1e-3)).astype(dtype)
    target[::1000] = 0
    bench[5::1000] = 0
    _agree(bench, target)


def test_native_handles_mixed_dtypes_and_a_chunk_with_nan():
    rng = np.random.default_rng(6)
    n = NATIVE_CHUNK_ELEMS + 50
    bench = rng.standard_normal(n).astype(np.float32)
    target = bench.astype(ml_dtypes.bfloat16)
    _agree(bench, target)
    bench[-3] = np.nan
    target[-3] = np.nan
    _agree(bench, target)
    target[-4] = np.inf
    _agree(bench, target)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "spread",
    [0.0, 1e-7, 1e-4, 1e-2, 0.3, 3.0],
    ids=["equal", "1e-7", "1e-4", "1e-2", "0.3", "3"],
)
def test_every_form_of_the_kl_logarithm(dtype, spread):
    """Errors from none to wild: each series length and the general form of log(u/v)."""
    rng = np.random.default_rng(7)
    n = 50_000 + 5  # a tail that is not a multiple of 8
    bench = rng.standard_normal(n).astype(dtype)
    target = (bench * (1 + spread * rng.standard_normal(n))).astype(dtype)
    _agree(bench, target)


def test_lanes_of_different_forms_in_one_vector_and_relu_zeros():
    rng = np.random.default_rng(8)
    n = 8 * 4096
    bench = np.maximum(rng.standard_normal(n), 0).astype(np.float32)
    target = np.maximum(bench + rng.standard_normal(n).astype(np.float32) * 1e-2, 0)
    target[::8] = bench[::8] * 3  # one far lane in every vector
    target[1::16] = bench[1::16]  # exact lanes
    _agree(bench, target)


def test_zeros_subnormals_and_tiny_values_in_the_ratios():
    bench = np.array([0.0, 0.0, 1e-310, 1e-310, 1e-300, 3.0, -2.0, 5e-324] * 3 + [0.0])
    target = np.array([0.0, 1e-320, 1e-310, 2e-310, 1e-300, 3.0 + 1e-12, -2.0, 0.0] * 3 + [0.0])
    m = _agree(bench, target)
    assert m.values["within_1e-3"] == pytest.approx(_agree(bench, target).values["within_1e-3"])


def _log_ratio(kernel, u, v):
    u, v = np.ascontiguousarray(u, dtype=np.float64), np.ascontiguousarray(v, dtype=np.float64)
    out = np.empty_like(u)
    kernel.log_ratio(u.ctypes.data, v.ctypes.data, u.size, out.ctypes.data)
    return out


def _reference_log_ratio(u, v):
    """log(u/v) to about one rounding: log1p of the exact-numerator ratio near 1."""
    near = np.abs(u / v - 1) < 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(near, np.log1p((u - v) / v), np.log(u) - np.log(v))


@pytest.mark.parametrize(
    "spread",
    [0.0, 1e-9, 1e-5, 3e-3, 9e-3, 0.05, 0.17, 0.25, 0.9, 30.0],
)
def test_kl_logarithm_is_accurate_to_a_few_roundings(kernel, spread):
    """Each form of log(u/v) (short and full series, general form) within 4e-15 relatively."""
    rng = np.random.default_rng(9)
    v = rng.uniform(2.0**-23, 1.0, 4096 + 3)
    u = np.clip(v * np.exp(spread * rng.standard_normal(v.size)), 2.0**-23, 1.0)
    got = _log_ratio(kernel, u, v)
    want = _reference_log_ratio(u, v)
    np.testing.assert_allclose(got, want, rtol=4e-15, atol=1e-300)
    same = _log_ratio(kernel, v, v)
    assert (same == 0).all()


def test_kl_logarithm_flags_quotients_outside_the_normal_range(kernel):
    """u/v overflowing or subnormal gives NaN (the chunk then goes to numpy), never garbage."""
    u = np.array([1.7e308, 1.0, 1e-300, 1.0, 0.5, 0.25, 3.0, 1.7e308] * 2 + [1.7e308] * 2)
    v = np.array([1e-30, 1.7e308, 1e300, 1.0, 0.5, 0.5, 1.0, 1.0] * 2 + [1.0, 1.7e308])
    got = _log_ratio(kernel, u, v)
    # the last lane of each row: u/v is normal but 2**k v overflows (k = 1024)
    bad = np.array([True, True, True, False, False, False, False, True] * 2 + [True, False])
    assert np.isnan(got[bad]).all()
    np.testing.assert_allclose(got[~bad], _reference_log_ratio(u[~bad], v[~bad]), rtol=4e-15)


@pytest.mark.parametrize("value", [1e300, 1.7e308, 1e-300])
def test_constant_tensors_with_extreme_values(value):
    """A zero range leaves values unnormalised: u/v may overflow; the chunk then uses numpy."""
    bench = np.full(1000, value)
    target = np.full(1000, np.float64(np.finfo(np.float32).eps) / 4)
    target[::3] = value
    _agree(bench, target)
    rng = np.random.default_rng(10)
    _agree(bench, rng.standard_normal(1000))  # u/v below the normal range for every lane


@pytest.fixture
def fresh_load(monkeypatch):
    """``_native.load`` as in a new process (the chosen kernel is cached per process)."""
    monkeypatch.setattr(_native, "_STATE", {})
    monkeypatch.setattr(_cbuild, "_SAID", set())
    return _native.load


def test_numpy_can_be_forced(monkeypatch, fresh_load):
    monkeypatch.setenv("TENSORSIGHT_KERNEL", "numpy")
    assert fresh_load() is None


def test_dispatch_runs_the_fastest_loop_the_cpu_has(monkeypatch, fresh_load, capsys):
    monkeypatch.delenv("TENSORSIGHT_KERNEL", raising=False)
    features = _native.features()
    best = next(p for p in _cbuild.KERNEL_PATHS if not _cbuild.missing_features(p, features))
    assert fresh_load().isa == best
    assert capsys.readouterr().err == ""


def test_each_loop_the_cpu_has_can_be_forced(monkeypatch, kernel, fresh_load, capsys):
    monkeypatch.setenv("TENSORSIGHT_KERNEL", kernel.isa.upper())
    assert fresh_load().isa == kernel.isa
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("features", "asked", "runs", "lacks"),
    [
        ({"avx2", "fma"}, "avx512", "avx2", "avx512f, avx512dq"),
        ({"avx2", "fma", "avx512f"}, "avx512", "avx2", "avx512dq"),
        ({"avx2"}, "avx2", "portable", "fma"),
        (set(), "avx512", "portable", "avx512f, avx512dq, avx2, fma"),
    ],
)
def test_forcing_a_loop_the_cpu_lacks_runs_the_best_it_has_and_says_so_once(
    monkeypatch, fresh_load, caplog, features, asked, runs, lacks
):
    """The CPU's answer is narrowed (as on an AVX2-only or a non-x86 machine); the library
    and its loops are the real ones."""
    monkeypatch.setattr(_native, "cpu_features", lambda _lib: frozenset(features))
    monkeypatch.setenv("TENSORSIGHT_KERNEL", asked)
    assert fresh_load().isa == runs
    said = [
        f"tensorsight: TENSORSIGHT_KERNEL={asked} needs {lacks}, which this CPU lacks; using {runs}"
    ]
    assert caplog.messages == said
    monkeypatch.setattr(_native, "_STATE", {})
    assert _native.load().isa == runs
    assert caplog.messages == said  # said once per process
    with pytest.raises(ValueError, match=f"this CPU lacks {lacks}"):
        _native.build(asked)


def test_an_unknown_choice_runs_the_default_and_says_so(monkeypatch, fresh_load, caplog):
    monkeypatch.delenv("TENSORSIGHT_KERNEL", raising=False)
    want = fresh_load().isa
    monkeypatch.setattr(_native, "_STATE", {})
    monkeypatch.setenv("TENSORSIGHT_KERNEL", "sse9")
    assert _native.load().isa == want
    assert caplog.messages == [
        "tensorsight: TENSORSIGHT_KERNEL=sse9 is not one of auto, avx512, avx2, portable, "
        f"numpy; using {want}"
    ]


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 3, 4, 5, 7, 8, 9, 15, 17, 8195])
def test_tails_wide_ranges_and_half_precision(dtype, n):
    """Lengths around every lane width (4, 8) and the 8192-element block, values over the
    dtype's whole exponent range with both signs, then NaN/Inf in the last (tail) lane."""
    rng = np.random.default_rng(n)
    info = ml_dtypes.finfo(dtype)
    lo, hi = np.log2(float(info.smallest_normal)), np.log2(float(info.max)) - 1
    mag = np.exp2(rng.uniform(lo, hi, n))
    bench = (mag * rng.choice([-1.0, 1.0], n)).astype(dtype)
    target = (bench.astype(np.float64) * (1 + 1e-2 * rng.standard_normal(n))).astype(dtype)
    target[::5] = bench[::5]
    _agree(bench, target)
    _agree(bench.astype(np.float64), target)  # mixed dtypes go through a float64 copy
    for value in (np.nan, np.inf, -np.inf):
        b, t = bench.copy(), target.copy()
        b[-1] = t[-1] = value
        _agree(b, t)
        t[-1] = 0
        _agree(b, t)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunks_split_over_threads_give_the_same_bits(monkeypatch, dtype):
    """One C call per thread over runs of chunks; the result does not depend on the split."""
    from concurrent.futures import ThreadPoolExecutor

    from tensorsight.compare.metrics import kernel

    rng = np.random.default_rng(11)
    n = 5 * NATIVE_CHUNK_ELEMS // 2 + 7
    bench = rng.standard_normal(n).astype(dtype)
    target = (bench + rng.standard_normal(n) * 1e-3).astype(dtype)
    target[NATIVE_CHUNK_ELEMS] = np.nan  # the second chunk's first element: its shift
    bench[NATIVE_CHUNK_ELEMS] = np.nan
    target[2 * NATIVE_CHUNK_ELEMS + 5] = np.inf  # inside the third chunk
    bench[2 * NATIVE_CHUNK_ELEMS + 5] = np.inf
    _agree(bench, target)
    results = []
    for workers in (1, 2, 3):
        with ThreadPoolExecutor(max_workers=workers) as pool:
            monkeypatch.setattr(kernel, "_POOL", pool)
            results.append(compare_arrays(bench, target).values)
    monkeypatch.setattr(kernel, "_POOL", None)
    assert not any(math.isnan(v) for v in results[0].values())
    assert results[0] == results[1] == results[2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_moments_of_offset_and_constant_tensors(dtype):
    """Mean 1e4 std 1e-2 (the variance shift matters) and constants (std exactly 0)."""
    rng = np.random.default_rng(12)
    n = NATIVE_CHUNK_ELEMS + 99
    bench = (1e4 + rng.standard_normal(n) * 1e-2).astype(dtype)
    target = (bench + rng.standard_normal(n) * 1e-4).astype(dtype)
    m = _agree(bench, target)
    ref = bench.astype(np.float64)
    assert m.values["std_bench"] == pytest.approx(float(ref.std()), rel=1e-9)
    assert m.values["mean_bench"] == pytest.approx(float(ref.mean()), rel=1e-14)
    const = np.full(n, 3.25, dtype=dtype)
    c = _agree(const, const)
    assert c.values["std_bench"] == 0.0
    assert c.values["std_target"] == 0.0
    assert c.values["max_abs_err"] == 0.0


def test_moments_keep_their_digits_on_heavy_tailed_data():
    """Gradients are heavy-tailed: the minimum sits many standard deviations from the mean,
    so shifting the sums by it would cost digits (2.8e-10 on the benchmark's gradients)."""
    rng = np.random.default_rng(13)
    n = 2 * NATIVE_CHUNK_ELEMS
    bench = (rng.standard_t(3, n) * 1e-3).astype(np.float32)
    bench[0] = np.float32(np.median(bench))  # each chunk's first element is typical here
    bench[NATIVE_CHUNK_ELEMS] = bench[0]
    exact = bench.astype(np.longdouble)
    assert (exact.mean() - exact.min()) / exact.std() > 20
    m = compare_arrays(bench, bench.copy()).values
    assert m["std_bench"] == pytest.approx(float(exact.std()), rel=1e-12, abs=0)
    assert m["mean_bench"] == pytest.approx(float(exact.mean()), rel=1e-12, abs=0)


def _kl_long_double(bench, target):
    eps32 = np.longdouble(np.finfo(np.float32).eps)

    def norm(a):
        a = a.astype(np.longdouble)
        r = a.max() - a.min()
        return np.maximum((a - a.min()) / r if r != 0 else a, eps32)

    u, v = norm(target), norm(bench)
    p, q = u / u.sum(), v / v.sum()
    return float((p * np.log1p((p - q) / q)).sum())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kl_of_runs_that_agree_to_the_last_bit(dtype):
    """KL ~1e-13 (a quarter of the elements a few ulp off, as in the benchmark's gradients):
    both kernels within 1e-3 of a long-double evaluation, not lost in ~1e-12 of noise."""
    rng = np.random.default_rng(14)
    n = 2 * NATIVE_CHUNK_ELEMS + 3
    bench = rng.standard_normal(n).astype(dtype)
    target = bench.copy()
    nudge = rng.random(n) < 0.25
    target[nudge] = bench[nudge] * (1 + 1e-6 * rng.standard_normal(int(nudge.sum())))
    truth = _kl_long_double(bench, target)
    assert 1e-16 < truth < 1e-9
    for native in (True, False):
        kl = compare_arrays(bench, target, native=native).values["kl_div"]
        assert kl == pytest.approx(truth, rel=1e-3, abs=0), native


def test_within_ratios_count_zero_over_zero_and_tiny_references_exactly():
    """msprobe's ratios, |d| < t |y|, on the edge lanes the AVX-512 loop reads off |d|/|y|:
    0/0 counts as no error, x/0 as an error, and a reference below eps uses the true ratio."""
    # 16 lanes (two full vectors) plus a tail for the scalar loop
    bench = np.array([0, 0, 1e-20, 1e-20, 1, 1, 2, 3] * 2 + [0, 1e-20, 1], dtype=np.float64)
    target = np.array(
        [0, 1e-30, 1e-20 + 1e-25, 2e-20, 1 + 1e-4, 1 + 4e-3, 2, 3.1] * 2 + [0, 1e-20, 1.5],
        dtype=np.float64,
    )
    m = _agree(bench, target)
    # per 8 lanes within 1e-3: 0/0, 1e-20 (+1e-25), 1 (+1e-4), 2 (equal) -> 4; 5e-3: + 1 (+4e-3)
    assert m.values["within_1e-3"] * target.size == 2 * 4 + 2
    assert m.values["within_5e-3"] * target.size == 2 * 5 + 2


def _threshold_pairs(t, n):
    """(|y|, |d|) with ``x = y + d`` exact and |d| exactly on t|y| (rounded), or one ulp of
    the product below or above it: |d| = 2**-20 j, |y| = |d| / t and its neighbours."""
    d = np.arange(1, 4 * n + 1, dtype=np.float64) * 2.0**-20
    ys, ds = [], []
    for y in (d / t, np.nextafter(d / t, 0), np.nextafter(d / t, np.inf)):
        c = y * t
        edge = (c == d) | (np.nextafter(c, 0) == d) | (np.nextafter(c, np.inf) == d)
        keep = edge & ((y + d) - y == d)
        ys.append(y[keep])
        ds.append(d[keep])
    pick = np.random.default_rng(18).permutation(sum(a.size for a in ys))[:n]
    return np.concatenate(ys)[pick], np.concatenate(ds)[pick]


@pytest.mark.parametrize("t", [1e-3, 5e-3])
def test_within_ratios_at_the_thresholds_follow_the_rounded_product(t):
    """|d| < t|y| with t|y| rounded once, on lanes where |d| equals it (outside) or is one
    ulp of it below (inside) or above (outside), both signs, every lane and the tail."""
    rng = np.random.default_rng(15)
    y, d = _threshold_pairs(t, 4096 + 5)
    sign = rng.choice([-1.0, 1.0], y.size)
    bench = y * sign
    target = (y + d) * sign
    ad = np.abs(target - bench)
    assert (ad == d).all()
    m = _agree(bench, target)
    key = "within_1e-3" if t == 1e-3 else "within_5e-3"
    want = np.count_nonzero(ad < np.abs(bench) * t)
    assert m.values[key] * bench.size == want
    assert 0.2 * bench.size < want < 0.5 * bench.size  # a third of them inside


def test_equal_values_count_as_within_even_where_t_times_y_underflows():
    """x = y is no error for every y: 5e-324 * 1e-3 rounds to 0, and 0 < 0 is false."""
    tiny = np.array([5e-324, 1e-322, 2e-321, 0.0, 5e-324, 1e-322, 3.0, 2.0] * 2 + [5e-324])
    target = tiny.copy()
    target[4] = 0.0  # a difference of 5e-324 where t|y| is 0: outside
    target[12] = 1e-322
    m = _agree(tiny, target)
    inside = (tiny.size - 2) / tiny.size
    assert m.values["within_1e-3"] == pytest.approx(inside, rel=1e-15)
    assert m.values["within_5e-3"] == pytest.approx(inside, rel=1e-15)


def _pass(kernel, bench, target, ulp_floor):
    """The 18 accumulators of one ``ts_pass_*`` call (KL normalised over [0, 1])."""
    acc = np.zeros(18)
    fn = kernel.f32 if bench.dtype == np.float32 else kernel.f64
    fn(
        target.ctypes.data,
        bench.ctypes.data,
        bench.size,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        1.0,
        ulp_floor,
        acc.ctypes.data,
    )
    return acc


def _ulp_quotient(bench, target, ulp_floor):
    """max |d| / max(2**floor(log2 |y|), floor), as the numpy kernel computes it."""
    d = np.abs(target.astype(np.float64) - bench.astype(np.float64))
    ay = np.abs(bench.astype(np.float64))
    binade = (ay.view(np.int64) & 0x7FF0000000000000).view(np.float64)
    return float((d / np.maximum(binade, ulp_floor)).max())


@pytest.mark.parametrize("lane", range(17))
def test_ulp_quotient_in_the_top_binade(kernel, lane):
    """|y| >= 2**1023, whose ulp's inverse 2**-1023 is subnormal (its bits once wrapped to
    0): one ulp there in each lane of two vectors and the tail. compare_arrays never gets
    here (a sum of squares overflows and the chunk goes to numpy), so the pass is called."""
    bench = np.array([1.7e308, 1.2e308, 9e307, 1.0, 2.0**1023, 3.0, 1e-310, 5.0] * 2 + [1.7e308])
    bench[lane] = 2.0**1023 * 1.5
    target = bench.copy()
    target[lane] = np.nextafter(bench[lane], 0)
    q = _pass(kernel, bench, target, 2.0**-1022)[12]
    assert q == _ulp_quotient(bench, target, 2.0**-1022) == 2.0**-52


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ulp_quotient_below_the_floor_and_beyond_float32(kernel, dtype):
    """|y| below the target dtype's smallest normal uses the floor's spacing; float64 values
    beyond float32's range against a float32 target."""
    rng = np.random.default_rng(16)
    n = 8 * 3 + 5
    if dtype == np.float32:
        bench = rng.choice(np.array([3e38, 1e-40, 1e-45, 1.0, 2.0**-126], dtype=np.float32), n)
    else:
        bench = rng.choice(np.array([1e300, 1e-300, 1e-310, 4.0, 2.0**-126]), n)
    target = np.nextafter(bench, np.array(np.inf, dtype=dtype))
    target[::3] = bench[::3]
    floor = 2.0**-126
    assert _pass(kernel, bench, target, floor)[12] == _ulp_quotient(bench, target, floor)
    if dtype == np.float64:
        small = (np.abs(bench) < 1e150) & (np.abs(target) < 1e150)
        _agree(bench[small], target[small], target_dtype="float32")


@pytest.mark.parametrize("where", [0, 5000, 8191, 8192, 20000])
def test_one_far_ratio_sends_its_block_to_the_general_logarithm(where):
    """The portable loop sums the atanh series and redoes a block of 8192 with the general
    form when any u/v leaves [0.707, 1.414]: one such element at a block's edges or inside."""
    rng = np.random.default_rng(19)
    n = 3 * 8192 + 11
    bench = rng.uniform(1.0, 2.0, n)
    target = bench * (1 + 1e-4 * rng.standard_normal(n))
    bench[0], bench[1] = 0.0, 3.0  # the normalisation's range, kept by every case
    target[0], target[1] = 0.0, 3.0
    target[where] = 2.9 if bench[where] < 1.5 else 0.1
    assert _agree(bench, target).values["kl_div"] > 1e-6


def _raw_squares(kernel, x, y, kx, ky):
    """The pass's sums of x*x and y*y (acc[16], acc[17]) over one chunk shifted by kx, ky."""
    fn = kernel.f32 if x.dtype == np.float32 else kernel.f64
    acc = np.zeros(18)
    lo, hi = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
    fn(
        x.ctypes.data,
        y.ctypes.data,
        x.size,
        kx,
        ky,
        lo,
        1 / (hi - lo),
        lo,
        1 / (hi - lo),
        2.0**-126,
        acc.ctypes.data,
    )
    return acc[16], acc[17]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("shift_in_rms", "path"),
    [(0.0, "derived"), (3.0, "derived"), (7.0, "direct"), (50.0, "direct"), (1e6, "direct")],
)
def test_sums_of_squares_whatever_the_chunk_shift(kernel, dtype, shift_in_rms, path):
    """The explicit loops derive sum x^2 from the shifted sums; far shifts (a chunk whose
    first element is an outlier) cancel digits there, so those blocks sum x^2 directly: the
    result stays within 1e-12 of the exact sum for every shift. The derivation is kept while
    |k| (2 |sum (x - k)| + n |k|) <= 64 sum x^2: here (mean 0.24 rms) up to a shift of about
    5 rms; the path counters show which one each block took."""
    rng = np.random.default_rng(15)
    n = 3 * 8192 + 13  # several blocks and a tail
    x = (rng.standard_normal(n) * 2 + 0.5).astype(dtype)
    y = (x * (1 + 1e-3 * rng.standard_normal(n))).astype(dtype)
    rms = float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))
    kx = ky = float(dtype(shift_in_rms * rms))
    _native.path_counts(reset=True)
    got = _raw_squares(kernel, x, y, kx, ky)
    counts = _native.path_counts(reset=True)
    for a, g in zip((x, y), got, strict=True):
        exact = float(np.sum(a.astype(np.longdouble) ** 2))
        assert g == pytest.approx(exact, rel=1e-12, abs=0)
    blocks = 2 * 4  # three whole blocks and one of 13 elements, two sides
    if kernel.isa == "portable":  # it sums x^2 directly, with no counter
        assert (counts["squares_derived"], counts["squares_direct"]) == (0, 0)
    elif path == "derived":
        assert (counts["squares_derived"], counts["squares_direct"]) == (blocks, 0)
    else:
        assert (counts["squares_derived"], counts["squares_direct"]) == (0, blocks)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_runs_equal_bit_for_bit_take_the_short_path_and_agree(kernel, dtype):
    """Equal stretches (as before a first divergence) skip the error pass on AVX2 (and KL's
    terms too when both sides have the same range); the metrics agree with numpy whether the
    pair is all equal, equal in part (different ranges), or equal except for a sign of
    zero."""
    rng = np.random.default_rng(17)
    n = 2 * NATIVE_CHUNK_ELEMS + 1001
    bench = (rng.standard_normal(n) * 3 + 1).astype(dtype)
    _native.path_counts(reset=True)
    _agree(bench, bench.copy())
    equal_runs = _native.path_counts(reset=True)["equal_runs"]
    target = bench.copy()
    target[n // 2 :] *= dtype(1 + 1e-3)  # the second half diverges
    target[::4096] = bench[::4096] * dtype(2)  # and one element in each 4096
    _agree(bench, target)
    part = _native.path_counts(reset=True)["equal_runs"]
    zeros = np.zeros(5000, dtype=dtype)
    signed = zeros.copy()
    signed[4000] = -0.0  # equal as numbers, not as bits
    _agree(zeros, signed)
    if kernel.isa == "avx2":
        assert equal_runs >= n // 1024 - 2
        assert 0 < part < equal_runs // 2
    else:
        assert equal_runs == part == 0


def test_a_wild_ratio_in_one_run_redoes_only_that_runs_kl(kernel):
    """The AVX2 loop sums KL's series in one form per run (chosen from the previous run)
    and sums a run again when one of its ratios needs a longer form."""
    rng = np.random.default_rng(18)
    n = 16 * 1024
    bench = (rng.standard_normal(n) + 4).astype(np.float32)
    target = (bench * (1 + 1e-5 * rng.standard_normal(n))).astype(np.float32)
    target[5000] = bench[5000] * 1.5  # a ratio far from 1 in the fifth run
    _native.path_counts(reset=True)
    _agree(bench, target)
    redone = _native.path_counts(reset=True)["kl_redone"]
    if kernel.isa == "avx2":
        assert redone == 1
    else:
        assert redone == 0


def test_cosine_and_scale_fit_when_a_chunk_starts_with_an_outlier():
    """Each chunk's first element is its shift: an outlier there sends the raw sums of
    squares to the direct loop; cosine and the scale fit still agree with numpy."""
    rng = np.random.default_rng(16)
    n = 2 * NATIVE_CHUNK_ELEMS + 7
    bench = rng.standard_normal(n).astype(np.float32)
    target = (bench * (1 + 1e-3 * rng.standard_normal(n))).astype(np.float32)
    bench[0] = target[0] = 3e4
    bench[NATIVE_CHUNK_ELEMS] = -2e5
    target[NATIVE_CHUNK_ELEMS] = -2.1e5
    c = _agree(bench, target)
    n_ref = compare_arrays(bench, target, native=False)
    assert c.scale_fit == pytest.approx(n_ref.scale_fit, rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 192, 4096, NATIVE_CHUNK_ELEMS])
def test_one_chunk_call_gives_the_bits_of_the_general_path(monkeypatch, dtype, n):
    """A pair of one chunk is one direct call (``kernel.ONE_CALL``): every value, the
    counts and the scale fit are the bits the general (thread-split) path gives, also for
    a chunk holding NaN/Inf at the same places on both sides (the numpy chunk)."""
    from tensorsight.compare.metrics import kernel

    rng = np.random.default_rng(n)
    y = rng.standard_normal(n).astype(dtype)
    x = (y * (1 + 1e-3 * rng.standard_normal(n))).astype(dtype)
    pairs = [(y, x, None, None)]
    if n > 1:
        yb, xb = y.copy(), x.copy()
        yb[::5], xb[::5] = np.nan, np.nan
        pairs.append((yb, xb, None, None))
    pairs.append((y, x, (-1.0, 1.0), (-1.5, 2.0)))  # known ranges, as a dump's statistics
    for yy, xx, rb, rt in pairs:
        got = {}
        for one_call in (True, False):
            monkeypatch.setattr(kernel, "ONE_CALL", one_call)
            m = compare_arrays(yy, xx, bench_range=rb, target_range=rt)
            got[one_call] = (
                [m.values[k] for k in KERNEL_KEYS],
                m.numel, m.nonfinite_bench, m.nonfinite_target, m.nonfinite_mismatch,
                m.scale_fit,
            )  # fmt: skip
        # as text: NaN metrics (a pair with NaN) compare equal, and -0.0 stays apart
        assert repr(got[True]) == repr(got[False])


def _sum_xy(kernel, x, y):
    """The pass's sum of x*y (acc[4]) over one chunk, shifted by its first elements."""
    fn = kernel.f32 if x.dtype == np.float32 else kernel.f64
    acc = np.zeros(18)
    lo, hi = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
    scale = 1 / (hi - lo)
    fn(x.ctypes.data, y.ctypes.data, x.size, float(x[0]), float(y[0]), lo, scale, lo, scale,
       2.0**-126, acc.ctypes.data)  # fmt: skip
    return float(acc[4])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sides", ["close", "opposite", "unrelated"])
def test_sum_xy_is_derived_while_the_sides_are_near_proportional(kernel, dtype, sides):
    """AVX2 derives sum x*y from the sums of squares and of (x - y)^2 per block while the
    result is at least 1/16 of sum x^2 + sum y^2, and sums it directly otherwise: either
    way it agrees with the exact sum, and so do cosine and the scale fit."""
    rng = np.random.default_rng(19)
    n = 3 * 8192 + 13  # three whole blocks and one of 13 elements
    x = (rng.standard_normal(n) + 0.5).astype(dtype)
    noise = rng.standard_normal(n)
    y = {
        "close": x * (1 + 1e-3 * noise),
        "opposite": -x * (1 + 1e-3 * noise),
        "unrelated": noise,
    }[sides].astype(dtype)
    _native.path_counts(reset=True)
    got = _sum_xy(kernel, x, y)
    counts = _native.path_counts(reset=True)
    exact = float(np.sum(x.astype(np.longdouble) * y.astype(np.longdouble)))
    assert got == pytest.approx(exact, rel=1e-11, abs=1e-9)
    c = _agree(y, x)
    assert c.values["cosine"] == pytest.approx(
        compare_arrays(y, x, native=False).values["cosine"], rel=1e-11, abs=1e-15
    )
    blocks = 4
    if kernel.isa != "avx2":  # they sum x*y directly, with no counter
        assert (counts["xy_derived"], counts["xy_direct"]) == (0, 0)
    elif sides == "unrelated":
        assert (counts["xy_derived"], counts["xy_direct"]) == (0, blocks)
    else:
        assert (counts["xy_derived"], counts["xy_direct"]) == (blocks, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_ulp_is_zero_when_the_only_differences_are_signs_of_zero(dtype):
    """The AVX2 error pass scales |x - y| by 2**(1 - E) with an integer add to its exponent
    bits, which turns d = 0 into a tiny non-zero value: the pass discards it, so lanes equal
    beside zeros of either sign still give a max ulp of exactly 0, and real errors beside
    them stay exact."""
    bench = np.tile(np.array([1.5, 2.0, -3.0, 4.0, 0.0, 0.0, 0.0, 0.0], dtype=dtype), 3000)
    target = bench.copy()
    target[4::8] = -0.0  # not equal bit for bit, so no run takes the equal-run path
    c = _agree(bench, target)
    assert c.values["max_ulp"] == 0.0
    assert c.values["max_abs_err"] == 0.0
    target[5001] = np.nextafter(bench[5001], dtype(np.inf))
    c = _agree(bench, target)
    assert c.values["max_ulp"] == pytest.approx(1.0, rel=1e-12)
