"""kernels: each loop of the two C kernels that this CPU runs, against ``numpy.sum``.

One thread, one call over the same data for every case, timed in this thread's CPU time
(``time.thread_time``: other processes on a shared machine barely move it), so the loops
(``avx512``, ``avx2``, ``portable``; forced with :func:`build`, not through
``$TENSORSIGHT_KERNEL``) compare with each other and with ``numpy.sum`` over the same bytes:

- the metric kernel (``compare/metrics/_kernel.c``, all 16 metrics of a float32 pair in one
  pass; ``bench_compare`` times it on every thread and end to end);
- the dump statistics kernel (``dumpformat/_stats_kernel.c``: min, max, sum, sum of squares of
  a float32 and a bfloat16 buffer).

The note lines name the CPU, its vector features and the loop ``auto`` picks, and give each
metric loop's share of ``numpy.sum``'s bandwidth from the medians and from the fastest runs
(less moved by other processes on a shared machine). On a CPU with
AVX-512, the ``avx2`` rows approximate an AVX2-only machine of the same clock (not its memory
or core layout).
"""

from __future__ import annotations

import ctypes
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import Harness

_FEATURES = ("avx2", "fma", "avx512f", "avx512dq")
CPU = time.thread_time  # every case runs in this thread


def cpu_line() -> str:
    """The CPU's model and the vector features the kernels see, for note lines."""
    from tensorsight.compare.metrics import _native

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    found = _native.features()
    if found is None:
        return f"CPU: {model}; features unknown (no C compiler)"
    flags = ", ".join(f"{f} {'yes' if f in found else 'no'}" for f in _FEATURES)
    return f"CPU: {model}, {platform.machine()}; {flags}"


def run(h: Harness) -> None:
    """Every loop of each kernel the CPU runs, then numpy.sum on the same bytes."""
    from tensorsight import _cbuild
    from tensorsight.compare.metrics import _native
    from tensorsight.dumpformat import _stats_native

    found = _native.features()
    if found is None:
        h.note("no C compiler: the kernels fall back to numpy; nothing to time")
        return
    loops = [p for p in _cbuild.KERNEL_PATHS if not _cbuild.missing_features(p, found)]
    n = 1 << (20 if h.quick else 24)
    rng = np.random.default_rng(0)
    bench = rng.standard_normal(n).astype(np.float32)
    target = bench + rng.standard_normal(n).astype(np.float32) * np.float32(1e-3)
    lo, hi = float(bench.min()), float(bench.max())
    acc = np.zeros(18)
    params = (0.0, 0.0, lo, 1.0 / (hi - lo), lo, 1.0 / (hi - lo), 2.0**-126, acc.ctypes.data)
    import ml_dtypes

    buffers = {"float32": bench, "bfloat16": bench.astype(ml_dtypes.bfloat16)}
    out = (ctypes.c_double * 7)()
    pair = 2 * bench.nbytes
    rounds: dict[str, float] = {}
    for _ in range(h.repeat):  # interleaved, so load from other processes hits every case
        s = h.measure(
            "numpy.sum, float32 pair", lambda: (bench.sum(), target.sum()), repeat=1, clock=CPU
        )
        for isa in loops:
            k = _native.build(isa)
            assert k is not None
            h.measure(
                f"metric kernel, {isa}",
                lambda k=k: k.f32(target.ctypes.data, bench.ctypes.data, n, *params),
                repeat=1,
                clock=CPU,
            )
            fns = _stats_native.build(isa)
            assert fns is not None
            for dtype, a in buffers.items():
                fn = fns[1][dtype]  # the GIL-keeping functions: no thread switch timed
                h.measure(
                    f"stats kernel, {dtype}, {isa}",
                    lambda fn=fn, a=a: fn(a.ctypes.data, a.size, out),
                    repeat=1,
                    clock=CPU,
                )
        for dtype, a in buffers.items():
            h.measure(f"numpy.sum, {dtype}", lambda a=a: a.sum(), repeat=1, clock=CPU)
    rounds["pair"] = s.median
    auto = _native.load()
    h.note(cpu_line())
    h.note(
        f"auto runs {auto.isa if auto is not None else 'numpy (TENSORSIGHT_KERNEL=numpy)'}; "
        f"data: 2 x {n:,} float32 = {pair / 1e6:.0f} MB, one thread, timed in its CPU time"
    )
    fastest = min(s.seconds)
    for isa in loops:
        r = h.results[f"metric kernel, {isa}"]
        k = r.median
        h.note(
            f"metric kernel {isa}: {pair / k / 1e6:,.0f} MB/s = {rounds['pair'] / k:.0%} of "
            f"numpy.sum ({pair / rounds['pair'] / 1e6:,.0f} MB/s; medians); fastest runs: "
            f"{fastest / min(r.seconds):.0%}"
        )
    for dtype, a in buffers.items():
        ref = h.results[f"numpy.sum, {dtype}"].median
        rates = ", ".join(
            f"{isa} {a.nbytes / h.results[f'stats kernel, {dtype}, {isa}'].median / 1e9:.1f} "
            f"GB/s ({ref / h.results[f'stats kernel, {dtype}, {isa}'].median:.0%})"
            for isa in loops
        )
        h.note(f"stats kernel {dtype}: {rates} of numpy.sum ({a.nbytes / ref / 1e9:.1f} GB/s)")
