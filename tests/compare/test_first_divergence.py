"""first_divergence is the earliest error in execution order, whatever its direction."""

from __future__ import annotations

from tensorsight.compare.engine import _first_divergence
from tensorsight.compare.result import OpComparison, Verdict


def _row(index: int, direction: str, verdict: str, rank: int = 0) -> OpComparison:
    row = OpComparison(index, "aten.mul.Tensor", "M", direction, "output.0", rank=rank)
    return row.with_verdict(Verdict(verdict, "planted"))


def test_a_backward_error_outranks_a_later_optimizer_error():
    # the optimizer's ops are recorded as forward but run after the backward pass
    rows = [
        _row(3, "forward", "pass"),
        _row(120, "forward", "error"),  # AdamW's update, inheriting the bad gradient
        _row(60, "backward", "error"),  # the planted backward bug
        _row(10, "forward", "warning"),
    ]
    assert _first_divergence(rows) == 2


def test_forward_errors_come_first_and_ties_go_to_the_lowest_rank():
    rows = [_row(60, "backward", "error"), _row(5, "forward", "error", rank=1)]
    rows.append(_row(5, "forward", "error", rank=0))
    assert _first_divergence(rows) == 2
    assert _first_divergence([_row(1, "forward", "pass")]) is None
