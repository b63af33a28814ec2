"""Per-run storage of everything read, and the restart rule.

Restart rule (one rule, documented in docs/guide/reading_logs.md): a run's event files are
read in name order (writers put the creation time in the name). When a *later TensorBoard
file* of the run brings the first value of a tag at step ``s``, every value of that tag read
from earlier files with step >= ``s`` is dropped: the restarted writer overwrote them. A
``SessionLog.START`` event at step ``s`` drops every earlier value of the run with step >=
``s`` (TensorBoard's purge). Within one file nothing is dropped (steps may go back and are
kept in file order). MindSpore files never purge: MindSpore re-emits step-0 values of
summary operators when it evaluates a network for a loss landscape, and these must not
erase the training history.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.summary._tbdecode import Item
from tensorsight.summary.reader import Batch, EventFileReader
from tensorsight.summary.records import KINDS, Graph, ScalarSeries

__all__ = ["RunStore"]

_EMPTY_I = np.empty(0, np.int64)
_EMPTY_F = np.empty(0, np.float64)


class ScalarStore:
    """Columns of one scalar tag in growable arrays (x1.5 capacity steps).

    Appends copy into preallocated columns, so a load does not leave many small arrays
    behind (they fragment the heap: measured +140 MB RSS on 6M points when concatenated
    afterwards). :meth:`compact` drops the spare capacity. :meth:`series` returns read-only
    views; a later append never changes what an earlier view shows.
    """

    def __init__(self) -> None:
        self._steps: NDArray[np.int64] = _EMPTY_I
        self._walls: NDArray[np.float64] = _EMPTY_F
        self._values: NDArray[np.float64] = _EMPTY_F
        self.count = 0

    def append(
        self,
        steps: NDArray[np.int64],
        walls: NDArray[np.float64],
        values: NDArray[np.float64],
        expect_more: int = 0,
    ) -> None:
        """Add points; ``expect_more`` sizes a growth for points still to come (a hint)."""
        k = int(steps.shape[0])
        n = self.count
        if n + k > self._steps.shape[0]:
            cap = max(n + k + expect_more, int(self._steps.shape[0] * 1.5), 1024)
            self._resize(cap)
        self._steps[n : n + k] = steps
        self._walls[n : n + k] = walls
        self._values[n : n + k] = values
        self.count = n + k

    def _resize(self, cap: int) -> None:
        n = self.count
        steps = np.empty(cap, np.int64)
        steps[:n] = self._steps[:n]
        walls = np.empty(cap, np.float64)
        walls[:n] = self._walls[:n]
        values = np.empty(cap, np.float64)
        values[:n] = self._values[:n]
        self._steps, self._walls, self._values = steps, walls, values

    def compact(self) -> None:
        """Release spare capacity (more than 1/8 of the points)."""
        if self._steps.shape[0] - self.count > self.count // 8 + 1024:
            self._resize(self.count)

    def series(self) -> ScalarSeries:
        n = self.count
        steps, walls, values = self._steps[:n], self._walls[:n], self._values[:n]
        for arr in (steps, walls, values):
            arr.flags.writeable = False
        return ScalarSeries(steps, walls, values)

    def keep(self, mask: NDArray[np.bool_]) -> None:
        n = self.count
        self._steps = self._steps[:n][mask]
        self._walls = self._walls[:n][mask]
        self._values = self._values[:n][mask]
        self.count = int(self._steps.shape[0])

    def purge_from(self, step: int) -> bool:
        mask = self._steps[: self.count] < step
        if mask.all():
            return False
        self.keep(mask)
        return True

    def trim(self, max_points: int) -> None:
        if self.count > max_points:
            mask = np.zeros(self.count, bool)
            mask[self.count - max_points :] = True
            self.keep(mask)


class RunStore:
    """Everything read for one run, plus its files' readers.

    Args:
        name: Run name.
        max_points: Per-kind cap on values kept per tag (newest kept); missing = unbounded.
    """

    def __init__(self, name: str, max_points: dict[str, int] | None = None) -> None:
        self.name = name
        self.max_points = dict(max_points or {})
        self.plugins: dict[str, str] = {}
        self.readers: dict[str, EventFileReader] = {}
        self.scalars: dict[str, ScalarStore] = {}
        self.records: dict[str, dict[str, list[Any]]] = {k: {} for k in KINDS}
        self.graphs: dict[str, Graph] = {}
        self.first_wall_time: float | None = None
        self.last_wall_time: float | None = None
        self.last_growth: float = 0.0

    def tags(self) -> dict[str, list[str]]:
        out = {k: sorted(self.records[k]) for k in KINDS}
        out["scalars"] = sorted(self.scalars)
        out["graphs"] = sorted(self.graphs)
        return out

    # ------------------------------------------------------------ ingest
    def ingest(self, batch: Batch, reader: EventFileReader) -> dict[str, set[str]]:
        """Add one batch read from ``reader``; returns kind -> tags that changed."""
        changed: dict[str, set[str]] = defaultdict(set)
        starts = [it for it in batch.items if it.kind == "_start"]
        groups = self._scalar_groups(batch)
        if not starts:
            self._apply(groups, batch.items, reader, changed, batch.bytes_read)
            return changed
        low = -1
        for start in [*starts, None]:
            high = start.seq if start is not None else int(np.iinfo(np.int64).max)
            seg_groups = {}
            for tag, cols in groups.items():
                m = (cols[3] > low) & (cols[3] < high)
                if m.any():
                    seg_groups[tag] = (cols[0][m], cols[1][m], cols[2][m], cols[3][m])
            seg_items = [it for it in batch.items if low < it.seq < high]
            self._apply(seg_groups, seg_items, reader, changed)
            if start is not None:
                self._purge_all(start.step, changed)
            low = high
        return changed

    def _scalar_groups(self, batch: Batch) -> dict[str, Any]:
        """tag -> (steps, walls, values, seqs) of the C-decoded scalar points."""
        parts: dict[int, list[Any]] = defaultdict(list)
        for p in batch.points:
            parts[p.tag].append(p)
        out = {}
        for tid, pts in parts.items():
            name = batch.tag_names[tid]
            if len(pts) == 1:
                step, wall, value, flag, seq = (
                    pts[0].step,
                    pts[0].wall,
                    pts[0].value,
                    pts[0].flag,
                    pts[0].seq,
                )
            else:
                cat = np.concatenate
                step, wall, value = (
                    cat([p.step for p in pts]),
                    cat([p.wall for p in pts]),
                    cat([p.value for p in pts]),
                )
                flag, seq = cat([p.flag for p in pts]), cat([p.seq for p in pts])
            if (flag == 2).any() and self.plugins.get(name, "scalars") != "scalars":
                self._tensor_fallback(name, step, wall, value, seq, batch)
                continue
            if (flag == 1).any():
                self.plugins[name] = "scalars"
            out[name] = (step, wall, value, seq)
        return out

    def _tensor_fallback(
        self, tag: str, steps: Any, walls: Any, values: Any, seqs: Any, batch: Batch
    ) -> None:
        from tensorsight.summary.records import TensorRecord

        for st, wt, v, sq in zip(
            steps.tolist(), walls.tolist(), values.tolist(), seqs.tolist(), strict=True
        ):
            data = np.asarray(v, dtype=np.float32)
            rec = TensorRecord(st, wt, "float32", (), data)
            batch.items.append(Item(sq, "tensors", tag, st, wt, rec))
        batch.items.sort(key=lambda it: it.seq)

    def _apply(
        self,
        groups: dict[str, Any],
        items: list[Item],
        reader: EventFileReader,
        changed: dict[str, set[str]],
        bytes_read: int = 0,
    ) -> None:
        purge = reader.format == "tensorboard"
        py_scalars: dict[str, list[Item]] = defaultdict(list)
        other: dict[tuple[str, str], list[Item]] = defaultdict(list)
        for it in items:
            if it.kind == "scalars":
                py_scalars[it.tag].append(it)
            elif it.kind != "_start":
                other[(it.kind, it.tag)].append(it)
        walls_seen: list[NDArray[np.float64]] = []
        for tag in set(groups) | set(py_scalars):
            steps, walls, values, seqs = groups.get(tag, (_EMPTY_I, _EMPTY_F, _EMPTY_F, _EMPTY_I))
            extra = py_scalars.get(tag)
            if extra:
                steps = np.concatenate([steps, np.array([i.step for i in extra], np.int64)])
                walls = np.concatenate([walls, np.array([i.wall_time for i in extra])])
                values = np.concatenate([values, np.array([i.payload for i in extra])])
                seqs = np.concatenate([seqs, np.array([i.seq for i in extra], np.int64)])
                if len(extra) != len(steps):
                    order = np.argsort(seqs, kind="stable")
                    steps, walls, values = steps[order], walls[order], values[order]
            store = self.scalars.get(tag)
            if store is None:
                store = self.scalars[tag] = ScalarStore()
            key = ("scalars", tag)
            if key not in reader.seen_tags:
                reader.seen_tags.add(key)
                if purge and store.count:
                    store.purge_from(int(steps[0]))
            # the rest of the file likely holds as many points per byte as this chunk
            rest = max(reader.size - reader.offset, 0)
            expect = int(len(steps) * rest / bytes_read * 1.02) if bytes_read else 0
            store.append(steps, walls, values, expect)
            limit = self.max_points.get("scalars")
            if limit is not None:
                store.trim(limit)
            walls_seen.append(walls)
            changed["scalars"].add(tag)
        if walls_seen:  # once per chunk, not per tag (a sweep's chunks hold 20 tags each)
            self._note_walls(walls_seen[0] if len(walls_seen) == 1 else np.concatenate(walls_seen))
        for (kind, tag), its in other.items():
            self._note_walls(np.array([i.wall_time for i in its]))
            changed[kind].add(tag)
            if kind == "graphs":
                self.graphs[tag] = its[-1].payload
                continue
            recs = self.records[kind].setdefault(tag, [])
            if (kind, tag) not in reader.seen_tags:
                reader.seen_tags.add((kind, tag))
                if purge and recs:
                    first = its[0].step
                    recs[:] = [r for r in recs if r.step < first]
            recs.extend(i.payload for i in its)
            limit = self.max_points.get(kind)
            if limit is not None and len(recs) > limit:
                del recs[: len(recs) - limit]

    def _purge_all(self, step: int, changed: dict[str, set[str]]) -> None:
        for tag, store in self.scalars.items():
            if store.purge_from(step):
                changed["scalars"].add(tag)
        for kind, tags in self.records.items():
            for tag, recs in tags.items():
                kept = [r for r in recs if r.step < step]
                if len(kept) != len(recs):
                    recs[:] = kept
                    changed[kind].add(tag)

    def _note_walls(self, walls: NDArray[np.float64]) -> None:
        walls = walls[walls > 0]
        if walls.size == 0:
            return
        lo, hi = float(walls.min()), float(walls.max())
        if self.first_wall_time is None or lo < self.first_wall_time:
            self.first_wall_time = lo
        if self.last_wall_time is None or hi > self.last_wall_time:
            self.last_wall_time = hi
