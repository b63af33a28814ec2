"""PyTorch against ONNX Runtime: pairing by value (compare/crossmatch.py).

The same small MLP, CNN (conv + BatchNorm in eval) and 2-block transformer run in PyTorch
(``level="op"``) and, exported with identical weights, in ONNX Runtime; a bug planted in the
ONNX graph must be found in the module it was planted in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

import tensorsight  # noqa: E402
from tensorsight.compare.crossmatch import (  # noqa: E402
    _layouts,
    convert,
    is_cross_framework,
    match_across,
)
from tensorsight.dumpformat.reader import read_dump  # noqa: E402
from tensorsight.dumpformat.schema import OpRecord, TensorRecord, TensorStats  # noqa: E402

from . import _frameworks as F  # noqa: E402

MODELS = ("mlp", "cnn", "transformer")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, object]]:
    """name -> (PyTorch dump, ONNX Runtime dump, the exported graph)."""
    out = {}
    for name in MODELS:
        work = tmp_path_factory.mktemp(name)
        model, x = F.build(name)
        pt = F.dump_torch(model, x, work / "pt")
        proto = F.export(model, x, work / "m.onnx", opset=F.OPSETS[name])
        out[name] = (pt, F.dump_onnx(proto, x, work, "ox"), proto)
    return out


def _forward_outputs(result: tensorsight.Comparison) -> list[tensorsight.OpComparison]:
    """The bench's forward outputs that an inference graph computes (the statistics
    PyTorch saves for backward excepted: ONNX nodes never expose them)."""
    return [
        r
        for r in result.rows
        if r.shape_bench is not None
        and r.direction == "forward"
        and r.tensor.startswith("output")
        and not r.one_sided
        and "saves for the backward pass" not in r.reason
        and 0 not in r.shape_bench
    ]


@pytest.mark.parametrize("name", MODELS)
def test_healthy_runs_pair_and_agree(runs, name: str) -> None:
    pt, ox, _ = runs[name]
    result = tensorsight.compare(pt, ox)
    outs = _forward_outputs(result)
    paired = [r for r in outs if r.match != "unmatched"]
    assert len(paired) >= 0.9 * len(outs), [r.key for r in outs if r.match == "unmatched"]
    assert [r.key for r in result.rows if r.verdict == "error"] == []
    assert result.status == "agree"
    assert {r.match for r in paired} <= {"value", "structure"}


@pytest.mark.parametrize("name", MODELS)
def test_every_unmatched_tensor_says_why(runs, name: str) -> None:
    pt, ox, _ = runs[name]
    result = tensorsight.compare(pt, ox)
    for r in result.rows:
        if r.match == "unmatched":
            assert r.reason, r.key
            assert "missing on the" not in r.reason, r.key


def test_summary_lists_no_paired_op_as_one_sided(runs) -> None:
    """native_layer_norm is paired; only its saved statistics are alone: not "only in bench"."""
    pt, ox, _ = runs["mlp"]
    text = tensorsight.compare(pt, ox).summary()
    assert "native_layer_norm.default only in bench" not in text
    assert "unmatched 2" in text


def test_chain_and_layouts_pair_with_the_last_output(runs) -> None:
    """GELU is five ONNX nodes at opset 18: the chain's last output pairs with aten.gelu;
    a Linear's weight [out, in] pairs with PyTorch's transposed copy."""
    pt, ox, _ = runs["transformer"]
    rows = tensorsight.compare(pt, ox).rows
    gelu = next(r for r in rows if r.op == "aten.gelu.default" and r.tensor == "output.0")
    assert gelu.op_target == "Div+Erf+Add+Mul"
    assert gelu.verdict == "pass"
    relaid = [r for r in rows if "read as transpose" in r.reason]
    assert relaid
    assert all(r.verdict == "pass" for r in relaid)
    pt, ox, _ = runs["mlp"]
    rows = tensorsight.compare(pt, ox).rows
    t = next(r for r in rows if r.op == "aten.t.default" and r.tensor == "output.0")
    assert (t.shape_bench, t.shape_target) == ((16, 32), (32, 16))
    assert t.verdict == "pass"
    assert t.max_abs_err == 0.0


@pytest.mark.parametrize(
    ("name", "bug", "where", "module"),
    [
        ("mlp", "eps", "/ln/", "MLP.ln"),
        ("mlp", "transpose", "/fc2/", "MLP.fc2"),
        ("mlp", "gelu-tanh", "/act/", "MLP.act"),
        ("transformer", "eps", "/blocks.1/ln2/", "Transformer.blocks.1.ln2"),
        ("transformer", "transpose", "/blocks.0/attn/q/", "Transformer.blocks.0.attn.q"),
    ],
)
def test_planted_bug_is_found_in_its_module(
    runs, tmp_path: Path, name: str, bug: str, where: str, module: str
) -> None:
    pt, _, proto = runs[name]
    _, x = F.build(name)
    bad = F.dump_onnx(F.plant(proto, bug, where), x, tmp_path, "bad")
    result = tensorsight.compare(pt, bad)
    first = result.first_divergence
    assert first is not None, result.summary()
    assert first.module_path == module, (first.key, first.module_path, first.reason)
    assert first.tensor.startswith("output")
    if bug != "transpose":  # the advisor names the default that differs between frameworks
        (hint,) = [a for a in result.advice if a.mechanism == "framework-default"]
        assert ("epsilon" if bug == "eps" else "approximation") in hint.evidence
        assert "torch vs onnxruntime" in hint.evidence


def test_folded_batchnorm_pairs_with_the_conv(tmp_path: Path) -> None:
    """The exporter's constant folding puts BatchNorm into the Conv: BatchNorm's output
    pairs with the Conv's, and the convolution's own tensors say why they are alone."""
    model, x = F.build("cnn")
    pt = F.dump_torch(model, x, tmp_path / "pt")
    proto = F.export(model, x, tmp_path / "m.onnx", fold=True)
    assert "BatchNormalization" not in {n.op_type for n in proto.graph.node}
    result = tensorsight.compare(pt, F.dump_onnx(proto, x, tmp_path, "ox"))
    assert [r.key for r in result.rows if r.verdict == "error"] == []
    bn = next(
        r
        for r in result.rows
        if r.op == "aten.native_batch_norm.default" and r.tensor == "output.0"
    )
    assert (bn.op_target, bn.verdict) == ("Conv", "pass")
    weight = next(r for r in result.rows if r.module_path == "CNN.conv1" and r.tensor == "input.1")
    assert weight.match == "unmatched"
    assert "fold" in weight.reason


def test_different_models_are_not_comparable(runs) -> None:
    pt, _, _ = runs["mlp"]
    _, ox, _ = runs["transformer"]
    result = tensorsight.compare(pt, ox)
    assert result.not_comparable is not None
    assert result.header_note.startswith("NOT COMPARABLE")
    assert not result.agrees


def test_frameworks_come_from_the_manifests(runs) -> None:
    pt, ox, _ = runs["mlp"]
    frameworks = (read_dump(pt).manifest(0).framework, read_dump(ox).manifest(0).framework)
    assert frameworks == ("torch", "onnxruntime")
    assert is_cross_framework(*frameworks)
    assert not is_cross_framework("onnxruntime", "onnx.reference")


def test_known_conversion_of_a_variance() -> None:
    var = np.array([[3.0], [0.25]])
    np.testing.assert_allclose(convert(var, ("rstd_from_var", 1.0)), [[0.5], [1 / 1.25**0.5]])
    with pytest.raises(ValueError, match="unknown"):
        convert(var, ("cube", 0.0))


def test_layouts_of_shapes() -> None:
    assert _layouts((3, 4), (3, 4)) == [(0, 1)]
    assert _layouts((3, 4), (4, 3)) == [(1, 0)]
    assert _layouts((4, 4), (4, 4)) == [(0, 1), (1, 0)]
    assert (0, 2, 3, 1) in _layouts((2, 5, 6, 3), (2, 3, 5, 6))  # NCHW read as NHWC
    assert _layouts((10, 8), (2, 5, 8)) == [(0, 1, 2)]  # a reshape


def _op(index: int, op: str, path: str, arrays: dict[str, np.ndarray]) -> OpRecord:
    rows = tuple(
        TensorRecord(
            index, op, "forward", path, name, a.shape, "float32",
            stats=TensorStats(float(a.min()), float(a.max()), float(a.mean()),
                              float(np.linalg.norm(a))),
            data=f"{index}:{name}",
        )
        for name, a in arrays.items()
    )  # fmt: skip
    return OpRecord(index, op, "forward", path, rows)


def test_statistics_alone_pair_and_a_diverged_output_pairs_by_position() -> None:
    """Without stored tensors the statistics pair; an output whose values differ pairs
    with its module's output of that size (an error row, not a gap)."""
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((4, 4)), rng.standard_normal((2, 4))
    bench = [_op(0, "aten.mm.default", "M.fc", {"input.0": x, "input.1": w, "output.0": x @ w})]
    target = [_op(0, "MatMul", "/fc/MatMul", {"input.0": x, "input.1": w, "output.0": x @ w.T})]
    pairs = match_across(bench, target, frameworks=("torch", "onnxruntime"))
    assert len(pairs) == 1
    got = {t.tensor for t in pairs[0].target[0].tensors}
    assert got == {"input.0", "input.1", "output.0"}
    assert pairs[0].how == "structure"


