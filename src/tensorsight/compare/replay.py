"""Replay a flagged op: re-run it on the bench side's inputs in the target dtype and float64.

This confirms whether the op itself introduces a row's error. The op is resolved from its
aten name (``aten.addmm.default`` -> ``torch.ops.aten.addmm.default``) and called as it was
recorded: level-op dumps (schema version 2 on) hold every argument of each call in the op
table's ``args`` column (``eps``, shapes, dims, ``value=``, dtypes, keyword arguments), and
the tensors come from the bench dump's stored inputs. Nothing is dropped: an argument the
dump does not hold (a tensor that was not stored, a ``Generator``, arguments over the
size limit, a dump without an ``args`` column whose op takes non-tensor arguments) makes
replay refuse with a :class:`~tensorsight.errors.CompareError` naming it.

Reading the result: ``target_vs_replay`` small and ``replay_vs_float64`` close to the row's
error means the op, fed identical inputs, produces the target's output in the target dtype:
the op's own rounding explains the error. ``target_vs_replay`` large means the target's op
computed something else from the same inputs (a different kernel, parameter or bug).
:func:`replay_recorded` re-runs one recorded op of one dump on its own stored inputs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorsight._lazy import lazy_import
from tensorsight.compare.result import OpComparison, ReplayResult
from tensorsight.dumpformat.reader import Dump, DumpStep, read_dump
from tensorsight.dumpformat.schema import OpRecord, TensorRecord
from tensorsight.errors import CompareError

__all__ = ["ReplayResult", "replay", "replay_recorded"]


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


class _Unreplayable(Exception):
    """Why a recorded call cannot be rebuilt (becomes a one-line CompareError)."""


def _value(torch: Any, v: Any, arg: str, tensor: Callable[[str], Any]) -> Any:
    if isinstance(v, list):
        return [_value(torch, x, arg, tensor) for x in v]
    if not isinstance(v, dict):
        return v
    if "tensor" in v:
        t = tensor(str(v["tensor"]))
        if t is None:
            why = f"argument {arg!r}: tensor {v['tensor']} is not stored in the dump"
            raise _Unreplayable(why)
        return t
    if "float" in v:
        return float(v["float"])
    if "dtype" in v:
        dt = getattr(torch, str(v["dtype"]), None)
        if isinstance(dt, torch.dtype):
            return dt
    if "layout" in v:
        return getattr(torch, str(v["layout"]))
    if "memory_format" in v:
        return getattr(torch, str(v["memory_format"]))
    if "device" in v:
        return torch.device(str(v["device"]))
    what = v.get("unsupported") or json.dumps(v)
    why = f"argument {arg!r} is a {what}, which a dump does not hold"
    raise _Unreplayable(why)


def call_arguments(
    fn: Any, op: OpRecord, tensor: Callable[[str], Any]
) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments of a recorded call of ``fn`` (an OpOverload).

    ``tensor(name)`` gives the tensor of row ``name`` (``input.0``) or ``None``. Raises
    CompareError when an argument cannot be rebuilt.
    """
    torch = lazy_import("torch", extra="torch", needed_by="compare replay")
    schema = getattr(fn, "_schema", None)
    arguments = list(schema.arguments) if schema is not None else []
    try:
        if op.args is None:
            return _tensor_only(op, arguments, tensor)
        try:
            recorded = json.loads(op.args)
        except ValueError as exc:
            why = f"its recorded arguments are not JSON ({exc})"
            raise _Unreplayable(why) from exc
        if not isinstance(recorded, dict):
            why = "its recorded arguments are not a JSON object"
            raise _Unreplayable(why)
        if "__omitted__" in recorded:
            n = recorded["__omitted__"]
            why = f"its arguments ({n} characters) were over the dump's limit"
            raise _Unreplayable(why)
        names = {a.name for a in arguments}
        extra = [k for k in recorded if k not in names]
        if extra:
            why = f"recorded argument {extra[0]!r} is not in this torch's schema"
            raise _Unreplayable(why)
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        skipped = False  # a positional argument left out: the ones after it go by name
        for a in arguments:
            if a.name not in recorded:
                if a.has_default_value():
                    skipped = skipped or not a.kwarg_only
                    continue  # a newer schema's argument: its default is what ran before it
                why = f"argument {a.name!r} was not recorded"
                raise _Unreplayable(why)
            value = _value(torch, recorded[a.name], a.name, tensor)
            if a.kwarg_only or skipped:
                kwargs[a.name] = value
            else:
                args.append(value)
        return args, kwargs
    except _Unreplayable as exc:
        msg = f"Replay of {op.op!r}: {exc}."
        raise CompareError(msg) from None


def _tensor_only(
    op: OpRecord, arguments: list[Any], tensor: Callable[[str], Any]
) -> tuple[list[Any], dict[str, Any]]:
    """Dumps without an ``args`` column: only ops whose arguments are all tensors."""
    others = [a.name for a in arguments if "Tensor" not in str(a.type)]
    if others:
        why = (
            f"the dump recorded no arguments (level module/api, or a dump older than schema "
            f"version 2) and the op takes non-tensor ones ({', '.join(others)}); dump again at "
            "level op"
        )
        raise _Unreplayable(why)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = 0
    for a in arguments:
        name = f"input.{a.name}" if a.kwarg_only else f"input.{positional}"
        if not a.kwarg_only:
            positional += 1
        t = tensor(name)
        if t is None and not a.has_default_value():
            why = f"argument {a.name!r}: tensor {name} is not stored in the dump"
            raise _Unreplayable(why)
        if t is None:
            break  # optional tensors after it stay at their defaults (None)
        if a.kwarg_only:
            kwargs[a.name] = t
        else:
            args.append(t)
    return args, kwargs


