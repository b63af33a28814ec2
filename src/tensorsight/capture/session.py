"""``tensorsight.dump(...)``: the public entry point that captures a PyTorch run.

:func:`dump` validates its arguments without importing torch and returns a
:class:`DumpSession`; torch, the writer thread and the capture backend start on
:meth:`DumpSession.start` (or ``with``).
"""

from __future__ import annotations

import contextlib
import os
import re
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from tensorsight import _gc
from tensorsight._lazy import lazy_import
from tensorsight.capture.backends import levels
from tensorsight.dumpformat import _fs
from tensorsight.dumpformat.schema import MODES
from tensorsight.errors import CaptureError, InputFileError, UsageError

__all__ = ["DumpSession", "ObserverCheck", "dump"]

T = TypeVar("T")
_RANK_DIR = re.compile(r"rank\d+")


@dataclass(frozen=True)
class ObserverCheck:
    """Whether capturing changed a step's outputs (see :meth:`DumpSession.run_step`).

    Attributes:
        step: The step checked.
        identical: ``True`` when the outputs agree bit for bit with and without capture.
        plain_fingerprint: CRC-32 of the outputs without capture.
        captured_fingerprint: CRC-32 of the outputs with capture.
    """

    step: int
    identical: bool
    plain_fingerprint: str
    captured_fingerprint: str


def _check_choice(kind: str, value: str | None, choices: tuple[str, ...]) -> str:
    if value is None:
        return choices[0]
    if value not in choices:
        msg = f"Dump {kind} {value!r}: unknown. Expected one of {', '.join(choices)}."
        raise UsageError(msg)
    return value


def _check_ints(kind: str, value: Iterable[int] | None) -> frozenset[int] | None:
    if value is None:
        return None
    items: list[object] = [] if isinstance(value, (str, bytes)) else list(value)
    if isinstance(value, (str, bytes)) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in items
    ):
        msg = f"Dump {kind} {value!r}: not a list of non-negative integers. Expected e.g. [0, 2]."
        raise UsageError(msg)
    return frozenset(v for v in items if isinstance(v, int))


def dump(
    path: str | os.PathLike[str],
    mode: str | None = None,
    level: str | None = None,
    include: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    steps: Iterable[int] | None = None,
    ranks: Iterable[int] | None = None,
    stack: bool = False,
    overwrite: bool = False,
    check_observer: bool = False,
    *,
    max_queue_bytes: int | None = None,
    shard_bytes: int | None = None,
) -> DumpSession:
    """Capture a PyTorch run into a dump folder.

    Args:
        path: Dump folder; each rank writes ``path/rank<N>/step<S>/``. A URL
            (``s3://bucket/dumps/run7``, any fsspec URL) writes to a local staging folder
            (``$TENSORSIGHT_STAGING_DIR``, else the temporary folder) and uploads each file
            once, whole (large shards in multipart parts), when the dump closes, the
            manifest last; a process killed before that leaves the staged copy.
        mode: ``"statistics"`` (default: min, max, mean, L2 norm, NaN/Inf counts),
            ``"tensor"`` (also full tensors in safetensors shards) or ``"md5"`` (statistics
            plus a CRC-32 fingerprint of each tensor's bytes).
        level: ``"op"`` (default: every ATen op, forward and backward), ``"module"``
            (nn.Module forward/backward hooks), ``"api"`` (torch functions, forward only),
            or the level of a registered capture backend (``capture.backends.levels()``).
        include: Glob patterns; keep only ops whose name or module path matches one.
        exclude: Glob patterns; drop ops whose name or module path matches one.
        steps: Steps to record (counted from 0 by :meth:`DumpSession.step`); ``None``: all.
        ranks: torch.distributed ranks that record; ``None``: all.
        stack: Record the user call stack of each op (slower).
        overwrite: Replace this rank's existing dump instead of refusing.
        check_observer: Make :meth:`DumpSession.run_step` run each step once without
            capture and report whether capturing changed the outputs bit for bit.
        max_queue_bytes: Tensor bytes queued for the writer before training waits (1 GiB).
        shard_bytes: Target size of one safetensors shard (256 MiB).

    Returns:
        A :class:`DumpSession`: use it as a context manager and call ``.step()`` between
        training steps.

    Raises:
        UsageError: An unknown mode or level (the message lists the choices), bad steps or
            ranks, a non-empty target folder without ``overwrite=True``.

    Example:
        >>> import torch, tensorsight, tempfile
        >>> model = torch.nn.Linear(4, 2)
        >>> with tensorsight.dump(tempfile.mkdtemp() + "/d", steps=[0]) as d:
        ...     for _ in range(2):
        ...         model(torch.ones(3, 4)).sum().backward()
        ...         d.step()
    """
    return DumpSession(
        path,
        mode=_check_choice("mode", mode, MODES),
        level=_check_choice("level", level, levels()),  # those of CAPTURE_BACKENDS
        include=None if include is None else tuple(include),
        exclude=None if exclude is None else tuple(exclude),
        steps=_check_ints("steps", steps),
        ranks=_check_ints("ranks", ranks),
        stack=bool(stack),
        overwrite=bool(overwrite),
        check_observer=bool(check_observer),
        max_queue_bytes=max_queue_bytes,
        shard_bytes=shard_bytes,
    )


