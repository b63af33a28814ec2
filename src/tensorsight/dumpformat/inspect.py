"""``tensorsight inspect DUMP``: a summary of a dump as data, and its text rendering."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from tensorsight.dumpformat import _fs
from tensorsight.dumpformat.reader import read_dump
from tensorsight.dumpformat.schema import TensorRecord

__all__ = ["DumpInspection", "StepSummary", "format_inspection", "inspect_dump"]


@dataclass(frozen=True)
class StepSummary:
    """One rank's step: op counts, head of the op table, ops with NaN/Inf.

    Attributes:
        rank: Rank.
        step: Step.
        op_count: Ops recorded.
        tensor_count: Rows recorded.
        forward_ops: Ops recorded in forward.
        backward_ops: Ops recorded in backward.
        op_counts: ``(op name, count)``, most frequent first.
        head: The first rows of the op table.
        nonfinite: Rows whose tensor holds NaN or Inf, in execution order.
        stored_tensors: Rows with a stored tensor.
        with_stats: Rows with statistics (0 for a MindSpore Dump, which stores none: then
            ``nonfinite`` says nothing).
        complete: Whether the step ended normally (``False``: cut off by a crash or an
            exception; its rows are those that reached the disk).
    """

    rank: int
    step: int
    op_count: int
    tensor_count: int
    forward_ops: int
    backward_ops: int
    op_counts: tuple[tuple[str, int], ...]
    head: tuple[TensorRecord, ...]
    nonfinite: tuple[TensorRecord, ...]
    stored_tensors: int
    with_stats: int = 0
    complete: bool = True


@dataclass(frozen=True)
class DumpInspection:
    """What ``tensorsight inspect`` shows about a dump.

    Attributes:
        path: The dump folder.
        format: ``tensorsight`` or ``msprobe``.
        complete: Whether every rank finished normally.
        incomplete_reasons: Why ranks are incomplete.
        mode: Capture mode (``None`` for msprobe when unknown).
        level: Capture level.
        size_bytes: Bytes on disk.
        steps: One summary per rank and step.
    """

    path: str
    format: str
    complete: bool
    incomplete_reasons: tuple[str, ...]
    mode: str | None
    level: str | None
    size_bytes: int
    steps: tuple[StepSummary, ...]


def _size(path: _fs.AnyPath) -> int:
    if isinstance(path, _fs.RemotePath):
        return _fs.tree_size(path)
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(dirpath, f))
    return total


def inspect_dump(path: str | os.PathLike[str], *, head: int = 10) -> DumpInspection:
    """Summarize a dump (either format) without loading tensors.

    Args:
        path: The dump folder.
        head: Rows of the op table to keep per step.

    Raises:
        InputFileError: ``path`` is missing.
        DumpFormatError: ``path`` is not a dump.
    """
    d = read_dump(path)
    summaries = []
    mode = level = None
    reasons: list[str] = []
    for r in d.ranks:
        m = d.manifest(r)
        if m is not None:
            mode, level = m.mode, m.level
            if not m.complete:
                reasons.append(f"rank {r}: {m.incomplete_reason or 'the run stopped before close'}")
        for s in d.steps(r):
            st = d.step(r, s)
            ops = st.ops
            counts = Counter(o.op for o in ops)
            summaries.append(
                StepSummary(
                    rank=r,
                    step=s,
                    op_count=len(ops),
                    tensor_count=len(st.rows),
                    forward_ops=sum(o.direction == "forward" for o in ops),
                    backward_ops=sum(o.direction == "backward" for o in ops),
                    op_counts=tuple(counts.most_common()),
                    head=st.rows[:head],
                    nonfinite=tuple(
                        t for t in st.rows if t.stats is not None and t.stats.has_nonfinite
                    ),
                    stored_tensors=sum(t.data is not None for t in st.rows),
                    with_stats=sum(t.stats is not None for t in st.rows),
                    complete=st.complete,
                )
            )
            st.close()
    return DumpInspection(
        path=str(d.path),
        format=d.format,
        complete=d.complete,
        incomplete_reasons=tuple(reasons),
        mode=mode,
        level=level,
        size_bytes=_size(d.path),
        steps=tuple(summaries),
    )


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def format_inspection(ins: DumpInspection, *, top: int = 10) -> str:
    """Render a :class:`DumpInspection` as plain text (what ``tensorsight inspect`` prints)."""
    state = "complete" if ins.complete else "INCOMPLETE"
    lines = [
        f"dump {ins.path} ({ins.format}, mode {ins.mode or '?'}, level {ins.level or '?'}, "
        f"{ins.size_bytes / 1e6:.1f} MB, {state})"
    ]
    lines += [f"  incomplete: {r}" for r in ins.incomplete_reasons]
    for s in ins.steps:
        if s.op_count == 0:
            why = "" if ins.complete else " (the run stopped before any reached the op table)"
            lines.append(f"rank {s.rank} step {s.step}: no ops recorded{why}")
            continue
        cut = "" if s.complete else " (cut off: the ops that reached the disk)"
        lines.append(
            f"rank {s.rank} step {s.step}: {s.op_count} ops ({s.forward_ops} forward, "
            f"{s.backward_ops} backward), {s.tensor_count} tensors, {s.stored_tensors} "
            f"stored{cut}"
        )
        counts = ", ".join(f"{op} x{n}" for op, n in s.op_counts[:top])
        lines.append(f"  most frequent: {counts}")
        lines.append("  index  direction  op / module / tensor  shape  dtype  min  max  mean")
        for t in s.head:
            st = t.stats
            lines.append(
                f"  {t.index:5d}  {t.direction:9s}  {t.op} [{t.module_path}] {t.tensor}  "
                f"{list(t.shape)}  {t.dtype}  "
                f"{_num(st.min if st else None)}  {_num(st.max if st else None)}  "
                f"{_num(st.mean if st else None)}"
            )
        if s.nonfinite:
            lines.append(f"  {len(s.nonfinite)} tensors with NaN/Inf, first:")
            for t in s.nonfinite[:top]:
                assert t.stats is not None
                lines.append(
                    f"    {t.index:5d} {t.direction} {t.op} [{t.module_path}] {t.tensor}: "
                    f"nan={t.stats.nan_count} +inf={t.stats.posinf_count} -"
                    f"inf={t.stats.neginf_count}"
                )
        elif s.with_stats == 0:
            lines.append("  no statistics stored: NaN/Inf not counted")
        else:
            lines.append("  no NaN/Inf")
    return "\n".join(lines)
