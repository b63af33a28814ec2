"""scale: a multi-rank compare on each executor, with the same first divergence on all.

64 synthetic rank pairs (16 with ``--quick``): one rank of an MLP step dumped by
``tensorsight.dump`` (mode tensor), copied to every rank of the bench and the target; the
target's rank ``3 * n // 4`` is a dump of the same step with one weight scaled, so every
executor must name that rank and the same op. Cases, each one whole ``compare()`` call:

- ``threads`` (anchor): a thread pool in this process, the way every multi-rank compare ran
  before the executor seam (and still the default for multi-rank input);
- ``serial``: one pair after the other in this process;
- ``local (cold)``: a spawn process pool started and stopped inside the call (what
  ``--executor local`` costs a command); ``local (warm)``: the same pool started before;
- ``dask (cold)``: a ``LocalCluster`` of one-thread worker processes per call;
  ``dask (warm)``: the same cluster kept between calls;
- ``ray (warm)``: Ray tasks on a local Ray started once (its start-up, several seconds,
  is printed on a note line instead of being timed per call);
- ``launcher (2 procs)``: ``torchrun --nproc_per_node=2 -m tensorsight compare --spmd``
  into a fresh results folder, then ``compare --merge`` in this process (the launcher's
  and both interpreters' start-up included: what the command costs a user).

Dask and Ray rows are skipped with a note when their packages are not installed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import Harness


def _make_dumps(root: Path, pairs: int) -> tuple[Path, Path, int]:
    import torch

    import tensorsight

    torch.manual_seed(0)
    width = 128
    model = torch.nn.Sequential(
        *[m for _ in range(4) for m in (torch.nn.Linear(width, width), torch.nn.GELU())]
    )
    x = torch.randn(32, width)

    def capture(path: Path) -> Path:
        with tensorsight.dump(path, mode="tensor", steps=[0], overwrite=True):
            model(x).sum().backward()
        return path / "rank0"

    ok = capture(root / "ok")
    with torch.no_grad():
        model[4].weight.mul_(1.02)
    bug = capture(root / "bug")
    bug_rank = 3 * pairs // 4
    bench, target = root / "bench", root / "target"
    for r in range(pairs):
        shutil.copytree(ok, bench / f"rank{r}")
        shutil.copytree(bug if r == bug_rank else ok, target / f"rank{r}")
    return bench, target, bug_rank


def _where(result: Any) -> tuple[Any, ...]:
    row = result.first_divergence
    if row is None:
        return (None,)
    return (row.rank, row.index, row.op, row.tensor, len(result.rows))


def _launcher_case(
    h: Harness, bench: Path, target: Path, tmp: Path, repeat: int, found: dict[str, Any]
) -> None:
    import subprocess
    import sys

    from tensorsight.compare.spmd import merge

    runs = iter(range(1_000_000))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}

    def fn() -> None:
        res = tmp / f"spmd-{next(runs)}"
        cmd = [
            sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
            "--master_port=0", "-m", "tensorsight", "compare", str(bench), str(target),
            "--spmd", str(res), "-q", "-j", "1",
        ]  # fmt: skip
        subprocess.run(cmd, check=True, env=env, capture_output=True)
        found["launcher (2 procs)"] = _where(merge(res))

    h.measure("launcher (2 procs)", fn, repeat=repeat)


def run(h: Harness) -> None:
    from tensorsight.compare import compare
    from tensorsight.compare.executors import RayExecutor, local_pool

    # TS_BENCH_PAIRS=1000: the full-scale figure (minutes on two cores)
    pairs = int(os.environ.get("TS_BENCH_PAIRS") or (16 if h.quick else 64))
    repeat = 1 if h.quick else h.repeat
    tmp = Path(tempfile.mkdtemp(prefix="ts-bench-scale-"))
    try:
        bench, target, bug_rank = _make_dumps(tmp, pairs)
        found: dict[str, tuple[Any, ...]] = {}

        def case(label: str, executor: Any) -> None:
            def fn() -> None:
                found[label] = _where(compare(bench, target, executor=executor))

            h.measure(label, fn, repeat=repeat)

        case("threads", "threads")
        case("serial", "serial")
        case("local (cold)", "local")
        with local_pool() as pool:
            # workers started, and compare's modules imported in them, before the clock
            n = os.cpu_count() or 1
            for future in [pool.submit(exec, "import tensorsight.compare.pairs") for _ in range(n)]:
                future.result()
            case("local (warm)", pool)
        try:
            import distributed
        except ImportError:
            h.note("dask: skipped (pip install 'tensorsight[dask]')")
        else:
            case("dask (cold)", "dask")
            cluster = distributed.LocalCluster(
                threads_per_worker=1, dashboard_address=":0", n_workers=os.cpu_count() or 1
            )
            with cluster, distributed.Client(cluster) as client:
                case("dask (warm)", client.get_executor(pure=False))
        try:
            import ray
        except ImportError:
            h.note("ray: skipped (pip install 'tensorsight[ray]')")
        else:
            start = time.perf_counter()
            ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
            h.note(f"ray.init() took {time.perf_counter() - start:.1f} s (not in the table)")
            try:
                case("ray (warm)", RayExecutor())
            finally:
                ray.shutdown()
        _launcher_case(h, bench, target, tmp, repeat, found)
        h.compare("threads")
        same = len(set(found.values())) == 1
        first = found["threads"]
        h.note(
            f"{pairs} rank pairs on {os.cpu_count()} CPUs; planted bug at rank {bug_rank}; "
            f"first divergence (rank, index, op, tensor, rows) {first}"
        )
        h.note(
            "same first divergence on every executor: "
            + ("yes" if same and first[0] == bug_rank else f"NO: {found}")
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
