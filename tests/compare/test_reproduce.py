"""Float64 re-evaluation of an op on each side's own inputs (compare/reproduce.py) and the
verdicts the budget draws from it and from data flow (compare/flow.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorsight.compare.budget import JudgeState, get_profile
from tensorsight.compare.flow import DataFlow, Origin, Origins, Producer
from tensorsight.compare.reproduce import Reproduction, reproduce
from tensorsight.compare.result import OpComparison
from tensorsight.dumpformat.schema import OpRecord, TensorRecord, TensorStats

F32 = np.float32


def _f64(**arrays):
    return {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}


def _adam_inputs(rng, n=256):
    """An AdamW update of a zero-initialised bias whose gradient is ~0 (sign-like step)."""
    g = (rng.standard_normal(n) * 1e-9).astype(F32)
    m = (0.1 * g).astype(F32)
    denom = (np.sqrt((0.001 * g * g).astype(F32)) + F32(1e-8)).astype(F32)
    return np.zeros(n, F32), m, denom


def test_a_sign_like_adam_update_reproduces_from_its_own_inputs():
    rng = np.random.default_rng(0)
    value = -0.01
    p, m_b, d_b = _adam_inputs(rng)
    # the target's gradient differs by bf16-sized noise: many entries flip sign
    p, m_t, d_t = p.copy(), (m_b + 1e-10 * rng.standard_normal(m_b.size)).astype(F32), d_b
    out_b = (p + F32(value) * m_b / d_b).astype(F32)
    out_t = (p + F32(value) * m_t / d_t).astype(F32)
    cross = np.linalg.norm(out_t - out_b) / np.linalg.norm(out_b)
    assert cross > 0.1  # normwise, the runs' updates differ a lot
    ins_b = _f64(**{"input.0": p, "input.1": m_b, "input.2": d_b})
    ins_t = _f64(**{"input.0": p, "input.1": m_t, "input.2": d_t})
    rep = reproduce(
        "aten.addcdiv_.default", "output.0", ins_b, _f64(**{"output.0": out_b}), ins_t,
        out_t.astype(np.float64),
    )  # fmt: skip
    assert rep is not None
    u32 = 2.0**-24
    assert rep.bench < 4 * u32
    assert rep.target < 4 * u32
    assert "value=-0.01" in rep.how
    # a target that updates with another step size does not reproduce
    wrong = (p + F32(2 * value) * m_t / d_t).astype(np.float64)
    bad = reproduce(
        "aten.addcdiv_.default", "output.0", ins_b, _f64(**{"output.0": out_b}), ins_t, wrong
    )
    assert bad is not None
    assert bad.target > 0.1


def _layer_norm(x, eps):
    mu = x.mean(-1, keepdims=True)
    r = 1 / np.sqrt(x.var(-1, keepdims=True) + eps)
    return (x - mu) * r, mu, r


@pytest.mark.parametrize("which", ["output.0", "output.1", "output.2"])
def test_layer_norm_axes_and_eps_come_from_the_bench(which):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8, 16))
    outs = dict(zip(("output.0", "output.1", "output.2"), _layer_norm(x, 1e-2), strict=True))
    xt = x + 1e-3 * rng.standard_normal(x.shape)
    same = dict(zip(("output.0", "output.1", "output.2"), _layer_norm(xt, 1e-2), strict=True))
    other = dict(zip(("output.0", "output.1", "output.2"), _layer_norm(xt, 1.0), strict=True))
    rep = reproduce("aten.native_layer_norm.default", which, {"input.0": x}, outs,
                    {"input.0": xt}, same[which])  # fmt: skip
    assert rep is not None
    assert rep.bench < 1e-12
    assert rep.target < 1e-12
    if which != "output.1":  # the mean does not depend on eps
        bug = reproduce("aten.native_layer_norm.default", which, {"input.0": x}, outs,
                        {"input.0": xt}, other[which])  # fmt: skip
        assert bug is not None
        assert bug.target > 1e-2


def test_recorded_arguments_are_used_as_recorded_not_fitted():
    """With the dump's ``args`` column the model takes the bench's own eps, value and dim."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 16))
    outs = dict(zip(("output.0", "output.1", "output.2"), _layer_norm(x, 1e-5), strict=True))
    args = {"input": {"tensor": "input.0"}, "normalized_shape": [16], "eps": 1e-05}
    rep = reproduce("aten.native_layer_norm.default", "output.0", {"input.0": x}, outs,
                    {"input.0": x}, outs["output.0"], args)  # fmt: skip
    assert rep is not None
    assert rep.how == "normalized_shape=[16], eps=1e-05 recorded"
    assert rep.bench < 1e-12
    # the target ran with eps=1: with the bench's recorded eps it does not reproduce
    bug = _layer_norm(x, 1.0)[0]
    bad = reproduce("aten.native_layer_norm.default", "output.0", {"input.0": x}, outs,
                    {"input.0": x}, bug, args)  # fmt: skip
    assert bad is not None
    assert bad.target > 1e-2
    # addcdiv's value, a softmax's dim and add's alpha
    p, m, d = (rng.standard_normal(32) for _ in range(3))
    d = np.abs(d) + 0.5
    ins = {"input.0": p, "input.1": m, "input.2": d}
    out = {"output.0": p - 0.01 * m / d}
    rep = reproduce("aten.addcdiv_.default", "output.0", ins, out, ins, out["output.0"],
                    {"value": -0.01})  # fmt: skip
    assert rep is not None
    assert rep.how == "value=-0.01 recorded"
    z = rng.standard_normal((3, 5))
    sm = {"output.0": np.exp(z) / np.exp(z).sum(0, keepdims=True)}
    rep = reproduce("aten._softmax.default", "output.0", {"input.0": z}, sm, {"input.0": z},
                    sm["output.0"], {"dim": -2, "half_to_float": False})  # fmt: skip
    assert rep is not None
    assert rep.how == "dim=0 recorded"
    assert rep.bench < 1e-12
    a, b = rng.standard_normal(8), rng.standard_normal(8)
    call = {"self": {"tensor": "input.0"}, "other": {"tensor": "input.1"}, "alpha": 2}
    rep = reproduce("aten.add.Tensor", "output.0", {"input.0": a, "input.1": b},
                    {"output.0": a + 2 * b}, {"input.0": a, "input.1": b}, a + 2 * b,
                    call)  # fmt: skip
    assert rep is not None
    assert rep.how == "alpha=2 recorded"
    # arguments that do not settle the model fall back to fitting
    rep = reproduce("aten.addcdiv_.default", "output.0", ins, out, ins, out["output.0"],
                    {"value": {"unsupported": "SymFloat"}})  # fmt: skip
    assert rep is not None
    assert "fitted" in rep.how


