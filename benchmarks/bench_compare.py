"""compare: engine throughput on a pair of tensor dumps, and the metric kernel's bandwidth.

Two measurements:

1. The fused metric kernel (all 16 built-in metrics of a float32 pair, one pass) against
   ``numpy.sum`` over the same two arrays in the same run (goal: >= 50 % of its bandwidth).
2. ``tensorsight compare`` against ``msprobe compare`` (the anchor) on the *same* pair of
   msprobe tensor dumps of an MLP with one perturbed weight (goal: >= 30x msprobe's MB/s,
   peak memory independent of dump size). msprobe (``pip install mindstudio-probe``, it runs
   on the CPU) is looked up in ``$MSPROBE_PYTHONPATH`` (a ``pip install --target`` folder,
   default ``/tmp/mslib``), then in this environment; without it (and always with
   ``--quick`` unless ``$MSPROBE_PYTHONPATH`` is set), both dumps are written by
   ``tensorsight.dump`` and the engine is reported in MB/s against ``numpy.sum`` only.

The note lines name the CPU, its vector features and the kernel loop that ran, which
``$TENSORSIGHT_KERNEL`` forces for both measurements (``avx512``, ``avx2``, ``portable``,
``numpy``; the ``tensorsight compare`` processes inherit it). ``python -m benchmarks kernels``
times every loop the CPU runs side by side.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import numpy as np

from benchmarks.bench_kernels import cpu_line
from benchmarks.harness import Harness, Result, python

_MS_DUMP = textwrap.dedent(
    """
    import sys, torch
    from msprobe.pytorch import PrecisionDebugger
    torch.manual_seed(0)
    width, layers, batch = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    mods = [m for _ in range(layers) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]
    model = torch.nn.Sequential(*mods)
    if sys.argv[5] == "bug":
        with torch.no_grad():
            model[2 * (layers // 2)].weight.mul_(1.01)
    x = torch.randn(batch, width)
    dbg = PrecisionDebugger(task="tensor", dump_path=sys.argv[1], level="L1")
    dbg.start(model)
    model(x).sum().backward()
    dbg.stop()
    dbg.step()
    """
)

_TS_DUMP = textwrap.dedent(
    """
    import sys, torch, tensorsight
    torch.manual_seed(0)
    width, layers, batch = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    mods = [m for _ in range(layers) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]
    model = torch.nn.Sequential(*mods)
    if sys.argv[5] == "bug":
        with torch.no_grad():
            model[2 * (layers // 2)].weight.mul_(1.01)
    x = torch.randn(batch, width)
    with tensorsight.dump(sys.argv[1], mode="tensor", steps=[0], overwrite=True) as d:
        model(x).sum().backward()
        d.step()
    """
)


def _msprobe_env(quick: bool) -> dict[str, str] | None:
    if quick and "MSPROBE_PYTHONPATH" not in os.environ:
        return None  # --quick stays a few seconds: the anchor needs minutes
    extra = os.environ.get("MSPROBE_PYTHONPATH", "/tmp/mslib")
    env = {"PYTHONPATH": extra} if extra and Path(extra, "msprobe").is_dir() else {}
    probe = subprocess.run(
        [python(), "-c", "import msprobe.pytorch"],
        capture_output=True,
        env={**os.environ, **env},
        check=False,
    )
    return env if probe.returncode == 0 else None


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _kernel(h: Harness) -> None:
    from tensorsight.compare.metrics import _native, compare_arrays
    from tensorsight.compare.metrics.kernel import NATIVE_CHUNK_ELEMS, _pool, value_range

    n = 1 << (20 if h.quick else 24)
    rng = np.random.default_rng(0)
    bench = rng.standard_normal(n).astype(np.float32)
    target = (bench + rng.standard_normal(n).astype(np.float32) * 1e-3).astype(np.float32)
    ranges = value_range(bench), value_range(target)
    mb = 2 * bench.nbytes / 1e6
    step = NATIVE_CHUNK_ELEMS

    def one_thread() -> None:  # chunk by chunk in this thread: each call stays off the pool
        for i in range(0, n, step):
            compare_arrays(
                bench[i : i + step],
                target[i : i + step],
                bench_range=ranges[0],
                target_range=ranges[1],
            )

    compare_arrays(bench, target, bench_range=ranges[0], target_range=ranges[1])  # warm-up:
    one_thread()  # the thread pool starts and the pages are touched outside the timings
    # interleaved rounds, so load from other processes hits every case alike
    for _ in range(h.repeat):
        s = h.measure("numpy.sum (bench + target)", lambda: (bench.sum(), target.sum()), repeat=1)
        k = h.measure(
            "kernel: 16 metrics, ranges known",
            lambda: compare_arrays(bench, target, bench_range=ranges[0], target_range=ranges[1]),
            repeat=1,
        )
        k1 = h.measure("kernel: 16 metrics, 1 thread", one_thread, repeat=1)
        k2 = h.measure(
            "kernel: 16 metrics + min/max pass", lambda: compare_arrays(bench, target), repeat=1
        )
    lib = _native.load()
    loop = lib.isa if lib is not None else "numpy (TENSORSIGHT_KERNEL=numpy or no C compiler)"
    forced = os.environ.get("TENSORSIGHT_KERNEL", "").strip() or "auto"
    h.note(f"{cpu_line()}; TENSORSIGHT_KERNEL={forced}: {loop} loop")
    try:
        llc = "L3 " + Path("/sys/devices/system/cpu/cpu0/cache/index3/size").read_text().strip()
    except OSError:
        llc = "L3 size unknown"
    h.note(
        f"kernel data: 2 x {n:,} float32 = {mb:.0f} MB ({llc}), "
        f"{loop} loop, {_pool()._max_workers} threads; numpy.sum (float32, one thread) "
        f"{mb / s.median:,.0f} MB/s; kernel {mb / k.median:,.0f} MB/s = "
        f"{s.median / k.median:.1%} of numpy.sum (1 thread: {mb / k1.median:,.0f} MB/s = "
        f"{s.median / k1.median:.1%}; {mb / k2.median:,.0f} MB/s with the min/max pass); "
        "goal >= 50 %"
    )


def _make_pair(tmp: Path, script: Path, env: dict[str, str], shape: tuple[int, int, int]) -> int:
    """Write bench/ and target/ (one weight perturbed) under ``tmp``; return their bytes."""
    width, layers, batch = shape
    for side, kind in (("bench", "ok"), ("target", "bug")):
        argv = [python(), str(script), str(tmp / side), str(width), str(layers), str(batch)]
        subprocess.run([*argv, kind], check=True, env=env, capture_output=True)
    return _dir_bytes(tmp / "bench") + _dir_bytes(tmp / "target")


def _tensorsight(h: Harness, label: str, tmp: Path, repeat: int | None) -> Result:
    # exit 1 (a divergence was found: the planted weight) is the expected outcome
    result = h.measure_command(
        label,
        [
            *("sh", "-c", '"$@"; [ $? -le 1 ]', "sh", python(), "-m", "tensorsight"),
            *("compare", str(tmp / "bench"), str(tmp / "target"), "-q"),
            *("-o", str(tmp / "ts_out"), "--format", "csv"),
        ],
        repeat=repeat,
    )
    _check_exit(label, tmp)
    return result


ANCHOR_ROUNDS = 3  # msprobe runs, each after a round of tensorsight runs


def run(h: Harness) -> None:
    """Kernel vs numpy.sum, then the engine vs msprobe on one pair of dumps."""
    _kernel(h)
    width, layers, batch = (64, 4, 16) if h.quick else (1024, 50, 256)
    ms_env = _msprobe_env(h.quick)
    tmp = Path(tempfile.mkdtemp(prefix="bench_compare_"))
    try:
        script = tmp / "make_dump.py"
        script.write_text(_MS_DUMP if ms_env is not None else _TS_DUMP, encoding="utf-8")
        env = {**os.environ, **(ms_env or {})}
        size = _make_pair(tmp / "full", script, env, (width, layers, batch))
        # the same model with a tenth of the layers: peak memory must not follow the size
        small = _make_pair(tmp / "small", script, env, (width, max(layers // 10, 2), batch))
        os.sync()  # both tools read clean pages: no writeback of the fresh dumps mid-timing
        repeat = 1 if h.quick else None
        # with the anchor: rounds of our runs then one msprobe run, so that a change in the
        # machine's speed (this VM's moves msprobe's 15 s by +-20 % between minutes) hits both
        rounds = ANCHOR_ROUNDS if ms_env is not None and not h.quick else 1
        steps = [str(tmp / "full" / side / "step0") for side in ("target", "bench")]
        for r in range(rounds):
            ts = _tensorsight(h, "tensorsight compare", tmp / "full", repeat)
            if ms_env is not None:
                ms = h.measure_command(
                    "msprobe compare (anchor)",
                    [
                        *(python(), "-m", "msprobe.msprobe", "compare", "--target_path", steps[0]),
                        *("--golden_path", steps[1], "--output_path", str(tmp / f"ms_out{r}")),
                    ],
                    env=ms_env,
                    repeat=1,
                )
        ts_small = _tensorsight(h, "tensorsight compare, 1/10 of the layers", tmp / "small", repeat)
        if ms_env is not None:
            h.compare(ms.label)
            runs = ", ".join(f"{x:.2f}" for x in ms.seconds)
            h.note(
                f"msprobe compare: {size / 1e6 / ms.median:,.1f} MB/s (runs {runs} s, each after "
                f"a round of ours); fastest runs: x{min(ms.seconds) / min(ts.seconds):.2f}"
            )
        else:
            h.compare("numpy.sum (bench + target)")
            h.note("msprobe anchor skipped (--quick) or not found: for it run")
            h.note("pip install --target DIR mindstudio-probe (plus its dependencies), then")
            h.note("MSPROBE_PYTHONPATH=DIR python -m benchmarks compare")
        h.note(
            f"dumps: MLP {layers} x Linear({width}) batch {batch}, "
            f"{'msprobe' if ms_env is not None else 'tensorsight'} tensor format, "
            f"{size / 1e6:,.0f} MB in both; tensorsight compare {size / 1e6 / ts.median:,.1f} "
            "MB/s end to end (process start and imports included); goal >= 30x msprobe"
        )
        h.note(
            f"peak memory: {_mib(ts.peak_rss)} on {size / 1e6:,.0f} MB of dumps, "
            f"{_mib(ts_small.peak_rss)} on {small / 1e6:,.0f} MB; goal: independent of the size"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:,.0f} MiB"


def _check_exit(label: str, tmp: Path) -> None:
    out = tmp / "ts_out" / "comparison.csv"
    if not out.is_file():
        msg = f"{label}: no report written"
        raise RuntimeError(msg)
