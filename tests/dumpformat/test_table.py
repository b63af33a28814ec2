"""The op table: log lines decode like json.dumps, Parquet from memory equals the log's."""

from __future__ import annotations

import json
import math

import pytest

from tensorsight.dumpformat import _table
from tensorsight.dumpformat.schema import COLUMNS

pytest.importorskip("pyarrow")

ROWS = [
    (0, "aten.addmm.default", "forward", "MLP.layers.0", "input.0", (3, 4), "float32", "cpu",
     -1.5, 2.25, 0.1, 3.0, 0, 0, 0, None, None, None, None,
     '{"self":{"tensor":"input.0"},"beta":1,"alpha":0.5}'),
    (1, "aten.mul.Tensor", "backward", "", "output.0", (), "bfloat16", "cuda:0",
     math.nan, math.nan, math.nan, math.nan, 2, 1, 0, "0badf00d", "tensors-00000.safetensors:t3",
     "MulBackward0", 'a.py:3 in f\n"quoted" \\ ünïcode', None),
    (2, "tensorsight.param_grad", "backward", "M", "grad.w", (0,), "int64", "cpu",
     -math.inf, math.inf, math.inf, math.inf, 0, 5, 7, None, None, None, None, None),
    (3, "x", "forward", "M", "input.1", (2,), "float64", "cpu",
     None, None, None, None, None, None, None, None, None, None, None, '{"eps":1e-05}'),
]  # fmt: skip


def _same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


@pytest.mark.parametrize("row", ROWS)
def test_log_lines_decode_to_the_row(row):
    line = _table.encode_line(row)
    assert line.endswith("\n")
    decoded = json.loads(line)
    assert list(decoded) == list(COLUMNS)
    reference = json.loads(json.dumps(dict(zip(COLUMNS, row, strict=True)), allow_nan=True))
    for c in COLUMNS:
        assert _same(decoded[c], reference[c]), c


