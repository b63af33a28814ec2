from __future__ import annotations

import math

import pytest

from tensorsight.compare.budget import (
    ClassicProfile,
    JudgeState,
    get_profile,
    row_error,
    unit_roundoff,
)
from tensorsight.compare.result import OpComparison
from tensorsight.errors import UsageError


def _row(tensor, err, dtype_t="bfloat16", shape=(64, 32), **kw):
    # a tensor with rms 1 whose error rms is ``err``
    return OpComparison(
        3, kw.pop("op", "aten.mm.default"), "M.fc", "forward", tensor, shape, shape,
        "float32", dtype_t, rmse=err, mean_bench=0.0, std_bench=1.0, mean_target=0.0,
        std_target=1.0, cosine=1 - err**2 / 2, rel_euclidean=err, kl_div=0.0, **kw,
    )  # fmt: skip


def _judge(inputs, outputs, profile=None, state=None):
    return get_profile(profile).judge_op("aten.mm.default", inputs, outputs, state or JudgeState())


def test_unit_roundoff():
    assert unit_roundoff("float32") == 2.0**-24
    assert unit_roundoff("float16") == 2.0**-11
    assert unit_roundoff("int64") == 0.0
    assert unit_roundoff(None) == 0.0


def test_bf16_rounding_passes_and_a_real_error_fails():
    u = 2.0**-8
    ins = [_row("input.0", u / 2), _row("input.1", u / 2, shape=(32, 16))]
    _, [ok] = _judge(ins, [_row("output.0", 1.5 * u)])
    assert ok.verdict == "pass"
    assert ok.budget is not None
    assert ok.error == pytest.approx(1.5 * u)
    assert ok.reason.startswith("Relative L2 error ")
    assert "within its budget" in ok.reason
    _, [bad] = _judge(ins, [_row("output.0", 0.2)])
    assert bad.verdict == "error"
    assert bad.error_gain == pytest.approx(0.2 / (u / 2))
    assert bad.reason.startswith("Relative L2 error ")  # every sentence names its metric
    assert "exceeds its budget" in bad.reason


def test_large_inherited_error_is_a_warning_not_an_error():
    ins = [_row("input.0", 0.3, dtype_t="float32")]
    judged_in, [out] = _judge(ins, [_row("output.0", 0.35, dtype_t="float32")])
    assert out.verdict == "warning"
    assert "inherited" in out.reason
    # the input itself is new error (nothing upstream explains it): a differing parameter
    assert judged_in[0].verdict == "error"


def test_inputs_explained_by_earlier_error_pass():
    state = JudgeState(max_error_seen=0.3)
    [inp], _ = _judge([_row("input.0", 0.3, dtype_t="float32")], [], state=state)
    assert inp.verdict == "pass"


def test_structural_verdicts():
    nan_row = _row("output.0", math.nan, nonfinite_bench=0.0, nonfinite_target=3.0)
    _, [r] = _judge([], [nan_row])
    assert r.verdict == "error"
    assert "NaN/Inf" in r.reason
    shape = OpComparison(0, "aten.add.Tensor", "", "forward", "output.0", (2,), (3,))
    _, [r] = _judge([], [shape])
    assert r.verdict == "error"
    assert "Shapes differ" in r.reason
    unmatched = OpComparison(0, "x", "", "forward", "output.0", match="unmatched", reason="r.")
    _, [r] = _judge([], [unmatched])
    assert r.verdict == "warning"
    md5 = OpComparison(
        0, "x", "", "forward", "output.0", (2,), (2,), "float32", "float32", mode="md5",
        fingerprint_equal=False,
    )  # fmt: skip
    _, [r] = _judge([], [md5])
    assert r.verdict == "error"
    assert "bitwise" in r.reason


def test_discrete_outputs_follow_their_inputs():
    ins = [_row("input.0", 0.01)]
    idx = _row("output.0", 0.5, dtype_t="int64", op="aten.argmax.default")
    _, [r] = get_profile("budget").judge_op("aten.argmax.default", ins, [idx], JudgeState())
    assert r.verdict == "warning"
    assert "Discrete" in r.reason


def test_classic_thresholds():
    prof = ClassicProfile()
    _, [r] = prof.judge_op("op", [], [_row("output.0", 0.06)], JudgeState())
    assert r.verdict == "error"
    assert "0.05" in r.reason
    _, [r] = prof.judge_op("op", [], [_row("output.0", 0.02)], JudgeState())
    assert r.verdict == "warning"
    _, [r] = prof.judge_op("op", [], [_row("output.0", 0.001)], JudgeState())
    assert r.verdict == "pass"


def test_row_error_from_statistics():
    row = OpComparison(
        0, "x", "", "forward", "output.0", mode="statistics", norm_rel_diff=0.1,
        stat_abs_diff=0.5, min_bench=-1.0, max_bench=2.0,
    )  # fmt: skip
    assert row_error(row) == 0.25


def test_unknown_profile():
    with pytest.raises(UsageError, match="Profile 'strict'"):
        get_profile("strict")