class DumpSession:
    """A running capture; create it with :func:`dump`.

    Attributes:
        path: The dump folder (for a URL: the local staging folder, deleted once uploaded).
        url: The URL given (``s3://...``), or ``None`` for a local folder.
        current_step: The step being run (starts at 0).
        rank: This process's rank (known after start).
        observer_checks: One :class:`ObserverCheck` per :meth:`run_step` with ``check_observer``.
    """

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        # a URL (s3://...): the dump is written to a local staging folder and each file is
        # uploaded once, whole, when the dump closes (object stores do not append)
        self.url: str | None = os.fspath(path).rstrip("/") if _fs.is_remote(path) else None
        self.path = _fs.staging_dir("tensorsight-dump-") if self.url else _fs.to_path(path)
        self._replace_remote = False
        self._rank_dir: Path | None = None
        self.options = options
        self.current_step = 0
        self.rank = 0
        self.world_size = 1
        self.observer_checks: list[ObserverCheck] = []
        self._started = False
        self._closed = False
        self._writer: Any = None
        self._backend: Any = None
        self._tracker: Any = None
        self._recorder: Any = None
        self._recording = False
        self._torch: Any = None
        self._gc_held = False

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> DumpSession:
        """Start capturing step 0 (imports torch; creates this rank's folder)."""
        if self._started:
            msg = f"Dump {str(self.path)!r}: already started. Expected one start() per dump."
            raise UsageError(msg)
        self._started = True
        torch = lazy_import("torch", extra="torch", needed_by="tensorsight.dump")
        self._torch = torch
        from tensorsight.capture import _torch_session

        self.rank, self.world_size = _torch_session.rank_and_world()
        ranks = self.options["ranks"]
        if ranks is not None and self.rank not in ranks:
            return self  # this rank records nothing
        rank_dir = self._prepare_folder()
        self._writer, self._recorder, self._tracker, self._backend = _torch_session.build(
            rank_dir, self.rank, self.world_size, self.options
        )
        self._begin()
        # while it records, full collections skip the process's older objects (see _gc): one
        # took 136 ms every ten steps of a 50-layer MLP (17.7 -> 3.6 ms of collection a step)
        _gc.hold()
        self._gc_held = True
        return self

    def _prepare_folder(self) -> Path:
        if self.url is not None:
            self._rank_dir = self._check_remote()
            return self._rank_dir
        path = self.path
        if _fs.exists(path) and not _fs.is_dir(path):
            msg = f"Dump path {str(path)!r}: is a file. Expected a folder (new or empty)."
            raise UsageError(msg)
        rank_dir = path / f"rank{self.rank}"
        if _fs.exists(path):
            foreign = [n for n in _fs.list_dir(path) if not _RANK_DIR.fullmatch(n)]
            taken = _fs.exists(rank_dir) and bool(_fs.list_dir(rank_dir))
            if (foreign or taken) and not self.options["overwrite"]:
                what = f"rank{self.rank}" if taken else foreign[0]
                msg = (
                    f"Dump path {str(path)!r}: not empty (holds {what!r}). Expected a new or "
                    "empty folder. Pass overwrite=True to replace this rank's dump."
                )
                raise UsageError(msg)
            if taken:
                _fs.remove_tree(rank_dir)
        return rank_dir

    def _check_remote(self) -> Path:
        """The staging rank folder; refuses a rank already at the URL unless ``overwrite``."""
        assert self.url is not None
        remote = _fs.RemotePath(self.url) / f"rank{self.rank}"
        if _fs.exists(remote):
            if not self.options["overwrite"]:
                msg = (
                    f"Dump path {self.url!r}: holds 'rank{self.rank}' already. Expected a new "
                    "prefix. Pass overwrite=True to replace this rank's dump."
                )
                raise UsageError(msg)
            self._replace_remote = True
        rank_dir = self.path / f"rank{self.rank}"
        _fs.make_dirs(rank_dir)
        return rank_dir

    def _upload(self) -> None:
        """Upload the staged rank folder to the URL, then delete it (kept when it fails)."""
        assert self.url is not None
        if self._rank_dir is None:  # this rank recorded nothing
            _fs.remove_tree(self.path)
            return
        remote = _fs.RemotePath(self.url) / self._rank_dir.name
        try:
            _fs.upload_tree(self._rank_dir, remote, replace=self._replace_remote)
        except InputFileError as exc:
            msg = (
                f"Dump {self.url!r}: upload failed ({exc}). The dump is kept in "
                f"{str(self.path)!r}; upload it from there."
            )
            raise CaptureError(msg) from None
        _fs.remove_tree(self.path)

    def _wanted(self, step: int) -> bool:
        steps = self.options["steps"]
        return steps is None or step in steps

    def _begin(self) -> None:
        if self._writer is None or not self._wanted(self.current_step):
            return
        self._writer.begin_step(self.current_step)
        self._recorder.new_step()
        self._backend.new_step()
        self._backend.start()
        self._recording = True

    def _end(self, *, complete: bool = True, drop_if_empty: bool = False) -> None:
        if not self._recording:
            return
        self._recording = False
        self._backend.stop()
        self._writer.end_step(complete=complete, drop_if_empty=drop_if_empty)

    def step(self) -> None:
        """End the current step and start the next (recorded only if listed in ``steps``)."""
        self._check_open()
        self._end()
        self.current_step += 1
        self._begin()

    def close(self, *, complete: bool = True, reason: str | None = None) -> None:
        """Stop capturing, wait for the writer and mark the dump complete (or not)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._end(complete=complete, drop_if_empty=True)
        finally:
            if self._backend is not None:
                self._backend.stop()
                closer = getattr(self._backend, "close", None)
                if closer is not None:
                    closer()
            if self._tracker is not None:
                self._tracker.close()
            try:
                if self._writer is not None:
                    self._writer.close(complete=complete and not self._writer.failed, reason=reason)
            finally:
                arena = getattr(self._recorder, "arena", None)
                if arena is not None:
                    arena.close()  # the writer is done with every copy
                if self._gc_held:
                    self._gc_held = False
                    _gc.release()
        if self.url is not None:
            self._upload()

    def _check_open(self) -> None:
        if not self._started or self._closed:
            state = "closed" if self._closed else "not started"
            msg = (
                f"Dump {str(self.path)!r}: {state}. "
                "Expected use inside 'with tensorsight.dump(...)'."
            )
            raise UsageError(msg)

    def __enter__(self) -> DumpSession:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        with contextlib.suppress(CaptureError):  # the user's exception is the one to see
            self.close(complete=False, reason=f"{type(exc).__name__}: {exc}")

    # ---------------------------------------------------------------- outputs
    def record_outputs(self, outputs: Any) -> str:
        """Fingerprint the step's outputs (every tensor in ``outputs``) into the manifest.

        Returns:
            The CRC-32 over the tensors' bytes, chained in order, as 8 hex digits.
        """
        self._check_open()
        fp = self._fingerprint(outputs)
        if self._recording:
            self._writer.set_step_fields(outputs_fingerprint=fp)
        return fp

    def _fingerprint(self, outputs: Any) -> str:
        from tensorsight.capture import _torch_stats

        torch = self._torch
        leaves = torch.utils._pytree.tree_leaves(outputs)
        crc = 0
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                crc = zlib.crc32(_torch_stats.tensor_bytes(leaf.detach().cpu()), crc)
        return f"{crc & 0xFFFFFFFF:08x}"

    def run_step(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one training step ``fn(*args, **kwargs)`` under capture, then :meth:`step`.

        The outputs' fingerprint goes into the manifest. With ``check_observer=True`` the
        step first runs without capture (random state saved and restored), and an
        :class:`ObserverCheck` records whether capture changed the outputs bit for bit.
        ``fn`` must be repeatable: zero the gradients inside it and step the optimizer
        outside it.

        Returns:
            What ``fn`` returned (from the captured run).
        """
        self._check_open()
        torch = self._torch
        plain_fp = None
        if self.options["check_observer"] and self._recording:
            cpu_rng = torch.random.get_rng_state()
            cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
            self._backend.stop()
            try:
                plain_fp = self._fingerprint(fn(*args, **kwargs))
            finally:
                torch.random.set_rng_state(cpu_rng)
                if cuda_rng is not None:
                    torch.cuda.set_rng_state_all(cuda_rng)
                self._backend.start()
        out = fn(*args, **kwargs)
        captured_fp = self.record_outputs(out)
        if plain_fp is not None:
            check = ObserverCheck(self.current_step, plain_fp == captured_fp, plain_fp, captured_fp)
            self.observer_checks.append(check)
            self._writer.set_step_fields(observer_identical=check.identical)
        self.step()
        return out
