"""Filtering, sorting and paging of comparison rows, and the module-hierarchy overlay.

Columns are held as numpy arrays (numbers; ``None`` -> NaN) and lists (strings), built once
per comparison, so a query over 10,000+ rows costs milliseconds. Rows gain one derived
column, ``budget_ratio`` (``error / budget``, see :func:`budget_ratio`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorsight.data import VERDICTS

__all__ = ["SCHEMA_VERSION", "ModuleNode", "RowPage", "RowQuery", "Table"]

SCHEMA_VERSION = 1
_VERDICT_RANK = {v: i for i, v in enumerate(VERDICTS)}  # pass < warning < error
_TEXT = ("op", "module_path", "direction", "tensor", "verdict", "reason", "match", "mechanism")


@dataclass(frozen=True)
class RowQuery:
    """Which rows to return, in what order.

    Attributes:
        verdicts: Keep rows with these verdicts (empty: all).
        directions: Keep ``forward`` and/or ``backward`` rows (empty: both).
        op: Case-insensitive substring of the op name (empty: any).
        module: Case-insensitive substring of the module path (empty: any).
        module_prefix: Keep rows in this module or below it (``None``: any; ``""``: the root).
        match: ``"all"``, ``"matched"`` or ``"unmatched"``.
        ranks: Keep rows of these ranks (empty: all).
        ranges: Column -> ``(lo, hi)`` inclusive bounds (``None``: open); rows whose value
            is missing or NaN fail a range.
        sort: Column to sort by (``None``: execution order, i.e. row position).
        descending: Sort largest first. Missing and NaN values always sort last.
        offset: First row of the page, in the filtered order.
        limit: Rows per page.
    """

    verdicts: tuple[str, ...] = ()
    directions: tuple[str, ...] = ()
    op: str = ""
    module: str = ""
    module_prefix: str | None = None
    match: str = "all"
    ranks: tuple[int, ...] = ()
    ranges: Mapping[str, tuple[float | None, float | None]] = field(default_factory=dict)
    sort: str | None = None
    descending: bool = False
    offset: int = 0
    limit: int = 100

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class RowPage:
    """One page of rows.

    Attributes:
        total: Rows in the comparison.
        matched: Rows passing the filters.
        offset: Position of the first returned row in the filtered order.
        rows: column -> value per row, each with ``position`` (its index in the comparison).
    """

    total: int
    matched: int
    offset: int
    rows: tuple[Mapping[str, Any], ...]

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class ModuleNode:
    """One scope of the module hierarchy with what its rows (and its children's) show.

    Attributes:
        path: Dotted module path (``""``: the root, which holds rows outside any module).
        name: Last component of ``path``.
        rows: Rows in this scope and below.
        counts: Rows per verdict in this scope and below, plus ``one_sided`` (rows on one side
            by design, not counted in their verdict).
        verdict: Worst verdict in this scope and below.
        value: Worst value of the chosen metric (largest error, smallest similarity), or
            ``None`` when no metric was asked or none is finite.
        first_position: Position of the first row of the worst verdict (execution order).
        children: Sub-scopes, in order of first appearance.
    """

    path: str
    name: str
    rows: int
    counts: Mapping[str, int]
    verdict: str
    value: float | None
    first_position: int
    children: tuple[ModuleNode, ...] = ()

    SCHEMA_VERSION = SCHEMA_VERSION


def _num(v: Any) -> float:
    if v is None or isinstance(v, (str, bool)):
        return math.nan
    return float(v)


def budget_ratio(error: Any, budget: Any) -> float | None:
    """A row's error over its budget (``None`` when either is missing): above 1, the row
    shows more error than its dtypes, reduction length and inputs explain."""
    e, b = _num(error), _num(budget)
    if math.isnan(e) or math.isnan(b):
        return None
    if b > 0:
        return e / b
    return 0.0 if e == 0 else math.inf


class Table:
    """The rows of one comparison, with columnar copies for queries."""

    def __init__(self, rows: Sequence[Any], metrics: Sequence[str]) -> None:
        self._dicts = [r.to_dict() for r in rows]
        for r, d in zip(rows, self._dicts, strict=True):
            d["budget_ratio"] = budget_ratio(d.get("error"), d.get("budget"))
            d["one_sided"] = bool(r.one_sided)  # on one side by design: neutral, not a warning
        self.metrics = tuple(metrics)
        self.columns = tuple(self._dicts[0]) if self._dicts else ()
        self._text = {c: [str(d.get(c) or "") for d in self._dicts] for c in _TEXT}
        self._lower = {c: [s.lower() for s in self._text[c]] for c in ("op", "module_path")}
        numeric = [
            c for c in self.columns if c not in _TEXT and not c.startswith(("shape", "dtype"))
        ]
        self._num = {c: np.array([_num(d.get(c)) for d in self._dicts]) for c in numeric}
        self._num["verdict"] = np.array([_VERDICT_RANK.get(v, 0) for v in self._text["verdict"]])
        self._num["position"] = np.arange(len(self._dicts), dtype=np.float64)

    def __len__(self) -> int:
        return len(self._dicts)

    @property
    def dicts(self) -> list[dict[str, Any]]:
        """Every row as column -> value, in position order (do not modify)."""
        return self._dicts

    def check(self, position: int) -> int:
        """``position`` when it names a row, else :class:`KeyError`."""
        if not 0 <= position < len(self._dicts):
            raise KeyError(position)
        return position

    def row(self, position: int) -> dict[str, Any]:
        """Row ``position`` as column -> value (plus ``position``)."""
        return {"position": self.check(position), **self._dicts[position]}

    def op_rows(self, position: int) -> list[dict[str, Any]]:
        """Every row of the op ``position`` belongs to (same rank, direction and bench and
        target indices: a bench-only and a target-only op may share an index)."""
        key = self._key(self.check(position))
        lo, hi = position, position
        while lo > 0 and self._key(lo - 1) == key:
            lo -= 1
        while hi + 1 < len(self._dicts) and self._key(hi + 1) == key:
            hi += 1
        return [self.row(i) for i in range(lo, hi + 1)]

    def _key(self, i: int) -> tuple[Any, ...]:
        d = self._dicts[i]
        return (d.get("rank"), d.get("index"), d.get("index_target"), d.get("direction"))

    def distinct(self, column: str) -> list[str]:
        """Sorted distinct values of a text column."""
        return sorted(set(self._text[column]))

    def is_column(self, column: str) -> bool:
        """Whether rows can be sorted or ranged by ``column``."""
        return column in self._num or column in self._text

    def _mask(self, q: RowQuery) -> np.ndarray:
        n = len(self._dicts)
        mask = np.ones(n, dtype=bool)

        def keep(column: str, pred: Any) -> None:
            nonlocal mask
            mask &= np.fromiter((pred(s) for s in self._text[column]), dtype=bool, count=n)

        if q.verdicts:
            keep("verdict", lambda s: s in q.verdicts)
        if q.directions:
            keep("direction", lambda s: s in q.directions)
        if q.match != "all":
            want_unmatched = q.match == "unmatched"
            keep("match", lambda s: (s == "unmatched") == want_unmatched)
        for column, needle in (("op", q.op.lower()), ("module_path", q.module.lower())):
            if needle:
                low = self._lower[column]
                mask &= np.fromiter((needle in s for s in low), dtype=bool, count=n)
        if q.module_prefix is not None and q.module_prefix != "":
            pre = q.module_prefix
            keep("module_path", lambda s: s == pre or s.startswith(pre + "."))
        if q.ranks and "rank" in self._num:
            mask &= np.isin(self._num["rank"], np.array(q.ranks, dtype=np.float64))
        for column, (lo, hi) in q.ranges.items():
            values = self._num.get(column)
            if values is None:
                continue
            with np.errstate(invalid="ignore"):
                ok = ~np.isnan(values)
                if lo is not None:
                    ok &= values >= lo
                if hi is not None:
                    ok &= values <= hi
            mask &= ok
        return mask

    def _order(self, idx: np.ndarray, q: RowQuery) -> np.ndarray:
        if q.sort is None or q.sort == "position":
            return idx[::-1] if q.descending else idx
        if q.sort in self._num:
            values = self._num[q.sort][idx]
            key = -values if q.descending else values
            return idx[np.argsort(key, kind="stable")]  # NaN sorts last either way
        text = self._text[q.sort]
        present = [i for i in idx.tolist() if text[i]]
        empty = [i for i in idx.tolist() if not text[i]]
        present.sort(key=lambda i: text[i], reverse=q.descending)
        return np.array(present + empty, dtype=np.int64)

    def query(self, q: RowQuery) -> RowPage:
        """The page of rows ``q`` asks for (unknown columns raise :class:`KeyError`)."""
        for column in (q.sort, *q.ranges):
            if column is not None and column != "position" and not self.is_column(column):
                raise KeyError(column)
        idx = np.flatnonzero(self._mask(q))
        order = self._order(idx, q)
        page = order[q.offset : q.offset + q.limit].tolist()
        return RowPage(len(self._dicts), int(idx.size), q.offset, tuple(self.row(i) for i in page))

    def ranges(self) -> dict[str, tuple[float, float] | None]:
        """Finite (min, max) of each metric over every row (``None``: no finite value)."""
        out: dict[str, tuple[float, float] | None] = {}
        for key in self.metrics:
            values = self._num.get(key)
            finite = values[np.isfinite(values)] if values is not None else np.array([])
            out[key] = (float(finite.min()), float(finite.max())) if finite.size else None
        return out

    def module_tree(
        self, metric: str | None, direction: str | None, *, higher_is_better: bool = False
    ) -> ModuleNode:
        """Rows grouped by dotted module path; scopes take their worst child's colour."""
        if metric is not None and metric not in self._num:
            raise KeyError(metric)
        values = self._num[metric] if metric is not None else None
        nodes: dict[str, dict[str, Any]] = {}
        order: dict[str, list[str]] = {}

        def node(path: str) -> dict[str, Any]:
            got = nodes.get(path)
            if got is None:
                got = {
                    "rows": 0,
                    "counts": dict.fromkeys((*_VERDICT_RANK, "one_sided"), 0),
                    "verdict": "pass",
                    "value": None,
                    "first": -1,
                }
                nodes[path] = got
                if path:
                    parent = path.rpartition(".")[0]
                    node(parent)
                    order.setdefault(parent, []).append(path)
            return got

        node("")
        for i, d in enumerate(self._dicts):
            if direction and d.get("direction") != direction:
                continue
            verdict = self._text["verdict"][i]
            one_sided = bool(d.get("one_sided"))
            v = float(values[i]) if values is not None else math.nan
            path = self._text["module_path"][i]
            chain = [path]
            while path:
                path = path.rpartition(".")[0]
                chain.append(path)
            for p in chain:
                n = node(p)
                n["rows"] += 1
                kind = "one_sided" if one_sided else verdict  # counted apart from the verdicts
                n["counts"][kind] = n["counts"].get(kind, 0) + 1
                worse = _VERDICT_RANK.get(verdict, 0) > _VERDICT_RANK[n["verdict"]]
                if worse:
                    n["verdict"], n["first"] = verdict, i
                elif n["first"] < 0:
                    n["first"] = i
                if not math.isnan(v):
                    old = n["value"]
                    if old is None or (v < old if higher_is_better else v > old):
                        n["value"] = v

        def build(path: str) -> ModuleNode:
            n = nodes[path]
            return ModuleNode(
                path=path,
                name=path.rpartition(".")[2],
                rows=n["rows"],
                counts=n["counts"],
                verdict=n["verdict"],
                value=n["value"],
                first_position=n["first"],
                children=tuple(build(c) for c in order.get(path, []) if nodes[c]["rows"]),
            )

        return build("")
