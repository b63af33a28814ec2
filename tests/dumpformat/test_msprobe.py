"""msprobe dumps read as they are: real msprobe 26.2.0 output plus hand-written folders.

``data/msprobe/*`` was written by mindstudio-probe 26.2.0 (PrecisionDebugger, CPU, a
Linear-ReLU-Linear model, input ``torch.randn(3, 4)`` after ``manual_seed(0)``): task
statistics at level mix, statistics with summary_mode md5 at L0, tensor at L1.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tensorsight.capture import format_inspection, inspect_dump, read_dump
from tensorsight.dumpformat.msprobe import module_path_of
from tensorsight.errors import DumpFormatError


def test_statistics_mix_keeps_msprobe_names_and_finds_module_paths(msprobe_data):
    d = read_dump(msprobe_data / "statistics_mix")
    assert (d.format, d.ranks, d.steps(), d.manifest(), d.complete) == (
        "msprobe",
        [0],
        [0],
        None,
        True,
    )
    step = d.step()
    names = [r.name for r in step.rows]
    assert names[0] == "Functional.linear.0.forward.input.0"
    assert "Module.0.Linear.forward.0.parameters.weight" in names
    assert "Module.2.Linear.parameters_grad.0.weight" in names
    assert "Functional.linear.1.backward.output.2" in names
    ops = step.ops
    assert [o.op for o in ops[:2]] == ["Functional.linear.0.forward", "Module.0.Linear.forward.0"]
    by_op = {o.op: o for o in ops}
    assert by_op["Functional.linear.0.forward"].module_path == "0"  # from construct.json
    assert by_op["Functional.relu.0.backward"].module_path == "1"
    assert by_op["Functional.relu.0.backward"].direction == "backward"
    assert by_op["Tensor.sum.0.forward"].module_path == ""
    first = ops[0].tensors[0]
    assert first.stats.mean == pytest.approx(0.14186175167560577)
    assert first.shape == (3, 4)
    assert first.dtype == "float32"


def test_md5_task_gives_fingerprints(msprobe_data):
    step = read_dump(msprobe_data / "md5_L0").step()
    assert step.rows[0].name == "Module.0.Linear.forward.0.input.0"
    assert all(len(r.fingerprint) == 8 for r in step.rows)


def test_tensor_task_loads_pt_files_safely(msprobe_data):
    step = read_dump(msprobe_data / "tensor_L1").step()
    for row in step.rows:
        arr = step.load(row, dtype=np.float64)
        assert arr.shape == row.shape
        assert arr.min() == pytest.approx(row.stats.min, rel=1e-6)
        assert arr.max() == pytest.approx(row.stats.max, rel=1e-6)
        assert arr.mean() == pytest.approx(row.stats.mean, rel=1e-5, abs=1e-7)
    text = format_inspection(inspect_dump(msprobe_data / "tensor_L1"))
    assert "msprobe" in text
    assert "Functional.linear.0.forward" in text


def test_mindspore_dump_gets_dtypes_and_cell_paths(tmp_path):
    """msprobe's MindSpore dumps: ``Float32``-style dtypes, ``Cell.`` module paths (the
    entries are written as msprobe's MindSpore PrecisionDebugger lays them out)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ids = np.array([1, 2], dtype=np.int64)
    _write(
        tmp_path / "ms",
        {
            "Cell.fc1.Dense.forward.0": {
                "input_args": [_t("a.npy", x, "Float32")],
                "output": [_t("b.npy", x, "BFloat16")],
            },
            "Functional.gather.0.forward": {"input_args": [_t("c.npy", ids, "Int64")]},
        },
        {"a.npy": x, "b.npy": x, "c.npy": ids},
        framework="mindspore",
    )
    step = read_dump(tmp_path / "ms").step()
    by_op = {o.op: o for o in step.ops}
    cell = by_op["Cell.fc1.Dense.forward.0"]
    assert cell.module_path == "fc1"
    assert [t.dtype for t in cell.tensors] == ["float32", "bfloat16"]
    assert by_op["Functional.gather.0.forward"].tensors[0].dtype == "int64"
    np.testing.assert_array_equal(step.load(step.rows[0]), x)


