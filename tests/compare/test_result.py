from __future__ import annotations

import csv
import io
import json
import math

import pytest

from tensorsight.compare.result import (
    COLUMNS,
    METRIC_COLUMNS,
    Advice,
    Comparison,
    OpComparison,
    Verdict,
    new_row,
)
from tensorsight.errors import InputFileError, SchemaVersionError, UsageError


def _comparison():
    rows = (
        OpComparison(
            0, "aten.mm.default", "M.fc", "forward", "output.0", (2, 3), (2, 3),
            "float32", "bfloat16", cosine=0.9999, max_abs_err=math.inf, kl_div=math.nan,
            within_1e_3=0.5, verdict="pass", reason="Within budget.", budget=1e-2, error=1e-3,
        ),
        OpComparison(
            1, "aten.relu.default", "M.act", "forward", "output.0", verdict="error",
            reason="Error 0.5 exceeds budget 0.01.", budget=0.01, error=0.5,
            custom={"my_metric": 2.0},
        ),
        OpComparison(
            2, "aten._to_copy.default", "M.fc", "forward", "input.0", match="unmatched",
            verdict="warning", reason="Op only in target.",
        ),
    )  # fmt: skip
    return Comparison(
        "bench dir", "target é", rows, first_divergence_row=1,
        metrics=METRIC_COLUMNS, advice=(Advice("scale-error", "std ratio 2", 1),),
    )  # fmt: skip


def test_columns_are_the_product_names_in_order():
    assert COLUMNS[:9] == (
        "index", "op", "module_path", "direction", "tensor",
        "shape_bench", "shape_target", "dtype_bench", "dtype_target",
    )  # fmt: skip
    assert "within_1e-3" in COLUMNS
    assert "within_5e-3" in COLUMNS
    assert COLUMNS[len(METRIC_COLUMNS) + 9 : len(METRIC_COLUMNS) + 11] == ("verdict", "reason")


def test_attribute_safe_names_and_column_access():
    row = _comparison().rows[0]
    assert row.within_1e_3 == 0.5
    assert row.get("within_1e-3") == 0.5
    assert row.to_dict()["within_1e-3"] == 0.5


def test_json_round_trip_keeps_nonfinite_and_custom(tmp_path):
    c = _comparison()
    path = tmp_path / "c.json"
    text = c.to_json(path)
    doc = json.loads(text)
    assert doc["schema_version"] == 1
    assert doc["rows"][0]["max_abs_err"] == "inf"
    assert doc["rows"][0]["kl_div"] == "nan"
    assert doc["rows"][0]["shape_bench"] == [2, 3]
    back = Comparison.from_json(path)
    assert back.first_divergence is not None
    assert back.first_divergence.op == "aten.relu.default"
    assert back.rows[0].max_abs_err == math.inf
    assert math.isnan(back.rows[0].kl_div)
    assert back.rows[1].custom == {"my_metric": 2.0}
    assert back.advice == c.advice
    assert back.rows[2] == c.rows[2]


def test_from_json_rejects_bad_input(tmp_path):
    with pytest.raises(InputFileError, match="cannot be read"):
        Comparison.from_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": [', encoding="utf-8")
    with pytest.raises(InputFileError, match="not valid JSON"):
        Comparison.from_json(bad)
    bad.write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(InputFileError, match="not a comparison export"):
        Comparison.from_json(bad)
    newer = json.loads(_comparison().to_json())
    newer["schema_version"] = 99
    with pytest.raises(SchemaVersionError, match="newer"):
        Comparison.from_json(json.dumps(newer))


def test_csv_has_exact_column_keys(tmp_path):
    text = _comparison().to_csv(tmp_path / "c.csv")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == [*COLUMNS, "my_metric"]
    assert rows[1][rows[0].index("shape_bench")] == "[2,3]"
    assert rows[2][rows[0].index("verdict")] == "error"
    assert (tmp_path / "c.csv").read_text(encoding="utf-8") == text


