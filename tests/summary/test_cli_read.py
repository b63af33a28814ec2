"""``tensorsight inspect`` and ``tensorsight export`` run as a user would, in a child process."""

from __future__ import annotations

import csv
import json
import math

import pyarrow.parquet as pq

from tests.conftest import run_cli
from tests.summary._events import scalar_event, write_events


def _logdir(tmp_path):
    values = [0.5, math.nan, -math.inf]
    write_events(tmp_path / "logs" / "train" / "events.out.tfevents.1.h",
                 [scalar_event("loss", v, i) for i, v in enumerate(values)])  # fmt: skip
    write_events(tmp_path / "logs" / "eval" / "events.out.tfevents.1.h",
                 [scalar_event("准确率", 0.75, 10)])  # fmt: skip
    return tmp_path / "logs"


def test_inspect_table(tmp_path):
    out = run_cli("inspect", str(_logdir(tmp_path)))
    assert out.returncode == 0, out.stderr
    assert "run 'eval': 1 file(s)" in out.stdout
    row = next(line for line in out.stdout.splitlines() if line.startswith("train"))
    assert row.split() == ["train", "scalars", "loss", "3", "0..2"]
    assert "准确率" in out.stdout


def test_inspect_json(tmp_path):
    out = run_cli("inspect", str(_logdir(tmp_path)), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [r["name"] for r in doc["runs"]] == ["eval", "train"]
    assert doc["runs"][1]["tags"] == [
        {"kind": "scalars", "tag": "loss", "count": 3, "first_step": 0, "last_step": 2}
    ]
    assert doc["problems"] == []


def test_inspect_reports_corrupt_files_and_empty_logdirs(tmp_path):
    logdir = _logdir(tmp_path)
    (logdir / "train" / "events.out.tfevents.2.h").write_bytes(b"not an event file" * 4)
    out = run_cli("inspect", str(logdir))
    assert out.returncode == 0
    assert "warning: Event file" in out.stderr
    assert "events.out.tfevents.2.h" in out.stderr
    (tmp_path / "empty").mkdir()
    out = run_cli("inspect", str(tmp_path / "empty"))
    assert out.returncode == 1
    assert "no event files" in out.stdout
    out = run_cli("inspect", str(tmp_path / "missing"))
    assert out.returncode == 2
    assert out.stderr.startswith("error: Logdir")


def test_inspect_real_mindspore_folder(shared_data):
    out = run_cli("inspect", str(shared_data / "mindspore"))
    assert out.returncode == 0, out.stderr
    assert "landscapes  landscape_[1, 5]" in out.stdout
    assert "graphs      ms_output_optimize" in out.stdout


def test_export_csv_round_trips_values_and_refuses_to_overwrite(tmp_path):
    logdir = _logdir(tmp_path)
    target = tmp_path / "out.csv"
    out = run_cli("export", str(logdir), "-o", str(target))
    assert out.returncode == 0, out.stderr
    assert "wrote 4 points of 2 scalar series" in out.stdout
    with open(target, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["run"], r["tag"], r["step"]) for r in rows] == [
        ("eval", "准确率", "10"), ("train", "loss", "0"), ("train", "loss", "1"),
        ("train", "loss", "2"),
    ]  # fmt: skip
    assert float(rows[1]["value"]) == 0.5
    assert math.isnan(float(rows[2]["value"]))
    assert float(rows[3]["value"]) == -math.inf
    again = run_cli("export", str(logdir), "-o", str(target))
    assert again.returncode == 2
    assert "--force" in again.stderr
    forced = run_cli("export", str(logdir), "-o", str(target), "--force", "--quiet")
    assert forced.returncode == 0
    assert forced.stdout == ""


def test_export_parquet(tmp_path):
    target = tmp_path / "out.parquet"
    out = run_cli("export", str(_logdir(tmp_path)), "--format", "parquet", "-o", str(target))
    assert out.returncode == 0, out.stderr
    table = pq.read_table(target)
    assert table.column_names == ["run", "tag", "step", "wall_time", "value"]
    assert table.num_rows == 4
    assert table.column("step").to_pylist() == [10, 0, 1, 2]


def test_help_has_examples():
    for cmd in ("inspect", "export"):
        out = run_cli(cmd, "--help")
        assert out.returncode == 0
        assert "examples:" in out.stdout


def test_inspect_hands_a_dump_folder_to_the_dump_inspector(tmp_path):
    import torch

    import tensorsight

    model = torch.nn.Linear(4, 2)
    with tensorsight.dump(tmp_path / "d", steps=[0]) as d:
        model(torch.ones(3, 4)).sum().backward()
        d.step()
    out = run_cli("inspect", str(tmp_path / "d"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("dump ")
    out = run_cli("inspect", str(tmp_path / "d"), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["format"] == "tensorsight"


def test_inspect_and_export_in_process(tmp_path, capsys):
    from tensorsight.cli import main

    logdir = _logdir(tmp_path)
    assert main(["inspect", str(logdir), "--quiet"]) == 0
    assert "train  scalars  loss  3      0..2" in capsys.readouterr().out
    assert main(["inspect", str(logdir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["name"] == "eval"
    target = tmp_path / "x.parquet"
    assert main(["export", str(logdir), "-o", str(target)]) == 0
    assert "(parquet)" in capsys.readouterr().out
    assert main(["export", str(logdir), "-o", str(target)]) == 2
    assert "already exists" in capsys.readouterr().err
