"""Console summary: first divergence, counts, top offenders, advice."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

from tensorsight.compare.report import ReportFormat
from tensorsight.compare.result import Comparison, OpComparison

__all__ = ["FORMAT", "render_summary", "top_offenders"]


def top_offenders(comparison: Comparison, n: int = 5) -> list[OpComparison]:
    """Rows with the largest error relative to their budget (errors first)."""

    def score(r: OpComparison) -> tuple[int, float]:
        # errors, then warnings with evidence, then ops present on one side only
        rank = {"error": 3, "warning": 2, "pass": 0}[r.verdict] - (r.match == "unmatched")
        if r.error is None or r.budget is None or r.budget <= 0:
            ratio = 0.0 if r.error is None else r.error
        else:
            ratio = r.error / r.budget
        return rank, ratio if math.isfinite(ratio) else 1e300

    # unmatched ops are summarised by unmatched_groups(); offenders are measured errors
    flagged = [r for r in comparison.rows if r.verdict != "pass" and r.match != "unmatched"]
    return sorted(flagged, key=score, reverse=True)[:n]


def unmatched_groups(comparison: Comparison) -> list[tuple[str, str, int]]:
    """``(op, side, number of op calls)`` for ops present on one side only, most frequent first.

    Autocast alone adds dozens of casts on the target side; one line per op name keeps them
    from burying the measured errors.
    """
    calls: Counter[tuple[str, str]] = Counter()
    seen: set[tuple[int, str, str, int | None]] = set()
    # an op with a paired tensor is on both sides (a statistic only one side keeps)
    paired = {
        key
        for r in comparison.rows
        if r.match != "unmatched"
        for key in (
            ("bench", r.rank, r.op, r.index),
            ("target", r.rank, r.op_target, r.index_target),
        )
    }
    for r in comparison.rows:
        if r.match != "unmatched":
            continue
        if r.shape_bench is not None and ("bench", r.rank, r.op, r.index) in paired:
            continue
        if r.shape_bench is None and ("target", r.rank, r.op, r.index) in paired:
            continue
        side = "target" if r.shape_bench is None and r.shape_target is not None else "bench"
        key = (r.rank, r.op, r.direction, r.index)
        if key not in seen:
            seen.add(key)
            calls[(r.op, side)] += 1
    return [(op, side, n) for (op, side), n in calls.most_common()]


def _where(row: OpComparison) -> str:
    mod = row.module_path or "<no module>"
    rank = f"rank {row.rank}, " if row.rank else ""
    return f"{row.op} [{row.direction}] {row.tensor} in {mod} ({rank}index {row.index})"


def render_summary(comparison: Comparison, *, top: int = 5) -> str:
    """Plain text for the terminal; no colour codes, one fact per line."""
    counts = comparison.counts
    note = comparison.header_note
    lines = [note] if note else []
    verdicts = "error budgets" if comparison.profile == "budget" else "classic thresholds"
    lines += [
        f"bench:  {comparison.bench}",
        f"target: {comparison.target}",
        f"rows: {len(comparison.rows)}  pass {counts['pass']}  warning {counts['warning']}  "
        f"error {counts['error']}  one-sided {counts['one_sided']}  (unmatched "
        f"{counts['unmatched']}; verdicts from {verdicts})",
    ]
    first = comparison.first_divergence
    if first is None and note:
        lines.append("first divergence: none found, but the runs cannot be said to agree")
    elif first is None:
        lines.append("first divergence: none - the runs agree within their error budgets")
    else:
        lines.append(f"first divergence: {_where(first)}")
        lines.append(f"  {first.reason}")
    offenders = top_offenders(comparison, top)
    if offenders:
        lines.append("top offenders:")
        for r in offenders:
            lines.append(f"  {r.verdict:<7} {_where(r)}: {r.reason}")
    groups = unmatched_groups(comparison)
    if groups:
        lines.append("only on one side (not compared; casts, detach and allocations by design):")
        for op, side, n in groups[:top]:
            lines.append(f"  {n} x {op} only in {side}")
        if len(groups) > top:
            lines.append(f"  ... and {len(groups) - top} more op names")
    if comparison.advice:
        lines.append("advice:")
        for a in comparison.advice:
            lines.append(f"  {a.mechanism}: {a.evidence}")
    return "\n".join(lines)


def _summary_file(comparison: Comparison, path: str | Path | None = None, *, top: int = 5) -> str:
    """:func:`render_summary`; also written to ``path`` (with a final newline) when given."""
    text = render_summary(comparison, top=top)
    if path is not None:
        Path(path).write_text(text + "\n", encoding="utf-8")
    return text


FORMAT = ReportFormat("summary", ".txt", _summary_file, "the terminal summary as text")
