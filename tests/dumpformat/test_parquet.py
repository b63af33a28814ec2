"""tensorsight's small-table Parquet encoder: what pyarrow reads back is what went in."""

from __future__ import annotations

import io
import math
import random
import struct

import pytest

from tensorsight.dumpformat import _parquet, _table
from tensorsight.dumpformat.schema import COLUMNS

pq = pytest.importorskip("pyarrow.parquet")

_SCHEMA = [(c, _table._KIND.get(c, "string")) for c in COLUMNS]


def _random_rows(rng: random.Random, n: int) -> list[tuple]:
    words = ["aten.add.Tensor", "forward", "backward", "", "é✓ ü", "a\nb", "x" * 500, "\x00"]
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-310, -1.5, 3.25e300]

    def maybe(value):
        return None if rng.random() < 0.2 else value

    rows = []
    for i in range(n):
        row = []
        for _, kind in _SCHEMA:
            if kind == "int64":
                row.append(maybe(rng.choice([i, 0, -(2**63), 2**63 - 1, rng.randrange(-9, 9)])))
            elif kind == "double":
                row.append(maybe(rng.choice([*specials, rng.uniform(-1e3, 1e3)])))
            elif kind == "string":
                row.append(maybe(rng.choice(words)))
            else:
                shape = tuple(rng.randrange(0, 70000) for _ in range(rng.randrange(0, 5)))
                row.append(maybe(shape))
        rows.append(tuple(row))
    return rows


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a):
            return math.isnan(b)
        return struct.pack("<d", a) == struct.pack("<d", b)  # -0.0 is not 0.0
    return a == b


def _check(blob: bytes, rows: list[tuple]) -> None:
    got = pq.read_table(io.BytesIO(blob)).to_pylist()
    assert len(got) == len(rows)
    for want, row in zip(rows, got, strict=True):
        for (name, _), value in zip(_SCHEMA, want, strict=True):
            expected = list(value) if isinstance(value, tuple) else value
            assert _same(expected, row[name]), (name, expected, row[name])


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 137, 1000, 4095])
def test_random_tables_read_back_exactly(n):
    rows = _random_rows(random.Random(n), n)
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in _SCHEMA]
    blob = _parquet.SmallTableEncoder(_SCHEMA).encode(columns)
    _check(blob, rows)
    meta = pq.ParquetFile(io.BytesIO(blob)).metadata
    assert meta.num_rows == n
    assert meta.num_columns == len(COLUMNS)


def test_the_schema_reads_as_the_op_tables():
    blob = _parquet.SmallTableEncoder(_SCHEMA).encode([() for _ in _SCHEMA])
    schema = pq.read_table(io.BytesIO(blob)).schema
    want = _table._schema()
    assert schema.names == want.names
    for field in want:
        got = schema.field(field.name).type
        if field.name == "shape":
            assert str(got).startswith("list<")
            assert str(got.value_type) == "int64"
        else:
            assert got == field.type, field.name


def test_columns_reused_from_the_last_table_give_the_same_file_as_a_fresh_encoder():
    rng = random.Random(3)
    encoder = _parquet.SmallTableEncoder(_SCHEMA)
    first = _random_rows(rng, 50)
    encoder.encode(list(zip(*first, strict=True)))
    # the next step: the same identity columns, new statistics, one sign of zero flipped
    second = [(*r[:8], rng.uniform(-1, 1), -0.0 if r[9] == 0.0 else r[9], *r[10:]) for r in first]
    blob = encoder.encode(list(zip(*second, strict=True)))
    assert blob == _parquet.SmallTableEncoder(_SCHEMA).encode(list(zip(*second, strict=True)))
    _check(blob, second)


def test_bad_calls_are_refused():
    with pytest.raises(ValueError, match="unknown kind"):
        _parquet.SmallTableEncoder([("a", "float128")])
    encoder = _parquet.SmallTableEncoder([("a", "int64"), ("b", "string")])
    with pytest.raises(ValueError, match="Expected 2 columns"):
        encoder.encode([(1,)])
    with pytest.raises(ValueError, match="has 1 values; expected 2"):
        encoder.encode([(1, 2), ("x",)])


def test_an_independent_reader_agrees(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    rows = [r for r in _random_rows(random.Random(11), 300) if r[0] is not None]
    blob = _parquet.SmallTableEncoder(_SCHEMA).encode(list(zip(*rows, strict=True)))
    con = duckdb.connect()
    path = tmp_path / "t.parquet"
    path.write_bytes(blob)
    got = con.execute(f"select index, op, shape, min from '{path}'").fetchall()
    assert len(got) == len(rows)
    for (index, op, shape, mn), row in zip(got, rows, strict=True):
        assert index == row[0]
        assert op == row[1]
        assert shape == (None if row[5] is None else list(row[5]))
        assert _same(mn, row[8]) or (mn is None and row[8] is None)


def test_a_lone_surrogate_is_written_as_its_escape_not_as_invalid_utf8():
    schema = [("stack", "string")]
    blob = _parquet.SmallTableEncoder(schema).encode([("/home/\udcffx.py:3 in f", "ok")])
    assert pq.read_table(io.BytesIO(blob)).column("stack").to_pylist() == [
        "/home/\\udcffx.py:3 in f",
        "ok",
    ]


def test_numbers_of_the_other_python_type_are_converted():
    schema = [("n", "int64"), ("x", "double")]
    blob = _parquet.SmallTableEncoder(schema).encode([(1.0, None, 3), (1, 2, None)])
    table = pq.read_table(io.BytesIO(blob))
    assert table.column("n").to_pylist() == [1, None, 3]
    assert table.column("x").to_pylist() == [1.0, 2.0, None]