MINDSPORE = Path(__file__).parents[1] / "dumpformat" / "data" / "mindspore"


def _torch_step_of_the_mindspore_fixture(out: Path) -> Path:
    """``data/make_mindspore_dump.py``'s training step in PyTorch: the same MLP, weights,
    input, MSE loss and SGD step (MindSpore's ``Dense`` weight is ``[out, in]`` too)."""

    class MLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 8)
            self.norm = torch.nn.LayerNorm(8, eps=1e-5)
            self.act = torch.nn.GELU()
            self.fc2 = torch.nn.Linear(8, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc2(self.act(self.norm(self.fc1(x))))

    model = MLP()
    rng = np.random.RandomState(25)
    params = [model.fc1.weight, model.fc1.bias, model.norm.weight, model.norm.bias,
              model.fc2.weight, model.fc2.bias]  # fmt: skip
    with torch.no_grad():
        for p in params:  # MindSpore's trainable_params() order
            value = rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)
            if p is model.norm.weight:
                value = 1.0 + 0.1 * value
            p.copy_(torch.from_numpy(value))
    x = torch.from_numpy(rng.randn(2, 4).astype(np.float32))
    y = torch.from_numpy(rng.randn(2, 3).astype(np.float32))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tensorsight.dump(out, mode="tensor", level="op"):
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return out


