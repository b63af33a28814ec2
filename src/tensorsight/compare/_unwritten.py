"""Tensors that hold no values an op computed: never compared, judged neutral.

An allocation op returns memory it did not write (``torch.empty``: whatever the allocator
had), so its output differs between any two runs, "by inf" in a statistics dump. And an op
that overwrites an argument without reading it (``copy_``, ``fill_``, an ``out=`` argument)
shows that argument's earlier contents as an input row, often such fresh memory. Neither
says anything about the run's numbers: their rows get the verdict ``pass`` with a reason
saying why they were not compared, and they count for no error measure (an op's error gain
is computed without them).

The lists (op base names, by the second dotted part of ``aten.empty.memory_format`` or of
msprobe's ``Torch.empty.0.forward``):

- outputs never written: :data:`ALLOCATION_OPS`;
- inputs overwritten before being read: ``input.0`` of :data:`OVERWRITE_OPS`, and any
  ``input.out`` (``out=`` arguments) of every op;
- any later row holding an allocation's memory unchanged, found by data flow
  (:meth:`~tensorsight.compare.flow.Origins.unwritten`): a view or ``detach`` of it, or the
  ``nn.Parameter`` made of it before its initialiser fills it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tensorsight.compare.budget import JudgeState, Profile
from tensorsight.compare.flow import ALLOCATION_OPS, Origins, op_base
from tensorsight.compare.result import OpComparison, Verdict

__all__ = ["ALLOCATION_OPS", "OVERWRITE_OPS", "judge_written", "unwritten_reason"]

OVERWRITE_OPS = frozenset(
    {"copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_",
     "exponential_", "geometric_", "cauchy_", "log_normal_", "set_", "resize_"}
)  # fmt: skip


def unwritten_reason(op: str, tensor: str) -> str | None:
    """Why row ``tensor`` of ``op`` holds no computed values, or ``None`` when it does."""
    base = op_base(op)
    if tensor.startswith("output") and base in ALLOCATION_OPS:
        return f"Uninitialised memory (output of {op}): not compared."
    if tensor == "input.out" or (tensor == "input.0" and base in OVERWRITE_OPS):
        return (
            f"Overwritten by {op} before being read ({tensor}): its old contents are not compared."
        )
    return None


def _reason(op: str, row: OpComparison, origins: Origins | None) -> str | None:
    reason = unwritten_reason(op, row.tensor)
    if reason is None and origins is not None:
        alloc = origins.unwritten(row.index, row.index_target, row.tensor)
        if alloc is not None:
            reason = f"Uninitialised memory (from {alloc}, not written since): not compared."
    return reason


def judge_written(
    profile: Profile,
    op: str,
    inputs: Sequence[OpComparison],
    outputs: Sequence[OpComparison],
    state: JudgeState,
) -> tuple[list[OpComparison], list[OpComparison]]:
    """``profile.judge_op`` on the rows that hold computed values; the others ``pass``
    with their reason. Row order is kept."""
    origins = state.origin if isinstance(state.origin, Origins) else None
    why = {id(r): _reason(op, r, origins) for r in (*inputs, *outputs)}
    if not any(why.values()):
        return profile.judge_op(op, inputs, outputs, state)
    ins_j, outs_j = profile.judge_op(
        op,
        [r for r in inputs if not why[id(r)]],
        [r for r in outputs if not why[id(r)]],
        state,
    )
    it_in, it_out = iter(ins_j), iter(outs_j)

    def merge(rows: Sequence[OpComparison], done: Iterator[OpComparison]) -> list[OpComparison]:
        out = []
        for r in rows:
            reason = why[id(r)]
            out.append(r.with_verdict(Verdict("pass", reason)) if reason else next(done))
        return out

    return merge(inputs, it_in), merge(outputs, it_out)
