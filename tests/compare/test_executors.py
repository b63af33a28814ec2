"""Multi-rank compare on every executor: the same rows and first divergence everywhere.

Four real ranks dumped by ``tensorsight.dump`` from a tiny MLP; the target's rank 2 has a
planted bug (one weight scaled). Each executor gets the dump paths only.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

from tests.compare._ranks import BUG_RANK, RANKS, make_rank_dumps
from tests.compare._workers import environ as _environ
from tests.compare._workers import exit_on_rank, exit_once_on_rank
from tests.conftest import run_cli

torch = pytest.importorskip("torch")

from tensorsight.compare import compare  # noqa: E402
from tensorsight.compare.executors import RayExecutor, parse_executor  # noqa: E402
from tensorsight.errors import UsageError  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    return make_rank_dumps(tmp_path_factory.mktemp("ranks"))


@pytest.fixture(scope="module")
def serial(dumps):
    return compare(dumps["bench"], dumps["target"], executor="serial")


def _same(result, reference):
    assert result.to_json() == reference.to_json()  # every row, value and verdict


def test_serial_names_the_planted_bug_at_its_rank(serial):
    assert serial.ranks == tuple(range(RANKS))
    assert serial.first_divergence_rank == BUG_RANK
    assert serial.first_divergence.module_path == "Sequential.2"  # the scaled Linear
    assert {r.rank for r in serial.rows if r.verdict == "error"} == {BUG_RANK}
    assert serial.missing == ()


def test_default_and_user_thread_pool_match_serial(dumps, serial):
    _same(compare(dumps["bench"], dumps["target"]), serial)
    with ThreadPoolExecutor(max_workers=3) as pool:
        _same(compare(dumps["bench"], dumps["target"], executor=pool), serial)
        assert pool.submit(int, "7").result() == 7  # left running: the caller owns it


def test_local_process_pool_matches_serial(dumps, serial):
    _same(compare(dumps["bench"], dumps["target"], executor="local:2"), serial)


def test_dask_local_cluster_matches_serial(dumps, serial):
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=None, processes=True
    )
    with cluster, distributed.Client(cluster) as client:
        ex = client.get_executor(pure=False)
        _same(compare(dumps["bench"], dumps["target"], executor=ex), serial)


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


def test_ray_matches_serial(ray_local, dumps, serial):
    _same(compare(dumps["bench"], dumps["target"], executor=RayExecutor()), serial)
    # the spec form uses the running Ray and leaves it running
    _same(compare(dumps["bench"], dumps["target"], executor="ray"), serial)
    assert ray_local.is_initialized()


def test_a_rank_in_one_dump_only_is_named_missing(dumps):
    result = compare(dumps["short"], dumps["bench"], executor="serial")
    assert result.ranks == (0, 1, 2)
    assert [(m.rank, "only the target dump" in m.reason) for m in result.missing] == [(3, True)]
    assert result.status == "not comparable"
    assert "rank 3 not compared" in result.header_note


def test_a_failing_pair_is_named_and_the_others_are_compared(dumps, tmp_path):
    target = tmp_path / "target"
    shutil.copytree(dumps["target"], target)
    for shard in (target / "rank1").rglob("*.safetensors"):
        shard.write_bytes(b"not a tensor file")
    result = compare(dumps["bench"], target, executor="threads:2")
    assert [m.rank for m in result.missing] == [1]
    assert "its task failed" in result.missing[0].reason
    assert result.ranks == (0, 2, 3)
    assert result.first_divergence_rank == BUG_RANK


def test_cli_exits_3_naming_the_missing_rank(dumps):
    out = run_cli("compare", str(dumps["bench"]), str(dumps["short"]), "-q", "--executor", "serial")
    assert out.returncode == 3, out.stderr
    line = out.stderr.strip()
    assert line.startswith("error: rank 3 not compared: only the bench dump")
    assert "\n" not in line


def test_cli_bad_executor_spec_exits_2(dumps):
    out = run_cli("compare", str(dumps["bench"]), str(dumps["target"]), "--executor", "spark")
    assert out.returncode == 2
    assert out.stderr.startswith("error: Option --executor 'spark': not an executor.")


@pytest.mark.parametrize("spec", ["serial:2", "local:0", "threads://x", "ray:x"])
def test_bad_specs_are_refused(spec):
    with pytest.raises(UsageError, match="not an executor"):
        parse_executor(spec)


@pytest.mark.parametrize("kind", ["dask", "ray"])
def test_cli_without_the_package_names_the_extra(dumps, tmp_path, kind):
    # a package that fails to import, first on the path, stands for one not installed
    module = {"dask": "distributed", "ray": "ray"}[kind]
    (tmp_path / module).mkdir()
    (tmp_path / module / "__init__.py").write_text(f"raise ImportError('No module {module}')\n")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-m", "tensorsight", "compare", str(dumps["bench"]),
         str(dumps["target"]), "--executor", kind],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 2
    assert (
        out.stderr
        == f"error: --executor {kind} needs {module}: pip install 'tensorsight[{kind}]'\n"
    )


class _GatedPool(ThreadPoolExecutor):
    """One thread; every rank but 0 waits for the gate, so ranks 2 and 3 are still queued."""

    def __init__(self):
        super().__init__(max_workers=1)
        self.gate = threading.Event()
        self.futures = {}

    def submit(self, fn, task, /):
        def run():
            if task.rank:
                self.gate.wait(30)
            return fn(task)

        future = super().submit(run)
        self.futures[task.rank] = future
        return future


def test_an_interrupt_cancels_the_pairs_not_started(dumps):
    def progress(done, total):
        raise KeyboardInterrupt

    pool = _GatedPool()
    try:
        with pytest.raises(KeyboardInterrupt):
            compare(dumps["bench"], dumps["target"], executor=pool, progress=progress)
        assert pool.futures[0].done()
        assert [pool.futures[r].cancelled() for r in (2, 3)] == [True, True]
    finally:
        pool.gate.set()
        pool.shutdown()


def test_progress_counts_rank_pairs_as_they_finish(dumps):
    seen = []
    compare(
        dumps["bench"], dumps["target"], executor="threads:2", progress=lambda *a: seen.append(a)
    )
    assert seen == [(i, RANKS) for i in range(1, RANKS + 1)]


def test_missing_pairs_survive_the_json_export(dumps):
    from tensorsight.compare.result import Comparison

    result = compare(dumps["short"], dumps["bench"], executor="serial")
    back = Comparison.from_json(result.to_json())
    assert back.missing == result.missing
    assert back.status == "not comparable"


@pytest.mark.parametrize("spec", ["local:2", "dask:1"])
def test_cli_executor_finds_the_bug_at_its_rank(dumps, serial, tmp_path, spec):
    if spec.startswith("dask"):
        pytest.importorskip("distributed")
    out = run_cli(
        "compare", str(dumps["bench"]), str(dumps["target"]), "-q", "--executor", spec,
        "-o", str(tmp_path), "--format", "json",
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    doc = json.loads((tmp_path / "comparison.json").read_text())
    assert doc["first_divergence_rank"] == BUG_RANK
    assert doc["first_divergence"] == serial.first_divergence_row


class _FlakyPool(ThreadPoolExecutor):
    """Rank 1's first task raises, as when its worker was lost; its retry runs normally."""

    def __init__(self):
        super().__init__(max_workers=2)
        self.calls = []

    def submit(self, fn, task, /):
        self.calls.append(task.rank)
        if task.rank == 1 and self.calls.count(1) == 1:
            return super().submit(_raise, OSError("worker lost"))
        return super().submit(fn, task)


