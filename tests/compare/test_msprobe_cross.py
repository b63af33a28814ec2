"""A tensorsight dump against an msprobe dump of the same run (issue 5: any combination).

``data/msprobe_api`` is a real mindstudio-probe 26.2.0 L1 tensor dump of
``data/make_msprobe_api.py``'s model (CPU, forward and backward). The tests dump the same
model and input live with ``tensorsight.dump(level="api", mode="tensor")``.
``tests/dumpformat/data/msprobe/md5_L0`` (an msprobe L0 md5 dump of a Linear-ReLU-Linear
``Sequential``) pairs with a live ``level="module"`` dump.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import torch

import tensorsight
from tensorsight.compare import compare
from tensorsight.compare.names import call_name, rename_tensors
from tensorsight.dumpformat.schema import OpRecord, TensorRecord
from tensorsight.errors import CompareError

DATA = Path(__file__).parent / "data"
MSPROBE_API = DATA / "msprobe_api"
MSPROBE_L0 = Path(__file__).parents[1] / "dumpformat" / "data" / "msprobe" / "md5_L0"
# What a float32 op of this model may differ by between CPUs (vector width, FMA, BLAS kernel):
# a few units in the last place; a planted bug is millions.
_FP32_ULPS = 16


def _model_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_msprobe_api", DATA / "make_msprobe_api.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _dump_api(path: Path, gelu: str = "none", level: str = "api") -> Path:
    model, x = _model_module().make()
    model.gelu = gelu
    with tensorsight.dump(path, level=level, mode="tensor"):
        model(x).sum().backward()
    return path


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _dump_api(tmp_path_factory.mktemp("ours") / "api")


def test_api_dump_pairs_with_msprobe_l1_call_by_call(ours: Path) -> None:
    result = compare(MSPROBE_API, ours)
    forward = [r for r in result.rows if r.direction == "forward"]
    assert len(forward) == 22
    assert all(r.match == "name" and r.verdict == "pass" for r in forward)
    pairs = {r.op: r.op_target for r in forward}
    assert pairs == {
        "Functional.linear.0.forward": "torch.nn.functional.linear",
        "Functional.gelu.0.forward": "torch.nn.functional.gelu",
        "Tensor.t.0.forward": "torch.Tensor.t",
        "Torch.matmul.0.forward": "torch.matmul",
        "Tensor.__add__.0.forward": "torch.Tensor.add",
        "Functional.layer_norm.0.forward": "torch.nn.functional.layer_norm",
        "Tensor.softmax.0.forward": "torch.Tensor.softmax",
        "Tensor.sum.0.forward": "torch.Tensor.sum",
    }
    # Full tensors were compared. The fixture was recorded on another CPU, so even the
    # initialised weights may differ by what the vector instruction set, FMA and the BLAS
    # kernel change: a few units in the last place of float32, never more.
    assert all(r.mode == "tensor" for r in forward)
    assert all(r.max_ulp is not None and r.max_ulp <= _FP32_ULPS for r in forward), [
        (r.op, r.tensor, r.max_ulp) for r in forward
    ]
    assert result.first_divergence_row is None
    # msprobe records API backward, level api does not: unmatched, with the reason
    backward = [r for r in result.rows if r.direction == "backward"]
    assert backward
    assert all(r.match == "unmatched" for r in backward)
    assert "records the forward pass only" in backward[0].reason


def test_keyword_arguments_pair_with_msprobe_positions(ours: Path) -> None:
    """torch hands layer_norm's weight and bias to the mode as keywords; msprobe by position."""
    result = compare(ours, MSPROBE_API)
    ln = [r for r in result.rows if r.op == "torch.nn.functional.layer_norm"]
    assert [(r.tensor, r.match, r.verdict) for r in ln] == [
        ("input.0", "name", "pass"),
        ("input.weight", "name", "pass"),
        ("input.bias", "name", "pass"),
        ("output.0", "name", "pass"),
    ]
    assert ln[1].shape_target == (4,)
    backward = [r for r in result.rows if r.direction == "backward"]
    assert result.counts["unmatched"] == len(backward) > 0


def test_planted_bug_found_at_the_right_api_call(tmp_path: Path) -> None:
    buggy = _dump_api(tmp_path / "tanh", gelu="tanh")
    result = compare(MSPROBE_API, buggy)
    assert result.first_divergence_row is not None
    first = result.rows[result.first_divergence_row]
    assert (first.op, first.op_target, first.tensor) == (
        "Functional.gelu.0.forward",
        "torch.nn.functional.gelu",
        "output.0",
    )
    assert first.verdict == "error"
    # everything before the bug agrees
    before = result.rows[: result.first_divergence_row]
    assert before
    assert all(r.verdict == "pass" for r in before)