def _inputs(step: DumpStep, op: OpRecord) -> dict[str, np.ndarray]:
    out = {}
    for rec in op.inputs:
        if rec.data is not None and step.has_data(rec):
            try:
                out[rec.tensor] = step.load(rec)
            except (OSError, ValueError) as exc:
                msg = f"Replay of {op.op!r}: tensor {rec.tensor} cannot be loaded ({exc})."
                raise CompareError(msg) from exc
    return out


def _run(
    torch: Any,
    fn: Any,
    op: OpRecord,
    arrays: dict[str, np.ndarray],
    dtype_of: Callable[[str], str],
    float64: bool,
) -> Any:
    """Call ``fn`` as ``op`` was called, on ``arrays`` in ``dtype_of`` (or float64)."""

    def tensor(name: str) -> Any:
        a = arrays.get(name)
        if a is None:
            return None
        t = torch.from_numpy(np.array(a))
        if float64 and t.is_floating_point():
            return t.to(torch.float64)
        dt = getattr(torch, dtype_of(name), None)
        return t.to(dt) if isinstance(dt, torch.dtype) else t

    args, kwargs = call_arguments(fn, op, tensor)
    try:
        with torch.no_grad():
            res = fn(*args, **kwargs)
    except (RuntimeError, TypeError, ValueError, IndexError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = f"Replay of {op.op!r}: the op rejected the recorded arguments ({first})."
        raise CompareError(msg) from exc
    if res is None:  # an op that returns nothing (``_foreach_add_``): what it wrote into
        res = _written(fn, args, kwargs)
    return res


def _written(fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """The arguments an op wrote into, as the capture records them for an op that returns
    nothing: the one written argument itself (a tensor list: ``output.<j>``), several as a
    tuple (``output.<k>``, ``output.<k>.<j>``)."""
    schema = getattr(fn, "_schema", None)
    values = []
    for i, a in enumerate(schema.arguments if schema is not None else ()):
        if a.alias_info is not None and a.alias_info.is_write:
            if a.kwarg_only or i >= len(args):
                if a.name in kwargs:
                    values.append(kwargs[a.name])
            else:
                values.append(args[i])
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _output(torch: Any, res: Any, name: str, op: str) -> np.ndarray:
    parts = name.split(".")[1:]
    value = res
    for p in parts:
        if isinstance(value, (tuple, list)):
            value = value[int(p)]
        elif p != "0":
            break
    if not isinstance(value, torch.Tensor):
        msg = f"Replay of {op!r}: the replayed call returned no tensor for {name}."
        raise CompareError(msg)
    return np.asarray(value.detach().to(torch.float64).cpu().numpy())


def replay_recorded(
    dump: str | os.PathLike[str] | Dump,
    index: int,
    *,
    rank: int | None = None,
    step: int | None = None,
    float64: bool = False,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Re-run op ``index`` of one dump on its own stored inputs.

    Returns ``{output name: (replayed, recorded)}`` as float64 arrays, for every stored
    output. ``float64``: run in float64 instead of the recorded dtypes. Raises CompareError
    when the op cannot be replayed (the message says why).
    """
    torch = lazy_import("torch", extra="torch", needed_by="compare replay")
    d = dump if isinstance(dump, Dump) else read_dump(dump)
    s = d.step(rank, step)
    try:
        op = _find(s, index, "replayed")
        fn = _resolve(torch, op.op)
        dtypes = {r.tensor: r.dtype for r in op.inputs}
        res = _run(torch, fn, op, _inputs(s, op), lambda n: dtypes.get(n, ""), float64)
        out = {}
        for rec in op.outputs:
            if rec.data is not None and s.has_data(rec):
                out[rec.tensor] = (_output(torch, res, rec.tensor, op.op), s.load(rec, np.float64))
        return out
    finally:
        s.close()


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
        CompareError: The op cannot be replayed (not an aten op, an argument the dump does
            not hold, no stored tensors); the message says why in one line.
        MissingDependencyError: torch is not installed.
    """
    torch = lazy_import("torch", extra="torch", needed_by="compare replay")
    m = re.fullmatch(r"output\.(\d+)(\.\d+)?", row.tensor)
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
        if b_op.args is None and t_op.args is not None:
            b_op = _with_args(b_op, t_op.args)
        t_dtypes = {t.tensor: t.dtype for t in t_op.inputs}
        b_dtypes = {t.tensor: t.dtype for t in b_op.inputs}
        arrays = _inputs(bs, b_op)
        out_b = _row(b_op.outputs, row.tensor, "bench")
        out_t = _row(t_op.outputs, row.tensor, "target")
        tdtype = out_t.dtype

        def dtype_of(name: str) -> str:
            return t_dtypes.get(name) or b_dtypes.get(name, "")

        lowp = _output(torch, _run(torch, fn, b_op, arrays, dtype_of, False), row.tensor, row.op)
        high = _output(torch, _run(torch, fn, b_op, arrays, dtype_of, True), row.tensor, row.op)
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


def _with_args(op: OpRecord, args: str) -> OpRecord:
    from dataclasses import replace

    return replace(op, args=args)


def _row(rows: tuple[TensorRecord, ...], name: str, side: str) -> TensorRecord:
    for r in rows:
        if r.tensor == name:
            return r
    msg = f"Replay: the {side} op has no {name}. Expected a matched output row."
    raise CompareError(msg)
