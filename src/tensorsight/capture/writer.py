"""DumpWriter: a background thread writes the op table, tensor shards and the manifest.

The recording thread only computes statistics (on the device) and hands rows to a
bounded queue; the writer thread turns statistics into numbers, appends JSON lines to the
step's ``ops.jsonl`` log, streams tensors into safetensors shards and, when a step ends,
compacts the log into ``ops.parquet``. When the queue holds ``max_queue_bytes`` of tensors the
recording thread waits (back-pressure). A write error (a full disk) stops the writer, marks
the manifest incomplete and surfaces as :class:`CaptureError` on the recording thread.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from tensorsight._version import __version__
from tensorsight.capture import _fs, _safetensors, _table
from tensorsight.capture.schema import DumpManifest, StepInfo, TensorStats
from tensorsight.errors import CaptureError

__all__ = ["MEASURE_COPY", "DumpWriter", "PendingTensor"]

# A row's stats placeholder: measure the stored copy on the writer thread.
MEASURE_COPY = "measure-copy"

DEFAULT_MAX_QUEUE_BYTES = 1 << 30
DEFAULT_SHARD_BYTES = 256 << 20
# Rows without a tensor are handed to the writer thread in batches of up to this many (one
# queue hand-off, i.e. one thread wake-up, per batch instead of per row); a row carrying a
# tensor, and any other message, sends the batch at once, so the order never changes.
BATCH_ROWS = 128


class PendingTensor(Protocol):
    """What the writer needs from a tensor to store (a CPU torch tensor or a numpy array)."""

    @property
    def nbytes(self) -> int: ...


_STATS_FIELDS = tuple(f.name for f in dataclasses.fields(TensorStats))


def _stats_list(stats: Any) -> list[float]:
    values = stats.tolist() if hasattr(stats, "tolist") else stats
    return [float(v) for v in values]


class DumpWriter:
    """Writes one rank's dump folder from a background thread.

    Args:
        rank_dir: ``DUMP/rank<N>`` (created; must be empty or absent).
        manifest: The manifest to start from (``complete=False``, no steps).
        to_stats: Turns a stats object (e.g. a device tensor) into :class:`TensorStats`.
        to_bytes: Turns a stored tensor into contiguous bytes.
        measure: Computes the stats object of a stored copy, for rows whose stats are
            :data:`MEASURE_COPY` (the copy is measured here, off the training thread).
        fingerprint: Computes the fingerprint of a copy, for ``MEASURE_COPY`` fingerprints.
        max_queue_bytes: Tensor bytes allowed in flight before the recorder waits.
        shard_bytes: Target size of one safetensors shard.
    """

    def __init__(
        self,
        rank_dir: Path,
        manifest: DumpManifest,
        *,
        to_stats: Any,
        to_bytes: Any,
        measure: Any = None,
        fingerprint: Any = None,
        max_queue_bytes: int | None = None,
        shard_bytes: int | None = None,
    ) -> None:
        self.rank_dir = rank_dir
        self.manifest = manifest
        self._to_stats = to_stats
        self._to_bytes = to_bytes
        self._measure = measure
        self._fingerprint = fingerprint
        self._measured: dict[str, Any] = {}
        self._max_bytes = max_queue_bytes or DEFAULT_MAX_QUEUE_BYTES
        self._shard_bytes = shard_bytes or DEFAULT_SHARD_BYTES
        self._queue: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._cond = threading.Condition()
        self._pending_bytes = 0
        self._batch: list[tuple[Any, ...]] = []
        self._batch_bytes = 0
        self._batch_lock = threading.Lock()
        self._error: BaseException | None = None
        self._closed = False
        self._dtypes: set[str] = set(manifest.dtypes)
        self._steps: list[StepInfo] = list(manifest.steps)
        # writer-thread state of the current step
        self._log: Any = None
        self._step_dir: Path | None = None
        self._shard: list[_safetensors.ShardEntry] = []
        self._shard_size = 0
        self._shard_no = 0
        self._step_info: StepInfo | None = None
        # its two per-row counters, folded into _step_info by _sync() when it is read
        self._op_count = 0
        self._tensor_count = 0
        self._stored: dict[str, str] = {}
        _fs.make_dirs(rank_dir)
        self._write_manifest()
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

        ``same_as`` is an id chosen by the caller: with a tensor it names the copy;
        without one, the row reuses what was done with the copy queued earlier under that
        id (a weight read by several ops is stored and measured once per step). ``stats``
        or ``row["fingerprint"]`` may be :data:`MEASURE_COPY`: computed here from the copy.
        ``store=False`` only measures the copy, without writing it.
        """
        nbytes = int(tensor.nbytes) if tensor is not None else 0
        self._put(("row", row, stats, tensor, same_as, store), nbytes)

    def set_step_fields(self, **fields: Any) -> None:
        """Set fields of the current step's :class:`StepInfo` (e.g. outputs_fingerprint)."""
        self._put(("stepinfo", fields), 0)

    def end_step(self, *, complete: bool = True, drop_if_empty: bool = False) -> None:
        """End the current step: flush its shard, compact its log, update the manifest.

        ``complete=False`` marks a step cut short by an exception in the user's code;
        ``drop_if_empty`` removes a step that recorded nothing (the one a loop's last
        ``.step()`` opened).
        """
        self._put(("end", complete, drop_if_empty), 0)

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

    def _put(self, item: tuple[Any, ...], nbytes: int) -> None:
        self._raise_pending()
        if self._closed:
            msg = f"Dump {str(self.rank_dir)!r}: the writer is closed. Expected an open dump."
            raise CaptureError(msg)
        if nbytes:
            with self._cond:
                while self._pending_bytes > 0 and self._pending_bytes + nbytes > self._max_bytes:
                    if self._error is not None:
                        break
                    self._cond.wait(0.5)
                self._pending_bytes += nbytes
        with self._batch_lock:
            if item[0] == "row":
                self._batch.append((*item, nbytes))
                self._batch_bytes += nbytes
                if nbytes or len(self._batch) >= BATCH_ROWS:
                    self._send_batch()
                return
            self._send_batch()
            self._queue.put(item)

    def _send_batch(self) -> None:
        """Queue the pending rows as one message (the caller holds ``_batch_lock``)."""
        if self._batch:
            self._queue.put(("rows", self._batch, self._batch_bytes))
            self._batch = []
            self._batch_bytes = 0

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
            item = self._queue.get()
            kind = item[0]
            for one in item[1] if kind == "rows" else (item,):
                try:
                    if self._error is None:
                        self._handle(one)
                except BaseException as exc:  # any failure: stop writing, keep the dump readable
                    self._error = exc
                    self._mark_failed(exc)
            if kind == "rows" and item[2]:
                with self._cond:
                    self._pending_bytes -= item[2]
                    self._cond.notify_all()
            if kind == "close":
                return
            if self._log is not None and self._queue.empty():
                try:
                    self._log.flush()
                except OSError as exc:
                    self._error = exc
                    self._mark_failed(exc)

    def _handle(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == "row":
            self._write_row(*item[1:6])
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
        self._log = _fs.open_append(step_dir / _table.LOG_NAME)
        self._shard, self._shard_size, self._shard_no = [], 0, 0
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

    def _write_row(
        self, row: dict[str, Any], stats: Any, tensor: Any, same_as: str | None, store: bool
    ) -> None:
        assert self._step_info is not None
        assert self._log is not None
        wants_fp = row.get("fingerprint") is MEASURE_COPY
        if stats is MEASURE_COPY or wants_fp:
            if tensor is not None:
                measured = (
                    self._measure(tensor) if stats is MEASURE_COPY else None,
                    self._fingerprint(tensor) if wants_fp else None,
                )
                if same_as is not None:
                    self._measured[same_as] = measured
            else:
                measured = self._measured.get(same_as or "", (None, None))
            if stats is MEASURE_COPY:
                stats = measured[0]
            if wants_fp:
                row["fingerprint"] = measured[1]
        if stats is not None:
            s: TensorStats = self._to_stats(_stats_list(stats))
            for name in _STATS_FIELDS:  # dataclasses.asdict, without its deep copy
                row[name] = getattr(s, name)
        if not store:
            pass
        elif tensor is not None:
            data = self._to_bytes(tensor)
            key = f"t{self._tensor_count}"
            shard_name = f"tensors-{self._shard_no:05d}.safetensors"
            self._shard.append(
                _safetensors.ShardEntry(key, row["dtype"], tuple(row["shape"]), data)
            )
            self._shard_size += data.nbytes
            row["data"] = f"{shard_name}:{key}"
            if same_as is not None:
                self._stored[same_as] = row["data"]
            if self._shard_size >= self._shard_bytes:
                self._flush_shard()
        elif same_as is not None:
            row["data"] = self._stored.get(same_as)
        self._dtypes.add(row["dtype"])
        if row["index"] >= self._op_count:
            self._op_count = row["index"] + 1
        self._tensor_count += 1
        self._log.write(json.dumps(row, allow_nan=True).encode() + b"\n")

    def _flush_shard(self) -> None:
        if not self._shard or self._step_dir is None or self._step_info is None:
            return
        self._sync()
        path = self._step_dir / f"tensors-{self._shard_no:05d}.safetensors"
        meta = {"format": "tensorsight-dump", "step": str(self._step_info.step)}
        written = _safetensors.write_shard(path, self._shard, meta)
        self._step_info = dataclasses.replace(
            self._step_info, bytes_written=self._step_info.bytes_written + written
        )
        self._shard, self._shard_size = [], 0
        self._shard_no += 1

    def _end(self, *, complete: bool, drop_if_empty: bool = False) -> None:
        if self._step_dir is None or self._step_info is None:
            return
        self._flush_shard()
        self._sync()
        if self._log is not None:
            self._log.close()
            self._log = None
        if drop_if_empty and self._step_info.tensor_count == 0:
            _fs.remove_tree(self._step_dir)
            self._step_dir, self._step_info = None, None
            self._write_manifest()
            return
        _table.compact(self._step_dir)
        self._steps.append(dataclasses.replace(self._step_info, complete=complete))
        self._step_dir, self._step_info = None, None
        self._write_manifest()

    def _finish(self, *, complete: bool, reason: str | None) -> None:
        self.manifest = dataclasses.replace(
            self.manifest, complete=complete, incomplete_reason=None if complete else reason
        )
        self._write_manifest()

    def _write_manifest(self) -> None:
        steps = list(self._steps)
        self._sync()
        if self._step_info is not None:
            steps.append(self._step_info)
        self.manifest = dataclasses.replace(
            self.manifest, dtypes=tuple(sorted(self._dtypes)), steps=tuple(steps)
        )
        _fs.write_text_atomic(self.rank_dir / "manifest.json", self.manifest.to_json())

    def _mark_failed(self, exc: BaseException) -> None:
        try:
            if self._log is not None:
                self._log.close()
        except OSError:
            pass
        self._log = None
        reason = f"writer failed: {type(exc).__name__}: {exc}"
        try:
            self.manifest = dataclasses.replace(
                self.manifest, complete=False, incomplete_reason=reason
            )
            self._write_manifest()
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
