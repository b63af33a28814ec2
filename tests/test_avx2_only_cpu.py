"""Every compiled part runs on an x86-64 CPU with AVX2 and no AVX-512, whatever CPU built it.

This machine's CPU may well have AVX-512, so forcing the avx2 loop (``TENSORSIGHT_KERNEL``,
``make kernel-paths``) does not show what an AVX2-only CPU does: the dispatch itself, the
library loading, code the compiler vectorised with the builder's instruction set. Here a
child interpreter runs under ``qemu-x86_64 -cpu EPYC-Milan`` (user-mode emulation of an AMD
CPU with AVX2 + FMA and no AVX-512: an AVX-512 instruction is an illegal instruction there),
loads the libraries this machine built and cached, and checks that each picks the avx2 loop
and agrees with the numpy reference; then it dumps a small model in statistics mode (the
native op capture) and compares the dump with itself. qemu-user comes with ``make
system-deps`` on Debian; without it (or off x86-64) the test is skipped with the reason.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import textwrap

import pytest

QEMU = shutil.which("qemu-x86_64")
CPU = "EPYC-Milan"  # AMD Zen 3: AVX2, FMA, no AVX-512

pytestmark = pytest.mark.skipif(
    QEMU is None or platform.machine() != "x86_64",
    reason="needs qemu-x86_64 (apt-get install qemu-user) on x86-64",
)

CHILD = textwrap.dedent(
    """
    import math, sys
    import numpy as np
    from numpy._core._multiarray_umath import __cpu_features__ as numpy_cpu
    assert numpy_cpu["AVX2"] and not numpy_cpu["AVX512F"], "not an AVX2-only CPU"

    from tensorsight.dumpformat import _stats_native
    from tensorsight.compare.metrics import KERNEL_KEYS, _native, compare_arrays

    kernel = _native.load()
    assert kernel is not None, "metric kernel did not load"
    assert "avx512f" not in kernel.features and "avx2" in kernel.features, kernel.features
    assert kernel.isa == "avx2", kernel.isa
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        b = rng.standard_normal(300_001).astype(dtype)
        t = (b * (1 + 1e-3 * rng.standard_normal(b.size))).astype(dtype)
        c, n = compare_arrays(b, t), compare_arrays(b, t, native=False)
        for key in KERNEL_KEYS:
            x, y = c.values[key], n.values[key]
            assert (math.isnan(x) and math.isnan(y)) or math.isclose(
                x, y, rel_tol=1e-9, abs_tol=1e-13
            ), (dtype, key, x, y)

    stats = _stats_native.load()
    assert stats is not None and stats.isa == "avx2", stats and stats.isa

    import torch
    import tensorsight
    from tensorsight.capture import _native_capture

    assert _native_capture.load() is not None, _native_capture._STATE.get("why")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    out = sys.argv[1]
    with tensorsight.dump(out, level="op", mode="statistics"):
        model(torch.randn(8, 16)).square().mean().backward()
    result = tensorsight.compare(out, out)
    assert result.status == "agree" and len(result) > 10, result.summary()
    print("avx2-only ok", kernel.isa, stats.isa, len(result))
    """
)


def test_the_compiled_parts_run_on_an_avx2_only_cpu(tmp_path):
    # the libraries are built here first (natively, fast), so the emulated CPU loads what
    # this machine cached, as a second machine sharing a home folder or an image would
    from tensorsight.capture import _native_capture
    from tensorsight.compare.metrics import _native
    from tensorsight.dumpformat import _stats_native

    if _native.load() is None or _stats_native.load() is None:
        pytest.skip("C kernels off (no compiler, or TENSORSIGHT_KERNEL=numpy)")
    if _native_capture.load() is None:
        pytest.skip(f"native op capture unavailable: {_native_capture._STATE.get('why')}")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TENSORSIGHT_KERNEL", "ATEN_CPU_CAPABILITY", "COV_CORE_SOURCE")
    }
    assert QEMU is not None
    proc = subprocess.run(
        [QEMU, "-cpu", CPU, sys.executable, "-c", CHILD, str(tmp_path / "dump")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    stderr = "\n".join(
        line for line in proc.stderr.splitlines() if "TCG doesn't support" not in line
    )
    assert proc.returncode == 0, f"rc {proc.returncode}\n{proc.stdout}\n{stderr[-4000:]}"
    assert "avx2-only ok avx2 avx2" in proc.stdout
