"""Background event-file writer: a bounded queue drained by one thread into one file.

``EventFileWriter(log_dir)`` creates ``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``
and writes the ``brain.Event:2`` header record at once. ``add_event`` appends an ``Event``
(or its serialized bytes) to a pending list; every ``max_queue`` events the caller frames the
list into a byte buffer (serializing in the caller costs no thread switch, which on a busy
machine costs more than the serialization itself). The writer thread hands the buffer to the
operating system whenever 64 KiB have gathered and at least every ``HANDOFF_SECS`` (0.1 s;
``flush_secs`` when smaller), queued events included, with unbuffered writes that release the
GIL; if it falls 16 MiB behind, the caller writes itself, so memory stays bounded. A handed-off
record is in the OS's page cache (``write(2)``, no ``fsync``): a process killed by SIGKILL
loses at most the last second of summaries. Records are written whole and in order, so a
killed process leaves a file whose records are all complete except at most the last one,
which readers skip.

Writers are closed at interpreter exit (``weakref.finalize``) and when garbage-collected.

A ``log_dir`` that is a URL (``s3://bucket/runs/a``, any fsspec URL) writes through
:class:`RemoteEventFile`: object stores do not append, so the file's bytes are kept in memory
and the object is uploaded whole (replaced by a longer one) at most every
:data:`UPLOAD_SECS` and at ``flush``/``close``; once it holds :data:`PART_BYTES` it is final
and the records go on in a new object, ``<name>.part00001``, ``.part00002``... (read in name
order; records are never split across parts, and a hand-off of many records is split between
them). So no upload is over ``PART_BYTES`` (unless one record is larger) and the
bytes uploaded grow linearly with the bytes written, not quadratically; a killed process
loses what was written since the last upload.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
import weakref
from typing import Any

from tensorsight.errors import InputFileError, UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary._record import encode_record

__all__ = ["PART_BYTES", "UPLOAD_SECS", "EventFileWriter", "RemoteEventFile", "event_file_name"]

_FILE_COUNTER = itertools.count()
_COUNTER_LOCK = threading.Lock()
_WAKE_BYTES = 1 << 16  # the writer thread writes once this much is buffered
_MAX_BUFFER_BYTES = 1 << 24  # beyond this the caller writes itself (bounded memory)
# at least this often, every queued record is handed to the OS (write(2), no fsync), so a
# process killed by SIGKILL loses at most the last second of summaries. 0.5 s lost up to 0.48 s
# (480 records of a loop logging 1,000/s) where tensorboardX lost 0.1 s and torch 0.2 s
# (`python -m benchmarks kill9`); 0.1 s costs no measurable CPU (100k add_scalar: 0.306 CPU-s
# either way)
HANDOFF_SECS = 0.1


def event_file_name(filename_suffix: str = "") -> str:
    """``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>``, unique within this process."""
    with _COUNTER_LOCK:
        n = next(_FILE_COUNTER)
    return (
        f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
        f"{os.getpid()}.{n}{filename_suffix}"
    )


# a remote event file is uploaded at most this often while it grows (and at flush/close)
UPLOAD_SECS = 5.0
# a remote event file this large is final; the records go on in the next part's object
PART_BYTES = 8 << 20


class RemoteEventFile:
    """The writable file of an event file at a URL (see the module docstring).

    ``write`` keeps the bytes, and uploads the object when :data:`UPLOAD_SECS` have passed
    since the last upload or the part is full; ``flush`` and ``close`` upload now.
    ``uploads`` and ``uploaded_bytes`` count what went over the network.

    Raises:
        InputFileError: An upload failed (the first is at creation, with the header record).
    """

    def __init__(self, url: str) -> None:
        from tensorsight.summary._fs import _remote

        self.url = url
        self._fs, self._path = _remote(url)
        self._part = 0
        self._buf = bytearray()
        self._sent = 0  # bytes of the current part already uploaded
        self._last = time.monotonic()
        self.closed = False
        self.uploads = 0
        self.uploaded_bytes = 0

    def _part_path(self) -> str:
        return self._path if self._part == 0 else f"{self._path}.part{self._part:05d}"

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Keep ``data`` (whole framed records); a part that would pass :data:`PART_BYTES`
        is closed before the record that would cross it, however many records one hand-off
        holds (a lagging writer thread hands off large batches)."""
        view = memoryview(data).cast("B")
        at = 0
        while at < len(view):
            end = _record_end(view, at)
            if self._buf and len(self._buf) + (end - at) > PART_BYTES:
                self._next_part()
            self._buf += view[at:end]
            at = end
        if len(self._buf) >= PART_BYTES:
            self._next_part()
        elif time.monotonic() - self._last >= UPLOAD_SECS:
            self.upload()
        return len(view)

    def _next_part(self) -> None:
        self.upload()
        self._part += 1
        self._buf, self._sent = bytearray(), 0

    def upload(self) -> None:
        """Replace the current part's object with its bytes so far (nothing new: no request)."""
        self._last = time.monotonic()
        if len(self._buf) == self._sent:
            return
        data = bytes(self._buf)
        try:
            self._fs.pipe_file(self._part_path(), data)
        except Exception as exc:
            what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            msg = f"Event file {self.url!r}: upload failed ({what}). Check the URL and credentials."
            raise InputFileError(msg) from exc
        self._sent = len(data)
        self.uploads += 1
        self.uploaded_bytes += len(data)

    def upload_if_due(self) -> None:
        """Upload what is new once :data:`UPLOAD_SECS` have passed since the last upload
        (the writer thread's periodic call: records written just after an upload, then
        nothing more for a while, would otherwise wait for the next write)."""
        if len(self._buf) > self._sent and time.monotonic() - self._last >= UPLOAD_SECS:
            self.upload()

    def flush(self) -> None:
        self.upload()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.upload()