def test_mindspore_dump_pairs_with_pytorch_by_value(tmp_path: Path) -> None:
    """MindSpore's own graph-mode Dump (stored fixtures, MindSpore not needed) against the
    same step in PyTorch: forward outputs and gradients pair, 0 error rows; the fixture with
    LayerNorm epsilon 1e-1 diverges first in MLP.norm."""
    pt = _torch_step_of_the_mindspore_fixture(tmp_path / "pt")
    result = tensorsight.compare(pt, MINDSPORE / "fp32")
    assert [r.key for r in result.rows if r.verdict == "error"] == []
    for direction in ("forward", "backward"):
        outs = [
            r
            for r in result.rows
            if r.shape_bench is not None
            and r.direction == direction
            and r.tensor.startswith(("output", "grad."))
        ]
        paired = [r for r in outs if r.match != "unmatched"]
        assert len(paired) >= 0.9 * len(outs), (direction, len(paired), len(outs))
    # a known conversion: PyTorch saves 1/std where MindSpore's LayerNorm outputs the variance
    rstd = next(
        r
        for r in result.rows
        if r.op == "aten.native_layer_norm.default" and r.tensor == "output.2"
    )
    assert (rstd.match, rstd.verdict) == ("value", "pass")
    assert "1/sqrt(var + 1e-05)" in rstd.reason
    bad = tensorsight.compare(pt, MINDSPORE / "ln_eps")
    first = bad.first_divergence
    assert first is not None
    assert (first.module_path, first.tensor) == ("MLP.norm", "output.0")