def test_unknown_ops_and_mismatched_tensors_give_no_answer():
    x = {"input.0": np.ones(3)}
    assert reproduce("aten.cumprod.default", "output.0", x, {"output.0": x["input.0"]}, x,
                     x["input.0"]) is None  # fmt: skip
    for name in ("MyLib.div", "Tensor.__rtruediv__.0.forward", "Functional.relu.0.backward"):
        assert reproduce(name, "output.0", x, {"output.0": x["input.0"]}, x,
                         x["input.0"]) is None  # fmt: skip
    assert reproduce("aten.div.Tensor", "output.0", x, {"output.0": np.ones(4)}, x,
                     np.ones(4)) is None  # fmt: skip


def _row(tensor, err, **kw):
    return OpComparison(
        7, "aten.addcdiv_.default", "", "forward", tensor, (64,), (64,), "float32", "float32",
        rmse=err, mean_bench=0.0, std_bench=1.0, mean_target=0.0, std_target=1.0,
        index_target=9, match="name", **kw,
    )  # fmt: skip


def test_an_output_above_its_budget_that_reproduces_is_inherited_not_an_error():
    ins = [_row("input.0", 0.0), _row("input.1", 0.005), _row("input.2", 0.005)]
    seen = []

    def rep(index, index_target, tensor):
        seen.append((index, index_target, tensor))
        return Reproduction(bench=3e-8, target=4e-8, how="value=-0.01 fitted to the bench")

    prof = get_profile("budget")
    _, [ok] = prof.judge_op("aten.addcdiv_.default", ins, [_row("output.0", 0.5)],
                            JudgeState(reproduce=rep))  # fmt: skip
    assert seen == [(7, 9, "output.0")]
    assert ok.verdict == "pass"
    assert "reproduces the target's output" in ok.reason
    assert "ill-conditioned" in ok.reason
    # the same numbers without a reproduction: the op adds error
    _, [bad] = prof.judge_op("aten.addcdiv_.default", ins, [_row("output.0", 0.5)], JudgeState())
    assert bad.verdict == "error"

    def off(index, index_target, tensor):
        return Reproduction(bench=3e-8, target=0.3, how="value=-0.01 fitted to the bench")

    _, [bug] = prof.judge_op("aten.addcdiv_.default", ins, [_row("output.0", 0.5)],
                             JudgeState(reproduce=off))  # fmt: skip
    assert bug.verdict == "error"


def _stats(lo, hi, mean, norm):
    return TensorStats(min=lo, max=hi, mean=mean, norm=norm)


def _op(index, name, direction, tensors):
    rows = tuple(
        TensorRecord(index, name, direction, "", t, (4,), "float32", stats=s) for t, s in tensors
    )
    return OpRecord(index, name, direction, "", rows)