def _record_end(view: memoryview, at: int) -> int:
    """Where the framed record starting at ``at`` ends (u64 length, its CRC, the payload,
    the payload's CRC); the end of ``view`` when the bytes there are not a whole record."""
    if len(view) - at < 16:
        return len(view)
    end = at + 16 + int.from_bytes(view[at : at + 8], "little")
    return end if end <= len(view) else len(view)


class _State:
    """Everything the writer thread touches; holds no reference to the EventFileWriter."""

    def __init__(self, file: Any, path: str, max_queue: int, flush_secs: float) -> None:
        self.file = file
        self.path = path
        self.max_queue = max(1, int(max_queue))
        self.flush_secs = min(max(float(flush_secs), 0.01), HANDOFF_SECS)
        self.cond = threading.Condition(threading.Lock())
        self.io_lock = threading.Lock()
        self.pending: list[Any] = []  # events not yet serialized (at most max_queue)
        self.buffer = bytearray()  # framed records not yet handed to the OS
        self.closed = False
        self.stopping = False
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self.run, name=f"tensorsight-events:{os.path.basename(path)}", daemon=True
        )

    # ---------------------------------------------------------------- writer thread
    def run(self) -> None:
        next_flush = time.monotonic() + self.flush_secs
        while True:
            with self.cond:
                while len(self.buffer) < _WAKE_BYTES and not self.stopping:
                    timeout = next_flush - time.monotonic()
                    if timeout <= 0:
                        break
                    self.cond.wait(timeout)
                if self.stopping:
                    return  # close() writes what is left, in the caller's thread
            due = time.monotonic() >= next_flush
            self.write_out(include_pending=due)
            if due:
                next_flush = time.monotonic() + self.flush_secs
                if isinstance(self.file, RemoteEventFile):
                    self._upload_if_due()

    def _upload_if_due(self) -> None:
        """A remote file's bytes kept since its last upload, sent once that is due."""
        with self.io_lock:
            if self.file.closed:
                return
            try:
                self.file.upload_if_due()
            except InputFileError as exc:  # reported on the next call, as a write's error
                self.error = exc

    def _frame_pending(self) -> None:
        """Serialize and frame the pending events into the buffer (caller holds cond)."""
        if self.pending:
            batch, self.pending = self.pending, []
            self.buffer += b"".join(encode_record(_payload(e)) for e in batch)

    def write_out(self, *, include_pending: bool) -> None:
        """Hand the buffered records (and the pending events if asked) to the OS, in order."""
        with self.io_lock:
            with self.cond:
                if include_pending:
                    self._frame_pending()
                data, self.buffer = self.buffer, bytearray()
            if not data or self.file.closed:
                return
            try:
                view = memoryview(data)
                while view:  # unbuffered file: the syscall releases the GIL
                    written = self.file.write(view)
                    view = view[written:]
            except Exception as exc:  # disk full, file removed...: report on the next call
                self.error = exc

    # ---------------------------------------------------------------- caller side
    def add(self, event: Any) -> None:
        with self.cond:
            if self.closed:
                msg = (
                    f"Event file {self.path!r}: the writer is closed. Expected writes before "
                    "close(). Create a new SummaryWriter to write more."
                )
                raise UsageError(msg)
            if self.error is not None:
                self._raise_error()
            self.pending.append(event)
            if len(self.pending) < self.max_queue:
                return
            self._frame_pending()
            size = len(self.buffer)
            if size >= _WAKE_BYTES:
                self.cond.notify()
        if size > _MAX_BUFFER_BYTES:  # the thread lags behind: write in the caller
            self.write_out(include_pending=False)

    def flush(self) -> None:
        if self.closed:
            return
        self.write_out(include_pending=True)
        if isinstance(self.file, RemoteEventFile):
            with self.io_lock:
                try:
                    self.file.flush()
                except InputFileError as exc:
                    self.error = exc
        self._raise_error()

    def close(self) -> None:
        with self.cond:
            if self.closed:
                return
            self.closed = True
            self.stopping = True
            self.cond.notify_all()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join()
        self.write_out(include_pending=True)
        with self.io_lock:
            try:
                self.file.close()
            except InputFileError as exc:  # a remote file's last upload
                self.error = exc
        self._raise_error()

    def _raise_error(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            msg = (
                f"Event file {self.path!r}: writing failed ({error}). Check disk space and "
                "permissions."
            )
            raise InputFileError(msg) from error


def _payload(event: Any) -> bytes:
    return event if isinstance(event, bytes) else bytes(event.SerializeToString())


class EventFileWriter:
    """Appends ``Event`` messages to a new event file in ``log_dir`` from a background thread.

    Args:
        log_dir: Folder of the file; created when missing.
        max_queue: Events held in memory before ``add_event`` waits for the writer thread.
        flush_secs: Most seconds between hand-offs of queued records to the operating
            system; capped at ``HANDOFF_SECS`` (0.1) so SIGKILL loses at most a second.
        filename_suffix: Appended to the file name.

    Raises:
        InputFileError: ``log_dir`` cannot be created or written (the message names it).

    Example:
        >>> import tempfile
        >>> from tensorsight.summary._proto import tb
        >>> writer = EventFileWriter(tempfile.mkdtemp())
        >>> writer.add_event(tb.Event(step=1, wall_time=1.0))
        >>> writer.close()
    """

    def __init__(
        self, log_dir: str, max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = ""
    ) -> None:
        from tensorsight.summary._fs import is_remote

        self._log_dir = str(log_dir)
        header = tb.Event(wall_time=time.time(), file_version="brain.Event:2")
        if is_remote(self._log_dir):
            path = self._log_dir.rstrip("/") + "/" + event_file_name(filename_suffix)
            remote = RemoteEventFile(path)
            remote.write(encode_record(header.SerializeToString()))
            remote.upload()  # a bad URL or missing credentials fail here, not in the thread
            self._start(remote, path, max_queue, flush_secs)
            return
        try:
            os.makedirs(self._log_dir, exist_ok=True)
            path = os.path.join(self._log_dir, event_file_name(filename_suffix))
            file = open(path, "wb", buffering=0)  # noqa: SIM115 - closed by _State
        except OSError as exc:
            msg = (
                f"Log dir {self._log_dir!r}: cannot create an event file there "
                f"({exc.strerror or exc}). Expected a writable folder. Pass another log_dir "
                "or fix its permissions."
            )
            raise InputFileError(msg) from exc
        file.write(encode_record(header.SerializeToString()))
        self._start(file, path, max_queue, flush_secs)

    def _start(self, file: Any, path: str, max_queue: int, flush_secs: float) -> None:
        self._state = _State(file, path, max_queue, flush_secs)
        self._state.thread.start()
        self._finalizer = weakref.finalize(self, self._state.close)

    @property
    def path(self) -> str:
        """Full path of the event file."""
        return self._state.path

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._state.closed

    def get_logdir(self) -> str:
        """The folder holding the event file."""
        return self._log_dir

    def add_event(self, event: Any) -> None:
        """Queue one ``Event`` (or its serialized bytes); waits while the queue is full.

        Raises:
            UsageError: The writer is closed.
            InputFileError: An earlier background write failed.
        """
        self._state.add(event)

    def flush(self) -> None:
        """Write every queued event and flush the file to the operating system."""
        self._state.flush()

    def close(self) -> None:
        """Flush and close the file; later ``add_event`` calls raise. Closing twice is fine."""
        self._finalizer.detach()
        self._state.close()
