"""The C statistics kernel agrees with the torch and numpy paths (the reference) to rounding.

Every loop (AVX-512, AVX2 + FMA, portable) is checked where the CPU runs it; a loop the CPU
cannot run is skipped with the feature it lacks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tensorsight import _cbuild
from tensorsight.capture import _torch_stats
from tensorsight.capture._torch_stats import stats_tensor
from tensorsight.dumpformat import _stats_native
from tensorsight.dumpformat._np_stats import array_stats

torch = pytest.importorskip("torch")

_KERNEL_OFF = pytest.mark.skipif(
    _stats_native.load() is None, reason="C kernel off (no compiler, or TENSORSIGHT_KERNEL=numpy)"
)


@pytest.fixture(params=_cbuild.KERNEL_PATHS)
def loop(request, monkeypatch):
    """Each loop of the kernel the CPU runs, as the torch and numpy paths' kernel."""
    lacks = _cbuild.missing_features(request.param, _stats_native.load().features)
    if lacks:
        pytest.skip(f"this CPU lacks {', '.join(lacks)} (the {request.param} loop)")
    fns, held = _stats_native.build(request.param)
    assert fns.isa == held.isa == request.param
    monkeypatch.setattr(_stats_native, "_STATE", {"fns": fns, "held": held})
    monkeypatch.setattr(_torch_stats, "_NATIVE", {})
    monkeypatch.setattr(_torch_stats, "_NATIVE_STATE", [])
    return request.param


def native(test):
    """A test of the kernel: run once per loop the CPU runs."""
    return _KERNEL_OFF(pytest.mark.usefixtures("loop")(test))


FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]


def _agree(got: list[float] | None, want: list[float] | None) -> None:
    assert got is not None
    assert want is not None
    assert len(got) == len(want) == 8
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        if math.isnan(b):
            assert math.isnan(a), i
        elif i in (0, 1, 4, 5, 6, 7):  # min, max, counts and numel are exact
            assert a == b, i
        else:
            assert a == pytest.approx(b, rel=1e-12, abs=1e-300), i


def _both(t: torch.Tensor) -> tuple[list[float], list[float]]:
    got = stats_tensor(t)
    want = stats_tensor(t, native=False)
    assert isinstance(got, list)
    assert isinstance(want, list)
    return got, want


def _random(dtype: torch.dtype, n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(n, generator=g, dtype=torch.float64) * 50).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -(2**40)), min(info.max, 2**40), (n,), generator=g).to(dtype)


@native
@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("n", [1, 7, 4096, 4097, 100_003])
def test_kernel_matches_the_torch_path(dtype, n):
    _agree(*_both(_random(dtype, n)))


@native
@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_and_infinities_follow_the_documented_rules(dtype):
    x = _random(dtype, 20_000, seed=1)
    x[3] = math.inf
    x[5] = -math.inf
    x[7] = math.inf
    got, want = _both(x)
    _agree(got, want)
    assert got[:4] == [-math.inf, math.inf, got[2], math.inf]
    assert math.isnan(got[2])  # inf + -inf
    assert got[4:7] == [0.0, 2.0, 1.0]
    x[11] = math.nan
    got, want = _both(x)
    _agree(got, want)
    assert all(math.isnan(v) for v in got[:4])
    assert got[4:7] == [1.0, 2.0, 1.0]
    only_inf = torch.full((9,), math.inf, dtype=dtype)
    _agree(*_both(only_inf))
    assert stats_tensor(only_inf)[:7] == [math.inf, math.inf, math.inf, math.inf, 0.0, 9.0, 0.0]


@native
def test_float64_overflowing_sums_without_nonfinite_elements():
    # no cancellation in the sum: 1e200 - 1e200 + 3 would hang on the summation order
    x = torch.tensor([1e200, -3e199, 3.0], dtype=torch.float64)
    got, want = _both(x)
    _agree(got, want)
    assert got[3] == math.inf  # the sum of squares overflows
    assert got[4:7] == [0.0, 0.0, 0.0]


@native
def test_half_precision_subnormals_and_extremes():
    bits = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16)  # every fp16/bf16 value
    for dtype in (torch.float16, torch.bfloat16):
        values = bits.view(dtype)
        finite = values[torch.isfinite(values)]
        _agree(*_both(finite))
        _agree(*_both(values))
        got = stats_tensor(values)
        assert got[4:7] == [
            float(torch.isnan(values).sum()),
            float((values == math.inf).sum()),
            float((values == -math.inf).sum()),
        ]


@native
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_layouts(dtype):
    x = _random(dtype, 300 * 200, seed=2).reshape(300, 200)
    cases = {
        "transposed": x.t(),  # one block of memory, permuted: the kernel reads it in place
        "offset": x[10:],
        "permuted 3-d": x.reshape(30, 10, 200).permute(2, 0, 1),
        "strided": x[:, ::3],  # not one block: the torch path
        "small strided": x[:4, ::3],
        "broadcast": x[:1].expand(50, 200),  # stride 0: measured once, scaled
        "broadcast scalar": x[0, 0].expand(7, 9),
        "broadcast inner": x[:, :1].expand(300, 16),
    }
    for name, t in cases.items():
        got, want = _both(t)
        try:
            _agree(got, want)
        except AssertionError as exc:
            raise AssertionError(name) from exc
        assert got[7] == t.numel()


@native
def test_parameters_and_negative_views():
    p = torch.nn.Parameter(torch.randn(64, 32))
    _agree(*_both(p))
    neg = torch.randn(10_000)._neg_view()
    got, want = _both(neg)
    _agree(got, want)
    assert got[0] == pytest.approx(-float(neg._neg_view().max()))