def test_excel_has_frozen_header_and_coloured_verdicts(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    path = _comparison().to_excel(tmp_path / "c.xlsx")
    wb = openpyxl.load_workbook(path)
    ws = wb["rows"]
    assert ws.freeze_panes == "A2"
    header = [c.value for c in ws[1]]
    assert header[: len(COLUMNS)] == list(COLUMNS)
    col = header.index("verdict") + 1
    assert ws.cell(row=3, column=col).value == "error"
    assert ws.cell(row=3, column=col).fill.start_color.rgb.endswith("FFC7CE")
    assert "first divergence" in "\n".join(str(c.value) for c in wb["summary"]["A"])


def test_summary_html_and_node_data():
    c = _comparison()
    text = c.summary()
    assert "first divergence: aten.relu.default [forward] output.0 in M.act" in text
    assert "scale-error" in text
    html = c.to_html()
    assert "<table>" in html
    assert "target é" in html
    assert "<script>" in html
    node = json.loads(c.to_node_data())
    assert node["results"]["M.act"]["value"] == pytest.approx(50.0)


def test_counts_and_verdict_validation():
    c = _comparison()
    assert c.counts == {"pass": 1, "warning": 1, "error": 1, "one_sided": 0, "unmatched": 1}
    assert not c.agrees
    with pytest.raises(UsageError, match="Verdict 'fail'"):
        Verdict("fail", "nope")


def test_summary_groups_one_sided_ops_instead_of_listing_them_as_offenders():
    casts = [
        OpComparison(
            index=i,
            op="aten._to_copy.default",
            module_path="M.fc",
            direction="forward",
            tensor=tensor,
            shape_target=(2, 2),
            dtype_target="bfloat16",
            verdict="warning",
            reason="Op only in target.",
            match="unmatched",
        )
        for i in range(3)
        for tensor in ("input.0", "output.0")
    ]
    measured = OpComparison(
        index=9,
        op="aten.mm.default",
        module_path="M.fc",
        direction="forward",
        tensor="output.0",
        shape_bench=(2, 2),
        shape_target=(2, 2),
        verdict="warning",
        reason="inherited",
        error=0.1,
        budget=1.0,
    )
    text = Comparison("b", "t", rows=(*casts, measured)).summary()
    assert "by design):\n  3 x aten._to_copy.default only in target" in text
    assert "warning 1  error 0  one-sided 6  (unmatched 0;" in text  # casts apart from warnings
    offenders = text.split("top offenders:\n")[1].split("\n")[0]
    assert "aten.mm.default" in offenders
    assert "_to_copy" not in text.split("top offenders:")[1].split("only on one side")[0]


def test_evolve_is_dataclasses_replace():
    import dataclasses

    row = _comparison().rows[0]
    changes = {"mode": "tensor", "cosine": 0.5, "custom": {"m": 1.0}, "reason": "r"}
    fast = row.evolve(**changes)
    assert fast == dataclasses.replace(row, **changes)
    assert type(fast) is OpComparison
    assert row.cosine == 0.9999  # the original is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.cosine = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError, match="no field 'cosin'"):
        row.evolve(cosin=1.0)


def test_new_row_is_the_constructor():
    import dataclasses

    ident = {"index": 3, "op": "aten.mm.default", "module_path": "M", "direction": "forward"}
    values = {**ident, "tensor": "output.0", "mode": "statistics", "cosine": 0.5, "rank": 2}
    fast, slow = new_row(**values), OpComparison(**values)
    assert fast == slow
    assert list(vars(fast)) == list(vars(slow))  # the same fields, in field order
    assert fast.custom == {}
    assert fast.custom is not new_row(**values).custom
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.cosine = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError, match="no field 'cosin'"):
        new_row(**values, cosin=1.0)
    with pytest.raises(TypeError, match="required field 'tensor'"):
        new_row(**ident)


