from __future__ import annotations

import io

import pytest
from starlette.testclient import TestClient

from tensorsight.board.app import create_app
from tensorsight.board.errors import InvalidArgument
from tensorsight.board.views.precision import compute_dtype, normalize_dtype, table_impl
from tests.board.views.graphs_fixtures import graph_provider


def test_table_lists_ops_with_computation_dtype():
    t = table_impl(graph_provider(), "train", "graph")
    rows = {r["name"]: r for r in t["rows"]}
    # parameters and IO nodes are not operators
    assert set(rows) == {
        "fc/aten::_to_copy_0",
        "fc/aten::addmm_0",
        "head/aten::gt_0",
        "héad/ünïcode_0",
    }
    assert rows["fc/aten::addmm_0"]["compute_dtype"] == "bfloat16"
    assert rows["fc/aten::addmm_0"]["input_dtypes"] == ["float32", "bfloat16"]
    assert rows["fc/aten::addmm_0"]["reduced"]
    # a comparison outputs bool but computes on its bf16 input (the control input is ignored)
    assert rows["head/aten::gt_0"]["compute_dtype"] == "bfloat16"
    assert rows["head/aten::gt_0"]["input_dtypes"] == ["bfloat16"]
    assert rows["héad/ünïcode_0"]["compute_dtype"] == "float16"  # DT_HALF, MindSpore flag
    assert t["total_ops"] == 4
    assert t["reduced_ops"] == 4
    assert t["by_dtype"] == {"bfloat16": 3, "float16": 1}


def test_filter_by_regex_and_reduced_only():
    t = table_impl(graph_provider(), "train", "graph", query="ADDMM|matmul")
    assert [r["op"] for r in t["rows"]] == ["aten::addmm", "MatMul"]
    t = table_impl(graph_provider(), "train", "graph", query="^float16$", reduced_only=True)
    assert t["matched"] == 1
    with pytest.raises(InvalidArgument, match="not a valid RE2 regular expression"):
        table_impl(graph_provider(), "train", "graph", query="(")


def test_dtype_helpers():
    assert normalize_dtype("torch.bfloat16") == "bfloat16"
    assert normalize_dtype("DT_BFLOAT16") == "bfloat16"
    assert normalize_dtype("Half") == "float16"
    assert compute_dtype(["int64"], ["bool"]) == "bool"
    assert compute_dtype([], []) == ""


def test_xlsx_export_opens_and_matches_the_table():
    import openpyxl

    with TestClient(create_app(graph_provider())) as c:
        r = c.get(
            "/api/views/precision/export.xlsx",
            params={"run": "train", "tag": "graph", "q": "aten", "reduced": "1"},
        )
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("application/vnd.openxmlformats")
        assert 'filename="precision-train-graph.xlsx"' in r.headers["content-disposition"]
        wb = openpyxl.load_workbook(io.BytesIO(r.content), read_only=True)
        rows = list(wb["ops"].iter_rows(values_only=True))
        assert rows[0] == (
            "name", "op", "module_path", "compute_dtype", "reduced", "input_dtypes",
            "output_dtypes",
        )  # fmt: skip
        assert [row[0] for row in rows[1:]] == [
            "fc/aten::_to_copy_0",
            "fc/aten::addmm_0",
            "head/aten::gt_0",
        ]
        assert rows[2][3:5] == ("bfloat16", "yes")
        summary = dict(wb["summary"].iter_rows(values_only=True))
        assert summary["reduced-precision ops"] == 3
        r = c.get("/api/views/precision/table", params={"run": "train", "tag": "nope"})
        assert r.status_code == 404