def test_module_dump_pairs_with_msprobe_l0_fingerprints_and_param_grads(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(3, 4)
    with tensorsight.dump(tmp_path / "m", level="module", mode="md5"):
        model(x).sum().backward()
    result = compare(MSPROBE_L0, tmp_path / "m")
    matched = [r for r in result.rows if r.match != "unmatched"]
    ops = {(r.op, r.op_target) for r in matched}
    assert ("Module.0.Linear.forward.0", "Linear") in ops
    assert ("Module.1.ReLU.backward.0", "ReLU") in ops
    assert ("Module.0.Linear.parameters_grad.0", "tensorsight.param_grad") in ops
    grads = [r.tensor for r in matched if r.op.endswith("parameters_grad.0")]
    assert sorted(grads) == ["grad.bias", "grad.bias", "grad.weight", "grad.weight"]
    assert len(matched) == 15
    assert all(r.mode == "md5" for r in matched)
    # msprobe fingerprinted on another CPU. The seeded input (12 elements: torch's scalar
    # normal path) is the same bits on any x86-64 CPU, which proves both sides hash alike; a
    # tensor computed in another order may differ in its last bits, which md5 cannot size,
    # so such a row must be judged as rounding, never as an error.
    first = [r for r in matched if r.op == "Module.0.Linear.forward.0" and r.tensor == "input.0"]
    assert len(first) == 1
    assert first[0].fingerprint_equal
    assert all(r.verdict == "pass" for r in matched), [
        (r.op, r.tensor, r.reason) for r in matched if r.verdict != "pass"
    ]


def test_op_level_dump_against_msprobe_names_the_level(tmp_path: Path) -> None:
    ops = _dump_api(tmp_path / "op", level="op")
    with pytest.raises(CompareError, match=r"level='api' to compare against msprobe L1") as exc:
        compare(ops, MSPROBE_API)
    assert "\n" not in str(exc.value)


def test_module_dump_against_msprobe_l1_names_the_level(tmp_path: Path) -> None:
    mod = _dump_api(tmp_path / "mod", level="module")
    with pytest.raises(CompareError, match=r"level='api' to compare against msprobe L1"):
        compare(MSPROBE_API, mod)
    with pytest.raises(CompareError, match=r"level='module' to compare against msprobe L0"):
        compare(MSPROBE_L0, _dump_api(tmp_path / "api"))


def _op(
    name: str, path: str = "", tensors: tuple[tuple[str, tuple[int, ...]], ...] = ()
) -> OpRecord:
    rows = tuple(TensorRecord(0, name, "forward", path, t, s, "float32") for t, s in tensors)
    return OpRecord(0, name, "forward", path, rows)


@pytest.mark.parametrize(
    ("fmt", "name", "path", "key"),
    [
        ("msprobe", "Tensor.__add__.3.forward", "", "Tensor.add"),
        ("tensorsight", "torch.Tensor.add", "M", "Tensor.add"),
        ("msprobe", "Tensor.__iadd__.0.forward", "", "Tensor.add_"),
        ("msprobe", "Tensor.__rmul__.0.forward", "", "Tensor.mul"),
        ("tensorsight", "torch._VF.lstm", "", "VF.lstm"),
        ("msprobe", "Module.layers.0.Linear.backward.2", "", "Module.layers.0.Linear"),
        ("tensorsight", "Linear", "Model.layers.0", "Module.layers.0.Linear"),
        ("msprobe", "Distributed.all_reduce.0.forward", "", "Distributed.all_reduce"),
        ("msprobe", "Module.layers.0.Linear.parameters_grad.0", "", "ParamGrad.layers.0"),
        ("tensorsight", "tensorsight.param_grad", "Model.layers.0", "ParamGrad.layers.0"),
    ],
)
def test_call_names_agree_across_formats(fmt: str, name: str, path: str, key: str) -> None:
    c = call_name(_op(name, path), fmt)
    assert c is not None
    assert c.key == key


@pytest.mark.parametrize("name", ["aten.mm.default", "tensorsight.observer", "Ünïcode.x", ""])
def test_names_without_counterpart(name: str) -> None:
    assert call_name(_op(name), "tensorsight") is None
    assert call_name(_op(name), "msprobe") is None


def test_rename_leaves_shape_mismatches_alone() -> None:
    bench = _op("torch.nn.functional.layer_norm", tensors=(("input.0", (2, 4)), ("input.w", (4,))))
    target = _op(
        "Functional.layer_norm.0.forward", tensors=(("input.0", (2, 4)), ("input.2", (5,)))
    )
    assert rename_tensors(bench, target) is target