def _write(folder, data, tensors=None, framework="pytorch"):
    folder.mkdir(parents=True)
    (folder / "dump.json").write_text(
        json.dumps({"task": "tensor", "level": "L1", "framework": framework, "data": data})
    )
    if tensors:
        (folder / "dump_tensor_data").mkdir()
        for name, value in tensors.items():
            if name.endswith(".npy"):
                np.save(folder / "dump_tensor_data" / name, value, allow_pickle=False)
            else:
                torch.save(value, folder / "dump_tensor_data" / name)


def _t(name, arr, dtype="torch.float32"):
    return {
        "type": "torch.Tensor", "dtype": dtype, "shape": list(arr.shape),
        "Max": float(arr.max()), "Min": float(arr.min()), "Mean": float(arr.mean()),
        "Norm": float(np.linalg.norm(arr)), "requires_grad": False, "data_name": name,
    }  # fmt: skip


def test_rank_folders_npy_bf16_and_nested_args(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    bf = torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16)
    for rank in (0, 1):
        _write(
            tmp_path / "step0" / f"rank{rank}",
            {
                "Torch.cat.0.forward": {
                    "input_args": [[_t("a.npy", x), _t("b.npy", x)], {"type": "int", "value": 0}],
                    "input_kwargs": {"out": None},
                    "output": [_t("c.pt", bf.float().numpy(), "torch.bfloat16")],
                }
            },
            {"a.npy": x, "b.npy": x, "c.pt": bf},
        )
    d = read_dump(tmp_path)
    assert d.ranks == [0, 1]
    step = d.step(rank=1)
    assert [r.tensor for r in step.rows] == ["input.0.0", "input.0.1", "output.0"]
    np.testing.assert_array_equal(step.load(step.rows[0]), x)
    out = step.rows[2]
    assert out.dtype == "bfloat16"
    assert step.load_raw(out).bits.dtype == np.uint16
    np.testing.assert_array_equal(step.load(out), [1.5, -2.25, 3.0])


def test_hostile_and_unsafe_tensor_files_are_refused(tmp_path):
    x = np.ones(2, dtype=np.float32)
    _write(
        tmp_path / "step0" / "proc123",
        {
            "Functional.a.0.forward": {"output": [_t("../../secret.npy", x)]},
            "Functional.b.0.forward": {"output": [_t("pickled.npy", x)]},
            "Functional.c.0.forward": {"output": [_t("evil.pt", x)]},
            "Functional.d.0.forward": {"output": [_t("gone.pt", x)]},
        },
    )
    folder = tmp_path / "step0" / "proc123" / "dump_tensor_data"
    folder.mkdir()
    np.save(folder / "pickled.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    torch.save({"not": "a tensor", "fn": print}, folder / "evil.pt")
    step = read_dump(tmp_path).step()
    rows = {r.op: r for r in step.rows}
    with pytest.raises(DumpFormatError, match=r"not a plain \.pt/\.npy file name"):
        step.load(rows["Functional.a.0.forward"])
    with pytest.raises(DumpFormatError, match=r"unreadable \.npy"):
        step.load(rows["Functional.b.0.forward"])
    with pytest.raises(DumpFormatError, match="weights_only=True"):
        step.load(rows["Functional.c.0.forward"])
    with pytest.raises(DumpFormatError, match="is missing"):
        step.load(rows["Functional.d.0.forward"])


def test_corrupt_dump_json(tmp_path):
    (tmp_path / "step0" / "rank0").mkdir(parents=True)
    (tmp_path / "step0" / "rank0" / "dump.json").write_text('{"data": [')
    with pytest.raises(DumpFormatError, match="not valid JSON"):
        read_dump(tmp_path).step().rows  # noqa: B018
    (tmp_path / "step0" / "rank0" / "dump.json").write_text('{"task": "tensor"}')
    with pytest.raises(DumpFormatError, match="no 'data' object"):
        read_dump(tmp_path).step().rows  # noqa: B018


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("Module.layers.0.Linear.forward.0", "layers.0"),
        ("Module.2.Linear.parameters_grad.0", "2"),
        ("Module.encoder.attn.MultiheadAttention.backward.3", "encoder.attn"),
        ("Functional.linear.0.forward", ""),
        ("Cell.fc1.Dense.forward.0", "fc1"),  # msprobe's MindSpore dumps
        ("Cell.blocks.0.attn.MultiHeadAttention.backward.1", "blocks.0.attn"),
        ("Cell.fc2.Dense.parameters_grad", "fc2"),
        (None, ""),
    ],
)
def test_module_path_of_msprobe_names(name, path):
    assert module_path_of(name) == path