def test_parquet_built_from_memory_equals_the_one_built_from_the_log(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    log = _table.StepLog(a)
    for row in ROWS:
        log.append(row)
    log.flush()
    (b / _table.LOG_NAME).write_bytes((a / _table.LOG_NAME).read_bytes())
    log.compact()  # from memory
    _table.compact(b)  # from the log, as for a step left by a crash
    assert not (a / _table.LOG_NAME).exists()
    assert not (b / _table.LOG_NAME).exists()
    got, want = _table.read_rows(a), _table.read_rows(b)
    assert len(got) == len(ROWS)
    for g, w in zip(got, want, strict=True):
        assert all(_same(g[c], w[c]) for c in COLUMNS)


def test_large_tables_are_compressed_and_empty_ones_are_written(tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.setattr(_table, "COMPRESS_ROWS", 2)
    log = _table.StepLog(tmp_path)
    for row in ROWS:
        log.append(row)
    log.compact()
    meta = pq.ParquetFile(tmp_path / _table.PARQUET_NAME).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    empty = tmp_path / "empty"
    empty.mkdir()
    _table.StepLog(empty).compact()
    assert _table.read_rows(empty) == []


def test_rows_reach_the_log_only_when_due(tmp_path, monkeypatch):
    """Lines are encoded LOG_SECS after the first pending row, not per row; a step that
    ends sooner goes straight to Parquet."""
    now = [100.0]
    monkeypatch.setattr(_table.time, "monotonic", lambda: now[0])
    log = _table.StepLog(tmp_path)
    assert log.due is None
    log.append(ROWS[0])
    log.append(ROWS[1])
    assert log.due == pytest.approx(100.0 + _table.LOG_SECS)
    assert not (tmp_path / _table.LOG_NAME).exists()  # nothing encoded, no file made yet
    log.flush()
    assert log.due is None
    lines = (tmp_path / _table.LOG_NAME).read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines == [_table.encode_line(r) for r in ROWS[:2]]
    now[0] = 200.0
    log.append(ROWS[2])
    assert log.due == pytest.approx(200.0 + _table.LOG_SECS)
    log.compact()  # the third row is never encoded: Parquet has it, the log is gone
    assert not (tmp_path / _table.LOG_NAME).exists()
    assert [r["index"] for r in _table.read_rows(tmp_path)] == [0, 1, 2]


def test_a_failed_compaction_leaves_every_row_in_the_log(tmp_path, monkeypatch):
    log = _table.StepLog(tmp_path)
    for row in ROWS:
        log.append(row)

    def full_disk(step_dir, rows=None, *, log=True):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_table, "compact", full_disk)
    with pytest.raises(OSError, match="No space"):
        log.compact()
    rows = _table.read_rows(tmp_path)  # the reader falls back to the log
    assert [r["index"] for r in rows] == [0, 1, 2, 3]


def test_a_step_that_ends_before_the_log_is_due_makes_no_log_file(tmp_path):
    """The log file is created by the first flush with rows, so a short step costs one
    file (ops.parquet) instead of three creations and a deletion."""
    log = _table.StepLog(tmp_path)
    log.flush()  # nothing to write: still no file
    assert not (tmp_path / _table.LOG_NAME).exists()
    log.append(ROWS[0])
    log.compact()
    assert sorted(p.name for p in tmp_path.iterdir()) == [_table.PARQUET_NAME]
    assert [r["index"] for r in _table.read_rows(tmp_path)] == [0]


def test_a_closed_log_takes_no_more_lines(tmp_path):
    log = _table.StepLog(tmp_path)
    log.append(ROWS[0])
    log.close()  # flushes the pending row, then closes
    assert _table.read_log(tmp_path / _table.LOG_NAME) == _table.read_rows(tmp_path)
    log.append(ROWS[1])
    log.flush()  # closed: the file is not reopened
    assert len(_table.read_rows(tmp_path)) == 1
    log.compact()  # Parquet from memory (both rows); the log it made is deleted
    assert sorted(p.name for p in tmp_path.iterdir()) == [_table.PARQUET_NAME]
    assert [r["index"] for r in _table.read_rows(tmp_path)] == [0, 1]


def _records_row_by_row(step_dir):
    from tensorsight.dumpformat.schema import TensorRecord

    rows = _table.read_rows(step_dir)
    return [TensorRecord.from_row(r, where=f"row {i}") for i, r in enumerate(rows)]


def test_records_read_column_by_column_equal_those_read_row_by_row(tmp_path):
    from tensorsight.dumpformat.schema import TensorRecord

    log = _table.StepLog(tmp_path)
    for row in ROWS:
        log.append(row)
    log.compact()
    got = TensorRecord.from_columns(_table.read_columns(tmp_path))
    want = _records_row_by_row(tmp_path)
    assert len(got) == len(ROWS)
    assert [repr(g) for g in got] == [repr(w) for w in want]  # repr: NaN statistics
    assert [list(vars(g)) for g in got] == [list(vars(w)) for w in want]
    assert got[3].stats is None
    assert got[3].module_path == "M"
    assert got[1].stats.nan_count == 2
    assert got[1].shape == ()
    assert _table.read_columns(tmp_path / "nothing") is None


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("index", -1, r"row 2.index"),
        ("direction", "sideways", r"row 2.direction is 'sideways'"),
        ("shape", [2, -3], r"row 2.shape"),
        ("nan_count", -4, r"row 2.nan_count"),
        ("op", None, r"row 2.op"),
    ],
)
def test_a_bad_value_read_column_by_column_is_named_as_row_by_row(column, value, message):
    from tensorsight.dumpformat.schema import TensorRecord
    from tensorsight.errors import DumpFormatError

    columns = {c: [v if not isinstance(v, tuple) else list(v) for v in vals]
               for c, vals in zip(COLUMNS, zip(*ROWS, strict=True), strict=True)}  # fmt: skip
    columns[column][2] = value
    with pytest.raises(DumpFormatError, match=message) as column_wise:
        TensorRecord.from_columns(columns, source="Op table t")
    rows = [dict(zip(columns, vals, strict=True)) for vals in zip(*columns.values(), strict=True)]
    TensorRecord.from_row(rows[0], source="Op table t", where="row 0")  # rows 0 and 1 are good
    TensorRecord.from_row(rows[1], source="Op table t", where="row 1")
    with pytest.raises(DumpFormatError) as row_wise:
        TensorRecord.from_row(rows[2], source="Op table t", where="row 2")
    assert str(column_wise.value) == str(row_wise.value)


def test_columns_of_unequal_length_are_refused():
    from tensorsight.dumpformat.schema import TensorRecord
    from tensorsight.errors import DumpFormatError

    with pytest.raises(DumpFormatError, match="differ in length"):
        TensorRecord.from_columns({"index": [0, 1], "op": ["x"]}, source="Op table t")