def test_empty_and_meta_tensors():
    assert stats_tensor(torch.empty(0)) is None
    assert stats_tensor(torch.empty(3, 0, dtype=torch.bfloat16)) is None
    assert stats_tensor(torch.empty(4, device="meta")) is None


@native
@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.float16, np.int64, np.int8, np.uint8, np.bool_]
)
def test_numpy_arrays_match_numpy(dtype):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(50_001) * 40).astype(dtype)
    if a.dtype.kind == "f":
        a[17] = np.nan
        a[18] = np.inf
    _agree(array_stats(a), array_stats(a, native=False))
    _agree(array_stats(a[::2]), array_stats(a[::2], native=False))
    swapped = a.astype(a.dtype.newbyteorder(">"))
    _agree(array_stats(swapped), array_stats(a, native=False))
    assert array_stats(a[:0]) is None


@pytest.fixture
def fresh_load(monkeypatch):
    """``_stats_native.load`` as in a new process (the choice is cached per process)."""
    monkeypatch.setattr(_stats_native, "_STATE", {})
    monkeypatch.setattr(_cbuild, "_SAID", set())
    return _stats_native.load


def test_the_kernel_can_be_switched_off(monkeypatch, fresh_load):
    monkeypatch.setenv("TENSORSIGHT_KERNEL", "numpy")
    assert fresh_load() is None
    assert _stats_native.load_held() is None


@native
def test_dispatch_runs_the_fastest_loop_and_each_can_be_forced(loop, monkeypatch, fresh_load):
    monkeypatch.delenv("TENSORSIGHT_KERNEL", raising=False)
    features = fresh_load().features
    best = next(p for p in _cbuild.KERNEL_PATHS if not _cbuild.missing_features(p, features))
    assert _stats_native.load().isa == _stats_native.load_held().isa == best
    monkeypatch.setattr(_stats_native, "_STATE", {})
    monkeypatch.setenv("TENSORSIGHT_KERNEL", loop)
    assert _stats_native.load().isa == loop


@native
def test_forcing_a_loop_the_cpu_lacks_runs_the_best_it_has(monkeypatch, fresh_load, caplog):
    """The CPU's answer narrowed to AVX2 + FMA (an AVX2-only machine); the loops are real."""
    monkeypatch.setattr(_stats_native, "cpu_features", lambda _lib: frozenset({"avx2", "fma"}))
    monkeypatch.setenv("TENSORSIGHT_KERNEL", "avx512")
    assert fresh_load().isa == "avx2"
    assert caplog.messages == [
        "tensorsight: TENSORSIGHT_KERNEL=avx512 needs avx512f, avx512dq, which this CPU "
        "lacks; using avx2"
    ]
    with pytest.raises(ValueError, match="lacks avx512f, avx512dq"):
        _stats_native.build("avx512")


@native
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_every_length_around_the_lane_widths(dtype):
    """Tails of each length below 64 elements (the widest vector: 64 int8 lanes), then a
    NaN or an infinity in the tail."""
    x = _random(dtype, 200, seed=4)
    for n in range(1, 70):
        _agree(*_both(x[:n]))
    if dtype.is_floating_point:
        for value in (math.nan, math.inf, -math.inf):
            y = x[:67].clone()
            y[-1] = value
            _agree(*_both(y))


@native
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_wide_ranges_and_subnormals(dtype):
    info = torch.finfo(dtype)
    g = torch.Generator().manual_seed(5)
    exps = torch.rand(10_007, generator=g, dtype=torch.float64)
    lo, hi = math.log2(info.tiny) - 20, math.log2(info.max) - 1  # subnormals included
    x = (torch.exp2(lo + exps * (hi - lo)) * torch.sign(torch.randn(10_007, generator=g))).to(dtype)
    _agree(*_both(x))


def test_cache_entries_follow_the_storage_not_the_python_object():
    from tensorsight.capture._torch_stats import StatsCache

    cache = StatsCache()
    x = torch.ones(10_000)
    view = x.view(100, 100).t()
    cache.put(cache.key(view, exact=False), view, "stats of x")
    del view  # the Python object dies; the memory (x's storage) does not
    assert cache.get(cache.key(x, exact=False)) == "stats of x"
    x.add_(1)  # an in-place write moves the version: stale entries are not found
    assert cache.get(cache.key(x, exact=False)) is None
    key = cache.key(x, exact=False)
    cache.put(key, x, "stats after the write")
    del x  # the storage is freed: a new tensor at the same address must not match
    for _ in range(20):
        y = torch.full((10_000,), 5.0)
        assert cache.get(cache.key(y, exact=False)) is None
        del y


@native
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_the_gil_keeping_and_gil_releasing_kernels_agree(dtype, monkeypatch):
    from tensorsight.capture import _torch_stats

    torch.manual_seed(0)
    t = (torch.randn(5000) * 100).to(dtype)
    t[7] = 0
    held = stats_tensor(t)
    monkeypatch.setattr(_torch_stats, "HELD_NUMEL", 0)  # every call releases the GIL now
    released = stats_tensor(t)
    assert held == released
    _agree(held, stats_tensor(t, native=False))


def test_the_native_op_capture_measures_with_the_loop_the_kernel_chose():
    """The native op capture compiles this kernel into its own library; it runs the loop
    that ``TENSORSIGHT_KERNEL`` and the CPU choose, as the Python path does."""
    from tensorsight.capture import _native_capture

    lib = _native_capture.load()
    if lib is None:
        pytest.skip(f"native op capture unavailable: {_native_capture._STATE.get('why')}")
    fns = _stats_native.load()
    features = _stats_native.build("portable")[0].features
    best = next(p for p in _cbuild.KERNEL_PATHS if not _cbuild.missing_features(p, features))
    assert lib.stats_isa == (fns.isa if fns is not None else best)