def test_loaded_copies_are_kept_within_a_budget(monkeypatch) -> None:
    """A bfloat16 dump loads as float32 copies: keeping every one for sampling held the
    whole dump in memory while pairing; memory-mapped tensors are kept at no cost."""
    from tensorsight.compare import crossmatch

    monkeypatch.setattr(crossmatch, "_MAX_KEPT_BYTES", 3 << 20)
    loads: list[str] = []

    def copy(rec: TensorRecord) -> np.ndarray:
        loads.append(rec.data or "")
        return np.ones(1 << 18, np.float32)  # 1 MiB, owned: what bf16 widening returns

    prints = crossmatch._Prints(copy)
    recs = [TensorRecord(0, "op", "forward", "", f"output.{i}", (1 << 18,), "bfloat16",
                         data=f"0:{i}") for i in range(10)]  # fmt: skip
    for rec in recs * 2:
        assert prints.array(rec) is not None
    assert prints._kept <= 3 << 20
    assert len(loads) == 3 + 2 * 7  # three kept, the others loaded again when asked for
    mapped = crossmatch._Prints(lambda rec: np.frombuffer(bytes(1 << 22), np.float32))
    for rec in recs:
        mapped.array(rec)
    assert mapped._kept == 0  # a view of a file costs nothing
    assert len(mapped._arrays) == 10


def test_pairing_is_the_same_with_nothing_kept(monkeypatch) -> None:
    from tensorsight.compare import crossmatch

    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((4, 6)), rng.standard_normal((3, 4))
    arrays = {"input.0": x, "input.1": w, "output.0": x @ w}
    bench = [_op(0, "aten.mm.default", "M.fc", arrays)]
    target = [_op(0, "MatMul", "/fc/MatMul", {**arrays, "input.1": w.T.copy()})]
    stored = ({"0:input.0": x, "0:input.1": w, "0:output.0": x @ w},
              {"0:input.0": x, "0:input.1": w.T.copy(), "0:output.0": x @ w})  # fmt: skip

    def pair() -> list:
        got = match_across(bench, target, frameworks=("torch", "onnxruntime"),
                           load_bench=lambda r: stored[0][r.data].copy(),
                           load_target=lambda r: stored[1][r.data].copy())  # fmt: skip
        return [(p.how, p.layouts) for p in got]

    kept = pair()
    monkeypatch.setattr(crossmatch, "_MAX_KEPT_BYTES", 0)
    assert pair() == kept
    assert kept[0][1] == (("input.1", (1, 0)),)  # the transposed weight, found by sampling


def test_a_stored_tensor_of_another_shape_is_no_sample() -> None:
    """A shard header whose shape disagrees with the op table (a damaged dump) raised
    IndexError from the sampling; the row is then paired without samples."""
    rng = np.random.default_rng(2)
    w, x = rng.standard_normal((4, 4)), rng.standard_normal((2, 4))
    arrays = {"input.0": x, "input.1": w, "output.0": x @ w}
    bench = [_op(0, "aten.mm.default", "M.fc", arrays)]
    target = [_op(0, "MatMul", "/fc/MatMul", arrays)]
    pairs = match_across(bench, target, frameworks=("torch", "onnxruntime"),
                         load_bench=lambda r: np.zeros((1, 2)),
                         load_target=lambda r: np.zeros((1, 2)))  # fmt: skip
    assert len(pairs) == 1
    assert {t.tensor for t in pairs[0].target[0].tensors} == set(arrays)
