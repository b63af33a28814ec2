"""Launcher mode: processes compare their share of ranks into files; --merge is the comparison.

The merged comparison must be the one a single ``compare`` gives, row for row, whatever
the number of processes; a restart skips what is done; a pair nobody finished is named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.compare._ranks import BUG_RANK, RANKS, make_rank_dumps
from tests.conftest import run_cli

pytest.importorskip("torch")
pq = pytest.importorskip("pyarrow.parquet")

from tensorsight.compare import compare  # noqa: E402
from tensorsight.compare.spmd import Slot, launcher_slot, merge, run_spmd, share  # noqa: E402
from tensorsight.errors import CompareError, InputFileError, UsageError  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    return make_rank_dumps(tmp_path_factory.mktemp("ranks"))


@pytest.fixture(scope="module")
def serial(dumps):
    return compare(dumps["bench"], dumps["target"], executor="serial")


def _rows(result):
    doc = json.loads(result.to_json())
    return doc["rows"], doc["first_divergence"], doc["ranks"], doc["advice"]


def _spmd(dumps, results, count, **kw):
    return [
        run_spmd(dumps["bench"], dumps["target"], results, slot=Slot(i, count, "test"), **kw)
        for i in range(count)
    ]


@pytest.mark.parametrize("count", [1, 3, 4, 6])
def test_merge_of_any_process_count_is_the_single_process_comparison(
    dumps, serial, tmp_path, count
):
    outs = _spmd(dumps, tmp_path / "res", count)
    assert sorted(r for o in outs for r in o.written) == list(range(RANKS))
    merged = merge(tmp_path / "res")
    assert _rows(merged) == _rows(serial)
    assert merged.first_divergence.rank == BUG_RANK
    assert merged.status == "diverged"
    assert not merged.missing


def test_result_files_are_parquet_tables_with_the_report_columns(dumps, tmp_path):
    _spmd(dumps, tmp_path / "res", 2)
    files = sorted((tmp_path / "res").glob("step=0/rank=*.parquet"))
    assert [f.name for f in files] == [f"rank={r}.parquet" for r in range(RANKS)]
    table = pq.read_table(files[BUG_RANK])
    assert {"op", "module_path", "verdict", "cosine", "row_json"} <= set(table.column_names)
    assert "error" in table.column("verdict").to_pylist()  # queryable without tensorsight


def test_a_restart_skips_the_pairs_already_compared(dumps, serial, tmp_path):
    res = tmp_path / "res"
    first = run_spmd(dumps["bench"], dumps["target"], res, slot=Slot(0, 2, "test"))
    again = _spmd(dumps, res, 2)
    assert again[0].written == ()
    assert again[0].skipped == first.written
    assert again[1].written == (2, 3)
    assert _rows(merge(res)) == _rows(serial)


def test_a_pair_nobody_finished_is_named_and_the_result_is_not_agree(dumps, tmp_path):
    res = tmp_path / "res"
    run_spmd(dumps["bench"], dumps["target"], res, slot=Slot(0, 2, "test"))  # ranks 0, 1
    merged = merge(res)
    assert [m.rank for m in merged.missing] == [2, 3]
    assert "did not finish" in merged.missing[0].reason
    assert merged.status != "agree"
    cli = run_cli("compare", "--merge", str(res), "-q")
    assert cli.returncode == 3
    assert "rank 2 not compared" in cli.stderr


def test_a_rank_in_one_dump_only_is_named(dumps, tmp_path):
    run_spmd(dumps["bench"], dumps["short"], tmp_path / "res", slot=Slot(0, 1, "test"))
    merged = merge(tmp_path / "res")
    assert [m.rank for m in merged.missing] == [RANKS - 1]
    assert "only the bench dump" in merged.missing[0].reason


def test_a_folder_of_another_comparison_is_refused(dumps, tmp_path):
    res = tmp_path / "res"
    run_spmd(dumps["bench"], dumps["target"], res, slot=Slot(0, 4, "test"))
    with pytest.raises(CompareError, match="another comparison"):
        run_spmd(dumps["bench"], dumps["short"], res, slot=Slot(1, 4, "test"))


def test_a_damaged_result_file_is_one_line(dumps, tmp_path):
    res = tmp_path / "res"
    _spmd(dumps, res, 1)
    (res / "step=0" / "rank=1.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(InputFileError, match=r"rank=1.parquet.*delete it"):
        merge(res)
    cli = run_cli("compare", "--merge", str(res))
    assert cli.returncode == 2
    assert cli.stderr.startswith("error: Result file")
    assert "Traceback" not in cli.stderr


def test_merge_without_a_plan_is_one_line(tmp_path):
    cli = run_cli("compare", "--merge", str(tmp_path))
    assert cli.returncode == 2
    assert "no plan.json" in cli.stderr
    assert "Traceback" not in cli.stderr


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["compare", "--merge", "r", "a", "b"], "takes no BENCH/TARGET"),
        (["compare", "--merge", "r", "--rank", "1"], "takes no --rank"),
        (["compare", "a"], "needs two dump folders"),
        (["compare", "a", "b", "--spmd", "r", "--executor", "local"], "--executor"),
        (["compare", "a", "b", "--spmd", "r", "-o", "out"], "-o goes with the merge"),
    ],
)
def test_mode_mistakes_are_one_line(argv, needle):
    cli = run_cli(*argv)
    assert cli.returncode == 2
    assert needle in cli.stderr
    assert "Traceback" not in cli.stderr


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"RANK": "3", "WORLD_SIZE": "8"}, Slot(3, 8, "torchrun")),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, Slot(0, 2, "srun")),
        ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}, Slot(1, 2, "mpirun")),
        ({"PMI_RANK": "1", "PMI_SIZE": "3"}, Slot(1, 3, "mpirun")),
        ({}, Slot(0, 1, "none")),
        # mpirun inside a Slurm allocation: its daemons' Slurm slot is the node's, not ours
        (
            {
                "OMPI_COMM_WORLD_RANK": "5",
                "OMPI_COMM_WORLD_SIZE": "8",
                "SLURM_PROCID": "1",
                "SLURM_NTASKS": "2",
            },
            Slot(5, 8, "mpirun"),
        ),
    ],
)
def test_the_launcher_is_read_from_its_variables(env, want):
    assert launcher_slot(env) == want


@pytest.mark.parametrize(
    "env", [{"RANK": "4", "WORLD_SIZE": "4"}, {"RANK": "x", "WORLD_SIZE": "2"}]
)
def test_bad_launcher_variables_are_refused(env):
    with pytest.raises(UsageError, match="not a process index"):
        launcher_slot(env)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 10, 13])
def test_shares_cover_every_rank_once_in_contiguous_blocks(count):
    ranks = list(range(100, 110))
    blocks = [share(ranks, i, count) for i in range(count)]
    assert [r for b in blocks for r in b] == ranks
    assert max(map(len, blocks)) - min(map(len, blocks)) <= 1


def test_torchrun_processes_share_the_ranks_and_merge_finds_the_bug(dumps, serial, tmp_path):
    res = tmp_path / "res"
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        [
            sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
            "--master_port=0", "-m", "tensorsight", "compare",
            str(dumps["bench"]), str(dumps["target"]), "--spmd", str(res), "-q",
        ],
        capture_output=True, text=True, env=env, timeout=240, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(list(res.glob("step=0/rank=*.parquet"))) == RANKS
    out = tmp_path / "report"
    cli = run_cli("compare", "--merge", str(res), "-o", str(out))
    assert cli.returncode == 1, cli.stderr  # the planted bug: diverged
    assert f"rank {BUG_RANK}" in cli.stdout or f"rank={BUG_RANK}" in cli.stdout
    merged = json.loads((out / "comparison.json").read_text())
    assert merged["rows"] == json.loads(serial.to_json())["rows"]


def test_a_rank_without_steps_is_a_failed_pair_not_a_traceback(dumps, tmp_path):
    import shutil

    bench = tmp_path / "bench"
    shutil.copytree(dumps["bench"], bench)
    for step in (bench / "rank1").glob("step*"):
        shutil.rmtree(step)
    cli = run_cli("compare", str(bench), str(dumps["target"]), "--spmd", str(tmp_path / "r"))
    assert cli.returncode == 3, cli.stderr
    assert "rank 1 not compared" in cli.stderr
    assert "Traceback" not in cli.stderr
    merged = merge(tmp_path / "r")
    assert [m.rank for m in merged.missing] == [1]
    assert "no step" in merged.missing[0].reason


def test_a_hand_edited_plan_is_one_line(dumps, tmp_path):
    res = tmp_path / "res"
    _spmd(dumps, res, 1)
    plan = json.loads((res / "plan.json").read_text())
    plan["missing"] = [{"reason": "no rank here"}]
    (res / "plan.json").write_text(json.dumps(plan))
    cli = run_cli("compare", "--merge", str(res))
    assert cli.returncode == 2
    assert "field 'missing'" in cli.stderr
    assert "Traceback" not in cli.stderr
