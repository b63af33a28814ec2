"""MindSpore's own Dump folders, read without MindSpore (issue 25).

``data/mindspore/fp32`` and ``data/mindspore/ln_eps`` are real MindSpore 2.10.0 graph-mode
Dumps (CPU, ``saved_data: tensor``) of one training step of ``data/make_mindspore_dump.py``'s
MLP (Dense, LayerNorm, GELU, Dense; MSE loss; SGD); ``ln_eps`` has the planted bug LayerNorm
epsilon 1e-1 instead of 1e-5.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tensorsight.compare import compare
from tensorsight.dumpformat import read_dump
from tensorsight.dumpformat.mindspore import scope_of
from tensorsight.errors import CompareError, DumpFormatError

DATA = Path(__file__).parent / "data" / "mindspore"
FP32 = DATA / "fp32"
LN_EPS = DATA / "ln_eps"
RANK = "rank_0"
TENSORS = Path(RANK) / "MLP" / "0" / "0"
ORDER = Path(RANK) / "execution_order" / "ms_execution_order_graph_0.csv"
SCOPE = "Default/network-WithLossCell/_backbone-MLP"
LAYER_NORM = f"{SCOPE}/norm-LayerNorm/LayerNorm-op0"


def _order() -> list[str]:
    lines = (FP32 / ORDER).read_text().splitlines()
    return [line for line in lines[1:] if line]


def _files() -> list[str]:
    return sorted((FP32 / TENSORS).iterdir())


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    dst = tmp_path / "fp32"
    shutil.copytree(FP32, dst)
    return dst


# ---------------------------------------------------------------- reading


def test_layout_format_and_one_step() -> None:
    dump = read_dump(FP32)
    assert dump.format == "mindspore"
    assert dump.ranks == [0]
    assert dump.steps() == [0]
    assert dump.manifest() is None
    assert dump.complete
    # a rank's folder opens too
    assert read_dump(FP32 / RANK).format == "mindspore"


def test_ops_follow_the_execution_order_file() -> None:
    step = read_dump(FP32).step()
    files = _files()
    kernels = {f.name.split(".")[1] for f in files if not f.name.startswith("Parameter.")}
    params = {f.name.split(".")[1] for f in files if f.name.startswith("Parameter.")}
    ops = step.ops
    # one op per kernel with files, then one per parameter file
    assert len(ops) == len(kernels) + len(params)
    assert len(step.rows) == len(files)
    kernel_ops = [op.op for op in ops if not op.op.startswith("Parameter.")]
    order = _order()
    assert len(kernel_ops) == len(order)
    # every kernel but MindSpore's renumbered AddN is named and placed as in the order file
    differ = [(a, b) for a, b in zip(order, kernel_ops, strict=True) if a != b]
    assert differ == [(f"Gradients/{SCOPE}/norm-LayerNorm/AddN-op1",
                       f"Gradients/{SCOPE}/norm-LayerNorm/AddN-op0")]  # fmt: skip
    assert [op.index for op in ops] == list(range(len(ops)))
    assert {op.op for op in ops[len(kernel_ops) :]} == {f"Parameter.{p}" for p in params}


def test_module_paths_and_directions_from_the_scopes() -> None:
    ops = read_dump(FP32).step().ops
    by_name = {op.op: op for op in ops}
    ln = by_name[LAYER_NORM]
    assert (ln.direction, ln.module_path) == ("forward", "MLP.norm")
    grad = by_name[f"Gradients/{SCOPE}/norm-LayerNorm/Grad_LayerNorm/LayerNormGrad-op0"]
    assert (grad.direction, grad.module_path) == ("backward", "MLP.norm")
    assert by_name[f"{SCOPE}/fc1-Dense/MatMul-op0"].module_path == "MLP.fc1"
    assert by_name["Default/network-WithLossCell/_loss_fn-MSELoss/Sub-op0"].module_path == (
        "MSELoss"
    )
    assert by_name["Default/optimizer-SGD/SGD-op0"].module_path == "optimizer"
    assert by_name["Expand/_Muls/Mul-op0"].module_path == ""
    # every kernel under Gradients/ is backward, every other one forward
    for op in ops:
        assert (op.direction == "backward") == op.op.startswith("Gradients/"), op.op
    counts = Counter(op.module_path for op in ops if op.direction == "forward")
    assert counts["MLP.act"] == 5  # GELU: Div, Erf, Add, Mul, Mul
    assert counts["MLP.fc1"] == counts["MLP.fc2"] == 2  # MatMul + BiasAdd


def test_scope_of_without_wrappers_and_outside_cells() -> None:
    assert scope_of("Default/fc1-Dense/MatMul-op0") == ("forward", "fc1")
    assert scope_of("Default/layers-SequentialCell/0-Dense/MatMul-op3") == (
        "forward",
        "layers.0",
    )
    assert scope_of("Gradients/Default/net-TrainOneStepCell/network-WithLossCell/"
                    "_backbone-Net/blocks-CellList/1-Block/Grad_Add/Add-op1") == (
        "backward", "Net.blocks.1")  # fmt: skip
    assert scope_of("Default/MatMul-op0") == ("forward", "")
    assert scope_of("Expand/_Muls/Mul-op0") == ("forward", "")


def test_tensors_shapes_dtypes_and_values_equal_numpy_load() -> None:
    step = read_dump(FP32).step()
    try:
        seen = 0
        for row in step.rows:
            assert row.data is not None
            assert step.has_data(row)
            file = FP32 / RANK / row.data
            ref = np.load(file, allow_pickle=False)
            assert row.shape == ref.shape
            assert row.dtype == str(ref.dtype)  # the fixture holds no dtype numpy lacks
            assert row.dtype == file.name.split(".")[-2].lower()
            assert row.tensor == ".".join(file.name.split(".")[-5:-3])
            assert row.device == "cpu"
            assert row.stats is None  # MindSpore stores none: a comparison reads the tensors
            got = step.load(row)
            assert not got.flags.writeable  # memory-mapped, read-only
            np.testing.assert_array_equal(got, ref)
            seen += 1
        assert seen == len(_files())
    finally:
        step.close()
    ln = next(op for op in step.ops if op.op == LAYER_NORM)
    assert [t.tensor for t in ln.tensors] == [
        *(f"input.{i}" for i in range(6)), "output.0", "output.1", "output.2"
    ]  # fmt: skip
    assert [t.shape for t in ln.tensors][:3] == [(2, 8), (8,), (8,)]


def test_the_planted_epsilon_is_in_the_layer_norm_inputs() -> None:
    """The two fixtures differ in what was planted: LayerNorm's epsilon is its input.5."""
    values = []
    for path in (FP32, LN_EPS):
        step = read_dump(path).step()
        ln = next(op for op in step.ops if op.op == LAYER_NORM)
        eps = next(t for t in ln.tensors if t.tensor == "input.5")
        values.append(float(step.load(eps)))
        step.close()
    assert values == pytest.approx([1e-5, 1e-1], rel=1e-6)


