"""Build the side-by-side trace of one comparison and page its visible lines.

What a trace is, and every type it answers with, is specified in
:mod:`tensorsight.board.views.comparison.trace_types`. :class:`Trace` is built once per comparison
file from its rows (one pass: group the rows into ops, merge both execution orders, emit
headers as module scopes are entered, add up each header's ops when it closes); a query walks
the line list once, skipping folded subtrees, and the last few answers are cached.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tensorsight.board.views.comparison.trace_types import (
    MAX_DIFFS,
    MAX_TEXT,
    STATUSES,
    SideOp,
    TraceLine,
    TracePage,
    TraceQuery,
    Upstream,
)
from tensorsight.data import VERDICTS

__all__ = ["Trace"]

_RANK = {v: i for i, v in enumerate(VERDICTS)}  # pass < warning < error
_STATUSES = STATUSES


@dataclass
class _Node:
    kind: str
    depth: int
    label: str
    path: str
    direction: str
    parent: int
    rank: int = 0
    end: int = 0
    status: str = "matched"
    side: str = "both"
    verdict: str = "pass"
    position: int = -1
    rows: int = 0
    ops: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_STATUSES, 0))
    bench: SideOp | None = None
    target: SideOp | None = None
    match: str = ""
    moved: bool = False
    reason: str = ""


@dataclass
class _Unit:
    positions: list[int]
    rank: int
    direction: str
    index: int | None
    index_target: int | None
    status: str
    bench: SideOp | None
    target: SideOp | None
    module: str


def _text(v: Any) -> str:
    return "" if v is None else str(v)


def _side(rows: Sequence[Mapping[str, Any]], side: str, op: str, index: Any) -> SideOp | None:
    seen = [r for r in rows if r.get(f"shape_{side}") is not None or r.get(f"dtype_{side}")]
    if not seen:
        return None
    first = next((r for r in seen if str(r.get("tensor", "")).startswith("output")), seen[0])
    shape = first.get(f"shape_{side}")
    return SideOp(
        index=int(index) if index is not None else None,
        op=op,
        dtype=first.get(f"dtype_{side}"),
        shape=tuple(int(d) for d in shape) if shape is not None else None,
        tensors=len(seen),
    )


def _unit(rows: Sequence[Mapping[str, Any]], positions: list[int]) -> _Unit:
    head = rows[0]
    index, index_target = head.get("index"), head.get("index_target")
    op = _text(head.get("op"))
    bench = _side(rows, "bench", op, index)
    target = _side(rows, "target", _text(head.get("op_target")) or op, index_target)
    unmatched = any(r.get("match") == "unmatched" for r in rows)
    if bench is None and target is None:  # no shapes nor dtypes recorded on either side
        if index_target is None:
            bench = SideOp(index, op, None, None, 0)
        else:
            target = SideOp(index_target, op, None, None, 0)
    if not unmatched:
        status = "matched"
    elif bench is not None and target is not None:
        status = "partial"
    else:
        status = "bench" if bench is not None else "target"
    return _Unit(
        positions,
        int(head.get("rank") or 0),
        _text(head.get("direction")),
        index,
        index_target if status != "bench" else None,
        status,
        bench,
        target,
        _text(head.get("module_path")),
    )


def _units(rows: Sequence[Mapping[str, Any]]) -> list[_Unit]:
    out: list[_Unit] = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i < len(rows) and _key(rows[i]) == _key(rows[start]):
            continue
        out.append(_unit(rows[start:i], list(range(start, i))))
        start = i
    return out


def _key(r: Mapping[str, Any]) -> tuple[Any, ...]:
    return (r.get("rank"), r.get("direction"), r.get("index"), r.get("index_target"))


def _merge(units: list[_Unit]) -> list[_Unit]:
    """Bench-side units in bench order, target-only units slotted in by target order."""
    ordered = sorted((u for u in units if u.status != "target"), key=lambda u: u.index or 0)
    extra = sorted((u for u in units if u.status == "target"), key=lambda u: u.index_target or 0)
    out: list[_Unit] = []
    j = 0
    for u in ordered:
        if u.index_target is not None:
            while j < len(extra) and (extra[j].index_target or 0) < u.index_target:
                out.append(extra[j])
                j += 1
        out.append(u)
    out.extend(extra[j:])
    return out


class Trace:
    """The merged trace of one comparison (module docstring); built once per file."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.nodes: list[_Node] = []
        self.row_line = [0] * len(rows)
        units = _units(rows)
        groups: dict[tuple[int, str], list[_Unit]] = {}
        for u in units:
            groups.setdefault((u.rank, u.direction), []).append(u)
        ranks = {rank for rank, _ in groups}
        for (rank, direction), members in groups.items():
            label = direction if len(ranks) == 1 else f"rank {rank} · {direction}"
            self._emit(label, rank, direction, _merge(members), rows)
        self._tops = [i for i, n in enumerate(self.nodes) if n.kind == "direction"]
        self._cache: dict[tuple[Any, ...], tuple[list[int], list[int]]] = {}
        self._lock = threading.Lock()

    def _emit(
        self,
        label: str,
        rank: int,
        direction: str,
        units: list[_Unit],
        rows: Sequence[Mapping[str, Any]],
    ) -> None:
        top = len(self.nodes)
        self.nodes.append(_Node("direction", 0, label, "", direction, -1, rank))
        stack: list[int] = [top]  # open headers: direction, then scopes
        scopes: list[str] = []  # path components of the open scopes
        last_target = -1
        split: dict[str, list[str]] = {}
        for u in units:
            parts = split.get(u.module)
            if parts is None:
                parts = split[u.module] = u.module.split(".") if u.module else []
            keep = 0
            while keep < min(len(parts), len(scopes)) and parts[keep] == scopes[keep]:
                keep += 1
            for _ in range(len(scopes) - keep):
                self._close(stack.pop())
            del scopes[keep:]
            for k in range(keep, len(parts)):
                scopes.append(parts[k])
                path = ".".join(parts[: k + 1])
                stack.append(len(self.nodes))
                self.nodes.append(_Node("scope", k + 1, parts[k], path, direction, stack[-2], rank))
            node = self._op(u, len(parts) + 1, direction, stack[-1], rows)
            node.rank = rank
            if u.status in ("matched", "partial") and u.index_target is not None:
                node.moved = u.index_target < last_target
                last_target = max(last_target, u.index_target)
            for p in u.positions:
                self.row_line[p] = len(self.nodes)
            self.nodes.append(node)
            self._add(self.nodes[stack[-1]], node)  # headers add up their children on close
        while stack:
            self._close(stack.pop())

    def _op(
        self, u: _Unit, depth: int, direction: str, parent: int, rows: Sequence[Mapping[str, Any]]
    ) -> _Node:
        mine = [rows[p] for p in u.positions]
        verdict = max((_text(r.get("verdict")) for r in mine), key=lambda v: _RANK.get(v, 0))
        best = max(
            range(len(mine)),
            key=lambda i: (
                _RANK.get(_text(mine[i].get("verdict")), 0),
                str(mine[i].get("tensor", "")).startswith("output"),
                -i,
            ),
        )
        odd = next((r for r in mine if r.get("match") == "unmatched"), mine[best])
        some = u.bench or u.target
        label = some.op if some is not None else ""
        return _Node(
            "op",
            depth,
            label,
            u.module,
            direction,
            parent,
            status=u.status,
            side="both" if u.bench and u.target else ("bench" if u.bench else "target"),
            verdict=verdict or "pass",
            position=u.positions[best],
            rows=len(mine),
            ops=1,
            bench=u.bench,
            target=u.target,
            match="unmatched" if u.status in ("bench", "target") else _text(mine[0].get("match")),
            reason=_text(odd.get("reason"))[:MAX_TEXT],
        )

    @staticmethod
    def _add(h: _Node, n: _Node) -> None:
        """Count op or closed header ``n`` into header ``h`` (children arrive in order)."""
        if n.ops == 0:
            return
        if h.ops == 0:
            h.side, h.position, h.verdict = n.side, n.position, n.verdict
        elif h.side != n.side:
            h.side = "both"
        h.ops += n.ops
        h.rows += n.rows
        if n.kind == "op":
            h.counts[n.status] += 1
        else:
            for key in _STATUSES:
                h.counts[key] += n.counts[key]
        if n.status not in ("matched", "same"):
            h.status = "differs"
        if _RANK.get(n.verdict, 0) > _RANK.get(h.verdict, 0):
            h.verdict, h.position = n.verdict, n.position

    def _close(self, h: int) -> None:
        node = self.nodes[h]
        node.end = len(self.nodes)
        if node.status == "matched":
            node.status = "same"
        if node.parent >= 0:
            self._add(self.nodes[node.parent], node)

    # ------------------------------------------------------------------ queries
    def upstream(self, position: int) -> Upstream:
        """Ops not matched one to one that ran before row ``position``'s op, same rank."""
        line = self.row_line[position]
        rank = self.nodes[line].rank
        odd = [
            n
            for n in self.nodes[:line]
            if n.kind == "op" and n.rank == rank and n.status != "matched"
        ]
        if not odd:
            return Upstream(0)
        first = odd[0]
        return Upstream(len(odd), first.position, first.label, first.path, first.status)

    def _folded(self, i: int, q: TraceQuery, toggles: frozenset[int]) -> bool:
        n = self.nodes[i]
        default = q.fold == "clean" and n.kind == "scope" and n.status == "same"
        return default != (i in toggles)

    def _visible(self, q: TraceQuery, toggles: frozenset[int]) -> tuple[list[int], list[int]]:
        """Visible node ids, and the visible line numbers of differences (capped)."""
        key = (q.directions, q.fold, toggles)
        with self._lock:
            got = self._cache.get(key)
        if got is not None:
            return got
        out: list[int] = []
        diffs: list[int] = []
        i, n = 0, len(self.nodes)
        while i < n:
            node = self.nodes[i]
            if node.kind == "direction" and q.directions and node.direction not in q.directions:
                i = node.end
                continue
            folded = node.kind != "op" and self._folded(i, q, toggles)
            if (node.kind == "op" and node.status != "matched") or (
                folded and node.status == "differs"
            ):
                diffs.append(len(out))
            out.append(i)
            i = node.end if folded else i + 1
        with self._lock:
            if len(self._cache) >= 8:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = (out, diffs)
        return out, diffs

    def page(self, q: TraceQuery) -> TracePage:
        """The window of visible lines ``q`` asks for (``at`` out of range: :class:`KeyError`)."""
        toggles = frozenset(t for t in q.toggles if 0 <= t < len(self.nodes))
        wanted: int | None = None
        if q.at is not None:
            if not 0 <= q.at < len(self.row_line):
                raise KeyError(q.at)
            wanted = self.row_line[q.at]
            opened = set(toggles)
            p = self.nodes[wanted].parent
            while p >= 0:
                if self._folded(p, q, frozenset(opened)):
                    opened ^= {p}
                p = self.nodes[p].parent
            toggles = frozenset(opened)
        visible, diffs = self._visible(q, toggles)
        focus = None
        offset = q.offset
        if wanted is not None:
            k = bisect.bisect_left(visible, wanted)
            focus = k if k < len(visible) and visible[k] == wanted else None
            if focus is not None and not offset <= focus < offset + q.limit:
                offset = max(0, focus - q.limit // 3)
        stop = min(len(visible), offset + q.limit)
        return TracePage(
            total=len(visible),
            offset=offset,
            lines=tuple(self._line(k, visible[k], q, toggles) for k in range(offset, stop)),
            focus=focus,
            toggles=tuple(sorted(toggles)),
            diffs=tuple(diffs[:MAX_DIFFS]),
            diffs_truncated=len(diffs) > MAX_DIFFS,
            counts=self._counts(q),
        )

    def _counts(self, q: TraceQuery) -> dict[str, int]:
        out = dict.fromkeys(_STATUSES, 0)
        for i in self._tops:
            node = self.nodes[i]
            if not q.directions or node.direction in q.directions:
                for s in _STATUSES:
                    out[s] += node.counts[s]
        out["bench_ops"] = out["matched"] + out["partial"] + out["bench"]
        out["target_ops"] = out["matched"] + out["partial"] + out["target"]
        return out

    def _line(self, k: int, i: int, q: TraceQuery, toggles: frozenset[int]) -> TraceLine:
        n = self.nodes[i]
        return TraceLine(
            line=k,
            id=i,
            kind=n.kind,
            depth=n.depth,
            label=n.label[:MAX_TEXT],
            path=n.path[:MAX_TEXT],
            direction=n.direction,
            status=n.status,
            side=n.side,
            verdict=n.verdict,
            position=n.position,
            rows=n.rows,
            ops=n.ops,
            counts=dict(n.counts) if n.kind != "op" else {},
            folded=n.kind != "op" and self._folded(i, q, toggles),
            bench=n.bench,
            target=n.target,
            match=n.match,
            moved=n.moved,
            reason=n.reason,
        )