def _raise(exc):
    raise exc


def test_a_pair_that_fails_once_is_retried(dumps, serial):
    with _FlakyPool() as pool:
        result = compare(dumps["bench"], dumps["target"], executor=pool)
    assert pool.calls.count(1) == 2
    assert pool.calls[-1] == 1  # retried after the others
    _same(result, serial)


class _DyingPool(ProcessPoolExecutor):
    def submit(self, fn, task, /):
        return super().submit(exit_on_rank, 1, fn, task)


def test_a_worker_that_dies_leaves_a_result_naming_the_missing_pairs(dumps):
    with _DyingPool(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        result = compare(dumps["bench"], dumps["target"], executor=pool)
    lost = [m.rank for m in result.missing]
    assert 1 in lost
    assert sorted([*result.ranks, *lost]) == list(range(RANKS))
    assert all("BrokenProcessPool" in m.reason for m in result.missing)
    assert result.status == "not comparable"


class _DyingOncePool(ProcessPoolExecutor):
    """A pool whose worker dies on rank 1's first task (while the marker file exists)."""

    marker = ""

    def submit(self, fn, task, /):
        return super().submit(exit_once_on_rank, 1, self.marker, fn, task)


def test_a_pool_made_from_a_spec_is_made_again_for_the_retry(dumps, serial, tmp_path, monkeypatch):
    import tensorsight.compare.executors as executors

    marker = tmp_path / "die-once"
    marker.touch()
    made = []

    def dying_once(workers=None):
        pool = _DyingOncePool(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        pool.marker = str(marker)
        made.append(pool)
        return pool

    monkeypatch.setattr(executors, "local_pool", dying_once)
    result = compare(dumps["bench"], dumps["target"], executor="local")
    assert len(made) == 2  # the broken pool was replaced before the retry
    assert not marker.exists()  # the worker really died once
    assert not result.missing
    _same(result, serial)


def test_local_pool_workers_pin_blas_and_openmp_to_one_thread():
    from tensorsight.compare._pin import PIN_VARIABLES
    from tensorsight.compare.executors import local_pool

    with local_pool(1) as pool:
        seen = pool.submit(_environ, PIN_VARIABLES).result()
    assert seen == ["1"] * len(PIN_VARIABLES)
