"""Level op: every ATen op, forward and backward, with module paths, statistics and tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tensorsight
from tensorsight.capture import read_dump
from tests.capture.conftest import TinyMLP, train_step


def _capture(tmp_path, model, x, **kwargs):
    with tensorsight.dump(tmp_path / "d", **kwargs) as d:
        loss = train_step(model, x)
        d.record_outputs(loss)
    return read_dump(tmp_path / "d").step()


def test_forward_then_backward_with_module_paths(tmp_path, model, batch):
    step = _capture(tmp_path, model, batch)
    ops = step.ops
    assert [o.index for o in ops] == list(range(len(ops)))
    directions = [o.direction for o in ops]
    first_bwd = directions.index("backward")
    assert "backward" not in directions[:first_bwd]
    assert all(d == "backward" for d in directions[first_bwd:] if d != "forward")
    fwd = [(o.op, o.module_path) for o in ops if o.direction == "forward"]
    assert ("aten.addmm.default", "TinyMLP.layers.0") in fwd
    assert ("aten.relu.default", "TinyMLP.layers.1") in fwd
    assert ("aten.addmm.default", "TinyMLP.layers.2") in fwd
    bwd = {(o.op, o.module_path, o.grad_fn) for o in ops if o.direction == "backward"}
    # the backward of layers.0's addmm is attributed to layers.0 through sequence numbers
    assert ("aten.mm.default", "TinyMLP.layers.0", "AddmmBackward0") in bwd
    assert ("aten.threshold_backward.default", "TinyMLP.layers.1", "ReluBackward0") in bwd


def test_statistics_match_the_tensors(tmp_path, model, batch):
    step = _capture(tmp_path, model, batch, mode="tensor")
    addmm = next(o for o in step.ops if o.op == "aten.addmm.default")
    out = addmm.outputs[0]
    expected = model.layers[0](batch).detach().numpy().astype(np.float64)
    stored = step.load(out)
    np.testing.assert_array_equal(stored, expected.astype(np.float32))
    st = out.stats
    assert st is not None
    assert st.min == expected.min()
    assert st.max == expected.max()
    assert st.mean == pytest.approx(expected.mean(), rel=1e-12)
    assert st.norm == pytest.approx(math.sqrt((expected**2).sum()), rel=1e-12)
    assert (st.nan_count, st.posinf_count, st.neginf_count) == (0, 0, 0)
    assert out.tensor == "output.0"
    assert [t.tensor for t in addmm.inputs] == ["input.0", "input.1", "input.2"]
    step.close()


def test_parameters_and_gradients_are_recorded(tmp_path, model, batch):
    step = _capture(tmp_path, model, batch, mode="tensor")
    pg = [o for o in step.ops if o.op == "tensorsight.param_grad"]
    names = {(o.module_path, t.tensor) for o in pg for t in o.tensors}
    assert ("TinyMLP.layers.0", "grad.weight") in names
    assert ("TinyMLP.layers.2", "param.bias") in names
    row = next(
        t
        for o in pg
        for t in o.tensors
        if t.tensor == "grad.weight" and o.module_path.endswith("0")
    )
    np.testing.assert_array_equal(step.load(row), model.layers[0].weight.grad.numpy())
    step.close()


def test_bf16_survives_and_stats_are_not_accumulated_in_bf16(tmp_path):
    torch.manual_seed(0)
    model = TinyMLP(dtype=torch.bfloat16)
    x = torch.randn(3, 4, dtype=torch.bfloat16)
    step = _capture(tmp_path, model, x, mode="tensor")
    row = next(o for o in step.ops if o.op == "aten.addmm.default").outputs[0]
    assert row.dtype == "bfloat16"
    ref = model.layers[0](x).detach()
    raw = step.load_raw(row)
    assert raw.dtype == "bfloat16"
    assert raw.bits.dtype == np.uint16
    np.testing.assert_array_equal(raw.bits, ref.view(torch.int16).numpy().view(np.uint16))
    np.testing.assert_array_equal(step.load(row), ref.float().numpy())
    exact = ref.double().numpy()
    assert row.stats.mean == pytest.approx(exact.mean(), rel=1e-12)
    step.close()


def test_nan_inf_and_empty_tensors(tmp_path):
    x = torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), float("inf")])
    with tensorsight.dump(tmp_path / "d", mode="md5"):
        (x * 2).sum()
        torch.empty(0, 3).sum(0)
    step = read_dump(tmp_path / "d").step()
    mul = next(o for o in step.ops if o.op == "aten.mul.Tensor")
    st = mul.outputs[0].stats
    assert (st.nan_count, st.posinf_count, st.neginf_count) == (1, 2, 1)
    assert math.isnan(st.mean)
    empty = next(o for o in step.ops if o.op == "aten.sum.dim_IntList").inputs[0]
    assert empty.shape == (0, 3)
    assert empty.stats is None
    assert empty.fingerprint == "00000000"


def test_include_exclude_and_stack(tmp_path, model, batch):
    step = _capture(tmp_path, model, batch, include=["aten.addmm*", "aten.mm*"], stack=True)
    assert {o.op for o in step.ops} == {"aten.addmm.default", "aten.mm.default"}
    fwd = next(o for o in step.ops if o.direction == "forward")
    assert "train_step" in (fwd.stack or "")
    bwd = next(o for o in step.ops if o.direction == "backward")
    assert bwd.stack == next(
        o.stack for o in step.ops if o.module_path == bwd.module_path and o.direction == "forward"
    )
    step2 = _capture(tmp_path / "x", model, batch, exclude=["TinyMLP.layers.1", "aten.t*"])
    ops = {o.op for o in step2.ops}
    assert "aten.relu.default" not in ops
    assert "aten.t.default" not in ops
    assert "aten.addmm.default" in ops


def test_capture_does_not_change_results(tmp_path, model, batch):
    torch.manual_seed(3)
    plain = TinyMLP()
    plain.load_state_dict(model.state_dict())
    expected = train_step(plain, batch)
    with tensorsight.dump(tmp_path / "d", mode="tensor"):
        got = train_step(model, batch)
    assert torch.equal(got, expected)
    for p, q in zip(plain.parameters(), model.parameters(), strict=True):
        assert torch.equal(p.grad, q.grad)


def test_in_place_ops_record_the_values_after_the_write(tmp_path):
    x = torch.zeros(4)
    with tensorsight.dump(tmp_path / "d", mode="md5"):
        x.add_(1.0)
    op = read_dump(tmp_path / "d").step().ops[0]
    assert op.op == "aten.add_.Tensor"
    assert op.inputs[0].stats.max == 0.0
    assert op.outputs[0].stats.max == 1.0
    assert op.inputs[0].fingerprint != op.outputs[0].fingerprint


def test_statistics_of_odd_dtypes(tmp_path):
    from tensorsight.capture._torch_stats import stats_tensor

    big = torch.arange(20_000, dtype=torch.float32).reshape(100, 200).t()  # torch path, strided
    values = stats_tensor(big)
    assert values[:2] == [0.0, 19_999.0]
    assert values[2] == sum(range(20_000))
    c = torch.tensor([1 + 2j, -3 + 0j])
    assert stats_tensor(c)[:3] == [-3.0, 2.0, 0.0]
    b = torch.tensor([True, False, True])
    assert stats_tensor(b)[:3] == [0.0, 1.0, 2.0]
    inf = torch.full((10_000,), float("inf"))
    inf[0] = float("nan")
    assert stats_tensor(inf)[4:7] == [1.0, 9_999.0, 0.0]
    assert stats_tensor(torch.empty(0)) is None


def test_in_place_results_are_reused_only_after_the_version_bump(tmp_path):
    x = torch.zeros(10_000)  # large enough for the statistics cache
    with tensorsight.dump(tmp_path / "d"):
        x.add_(1.0)
        x.mul(2.0)
        x.add_(1.0)
        x.mul(2.0)
    ops = read_dump(tmp_path / "d").step().ops
    assert [o.op for o in ops] == ["aten.add_.Tensor", "aten.mul.Tensor"] * 2
    assert [o.inputs[0].stats.max for o in ops] == [0.0, 1.0, 1.0, 2.0]
    assert [o.outputs[0].stats.max for o in ops] == [1.0, 2.0, 2.0, 4.0]


def test_the_python_path_does_not_grow_from_step_to_step(tmp_path, monkeypatch):
    """The statistics cache forgets the storages each step's intermediates had: after the
    first steps the number of entries, and the Python memory the capture holds, stay flat
    (before, every step left its intermediates' entries behind, ~4-5 MB a step on a GPT)."""
    import gc
    import tracemalloc

    monkeypatch.setenv("TENSORSIGHT_CAPTURE", "python")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(128, 128), torch.nn.GELU(), torch.nn.LayerNorm(128), torch.nn.Linear(128, 8)
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(96, 128)  # intermediates above the cache's size floor (8,192 elements)

    def step():
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()

    d = tensorsight.dump(tmp_path / "d", level="op", mode="statistics").start()
    try:
        assert d._backend.implementation != "native"
        cache = d._recorder.cache
        sizes, traced = [], []
        tracemalloc.start()
        for i in range(24):
            step()
            d.step()
            if i in (4, 23):
                gc.collect()
                sizes.append(len(cache))
                traced.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.stop()
    finally:
        d.close()
    assert 0 < sizes[1] <= sizes[0]  # the live tensors' entries only (parameters, states)
    # 19 steps of ~40 cached intermediates each would leave ~0.3 MB of entries behind
    assert traced[1] - traced[0] < 100_000
