"""The advisor's build/settings evidence: accumulation order vs nondeterminism."""

from __future__ import annotations

import dataclasses

import pytest

from tensorsight.compare.advisor import advise, settings_differences
from tensorsight.compare.result import OpComparison
from tensorsight.dumpformat.writer import base_manifest


def _manifest(**extra):
    m = base_manifest(
        mode="tensor", level="op", framework="torch", framework_version="2.13.0",
        device="cpu", rank=0, world_size=1, extra={"num_threads": 2, **extra},
    )  # fmt: skip
    return m


def _rows(out_error: float, in_error: float = 0.0, budget: float = 1e-6) -> list[OpComparison]:
    base = OpComparison(
        index=3, op="aten.sum.default", module_path="net", direction="forward",
        tensor="input.0", shape_bench=(1000,), shape_target=(1000,),
        dtype_bench="float32", dtype_target="float32", error=in_error,
    )  # fmt: skip
    out = dataclasses.replace(
        base, tensor="output.0", shape_bench=(), shape_target=(), error=out_error,
        input_error=in_error, error_gain=float("inf"), budget=budget,
    )  # fmt: skip
    return [base, out]


def test_settings_differences_name_what_differs():
    a = _manifest()
    assert settings_differences(a, _manifest()) == ()
    assert settings_differences(a, _manifest(num_threads=1)) == ("num_threads 2 vs 1",)
    b = dataclasses.replace(_manifest(), framework_version="2.14.1", device="cuda:0")
    assert settings_differences(a, b) == ("torch 2.13.0 vs 2.14.1", "device cpu vs cuda:0")
    assert settings_differences(a, None) is None  # an msprobe dump has no manifest


@pytest.mark.parametrize(
    ("settings", "mechanism", "words"),
    [
        ((), "nondeterminism", "same build and numerics settings"),
        (("num_threads 1 vs 2",), "accumulation-order", "num_threads 1 vs 2"),
        (None, "accumulation-order", "manifests on both sides tell which"),
    ],
)
def test_bit_identical_inputs_with_different_outputs(settings, mechanism, words):
    advice = advise(_rows(1e-7), None, settings=settings)
    (hit,) = [a for a in advice if a.mechanism in ("nondeterminism", "accumulation-order")]
    assert hit.mechanism == mechanism
    assert words in hit.evidence
    assert hit.row == 1
    assert "aten.sum.default" in hit.evidence


def test_no_such_advice_when_inputs_differ_or_outputs_agree():
    # inputs differ; outputs agree; a difference beyond rounding (another eps: a real bug)
    for rows in (_rows(1e-7, in_error=1e-8), _rows(0.0), _rows(0.127, budget=4.8e-7)):
        advice = advise(rows, None, settings=())
        assert not [a for a in advice if a.mechanism == "nondeterminism"]
