"""Replay a flagged op: re-run it on the bench side's inputs in the target dtype and float64.

This confirms whether the op itself introduces a row's error. The op is resolved from its
aten name (``aten.addmm.default`` -> ``torch.ops.aten.addmm.default``) and called with the
bench dump's stored input tensors, in argument order. Ops with non-tensor arguments
(``eps``, shapes, dims) cannot be replayed from a dump, since dumps record tensors only; they
raise :class:`~tensorsight.errors.CompareError` naming the missing argument.

Reading the result: ``target_vs_replay`` small and ``replay_vs_float64`` close to the row's
error means the op, fed identical inputs, produces the target's output in the target dtype:
the op's own rounding explains the error. ``target_vs_replay`` large means the target's op
computed something else from the same inputs (a different kernel, parameter or bug).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorsight._lazy import lazy_import
from tensorsight.capture.reader import Dump, DumpStep, read_dump
from tensorsight.capture.schema import OpRecord
from tensorsight.compare.result import OpComparison
from tensorsight.errors import CompareError

__all__ = ["ReplayResult", "replay"]

_INPUT = re.compile(r"input\.(\d+)")


@dataclass(frozen=True)
class ReplayResult:
    """Relative errors (``||a - b|| / ||b||``) between the tensors of one replayed output.

    Attributes:
        op: The op replayed.
        tensor: The output compared (``output.0``).
        dtype: The target dtype the op was replayed in.
        replay_vs_float64: The op's own error in ``dtype`` on the bench inputs.
        target_vs_float64: The recorded target output against the float64 replay.
        bench_vs_float64: The recorded bench output against the float64 replay.
        target_vs_replay: The recorded target output against the replay in ``dtype``.
        op_explains_error: The replay in ``dtype`` reproduces the target output (within a
            quarter of the target's own error against float64).
    """

    op: str
    tensor: str
    dtype: str
    replay_vs_float64: float
    target_vs_float64: float
    bench_vs_float64: float
    target_vs_replay: float
    op_explains_error: bool


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    den = float(np.linalg.norm(b64))
    num = float(np.linalg.norm(a64 - b64))
    return num / den if den > 0 else (0.0 if num == 0 else float("inf"))


def _find(step: DumpStep, index: int | None, label: str) -> OpRecord:
    for op in step.ops:
        if op.index == index:
            return op
    msg = f"Replay: no op with index {index!r} in the {label} dump. Expected a matched row."
    raise CompareError(msg)


def _resolve(torch: Any, name: str) -> Any:
    obj: Any = torch.ops
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            msg = f"Replay of {name!r}: not a torch op. Expected an aten op name."
            raise CompareError(msg)
    return obj


def replay(
    row: OpComparison,
    bench: str | os.PathLike[str] | Dump,
    target: str | os.PathLike[str] | Dump,
    *,
    step: int | None = None,
) -> ReplayResult:
    """Re-run ``row``'s op on the bench inputs, in the target dtype and in float64.

    Args:
        row: A matched tensor-mode row of an output (``output.<k>``).
        bench: The bench dump the row came from.
        target: The target dump.
        step: The step compared (default: the first).

    Raises:
        CompareError: The op cannot be replayed (not an aten op, a non-tensor argument, no
            stored tensors).
        MissingDependencyError: torch is not installed.
    """
    torch = lazy_import("torch", extra="torch", needed_by="compare replay")
    m = re.fullmatch(r"output\.(\d+)", row.tensor)
    if m is None or row.index_target is None:
        msg = f"Replay of row {row.key!r}: not a matched output row. Expected output.<k>."
        raise CompareError(msg)
    bd = bench if isinstance(bench, Dump) else read_dump(bench)
    td = target if isinstance(target, Dump) else read_dump(target)
    bs, ts = bd.step(row.rank, step), td.step(row.rank, step)
    try:
        b_op = _find(bs, row.index, "bench")
        t_op = _find(ts, row.index_target, "target")
        fn = _resolve(torch, row.op)
        inputs = sorted(
            ((int(mm.group(1)), t) for t in b_op.inputs if (mm := _INPUT.fullmatch(t.tensor))),
            key=lambda p: p[0],
        )
        schema = getattr(fn, "_schema", None)
        required = [
            a.name
            for a in (schema.arguments if schema is not None else ())
            if not a.has_default_value() and not a.kwarg_only
        ]
        if [i for i, _ in inputs] != list(range(len(inputs))) or len(inputs) < len(required):
            have = ", ".join(t.tensor for t in b_op.inputs) or "none"
            msg = (
                f"Replay of {row.op!r}: positional arguments are not all tensors (have {have}). "
                "Expected an op whose arguments the dump stored; replay ops such as mm, addmm, "
                "add.Tensor."
            )
            raise CompareError(msg)
        t_inputs = {t.tensor: t for t in t_op.inputs}
        arrays = [bs.load(rec) for _, rec in inputs]
        dtypes = [
            t_inputs[rec.tensor].dtype if rec.tensor in t_inputs else rec.dtype for _, rec in inputs
        ]
        k = int(m.group(1))
        out_b = next(t for t in b_op.outputs if t.tensor == row.tensor)
        out_t = next(t for t in t_op.outputs if t.tensor == row.tensor)
        tdtype = out_t.dtype

        def run(cast: list[Any]) -> np.ndarray:
            try:
                with torch.no_grad():
                    res = fn(*cast)
            except (RuntimeError, TypeError) as exc:
                msg = f"Replay of {row.op!r}: the op rejected the stored inputs ({exc})."
                raise CompareError(msg) from exc
            res = res[k] if isinstance(res, (tuple, list)) else res
            return np.asarray(res.detach().to(torch.float64).cpu().numpy())

        lowp = run(
            [
                torch.from_numpy(np.array(a)).to(getattr(torch, d))
                for a, d in zip(arrays, dtypes, strict=True)
            ]
        )
        high = run([torch.from_numpy(np.array(a, dtype=np.float64)) for a in arrays])
        recorded_t = ts.load(out_t, np.float64)
        recorded_b = bs.load(out_b, np.float64)
    finally:
        bs.close()
        ts.close()
    target_err = _rel(recorded_t, high)
    vs_replay = _rel(recorded_t, lowp)
    return ReplayResult(
        op=row.op,
        tensor=row.tensor,
        dtype=tdtype,
        replay_vs_float64=_rel(lowp, high),
        target_vs_float64=target_err,
        bench_vs_float64=_rel(recorded_b, high),
        target_vs_replay=vs_replay,
        op_explains_error=vs_replay <= 0.25 * target_err or vs_replay == 0.0,
    )