# ---------------------------------------------------------------- comparing


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    src = str(Path(__file__).parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "tensorsight", "compare", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, check=False)


def test_compare_cli_same_run_agrees(tmp_path: Path) -> None:
    out = _cli(str(FP32), str(FP32), "-o", str(tmp_path / "r"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "the runs agree" in out.stdout


def test_compare_cli_names_the_layer_norm_as_first_divergence(tmp_path: Path) -> None:
    out = _cli(str(FP32), str(LN_EPS), "-o", str(tmp_path / "r"), cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert f"first divergence: {LAYER_NORM} [forward]" in out.stdout
    assert "in MLP.norm" in out.stdout


def test_compare_api_pairs_every_tensor() -> None:
    result = compare(FP32, LN_EPS)
    assert all(r.match != "unmatched" for r in result.rows)
    assert len(result.rows) == len(_files())
    first = result.first_divergence
    assert first is not None
    assert (first.op, first.module_path, first.direction) == (LAYER_NORM, "MLP.norm", "forward")
    before = [r for r in result.rows if r.direction == "forward" and r.index < first.index]
    assert before
    assert all(r.verdict == "pass" for r in before)
    assert compare(FP32, FP32).first_divergence is None


def test_compare_against_another_format_is_refused() -> None:
    msprobe = Path(__file__).parent / "data" / "msprobe" / "md5_L0"
    with pytest.raises(CompareError, match="MindSpore Dump pairs only with another"):
        compare(FP32, msprobe)


# ---------------------------------------------------------------- malformed files


def _read_all(path: Path) -> int:
    step = read_dump(path).step()
    try:
        for row in step.rows:
            step.load(row)
        return len(step.rows)
    finally:
        step.close()


def _one_line_error(path: Path, match: str) -> str:
    with pytest.raises(DumpFormatError, match=match) as info:
        _read_all(path)
    text = str(info.value)
    assert "\n" not in text
    return text


def _tensor(folder: Path, prefix: str) -> Path:
    return next(f for f in sorted((folder / TENSORS).iterdir()) if f.name.startswith(prefix))


def test_truncated_npy(copy: Path) -> None:
    file = _tensor(copy, "LayerNorm.")
    data = file.read_bytes()
    file.write_bytes(data[:-3])
    _one_line_error(copy, rf"{file.name}.*cut off")
    file.write_bytes(data[:40])  # inside the header
    _one_line_error(copy, rf"{file.name}.*header of \d+ bytes in a file of 40")


def test_bad_npy_headers(copy: Path) -> None:
    file = _tensor(copy, "MatMul.")
    data = file.read_bytes()
    start = 10
    (length,) = struct.unpack("<H", data[8:10])
    body = data[start + length :]

    def with_header(text: str) -> None:
        raw = text.encode("latin1")
        raw += b" " * (-(start + len(raw) + 1) % 64) + b"\n"
        file.write_bytes(data[:8] + struct.pack("<H", len(raw)) + raw + body)

    file.write_bytes(b"not a numpy file at all" + body)
    _one_line_error(copy, "no NUMPY magic")
    with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,4), }} oops")
    _one_line_error(copy, "unreadable .npy header")
    with_header("[1, 2, 3]")
    _one_line_error(copy, r"the header is a list of 3")
    with_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,4), }")
    _one_line_error(copy, "holds object. Expected an array of numbers")
    with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,-4), }")
    _one_line_error(copy, r"shape\[1\] is an int \(-4\)")
    with_header("{'descr': '<f4', 'fortran_order': 'no', 'shape': (2,4), }")
    _one_line_error(copy, "fortran_order is a string")
    file.write_bytes(data[:6] + b"\x07\x00" + data[8:])
    _one_line_error(copy, "version 7")