def test_data_flow_links_an_optimizer_input_to_the_gradient_and_names_parameters():
    g = _stats(-1.0, 2.0, 0.25, 2.5)
    w = _stats(-0.5, 0.5, 0.0, 0.7)
    ops = [
        _op(0, "aten.mm.default", "forward", [("input.0", w), ("output.0", _stats(0, 3, 1, 4))]),
        _op(1, "aten.mm.default", "backward", [("output.0", g)]),
        _op(2, "tensorsight.param_grad", "backward", [("param.weight", w), ("grad.weight", g)]),
        _op(3, "aten.lerp_.Scalar", "forward",
            [("input.0", _stats(0, 0, 0, 0)), ("input.1", g), ("output.0", _stats(0, 1, 0.5, 1))]),
        _op(4, "aten.add_.Tensor", "forward", [("input.0", _stats(-3, 3, 0.1, 9.0))]),
    ]  # fmt: skip
    flow = DataFlow(ops)
    p = flow.producer(3, "input.1")
    assert p is not None
    assert (p.index, p.tensor) == (2, "grad.weight")
    assert flow.producer(3, "input.0") is None  # zeros carry no identity
    origins = Origins(ops, ops)
    assert origins(0, 0, "input.0") == Origin("parameter")
    assert origins(4, 4, "input.0") == Origin("unknown")


def test_an_input_of_unknown_origin_is_a_warning_and_a_produced_one_is_inherited():
    prof = get_profile("budget")

    def unknown(index, index_target, tensor):
        return Origin("unknown")

    [row], _ = prof.judge_op("aten.add_.Tensor", [_row("input.1", 0.5)], [],
                             JudgeState(origin=unknown))  # fmt: skip
    assert row.verdict == "warning"
    assert "unknown origin" in row.reason
    assert "parameter" not in row.reason
    grad = Producer(5, "tensorsight.param_grad", "grad.bias")
    state = JudgeState(origin=lambda *_: Origin("produced", grad))
    state.errors[(5, "grad.bias")] = 0.5
    [row], _ = prof.judge_op("aten.add_.Tensor", [_row("input.1", 0.5)], [], state)
    assert row.verdict == "warning"  # inherited, but large
    assert "inherited from op #5" in row.reason
    [row], _ = prof.judge_op("aten.add_.Tensor", [_row("input.1", 0.5)], [], JudgeState())
    assert row.verdict == "error"  # without data flow: nothing explains it


@pytest.mark.parametrize(
    ("op", "tensor"),
    [
        ("aten.convolution_backward.default", "output.2"),
        ("Functional.conv2d.0.backward", "output.2"),
        ("Functional.linear.3.backward", "output.0"),
    ],
)
def test_a_bias_gradient_that_cancels_to_noise_reproduces_on_each_side(op, tensor):
    # grad_output of a conv followed by BatchNorm: each channel sums to ~0 in exact
    # arithmetic, so the two runs' bias gradients are unrelated rounding noise
    rng = np.random.default_rng(1)
    g = rng.standard_normal((2, 3, 4, 4)).astype(F32)
    g_b = (g - g.mean(axis=(0, 2, 3), keepdims=True)).astype(F32)
    g_t = (g_b + rng.standard_normal(g.shape).astype(F32) * F32(3e-3)).astype(F32)
    g_t = (g_t - g_t.mean(axis=(0, 2, 3), keepdims=True)).astype(F32)
    out_b, out_t = g_b.sum(axis=(0, 2, 3)), g_t.sum(axis=(0, 2, 3))
    assert np.linalg.norm(out_t - out_b) > 0.5 * np.linalg.norm(out_b)  # normwise: "differs"
    rep = reproduce(
        op, tensor, _f64(**{"input.0": g_b}), _f64(**{tensor: out_b}), _f64(**{"input.0": g_t}),
        out_t.astype(np.float64),
    )  # fmt: skip
    assert rep is not None
    assert rep.bench < 2.0**-20
    assert rep.target < 2.0**-20
    assert rep.how == "over dims [0, 2, 3]"
    # a target whose bias gradient is not the sum of its own grad_output does not reproduce
    bad = reproduce(
        op, tensor, _f64(**{"input.0": g_b}), _f64(**{tensor: out_b}), _f64(**{"input.0": g_t}),
        (2 * out_t + 1e-3).astype(np.float64),
    )  # fmt: skip
    assert bad is not None
    assert bad.target > 100 * 2.0**-24  # relative to the sum of |terms|: far above rounding
    # the backward's other gradients (grad_input, grad_weight) are no reductions of it
    w = _f64(**{"output.1": np.ones((3, 2, 3, 3))})
    assert reproduce(op, "output.1", _f64(**{"input.0": g_b}), w, _f64(**{"input.0": g_t}),
                     np.ones((3, 2, 3, 3))) is None  # fmt: skip


def test_msprobe_and_api_level_names_use_the_aten_models():
    rng = np.random.default_rng(2)
    a = rng.standard_normal(8)
    for op in ("Tensor.__truediv__.1.forward", "Tensor.div_.0.forward", "torch.Tensor.div"):
        rep = reproduce(op, "output.0", {"input.0": a}, {"output.0": a / 3}, {"input.0": a},
                        a / 3)  # fmt: skip
        assert rep is not None, op
        assert rep.target < 1e-15
        assert "0.3333" in rep.how
