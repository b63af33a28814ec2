"""msprobe's own mix-level dumps of a healthy fp32 vs bf16 autocast step (issue 18, item 2).

``data/msprobe_mix`` holds real mindstudio-probe 26.2.0 dumps (level ``mix``: modules and
API calls, forward, backward and the AdamW step) written by ``data/make_msprobe_mix.py``.
The conv's bias gradient is 0 in exact arithmetic (a BatchNorm follows), so the two runs'
values there are unrelated rounding noise: normwise they differ by ~100 %, yet each run's
value is the sum of its own grad_output. That must read as inherited, not as an error; a
bias gradient that is not that sum must still be named.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from tensorsight.cli import main
from tensorsight.compare import compare

MIX = Path(__file__).parent / "data" / "msprobe_mix"
BIAS_GRAD = "Functional.conv2d.0.backward"


def test_a_healthy_bf16_step_has_no_error_and_the_cancelling_bias_gradient_is_inherited():
    result = compare(MIX / "fp32", MIX / "bf16")
    errors = [(r.op, r.tensor, r.reason) for r in result.rows if r.verdict == "error"]
    assert errors == []
    assert result.first_divergence_row is None
    assert not any(r.match is None for r in result.rows)  # every row found its counterpart
    (row,) = [r for r in result.rows if r.op == BIAS_GRAD and r.tensor == "output.2"]
    assert row.error is not None
    assert row.error > 0.5  # normwise the runs disagree
    assert row.verdict == "pass"
    assert "reproduces the target's output" in row.reason
    assert "over dims [0, 2, 3]" in row.reason
    assert main(["compare", str(MIX / "fp32"), str(MIX / "bf16"), "-q"]) == 0


def _plant(tmp_path: Path) -> Path:
    """The bf16 dump with a conv bias gradient that sums grad_output over the first sample
    only (a wrong reduction; dump.json kept consistent)."""
    target = tmp_path / "bf16"
    shutil.copytree(MIX / "bf16", target)
    (proc,) = target.glob("step0/proc*")
    data = proc / "dump_tensor_data"
    grad_output = torch.load(data / f"{BIAS_GRAD}.input.0.pt")
    grad = grad_output[0].sum(dim=(1, 2))
    torch.save(grad, data / f"{BIAS_GRAD}.output.2.pt")
    meta = json.loads((proc / "dump.json").read_text())
    entry = meta["data"][BIAS_GRAD]["output"][2]
    entry.update(Max=grad.max().item(), Min=grad.min().item(), Mean=grad.mean().item(),
                 Norm=grad.norm().item())  # fmt: skip
    (proc / "dump.json").write_text(json.dumps(meta))
    return target


def test_a_bias_gradient_that_is_not_its_own_sum_is_the_first_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = compare(MIX / "fp32", _plant(tmp_path))
    first = result.first_divergence
    assert first is not None
    assert (first.op, first.tensor, first.verdict) == (BIAS_GRAD, "output.2", "error")
    assert "this op adds error" in first.reason
    assert main(["compare", str(MIX / "fp32"), str(tmp_path / "bf16")]) == 1
    assert f"first divergence: {BIAS_GRAD} [backward] output.2" in capsys.readouterr().out
