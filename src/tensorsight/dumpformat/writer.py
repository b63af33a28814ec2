"""DumpWriter: a background thread writes the op table, tensor shards and the manifest.

The recording thread only computes statistics (on the device) and hands rows to a
bounded queue; the writer thread turns statistics into numbers, keeps the rows in memory and
appends them to the step's ``ops.jsonl`` log within ``_table.LOG_SECS``, streams tensors into
safetensors
shards and, when a step ends, writes ``ops.parquet`` from the rows in memory. When the queue
holds ``max_queue_bytes`` of tensors (or ``MAX_QUEUE_ROWS`` rows) the recording thread waits
(back-pressure). A write error (a full disk) stops the writer, marks the manifest
incomplete and surfaces as :class:`CaptureError` on the recording thread.
"""

from __future__ import annotations

import dataclasses
import queue
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from tensorsight._version import __version__
from tensorsight.dumpformat import _fs, _safetensors, _table
from tensorsight.dumpformat._np_stats import stats_columns
from tensorsight.dumpformat.schema import DumpManifest, StepInfo, step_json
from tensorsight.errors import CaptureError

__all__ = ["MEASURE_COPY", "DumpWriter", "PendingTensor"]

# A row's stats placeholder: measure the stored copy on the writer thread.
MEASURE_COPY = "measure-copy"

DEFAULT_MAX_QUEUE_BYTES = 1 << 30
DEFAULT_SHARD_BYTES = 256 << 20
# Bytes kept at the start of each shard for its safetensors header (about 600 tensors; a
# shard whose header would not fit is closed early).
SHARD_HEADER_BYTES = 64 << 10
# Rows without a tensor are handed to the writer thread in batches of up to this many (one
# queue hand-off, i.e. one thread wake-up, per batch instead of per row); a row carrying a
# tensor, and any other message, sends the batch at once, so the order never changes.
BATCH_ROWS = 128
# Between steps the manifest is rewritten at most this often (it lists every step so far, so
# rewriting it at every step end would cost O(steps) each time); the writer catches up as
# soon as it is idle for that long, and close() and a failure always write it.
MANIFEST_SECS = 1.0
# Large tensors go to the disk with direct I/O where the file system allows it (see
# _safetensors.ShardStream); False: everything through the page cache.
DIRECT_IO = True
# Rows queued for the writer thread before the recording thread waits (about 100 MB).
MAX_QUEUE_ROWS = 500_000


class PendingTensor(Protocol):
    """What the writer needs from a tensor to store (a CPU torch tensor or a numpy array)."""

    @property
    def nbytes(self) -> int: ...


_NO_STATS = (None, None, None, None, None, None, None)

# One tensor of an op, as the recording thread hands it over: (tensor name, shape, dtype,
# device, stats object, fingerprint, tensor copy or None, same_as id or None, store?).
Entry = tuple[str, Any, str, str, Any, Any, Any, "str | None", bool]


def _stats_list(stats: Any) -> Any:
    return stats.tolist() if hasattr(stats, "tolist") else stats