def test_huge_shape_in_header_allocates_nothing(copy: Path) -> None:
    file = _tensor(copy, "BiasAdd.")
    data = file.read_bytes()
    (length,) = struct.unpack("<H", data[8:10])
    header = data[10 : 10 + length].decode("latin1")
    for shape in ("(1099511627776, 1099511627776)", "(4294967296, 1024)"):
        new = header.replace(header[header.index("(") : header.index(")") + 1], shape)
        raw = new.encode("latin1")
        file.write_bytes(data[:8] + struct.pack("<H", len(raw)) + raw + data[10 + length :])
        # no mapping or array is made: the header's size is checked against the file first
        _one_line_error(copy, r"(cut off|more than 2\*\*63 elements)")


def test_missing_execution_order_file(copy: Path) -> None:
    (copy / ORDER).unlink()
    text = _one_line_error(copy, "ms_execution_order_graph_0.csv': missing")
    assert "copy the whole rank_<R> folder" in text


def test_damaged_execution_order_file(copy: Path) -> None:
    (copy / ORDER).write_bytes(b"NodeExecutionOrder-FullNameWithScope\n\xff\xfe\n")
    _one_line_error(copy, "not UTF-8 text")
    (copy / ORDER).write_text("NodeExecutionOrder-FullNameWithScope\n" + "x" * 5000 + "\n")
    _one_line_error(copy, "line 2 is 5000 characters")


def test_kernels_missing_from_the_order_file_come_after_it(copy: Path) -> None:
    order = _order()
    (copy / ORDER).write_text("NodeExecutionOrder-FullNameWithScope\n" + "\n".join(order[1:]))
    ops = read_dump(copy).step().ops
    kernel_ops = [op for op in ops if not op.op.startswith("Parameter.")]
    assert len(kernel_ops) == len(order)
    last = kernel_ops[-1]  # known by its file name only: direction yes, module path no
    assert last.op == order[0].replace("/", "_")
    assert (last.direction, last.module_path) == ("forward", "")


def test_unknown_file_name_and_stray_files(copy: Path) -> None:
    folder = copy / TENSORS
    (folder / "notes.txt").write_text("ignored")  # not a tensor file
    assert _read_all(copy) == len(_files())
    shutil.copy(_tensor(copy, "Erf."), folder / "renamed.npy")
    _one_line_error(copy, "file name 'renamed.npy' is not MindSpore's")


def test_not_a_dump(tmp_path: Path) -> None:
    (tmp_path / "rank_0").mkdir()  # no execution_order/ or .dump_metadata/
    with pytest.raises(DumpFormatError, match=r"rank_<R>/execution_order/ \(MindSpore\)"):
        read_dump(tmp_path)


