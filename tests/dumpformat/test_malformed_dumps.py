"""Malformed dumps give one line naming file, place and expectation (issue 20, item 5).

Each case is a small damage to a real file; the API raises DumpFormatError (or
SchemaVersionError) and ``tensorsight inspect`` / ``tensorsight compare`` print one
``error: <file>: <what>. Expected ...`` line and exit 2, where they crashed with a traceback
(AttributeError, TypeError, ValueError, RecursionError, OverflowError) before.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

import tensorsight
from tensorsight.capture import read_dump
from tensorsight.cli import main
from tensorsight.dumpformat._safetensors import MAX_HEADER_BYTES
from tensorsight.errors import DumpFormatError

torch = pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "msprobe"
FIRST = "Functional.linear.0.forward"


def read_all(path: Path) -> None:
    dump = read_dump(path)
    for r in dump.ranks:
        dump.manifest(r)
    for step in dump.iter_steps():
        for row in step.rows:
            if step.has_data(row):
                step.load(row)
        step.close()


def one_line_exit_2(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


@pytest.fixture
def msprobe(tmp_path) -> tuple[Path, Path]:
    """A copy of the tensor_L1 msprobe dump and its dump.json."""
    shutil.copytree(DATA / "tensor_L1", tmp_path / "ms")
    (file,) = (tmp_path / "ms").rglob("dump.json")
    return tmp_path / "ms", file


def _edit(file: Path, change: Any) -> None:
    raw = json.loads(file.read_text())
    change(raw["data"][FIRST])
    file.write_text(json.dumps(raw))


def _set(key: str, value: Any, *, arg: int | None = None) -> Any:
    def change(entry: dict[str, Any]) -> None:
        (entry if arg is None else entry["input_args"][arg])[key] = value

    return change


MSPROBE_CASES = [
    ("kwargs_list", _set("input_kwargs", [1, 2]), "input_kwargs is a list of 2", "an object"),
    ("parameters_list", _set("parameters", [{}]), "parameters is a list of 1", "an object"),
    ("shape_int", _set("shape", 3, arg=0), "input_args[0].shape is an int (3)", "non-negative"),
    ("shape_str", _set("shape", "3,4", arg=0), "shape is a string ('3,4')", "non-negative"),
    ("shape_null", _set("shape", [3, None], arg=0), "shape[1] is null", "non-negative"),
    ("shape_negative", _set("shape", [-3, 4], arg=0), "shape[0] is an int (-3)", "non-negative"),
    ("shape_huge", _set("shape", [2**40, 2**40], arg=0), "more than 2**63 elements", "int64"),
    ("dtype_list", _set("dtype", ["f"], arg=0), "input_args[0].dtype is a list", "a string"),
    ("max_overflows", _set("Max", 10**400, arg=0), "input_args[0].Max is an int", "float64"),
    ("data_name_int", _set("data_name", 7, arg=0), "data_name is an int (7)", "a string"),
    ("output_int", _set("output", 7), "output is an int (7)", "a list or an object"),
]


@pytest.mark.parametrize(("change", "where", "expected"), [c[1:] for c in MSPROBE_CASES],
                         ids=[c[0] for c in MSPROBE_CASES])  # fmt: skip
def test_malformed_msprobe_entries_name_the_place(msprobe, capsys, change, where, expected):
    folder, file = msprobe
    read_all(folder)  # healthy first
    _edit(file, change)
    with pytest.raises(DumpFormatError) as info:
        read_all(folder)
    msg = str(info.value)
    assert msg.startswith(f"msprobe file {str(file)!r}: data['{FIRST}'].")
    assert where in msg
    assert f"Expected {expected}" in msg or expected in msg.split("Expected", 1)[1]
    err = one_line_exit_2(capsys, "inspect", str(folder))
    assert where in err


def test_deep_nesting_and_a_top_level_list_are_format_errors(msprobe, capsys):
    folder, file = msprobe
    text = file.read_text()
    file.write_text(
        text.replace('"input_args": [', '"input_args": [' + "[" * 100_000 + "]" * 100_000 + ",", 1)
    )
    with pytest.raises(DumpFormatError, match="nested too deeply"):
        read_all(folder)
    # nesting the parser takes but msprobe never writes
    file.write_text(
        text.replace('"input_args": [', '"input_args": [' + "[" * 200 + "]" * 200 + ",", 1)
    )
    with pytest.raises(
        DumpFormatError, match=r"input_args\[0\]\[0\].* nests lists more than 32 deep"
    ):
        read_all(folder)
    file.write_text("[1, 2]")
    err = one_line_exit_2(capsys, "inspect", str(folder))
    assert "dump.json': it holds a list of 2. Expected msprobe's dump.json" in err


def test_compare_of_a_malformed_msprobe_dump_is_one_line(msprobe, tmp_path, capsys):
    folder, file = msprobe
    shutil.copytree(folder, tmp_path / "bench")
    _edit(file, _set("input_kwargs", [1]))
    err = one_line_exit_2(capsys, "compare", str(tmp_path / "bench"), str(folder), "-q")
    assert str(file) in err
    assert "input_kwargs is a list of 1" in err


def test_construct_json_with_wrong_types(msprobe):
    folder, file = msprobe
    construct = file.with_name("construct.json")
    construct.write_text(json.dumps({FIRST: 5}))
    with pytest.raises(
        DumpFormatError, match=r"construct.json': \['Functional.linear.0.forward'\] is an int"
    ):
        read_all(folder)


def test_the_json_size_limit_is_checked_before_reading(msprobe, monkeypatch):
    folder, file = msprobe
    monkeypatch.setenv("TENSORSIGHT_MAX_JSON_MIB", "1")
    file.write_bytes(file.read_bytes() + b" " * (1 << 20))
    with pytest.raises(DumpFormatError, match="over the limit of 1 MiB"):
        read_all(folder)


# ---------------------------------------------------------------- own dumps


@pytest.fixture
def own(tmp_path) -> Path:
    with tensorsight.dump(tmp_path / "d", mode="tensor") as d:
        torch.relu(torch.arange(-3.0, 3.0)) * 2
        d.step()
    read_all(tmp_path / "d")
    return tmp_path / "d"


def _shard(own: Path) -> tuple[Path, dict[str, Any], bytes]:
    (file,) = own.rglob("*.safetensors")
    data = file.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    return file, json.loads(data[8 : 8 + n]), data[8 + n :]


def _write_shard(file: Path, header: Any, body: bytes) -> None:
    blob = json.dumps(header).encode()
    file.write_bytes(struct.pack("<Q", len(blob)) + blob + body)


def _first_key(header: dict[str, Any]) -> str:
    return next(k for k in header if k != "__metadata__")


def test_safetensors_header_of_the_wrong_shape(own, capsys):
    file, header, body = _shard(own)
    key = _first_key(header)
    cases: list[tuple[Any, str]] = [
        ([1, 2], "the header is a list of 2. Expected an object of tensor entries"),
        ({**header, key: 5}, f"tensor {key!r} is an int (5). Expected an object"),
        ({**header, key: {**header[key], "dtype": ["F32"]}}, "dtype is a list of 1"),
        ({**header, key: {**header[key], "shape": "6"}}, "shape is a string"),
        ({**header, key: {**header[key], "data_offsets": [0, 1 << 40]}}, "is cut off"),
        (
            {**header, key: {**header[key], "data_offsets": [-8, 0]}},
            "data_offsets[0] is an int (-8)",
        ),
        ({**header, key: {**header[key], "data_offsets": [0, 4]}}, "hold 4 bytes. Expected"),
        (
            {**header, "__metadata__": {"a": 1}},
            "'__metadata__' is an object. Expected an object of strings",
        ),
    ]
    for bad, what in cases:
        _write_shard(file, bad, body)
        with pytest.raises(DumpFormatError) as info:
            read_all(own)
        assert str(info.value).startswith(f"Tensor shard {str(file)!r}: ")
        assert what in str(info.value)
    err = one_line_exit_2(capsys, "compare", str(own), str(own), "-q")
    assert "Tensor shard" in err


def test_a_huge_header_length_is_refused_before_reading(own):
    file, _, _ = _shard(own)
    data = bytearray(file.read_bytes())
    data[:8] = struct.pack("<Q", MAX_HEADER_BYTES + 1)
    file.write_bytes(bytes(data))
    with pytest.raises(DumpFormatError, match="at most 100000000"):
        read_all(own)


def test_every_flipped_byte_of_the_op_table_reads_or_is_one_error(own):
    """Exhaustive over the file: each byte inverted in turn (a pyarrow OSError or
    ArrowNotImplementedError escaped before)."""
    (file,) = own.rglob("ops.parquet")
    data = file.read_bytes()
    outcomes = {"read": 0, "refused": 0}
    messages = []
    for i in range(0, len(data), 3):
        bad = bytearray(data)
        bad[i] ^= 0xFF
        file.write_bytes(bytes(bad))
        try:
            read_all(own)
            outcomes["read"] += 1
        except DumpFormatError as exc:
            messages.append(str(exc))
            outcomes["refused"] += 1
    assert all(m.startswith("Op table ") for m in messages), messages
    assert not [m for m in messages if "\n" in m]
    assert outcomes["refused"] > 0
    assert outcomes["read"] > 0


def test_op_table_rows_of_the_wrong_type(own):
    """A table whose columns have other types (written by another tool) is named, column and all."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (file,) = own.rglob("ops.parquet")
    table = pq.read_table(file)
    bad = table.set_column(
        table.schema.get_field_index("shape"), "shape", pa.array(["6"] * len(table))
    )
    pq.write_table(bad, file)
    with pytest.raises(
        DumpFormatError, match=r"column 'shape' is string. Expected list<item: int64>"
    ):
        read_all(own)
    pq.write_table(table.drop_columns(["op"]), file)
    with pytest.raises(DumpFormatError, match="no column 'op'"):
        read_all(own)
    rows = table.to_pylist()
    rows[0]["direction"] = "sideways"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), file)
    with pytest.raises(
        DumpFormatError, match=r"row 0.direction is 'sideways'. Expected one of forward, backward"
    ):
        read_all(own)