class DumpWriter:
    """Writes one rank's dump folder from a background thread.

    Args:
        rank_dir: ``DUMP/rank<N>`` (created; must be empty or absent).
        manifest: The manifest to start from (``complete=False``, no steps).
        to_bytes: Turns a stored tensor into contiguous bytes.
        measure: Computes the stats object of a stored copy, for rows whose stats are
            :data:`MEASURE_COPY` (the copy is measured here, off the training thread).
        fingerprint: Computes the fingerprint of a copy, for ``MEASURE_COPY`` fingerprints.
        release: Called with each tensor copy once the writer is done with it (written to
            its shard, or measured when not stored): the copy's memory may be reused.
        max_queue_bytes: Tensor bytes allowed in flight before the recorder waits.
        shard_bytes: Target size of one safetensors shard.
    """

    def __init__(
        self,
        rank_dir: Path,
        manifest: DumpManifest,
        *,
        to_bytes: Any,
        measure: Any = None,
        fingerprint: Any = None,
        release: Any = None,
        max_queue_bytes: int | None = None,
        shard_bytes: int | None = None,
    ) -> None:
        self.rank_dir = rank_dir
        self.manifest = manifest
        self._to_bytes = to_bytes
        self._measure = measure
        self._fingerprint = fingerprint
        self._release = release
        self._measured: dict[str, Any] = {}
        self._max_bytes = max_queue_bytes or DEFAULT_MAX_QUEUE_BYTES
        self._shard_bytes = shard_bytes or DEFAULT_SHARD_BYTES
        self._queue: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._cond = threading.Condition()
        self._pending_bytes = 0
        self._pending_rows = 0
        self._batch: list[tuple[tuple[Any, ...], int]] = []
        self._batch_bytes = 0
        self._batch_rows = 0
        self._batch_lock = threading.Lock()
        self._error: BaseException | None = None
        self._closed = False
        self._dtypes: set[str] = set(manifest.dtypes)
        self._steps: list[StepInfo] = list(manifest.steps)
        self._step_json: dict[int, tuple[StepInfo, str]] = {}  # step -> (info, its JSON)
        # writer-thread state of the current step
        self._log: _table.StepLog | None = None
        self._step_dir: Path | None = None
        self._shard: _safetensors.ShardStream | None = None
        self._shard_no = 0
        self._step_info: StepInfo | None = None
        # its two per-row counters, folded into _step_info by _sync() when it is read
        self._op_count = 0
        self._tensor_count = 0
        self._stored: dict[str, str] = {}
        self._manifest_written = 0.0
        self._manifest_due: float | None = None  # when a pending manifest rewrite is due
        # step ends queued by end_step() and handled by the writer thread (under _cond)
        self._ends_queued = 0
        self._ends_done = 0
        _table.preload()
        _fs.make_dirs(rank_dir)
        self._write_manifest(durable=True)
        self._thread = threading.Thread(
            target=self._run, name="tensorsight-dump-writer", daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------ recording thread
    def begin_step(self, step: int) -> None:
        """Start writing step ``step`` (its folder must not exist yet)."""
        self._put(("begin", step), 0)

    def add(
        self,
        row: dict[str, Any],
        stats: Any = None,
        tensor: Any = None,
        same_as: str | None = None,
        store: bool = True,
    ) -> None:
        """Queue one op-table row with its stats object and, optionally, a tensor copy.

        ``row`` holds the identity columns (``index``, ``op``, ``direction``,
        ``module_path``, ``tensor``, ``shape``, ``dtype``, ``device``, ``fingerprint``,
        ``grad_fn``, ``stack``). ``same_as`` is an id chosen by the caller: with a tensor it
        names the copy; without one, the row reuses what was done with the copy queued
        earlier under that id (a weight read by several ops is stored and measured once per
        step). ``stats`` or ``row["fingerprint"]`` may be :data:`MEASURE_COPY`: computed
        here from the copy. ``store=False`` only measures the copy, without writing it.
        """
        entry = (
            row["tensor"], row["shape"], row["dtype"], row.get("device") or "cpu", stats,
            row.get("fingerprint"), tensor, same_as, store,
        )  # fmt: skip
        nbytes = int(tensor.nbytes) if tensor is not None else 0
        self.add_op(
            row["index"], row["op"], row["direction"], row.get("module_path") or "",
            row.get("grad_fn"), row.get("stack"), [entry], nbytes, row.get("args"),
        )  # fmt: skip

    def add_op(
        self,
        index: int,
        op: str,
        direction: str,
        module_path: str,
        grad_fn: str | None,
        stack: str | None,
        entries: list[Entry],
        nbytes: int = 0,
        args: str | None = None,
    ) -> None:
        """Queue the rows of one op: one :data:`Entry` per tensor (see :meth:`add`).

        ``nbytes`` is the size of the tensor copies among the entries (back-pressure);
        ``args`` the op's arguments (the ``args`` column).
        """
        item = ("op", index, op, direction, module_path, grad_fn, stack, entries, args)
        self._check_open()
        if nbytes:
            self._wait_for_room(nbytes)
        with self._batch_lock:
            self._batch.append((item, nbytes))
            self._batch_bytes += nbytes
            self._batch_rows += len(entries)
            if nbytes or self._batch_rows >= BATCH_ROWS:
                self._send_batch()
        if self._pending_rows > MAX_QUEUE_ROWS:
            self._wait_for_rows()

    def add_ops(
        self,
        ops: Sequence[tuple[int, str, str, str, str | None, str | None, list[Entry], str | None]],
    ) -> None:
        """:meth:`add_op` for many ops without tensor copies, in order: each ``(index, op,
        direction, module_path, grad_fn, stack, entries, args)``. The same messages reach the
        writer thread (batches of :data:`BATCH_ROWS` rows) for one check and one lock."""
        if not ops:
            return
        self._check_open()
        with self._batch_lock:
            batch = self._batch
            rows = self._batch_rows
            for index, op, direction, module_path, grad_fn, stack, entries, args in ops:
                batch.append(
                    (("op", index, op, direction, module_path, grad_fn, stack, entries, args), 0)
                )
                rows += len(entries)
                if rows >= BATCH_ROWS:
                    self._batch_rows = rows
                    self._send_batch()
                    batch = self._batch
                    rows = 0
            self._batch_rows = rows
        if self._pending_rows > MAX_QUEUE_ROWS:
            self._wait_for_rows()

    def set_step_fields(self, **fields: Any) -> None:
        """Set fields of the current step's :class:`StepInfo` (e.g. outputs_fingerprint)."""
        self._put(("stepinfo", fields), 0)

    def end_step(self, *, complete: bool = True, drop_if_empty: bool = False) -> None:
        """End the current step: flush its shard, compact its log, update the manifest.

        Returns once the writer thread has done so: the step's op table and shards are then
        with the OS, so a process killed after ``.step()`` returned keeps every ended step
        (the manifest that lists it follows within :data:`MANIFEST_SECS`). Without the wait,
        a writer one step behind (a busy machine) lost the ended step's table to a SIGKILL.
        The wait costs the training thread the writer's backlog of the step, which it would
        wait for at the queue bound anyway when the writer is the slower of the two.

        ``complete=False`` marks a step cut short by an exception in the user's code;
        ``drop_if_empty`` removes a step that recorded nothing (the one a loop's last
        ``.step()`` opened).
        """
        self._put(("end", complete, drop_if_empty), 0)
        with self._cond:
            self._ends_queued += 1
            while (
                self._ends_done < self._ends_queued
                and self._error is None
                and self._thread.is_alive()  # a writer that died never answers
            ):
                self._cond.wait(0.5)
        self._raise_pending()  # the step is not on disk: say so, as close() would

    def set_extra(self, **extra: Any) -> None:
        """Merge backend facts into ``manifest.extra``."""
        self._put(("extra", extra), 0)

    def close(self, *, complete: bool = True, reason: str | None = None) -> None:
        """Drain the queue, finish the manifest, stop the thread; raise a pending error."""
        if self._closed:
            return
        self._closed = True
        with self._batch_lock:
            self._send_batch()
            self._queue.put(("close", complete, reason))
        self._thread.join()
        self._raise_pending()

    @property
    def failed(self) -> bool:
        """Whether the writer stopped on an error."""
        return self._error is not None

    def _check_open(self) -> None:
        self._raise_pending()
        if self._closed:
            msg = f"Dump {str(self.rank_dir)!r}: the writer is closed. Expected an open dump."
            raise CaptureError(msg)

    def _put(self, item: tuple[Any, ...], nbytes: int) -> None:
        self._check_open()
        if nbytes:
            self._wait_for_room(nbytes)
        with self._batch_lock:
            self._send_batch()
            self._queue.put(item)

    def _wait_for_room(self, nbytes: int) -> None:
        """Back-pressure: wait while the queued tensor bytes would pass ``max_queue_bytes``."""
        with self._cond:
            while self._pending_bytes > 0 and self._pending_bytes + nbytes > self._max_bytes:
                if self._error is not None:
                    break
                self._cond.wait(0.5)
            self._pending_bytes += nbytes

    def _wait_for_rows(self) -> None:
        """Back-pressure on rows (statistics mode queues no tensor bytes): wait while more
        than ``MAX_QUEUE_ROWS`` rows are queued."""
        with self._cond:
            while self._pending_rows > MAX_QUEUE_ROWS and self._error is None:
                self._cond.wait(0.5)

    def _send_batch(self) -> None:
        """Queue the pending ops as one message (the caller holds ``_batch_lock``)."""
        if self._batch:
            with self._cond:
                self._pending_rows += self._batch_rows
            self._queue.put(("ops", self._batch, self._batch_bytes, self._batch_rows))
            self._batch = []
            self._batch_bytes = 0
            self._batch_rows = 0

    def _raise_pending(self) -> None:
        err = self._error
        if err is not None:
            msg = (
                f"Dump {str(self.rank_dir)!r}: writing failed ({type(err).__name__}: {err}). "
                "The dump is marked incomplete; free disk space or choose another path."
            )
            raise CaptureError(msg) from err

    # ------------------------------------------------------------ writer thread
    def _run(self) -> None:
        while True:
            due = self._next_due()
            if due is None:
                item = self._queue.get()
            else:
                try:
                    item = self._queue.get(timeout=max(0.0, due - time.monotonic()))
                except queue.Empty:
                    self._on_due()
                    continue
            kind = item[0]
            for one in [op for op, _ in item[1]] if kind == "ops" else (item,):
                try:
                    if self._error is None:
                        self._handle(one)
                except BaseException as exc:  # any failure: stop writing, keep the dump readable
                    self._error = exc
                    self._mark_failed(exc)
            if kind == "ops":
                with self._cond:
                    self._pending_bytes -= item[2]
                    self._pending_rows -= item[3]
                    self._cond.notify_all()
            elif kind == "end":
                with self._cond:
                    self._ends_done += 1
                    self._cond.notify_all()
            if kind == "close":
                return
            if self._queue.empty():
                self._on_due()

    def _next_due(self) -> float | None:
        """When the manifest or the step's log must next be written (``None``: nothing due)."""
        log_due = self._log.due if self._log is not None else None
        dues = [d for d in (self._manifest_due, log_due) if d is not None]
        return min(dues) if dues else None

    def _on_due(self) -> None:
        """Write the manifest and the log lines whose time has come."""
        now = time.monotonic()
        if self._manifest_due is not None and now >= self._manifest_due:
            self._catch_up_manifest()
        log = self._log
        if log is not None and log.due is not None and now >= log.due and self._error is None:
            try:
                log.flush()
            except OSError as exc:
                self._error = exc
                self._mark_failed(exc)

    def _handle(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == "op":
            self._write_op(*item[1:])
        elif kind == "begin":
            self._begin(item[1])
        elif kind == "end":
            self._end(complete=item[1], drop_if_empty=item[2])
        elif kind == "stepinfo":
            if self._step_info is not None:
                self._sync()
                self._step_info = dataclasses.replace(self._step_info, **item[1])
                self._op_count = self._step_info.op_count
                self._tensor_count = self._step_info.tensor_count
        elif kind == "extra":
            self.manifest = dataclasses.replace(
                self.manifest, extra={**self.manifest.extra, **item[1]}
            )
            self._write_manifest()
        elif kind == "close":
            if self._step_dir is not None:
                self._end(complete=item[1])
            self._finish(complete=item[1], reason=item[2])

    def _begin(self, step: int) -> None:
        step_dir = self.rank_dir / f"step{step}"
        _fs.make_dirs(step_dir)
        self._step_dir = step_dir
        self._log = _table.StepLog(step_dir)
        self._shard, self._shard_no = None, 0
        self._stored = {}
        self._measured = {}
        self._step_info = StepInfo(step=step)
        self._op_count = self._step_info.op_count
        self._tensor_count = self._step_info.tensor_count

    def _sync(self) -> None:
        """Fold the per-row counters into ``_step_info`` (one replace per read, not per row)."""
        info = self._step_info
        if info is not None and (
            info.op_count != self._op_count or info.tensor_count != self._tensor_count
        ):
            self._step_info = dataclasses.replace(
                info, op_count=self._op_count, tensor_count=self._tensor_count
            )

    def _write_op(
        self,
        index: int,
        op: str,
        direction: str,
        module_path: str,
        grad_fn: str | None,
        stack: str | None,
        entries: list[Entry],
        args: str | None = None,
    ) -> None:
        log = self._log
        assert self._step_info is not None
        assert log is not None
        tails = []
        dtypes = self._dtypes
        for name, shape, dtype, device, stats, fp, tensor, same_as, store in entries:
            if stats is MEASURE_COPY or fp is MEASURE_COPY:
                stats, fp = self._measure_copy(stats, fp, tensor, same_as)
            data = None
            if not store:
                if tensor is not None and self._release is not None:
                    self._release(tensor)
            elif tensor is not None:
                data = self._store(tensor, dtype, shape, same_as)
            elif same_as is not None:
                data = self._stored.get(same_as)
            if stats is None:
                values: tuple[Any, ...] = _NO_STATS
            else:
                values = stats_columns(stats if type(stats) is list else _stats_list(stats))
            tails.append((name, tuple(shape), dtype, device, *values, fp, data))
            if dtype not in dtypes:
                dtypes.add(dtype)
            self._tensor_count += 1
        log.append_op(index, op, direction, module_path, grad_fn, stack, tails, args)
        if index >= self._op_count:
            self._op_count = index + 1

    def _measure_copy(self, stats: Any, fp: Any, tensor: Any, same_as: str | None) -> Any:
        """Statistics and fingerprint placeholders (:data:`MEASURE_COPY`) filled from a copy."""
        if tensor is not None:
            measured = (
                self._measure(tensor) if stats is MEASURE_COPY else None,
                self._fingerprint(tensor) if fp is MEASURE_COPY else None,
            )
            if same_as is not None:
                self._measured[same_as] = measured
        else:
            measured = self._measured.get(same_as or "", (None, None))
        return (
            measured[0] if stats is MEASURE_COPY else stats,
            measured[1] if fp is MEASURE_COPY else fp,
        )

    def _store(self, tensor: Any, dtype: str, shape: Any, same_as: str | None) -> str:
        """Write a tensor into the current shard; returns its ``"<shard>:<key>"`` reference.

        The bytes go to the file at once (the shard's header is written when it is full),
        so the copy can be released now and the disk is kept busy.
        """
        data = self._to_bytes(tensor)
        key = f"t{self._tensor_count}"
        shape = tuple(shape)
        stream = self._shard
        if stream is not None and not stream.fits(key, dtype, shape, data.nbytes):
            self._flush_shard()
            stream = None
        if stream is None:
            assert self._step_dir is not None
            path = self._step_dir / f"tensors-{self._shard_no:05d}.safetensors"
            stream = self._shard = _safetensors.ShardStream(
                path, SHARD_HEADER_BYTES, direct=DIRECT_IO
            )
        ref = f"tensors-{self._shard_no:05d}.safetensors:{key}"
        stream.add(key, dtype, shape, data)
        del data
        if self._release is not None:
            self._release(tensor)
        if same_as is not None:
            self._stored[same_as] = ref
        if stream.data_bytes >= self._shard_bytes:
            self._flush_shard()
        return ref

    def _flush_shard(self) -> None:
        stream, self._shard = self._shard, None
        if stream is None or self._step_info is None:
            return
        self._sync()
        meta = {"format": "tensorsight-dump", "step": str(self._step_info.step)}
        written = stream.finish(meta)
        self._step_info = dataclasses.replace(
            self._step_info, bytes_written=self._step_info.bytes_written + written
        )
        self._shard_no += 1

    def _end(self, *, complete: bool, drop_if_empty: bool = False) -> None:
        if self._step_dir is None or self._step_info is None:
            return
        self._flush_shard()
        self._sync()
        log, self._log = self._log, None
        if drop_if_empty and self._step_info.tensor_count == 0:
            if log is not None:
                log.close()
            _fs.remove_tree(self._step_dir)
            self._step_dir, self._step_info = None, None
            self._write_manifest()
            return
        if log is not None:
            log.compact()
        else:
            _table.compact(self._step_dir)
        self._steps.append(dataclasses.replace(self._step_info, complete=complete))
        self._step_dir, self._step_info = None, None
        if self._manifest_due is None:
            self._manifest_due = self._manifest_written + MANIFEST_SECS
        if time.monotonic() >= self._manifest_due:
            self._write_manifest()

    def _catch_up_manifest(self) -> None:
        """Write the manifest that step ends left pending (called when it is due)."""
        if self._error is None:
            try:
                self._write_manifest()
            except OSError as exc:
                self._error = exc
                self._mark_failed(exc)
        self._manifest_due = None

    def _finish(self, *, complete: bool, reason: str | None) -> None:
        self.manifest = dataclasses.replace(
            self.manifest, complete=complete, incomplete_reason=None if complete else reason
        )
        self._write_manifest(durable=True)

    def _write_manifest(self, *, durable: bool = False) -> None:
        """Rewrite the manifest (atomically). Between steps it is not fsync'd: a process that
        dies still leaves the last one written; the final one (close, failure) is."""
        steps = list(self._steps)
        self._sync()
        if self._step_info is not None:
            steps.append(self._step_info)
        self.manifest = dataclasses.replace(
            self.manifest, dtypes=tuple(sorted(self._dtypes)), steps=tuple(steps)
        )
        text = self.manifest.to_json(self._step_text)
        _fs.write_text_atomic(self.rank_dir / "manifest.json", text, durable=durable)
        self._manifest_written = time.monotonic()
        self._manifest_due = None

    def _step_text(self, info: StepInfo) -> str:
        """:func:`schema.step_json` of a step, encoded once per change of the step."""
        hit = self._step_json.get(info.step)
        if hit is not None and hit[0] == info:
            return hit[1]
        text = step_json(info)
        self._step_json[info.step] = (info, text)
        return text

    def _mark_failed(self, exc: BaseException) -> None:
        log, self._log = self._log, None
        if log is not None:
            log.abandon()
        shard, self._shard = self._shard, None
        if shard is not None:
            shard.abandon()
        reason = f"writer failed: {type(exc).__name__}: {exc}"
        try:
            self.manifest = dataclasses.replace(
                self.manifest, complete=False, incomplete_reason=reason
            )
            self._write_manifest(durable=True)
        except OSError:
            pass


def base_manifest(
    *,
    mode: str,
    level: str,
    framework: str,
    framework_version: str,
    device: str,
    rank: int,
    world_size: int,
    extra: dict[str, Any] | None = None,
) -> DumpManifest:
    """A fresh, incomplete manifest for a new dump of this process."""
    return DumpManifest(
        mode=mode,
        level=level,
        framework=framework,
        framework_version=framework_version,
        tensorsight_version=__version__,
        python_version=sys.version.split()[0],
        device=device,
        rank=rank,
        world_size=world_size,
        command_line=tuple(sys.argv),
        created=time.time(),
        extra=dict(extra or {}),
    )