def test_csv_rows_with_different_custom_metrics():
    """A row without another row's custom metric gets an empty cell, not an error."""
    base = _comparison()
    rows = (
        *base.rows,
        OpComparison(3, "aten.add.Tensor", "M", "forward", "output.0", custom={"other": 0.25}),
    )
    comparison = Comparison("a", "b", rows, metrics=METRIC_COLUMNS)
    table = list(csv.DictReader(io.StringIO(comparison.to_csv())))
    assert [r["my_metric"] for r in table] == ["", "2.0", "", ""]
    assert [r["other"] for r in table] == ["", "", "", "0.25"]
    assert table[0]["max_abs_err"] == "inf"
    assert table[0]["kl_div"] == "nan"
    assert table[0]["shape_bench"] == "[2,3]"


def test_json_text_is_the_same_document_at_every_indent():
    rows = (
        OpComparison(0, "aten.add.Tensor", "m", "forward", "output.0", shape_bench=(2, 3)),
        OpComparison(1, "aten.mul.Tensor", "m", "forward", "output.0", cosine=math.inf),
        OpComparison(2, "aten.mul.Tensor", "m", "forward", "input.0", mae=0.5, custom={"k": 1.0}),
    )
    c = Comparison("a", "b", rows)
    docs = [json.loads(c.to_json(indent=i)) for i in (None, 1, 4)]
    assert docs[0] == docs[1] == docs[2] == json.loads(json.dumps(c.to_dict()))
    assert docs[0]["rows"][0]["shape_bench"] == [2, 3]
    assert docs[0]["rows"][1]["cosine"] == "inf"  # the encoder's refusal: spelled as text
    assert docs[0]["rows"][2]["k"] == 1.0
    lines = c.to_json(indent=1).splitlines()
    assert sum(line.lstrip().startswith('{"index": ') for line in lines) == 3  # a row a line
    assert json.loads(Comparison("a", "b", ()).to_json(indent=None))["rows"] == []
    assert "rows" not in c.to_dict(rows=False)


def test_metric_values_are_one_mapping_keyed_by_the_kernel_keys():
    from tensorsight.compare.metrics.kernel import KERNEL_KEYS

    values = {k: float(i) for i, k in enumerate(KERNEL_KEYS)}
    row = OpComparison(0, "aten.mm.default", "M", "forward", "output.0", metrics=values)
    assert dict(row.metrics) == values
    for key in KERNEL_KEYS:  # every kernel key is an attribute, made from the table
        assert getattr(row, key.replace("-", "_")) == values[key] == row.get(key)
    # by attribute name, or as None (not computed: no key), the same row
    by_attr = OpComparison(0, "aten.mm.default", "M", "forward", "output.0", within_1e_3=0.5,
                           cosine=None)  # fmt: skip
    assert by_attr.metrics == {"within_1e-3": 0.5}
    assert by_attr == new_row(index=0, op="aten.mm.default", module_path="M",
                              direction="forward", tensor="output.0",
                              metrics={"within_1e-3": 0.5, "cosine": None})  # fmt: skip
    assert by_attr.evolve(cosine=1.0).metrics == {"within_1e-3": 0.5, "cosine": 1.0}
    assert by_attr.evolve(within_1e_3=None).metrics == {}
    assert by_attr.metrics == {"within_1e-3": 0.5}  # the original is untouched
    unmatched = OpComparison(1, "aten.add.Tensor", "M", "forward", "output.0")
    assert unmatched.metrics == {}
    assert unmatched.cosine is None
    # the JSON row holds every metric column, in COLUMNS order, and reads back equal
    c = Comparison("a", "b", (row, by_attr, unmatched), metrics=KERNEL_KEYS)
    doc = json.loads(c.to_json())
    assert list(doc["rows"][1]) == list(COLUMNS)
    assert doc["rows"][1]["within_1e-3"] == 0.5
    assert doc["rows"][1]["cosine"] is None
    assert Comparison.from_json(c.to_json()) == c
