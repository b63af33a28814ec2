"""Incomplete or mostly unpaired input is never "the runs agree".

A dump whose run was killed (SIGKILL of a real child process, before its first op reached
the op table) makes compare refuse with one line naming it (exit 2), or, with
``--allow-incomplete``, a comparison every report marks INCOMPLETE (exit 3). Two dumps
whose tensors mostly find no counterpart (an api-level dump against an op-level one) are
"not comparable" (exit 3); a complete pair of the same model still agrees (exit 0).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import tensorsight  # noqa: E402
from tensorsight.compare import compare  # noqa: E402
from tensorsight.compare.result import MIN_MATCHED_FRACTION, Comparison  # noqa: E402
from tensorsight.errors import CompareError  # noqa: E402
from tests.conftest import run_cli  # noqa: E402

_KILLED_CHILD = """
import sys, time, torch, tensorsight
torch.manual_seed(0)
model = torch.nn.Linear(3, 2)
session = tensorsight.dump(sys.argv[1], mode="tensor", steps=[0]).__enter__()
model(torch.ones(4, 3)).sum().backward()
print("ran", flush=True)
time.sleep(120)  # killed here, before the writer's first flush of the op table
"""


def _dump_linear(path: Path, *, level: str = "op") -> Path:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    with tensorsight.dump(path, mode="tensor", level=level, steps=[0]) as d:
        model(torch.ones(4, 3)).sum().backward()
        d.step()
    return path


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("incomplete")
    bench = _dump_linear(root / "bench")
    killed = root / "killed"
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, str(killed)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ran"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
        if child.stdout is not None:
            child.stdout.close()
    return {"bench": bench, "killed": killed, "same": _dump_linear(root / "same")}


def test_a_killed_dump_says_it_is_incomplete(dumps):
    assert not tensorsight.read_dump(dumps["killed"]).complete
    shown = run_cli("inspect", str(dumps["killed"]))
    assert shown.returncode == 0, shown.stderr
    assert "INCOMPLETE" in shown.stdout.splitlines()[0]


def test_compare_refuses_a_killed_dump_with_one_line(dumps):
    with pytest.raises(CompareError, match="marked incomplete"):
        compare(dumps["bench"], dumps["killed"])
    out = run_cli("compare", str(dumps["bench"]), str(dumps["killed"]))
    assert out.returncode == 2, out.stdout
    assert out.stderr.count("\n") == 1
    assert out.stderr.startswith(f"error: Dump {str(dumps['killed'])!r}: rank 0 is marked")
    assert "--allow-incomplete" in out.stderr
    assert "agree" not in out.stdout


def test_a_step_without_ops_on_one_side_is_refused(dumps, tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    late = tmp_path / "late"
    with tensorsight.dump(late, mode="tensor", steps=[0, 1]) as d:
        d.step()  # step 0 records nothing: the model runs in step 1 only
        model(torch.ones(4, 3)).sum().backward()
        d.step()
    assert tensorsight.read_dump(late).complete  # complete, yet step 0 is empty
    with pytest.raises(CompareError, match=r"rank 0 step 0 has no ops.*--step"):
        compare(dumps["bench"], late)
    assert compare(dumps["bench"], late, step=None, allow_incomplete=True).incomplete


def test_allow_incomplete_marks_every_report(dumps, tmp_path):
    out = run_cli(
        "compare", str(dumps["bench"]), str(dumps["killed"]), "--allow-incomplete",
        "-o", str(tmp_path), "--format", "csv,xlsx,json,html",
    )  # fmt: skip
    assert out.returncode == 3, out.stderr
    assert out.stdout.startswith("INCOMPLETE: ")
    assert "the runs agree" not in out.stdout
    assert "has no ops" in out.stdout.splitlines()[0]  # the killed step recorded nothing
    assert (tmp_path / "comparison.csv").read_text().startswith("# INCOMPLETE: ")
    doc = json.loads((tmp_path / "comparison.json").read_text())
    assert doc["incomplete"].startswith(f"Dump {str(dumps['killed'])!r}")
    result = Comparison.from_json(tmp_path / "comparison.json")
    assert result.status == "not comparable"
    assert not result.agrees
    assert "INCOMPLETE: " in (tmp_path / "comparison.html").read_text()
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.load_workbook(tmp_path / "comparison.xlsx")
    assert wb.active.title == "summary"
    assert str(wb.active["A1"].value).startswith("INCOMPLETE: ")
    assert "rows (INCOMPLETE)" in wb.sheetnames


def test_mostly_unpaired_tensors_are_not_comparable(dumps, tmp_path):
    api = _dump_linear(tmp_path / "api", level="api")  # torch.nn.functional.* vs aten.*
    result = compare(dumps["bench"], api)
    bench = [r for r in result.rows if r.shape_bench is not None and not r.one_sided]
    matched = [r for r in bench if r.match != "unmatched"]
    assert len(matched) < MIN_MATCHED_FRACTION * len(bench)  # the premise
    assert result.not_comparable is not None
    assert f"only {len(matched)} of {len(bench)} bench tensors" in result.not_comparable
    assert result.status == "not comparable"
    assert not result.agrees
    out = run_cli("compare", str(dumps["bench"]), str(api))
    assert out.returncode == 3, out.stderr
    assert out.stdout.startswith("NOT COMPARABLE: only ")


def test_a_complete_pair_of_the_same_run_agrees(dumps):
    result = compare(dumps["bench"], dumps["same"])
    assert result.incomplete is None
    assert result.not_comparable is None
    assert result.status == "agree"
    out = run_cli("compare", str(dumps["bench"]), str(dumps["same"]))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[0].startswith("bench:")