def test_statistics_rows_name_the_statistics_error():
    def stats_row(tensor, diff):
        return OpComparison(
            3, "aten.mm.default", "M.fc", "forward", tensor, (64, 32), (64, 32),
            "float32", "bfloat16", mode="statistics", norm_rel_diff=diff,
        )  # fmt: skip

    ins = [stats_row("input.0", 0.0), stats_row("input.1", 0.0)]
    _, [bad] = _judge(ins, [stats_row("output.0", 0.3)])
    assert bad.verdict == "error"
    assert bad.reason.startswith("Statistics error 0.3 exceeds its budget ")
    [bad_in], _ = _judge([stats_row("input.0", 0.3)], [])
    assert "statistics error 0.3 exceeds its budget" in bad_in.reason


@pytest.mark.parametrize(
    ("op", "denominator", "verdict"),
    [
        # Adam: sqrt(v) + eps is eps where a gradient is zero: ill-conditioned, said
        ("aten.addcdiv_.default", (1e-8, 0.04), "warning"),
        ("Tensor.addcdiv_.0.forward", (1e-8, 0.04), "warning"),  # msprobe's name
        ("aten.div.Tensor", (1e-6, 5.0), "warning"),
        # a denominator of one magnitude excuses nothing
        ("aten.addcdiv_.default", (1.0, 2.0), "error"),
        # a denominator that may hold 0 or change sign: no bound, no excuse
        ("aten.div.Tensor", (-1.0, 1.0), "error"),
        ("aten.mul.Tensor", (1e-8, 0.04), "error"),  # not a division
    ],
)
def test_statistics_rows_of_divisions_get_the_denominators_conditioning(op, denominator, verdict):
    lo, hi = denominator

    def stats_row(tensor, diff, lo=-1.0, hi=1.0):
        return OpComparison(
            3, op, "", "forward", tensor, (96,), (96,), "float32", "float32",
            mode="statistics", norm_rel_diff=diff, min_bench=lo, max_bench=hi,
            mean_bench=0.0, std_bench=1.0,
        )  # fmt: skip

    divisor = "input.2" if "addcdiv" in op else "input.1"
    ins = [stats_row("input.0", 0.0), stats_row("input.1", 2e-3)]
    if divisor == "input.2":
        ins.append(stats_row("input.2", 1e-4, lo, hi))
    else:
        ins[1] = stats_row("input.1", 2e-3, lo, hi)
    _, [out] = get_profile(None).judge_op(op, ins, [stats_row("output.0", 0.2)], JudgeState())
    assert out.verdict == verdict, out.reason
    if verdict == "warning":
        assert "ill-conditioned" in out.reason
        assert "mode='tensor'" in out.reason


def test_a_large_sum_whose_inputs_agree_is_an_error_in_statistics_mode():
    """Review finding: K > AMP_CAP once turned any statistics error of a big reduction into
    an "ill-conditioned" warning, even with exact inputs."""

    def stats_row(tensor, diff, shape, mean, std):
        return OpComparison(
            3, "aten.sum.default", "", "forward", tensor, shape, shape, "float32", "float32",
            mode="statistics", norm_rel_diff=diff, mean_bench=mean, std_bench=std,
            min_bench=mean - 3 * std, max_bench=mean + 3 * std,
        )  # fmt: skip

    ins = [stats_row("input.0", 0.0, (100_000,), 0.0, 1.0)]
    _, [out] = get_profile(None).judge_op(
        "aten.sum.default", ins, [stats_row("output.0", 2.0, (), 300.0, 0.0)], JudgeState()
    )
    assert out.verdict == "error", out.reason
    # the same sum with inputs that differ a little, cancelling to ~0: ill-conditioned, said
    ins = [stats_row("input.0", 4e-3, (24,), 0.0, 1.0)]
    _, [out] = get_profile(None).judge_op(
        "aten.sum.default", ins, [stats_row("output.0", 500.0, (), 1e-6, 0.0)], JudgeState()
    )
    assert out.verdict == "warning", out.reason
    assert "ill-conditioned" in out.reason


def test_op_families_match_whole_words_not_substrings():
    # a cast whose name holds "conv" sums nothing; a real convolution sums its last dim
    from tensorsight.compare.budget import reduction_length

    x = _row("input.0", 0.0)
    out = _row("output.0", 0.0)
    assert reduction_length("aten.convert_element_type.default", [x], out) == 1
    assert reduction_length("aten.convolution.default", [x], out) == 32
    assert reduction_length("Conv2D", [x], out) == 32  # MindSpore's kernel name


def test_relu_is_not_judged_as_an_exponential():
    # "elu" occurs in "relu": relu's output error was excused up to max|x| times its input's
    u = 2.0**-8
    ins = [_row("input.0", u / 4, op="aten.relu.default", min_bench=-100.0, max_bench=100.0)]
    outs = [_row("output.0", 40 * u, op="aten.relu.default")]
    _, [relu] = get_profile(None).judge_op("aten.relu.default", ins, outs, JudgeState())
    _, [gelu] = get_profile(None).judge_op("aten.gelu.default", ins, outs, JudgeState())
    assert relu.verdict == "error"
    assert gelu.verdict != "error"
