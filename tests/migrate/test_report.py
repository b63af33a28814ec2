"""Report renderers: Markdown, CSV, JSON, SARIF."""

import csv
import io
import json

import pytest

from tensorsight.migrate import migrate
from tensorsight.migrate.model import SCHEMA_VERSION
from tensorsight.migrate.report import (
    COLUMNS,
    to_csv,
    to_json,
    to_markdown,
    to_sarif,
    write_reports,
)

SRC = """\
import torch
x = torch.zeros(1).cuda()
y = batch.cuda()
g = torch.cuda.CUDAGraph()
"""


@pytest.fixture
def report(tmp_path):
    (tmp_path / "train.py").write_text(SRC)
    (tmp_path / "broken.py").write_text("import torch\ntorch.cuda.synchronize(\n")
    (tmp_path / "k.cu").write_text("")
    return migrate(tmp_path)


def test_counts(report):
    assert report.counts() == {
        "files_changed": 1,
        "files_unchanged": 0,
        "files_skipped": 1,
        "files_failed": 1,
        "rewritten": 1,
        "manual": 1,
        "unsupported": 1,
        "kept": 0,
    }
    assert report.needs_attention


def test_csv_has_one_row_per_site_with_every_column(report):
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert tuple(rows[0]) == COLUMNS
    assert [(r["line"], r["rule_id"], r["status"], r["safety"]) for r in rows] == [
        ("2", "accelerator/cuda-method", "rewritten", "safe"),
        ("3", "accelerator/cuda-method", "manual", "unsafe"),
        ("4", "accelerator/unsupported", "unsupported", "none"),
    ]
    assert all(r["message"] and r["doc_url"].startswith("https://") for r in rows)


def test_json_records_versions_and_problems(report):
    data = json.loads(to_json(report))
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["target"] == "accelerator"
    assert data["ruleset_version"] == "4"
    assert data["summary"]["rewritten"] == 1
    failed = [f for f in data["files"] if f["kind"] == "failed"]
    assert failed[0]["path"] == "broken.py"
    assert "syntax error at line" in failed[0]["error"]
    assert data["sites"][0]["api"] == "torch.Tensor.cuda"


def test_markdown_lists_summary_problems_and_sites(report):
    text = to_markdown(report)
    assert "| 1 | 0 | 1 | 1 | 1 | 1 | 1 | 0 |" in text
    assert "`broken.py` has a syntax error" in text
    assert "`k.cu`: CUDA C++ source" in text
    assert "`train.py:3:5`" in text


def test_sarif_is_valid_shape(report):
    data = json.loads(to_sarif(report))
    assert data["version"] == "2.1.0"
    run = data["runs"][0]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {
        "accelerator/cuda-method",
        "accelerator/unsupported",
    }
    levels = [r["level"] for r in run["results"]]
    assert levels == ["note", "warning", "error"]
    region = run["results"][1]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 3, "startColumn": 5}


def test_write_reports_one_or_many_formats(report, tmp_path):
    [single] = write_reports(report, tmp_path / "r" / "report.txt", ("md",))
    assert single.name == "report.txt"
    many = write_reports(report, tmp_path / "r" / "report", ("csv", "json", "sarif"))
    assert sorted(p.name for p in many) == ["report.csv", "report.json", "report.sarif"]