def test_inspect_summarises_the_dump() -> None:
    from tensorsight.dumpformat.inspect import format_inspection, inspect_dump
    from tensorsight.summary.cli import is_dump_folder

    assert is_dump_folder(str(FP32))
    ins = inspect_dump(FP32)
    ops = read_dump(FP32).step().ops
    (s,) = ins.steps
    assert ins.format == "mindspore"
    assert (s.op_count, s.tensor_count, s.stored_tensors) == (
        len(ops),
        len(_files()),
        len(_files()),
    )
    assert s.backward_ops == sum(op.op.startswith("Gradients/") for op in ops)
    assert s.with_stats == 0
    assert "no statistics stored: NaN/Inf not counted" in format_inspection(ins)


def test_bfloat16_and_float16_tensors() -> None:
    """MindSpore writes bfloat16 .npy files with the descr '<E2' (numpy has no bfloat16)."""
    step = read_dump(DATA / "casts").step()
    try:
        # the order file numbers the Casts op4-op7, their files op0-op3: paired in order
        kernels = [op for op in step.ops if not op.op.startswith("Parameter.")]
        assert [op.op for op in kernels] == [
            f"Default/{k}" for k in ("Cast-op0", "Mul-op0", "Cast-op1", "Cast-op2", "Add-op0",
                                     "Cast-op3", "Add-op1")
        ]  # fmt: skip
        casts = [(op.tensors[0].dtype, op.tensors[-1].dtype) for op in kernels if "Cast" in op.op]
        assert casts == [("float32", "bfloat16"), ("bfloat16", "float32"),
                         ("float32", "float16"), ("float16", "float32")]  # fmt: skip
        ops = {op.op.rpartition("/")[2]: op for op in step.ops}
        to_bf16, from_bf16 = ops["Cast-op0"], ops["Cast-op1"]
        bf16_out = to_bf16.tensors[-1]
        assert (bf16_out.tensor, bf16_out.dtype, bf16_out.shape) == ("output.0", "bfloat16", (2, 3))
        raw = step.load_raw(bf16_out)
        assert (raw.bits.dtype, raw.dtype) == (np.uint16, "bfloat16")
        # bfloat16 loads as float32, exactly: the Cast back to float32 wrote the same values
        back = from_bf16.tensors[-1]
        assert back.dtype == "float32"
        np.testing.assert_array_equal(step.load(from_bf16.tensors[0]), step.load(back))
        x = step.load(to_bf16.tensors[0])
        assert np.abs(step.load(bf16_out) - x).max() <= np.abs(x).max() * 2**-8
        assert step.load(bf16_out).dtype == np.float32
        half = next(t for op in step.ops for t in op.tensors if t.dtype == "float16")
        file = DATA / "casts" / RANK / str(half.data)
        np.testing.assert_array_equal(step.load(half), np.load(file, allow_pickle=False))
        assert step.load(half).dtype == np.float16
    finally:
        step.close()


def test_iterations_are_steps(copy: Path) -> None:
    """``iteration: all`` writes <net>/<graph>/<iteration>/ per step (as a two-step run does)."""
    shutil.copytree(copy / TENSORS, copy / TENSORS.parent / "1")
    dump = read_dump(copy)
    assert dump.steps() == [0, 1]
    one = dump.step(step=1)
    assert len(one.ops) == len(read_dump(FP32).step().ops)
    assert all(str(r.data).startswith("MLP/0/1/") for r in one.rows)
    with pytest.raises(DumpFormatError, match="has no step 2"):
        dump.step(step=2)


def test_a_kernel_run_twice_is_two_ops(copy: Path) -> None:
    """Files of one kernel with the same tensor twice (a loop in the graph) are two executions."""
    folder = copy / TENSORS
    for f in sorted(folder.glob("Erf.*")):
        parts = f.name.split(".")
        at = next(i for i, p in enumerate(parts) if p in ("input", "output"))
        parts[at - 1] = str(int(parts[at - 1]) + 10**9)  # a later timestamp
        shutil.copy(f, folder / ".".join(parts))
    ops = read_dump(copy).step().ops
    erf = [i for i, op in enumerate(ops) if op.op.endswith("/Erf-op0")]
    assert len(erf) == 2
    assert erf[1] == erf[0] + 1
    assert [t.tensor for t in ops[erf[1]].tensors] == ["input.0", "output.0"]