def test_log_lines_that_are_not_objects(own):
    (file,) = own.rglob("ops.parquet")
    log = file.with_name("ops.jsonl")
    file.unlink()
    log.write_text('[1, 2]\n{"index": 0}\n')
    with pytest.raises(DumpFormatError, match="line 1 is a JSON list"):
        read_all(own)
    log.write_text(
        '{"index": 0, "op": "x", "direction": "forward", "tensor": "t", "shape": 3, "dtype": "f"}\n'
    )
    with pytest.raises(DumpFormatError, match=r"ops.jsonl': row 0.shape is an int \(3\)"):
        read_all(own)


@pytest.mark.parametrize(
    ("change", "what"),
    [
        ({"rank": "0"}, "rank is a string ('0'). Expected a non-negative integer"),
        ({"complete": "yes"}, "complete is a string ('yes'). Expected true or false"),
        ({"mode": 3}, "mode is an int (3). Expected one of statistics, tensor, md5"),
        ({"steps": 5}, "steps is an int (5). Expected a list of steps"),
        ({"steps": [[1]]}, "steps[0] is a list of 1. Expected an object"),
        ({"steps": [{"step": -1}]}, "steps[0].step is an int (-1)"),
        ({"command_line": "python x.py"}, "command_line is a string"),
        ({"extra": []}, "extra is a list of 0. Expected an object"),
        ({"world_size": 0}, "world_size is an int (0). Expected a positive integer"),
        ({"surprise": 1}, "unknown field 'surprise'"),
    ],
)
def test_manifest_with_wrong_types(own, capsys, change, what):
    file = own / "rank0" / "manifest.json"
    raw = json.loads(file.read_text())
    raw.update(change)
    file.write_text(json.dumps(raw))
    with pytest.raises(DumpFormatError) as info:
        read_all(own)
    assert str(info.value).startswith(f"Manifest {str(file)!r}: ")
    assert what in str(info.value)
    err = one_line_exit_2(capsys, "inspect", str(own))
    assert what in err


def test_a_manifest_that_is_not_utf8(own):
    file = own / "rank0" / "manifest.json"
    file.write_bytes(b"\xff\xfe{" + file.read_bytes())
    with pytest.raises(DumpFormatError, match="not valid JSON"):
        read_all(own)
