"""Read dumps: tensorsight's own format, msprobe folders, MindSpore Dumps and TensorFlow
debugger dumps, through one API.

:func:`read_dump` opens a folder and returns a :class:`Dump`; ``dump.step(rank, step)``
returns a :class:`DumpStep` whose ``ops`` are :class:`~tensorsight.dumpformat.schema.OpRecord`
in execution order (forward, then backward) and whose :meth:`DumpStep.load` memory-maps
one tensor into a numpy array. Nothing here executes code from the files: safetensors and
JSON are parsed, msprobe ``.pt`` files load with ``torch.load(weights_only=True)`` and
``.npy`` with ``allow_pickle=False``; MindSpore's ``.npy`` headers are parsed as literals.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tensorsight.dumpformat import _check, _fs, _safetensors, _table
from tensorsight.dumpformat.schema import DumpManifest, OpRecord, TensorRecord
from tensorsight.errors import DumpFormatError, InputFileError

__all__ = ["Dump", "DumpStep", "RawTensor", "read_dump"]

_RANK = re.compile(r"rank(\d+)")
_STEP = re.compile(r"step(\d+)")
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


@dataclass(frozen=True)
class RawTensor:
    """A stored tensor's exact bits: ``bits`` has a numpy dtype of the same width.

    For bfloat16 ``bits`` is ``uint16``, for float8 ``uint8``; other dtypes are their
    numpy selves. ``dtype`` is the original dtype name.
    """

    bits: np.ndarray
    dtype: str


def group_ops(rows: list[TensorRecord]) -> tuple[OpRecord, ...]:
    """Group rows (sorted by index, stable) into ops."""
    rows = sorted(rows, key=lambda r: r.index)
    ops: list[OpRecord] = []
    i = 0
    while i < len(rows):
        j = i
        first = rows[i]
        while j < len(rows) and rows[j].index == first.index:
            j += 1
        ops.append(
            OpRecord(
                index=first.index,
                op=first.op,
                direction=first.direction,
                module_path=first.module_path,
                tensors=tuple(rows[i:j]),
                grad_fn=first.grad_fn,
                stack=first.stack,
                args=first.args,
            )
        )
        i = j
    return tuple(ops)


class _StepSource(Protocol):
    def rows(self) -> list[TensorRecord]: ...
    def load_raw(self, row: TensorRecord) -> RawTensor: ...
    def close(self) -> None: ...


class DumpStep:
    """One rank's step of a dump: its ops in execution order and lazy tensor access.

    Attributes:
        rank: The rank.
        step: The step.
        path: The folder holding the step.
        complete: Whether the step ended normally. ``False`` for the step a killed process
            was running (its rows are the ones that reached the log; often none) and for one
            cut short by an exception. msprobe and MindSpore steps: always ``True``.
    """

    def __init__(
        self, rank: int, step: int, path: _fs.AnyPath, source: _StepSource, complete: bool = True
    ) -> None:
        self.rank = rank
        self.step = step
        self.path = path
        self.complete = complete
        self._source = source
        self._rows: tuple[TensorRecord, ...] | None = None
        self._ops: tuple[OpRecord, ...] | None = None

    @property
    def rows(self) -> tuple[TensorRecord, ...]:
        """Every tensor row, in execution order."""
        if self._rows is None:
            self._rows = tuple(sorted(self._source.rows(), key=lambda r: r.index))
        return self._rows

    @property
    def ops(self) -> tuple[OpRecord, ...]:
        """Every op, in execution order (forward, then backward, as they ran)."""
        if self._ops is None:
            self._ops = group_ops(list(self.rows))
        return self._ops

    def __iter__(self) -> Iterator[OpRecord]:
        return iter(self.ops)

    def __len__(self) -> int:
        return len(self.ops)

    def has_data(self, row: TensorRecord) -> bool:
        """Whether the full tensor of ``row`` is stored (mode ``tensor``)."""
        return row.data is not None

    def load_raw(self, row: TensorRecord) -> RawTensor:
        """The stored bits of ``row``'s tensor, memory-mapped when possible."""
        if row.data is None:
            msg = (
                f"Tensor {row.name!r}: not stored in this dump. Expected a dump written "
                "with mode='tensor'."
            )
            raise DumpFormatError(msg)
        return self._source.load_raw(row)

    def load(self, row: TensorRecord, dtype: Any = None) -> np.ndarray:
        """``row``'s tensor as a numpy array.

        Args:
            row: A row of :attr:`rows`.
            dtype: Convert to this numpy dtype (e.g. ``np.float64``); ``None`` keeps the
                stored dtype, except that bfloat16 and float8 (which numpy lacks) come back
                as float32, exactly. Use :meth:`load_raw` for their bits.
        """
        raw = self.load_raw(row)
        arr = raw.bits
        if raw.dtype in _safetensors.RAW_DTYPES:
            arr = _safetensors.to_float32(arr, raw.dtype)
        if dtype is not None:
            with np.errstate(invalid="ignore"):  # signalling NaNs raise it when cast
                arr = arr.astype(dtype)
        return arr

    def close(self) -> None:
        """Release memory maps (arrays from :meth:`load` must not be used afterwards)."""
        self._source.close()


class _OwnStep:
    def __init__(self, path: _fs.AnyPath, cut_off: Callable[[], bool] = lambda: False) -> None:
        self.path = path
        # whether the dump stopped before its end: then a step folder without an op table
        # is a step cut off before its first rows reached the log (it has no rows)
        self._cut_off = cut_off
        self._shards: dict[str, _safetensors.ShardFile] = {}

    def rows(self) -> list[TensorRecord]:
        if not _table.has_table(self.path) and self._cut_off():
            return []
        source = f"Op table {str(_table.table_file(self.path))!r}"
        columns = _table.read_columns(self.path)  # Parquet: column by column
        if columns is not None:
            return TensorRecord.from_columns(columns, source=source)
        rows = _table.read_rows(self.path)
        return [
            TensorRecord.from_row(r, source=source, where=f"row {i}") for i, r in enumerate(rows)
        ]

    def load_raw(self, row: TensorRecord) -> RawTensor:
        assert row.data is not None
        shard_name, _, key = row.data.partition(":")
        if not _SAFE_NAME.fullmatch(shard_name) or not shard_name.endswith(".safetensors"):
            msg = (
                f"Tensor {row.name!r}: data reference {row.data!r} is not a shard file name. "
                "Expected '<tensors-NNNNN.safetensors>:<key>'."
            )
            raise DumpFormatError(msg)
        shard = self._shards.get(shard_name)
        if shard is None:
            path = self.path / shard_name
            if not _fs.exists(path):
                msg = (
                    f"Tensor {row.name!r}: shard {shard_name!r} is missing. Expected it in "
                    f"{str(self.path)!r}; the run probably stopped before writing it."
                )
                raise DumpFormatError(msg)
            shard = _safetensors.ShardFile(path)
            self._shards[shard_name] = shard
        return RawTensor(*shard.get_raw(key))

    def close(self) -> None:
        for s in self._shards.values():
            s.close()
        self._shards.clear()


class Dump:
    """A dump folder: ranks, steps, manifests; open one step with :meth:`step`.

    Attributes:
        path: The dump folder.
        format: ``"tensorsight"``, ``"msprobe"``, ``"mindspore"`` (MindSpore's own Dump) or
            ``"tfdbg"`` (TensorFlow's debugger v2).
    """

    def __init__(
        self,
        path: _fs.AnyPath,
        format: str,
        layout: Mapping[int, Mapping[int, _fs.AnyPath]],
        rank_dirs: Mapping[int, _fs.AnyPath] | None = None,
    ) -> None:
        self.path = path
        self.format = format
        self._layout = layout
        # Where each rank's manifest is: ``path/rank<N>``, or ``path`` itself when the
        # folder opened is one rank's.
        self._rank_dirs = rank_dirs or {r: path / f"rank{r}" for r in layout}
        self._manifests: dict[int, DumpManifest | None] = {}

    @property
    def ranks(self) -> list[int]:
        """Ranks present, sorted."""
        return sorted(self._layout)

    def steps(self, rank: int | None = None) -> list[int]:
        """Steps present for ``rank`` (default: the first rank), sorted."""
        return sorted(self._layout[self._rank(rank)])

    def _rank(self, rank: int | None) -> int:
        if rank is None:
            return self.ranks[0]
        if rank not in self._layout:
            msg = f"Dump {str(self.path)!r}: no rank {rank}. Expected one of {self.ranks}."
            raise DumpFormatError(msg)
        return rank

    def manifest(self, rank: int | None = None) -> DumpManifest | None:
        """The rank's manifest (``None`` for msprobe and MindSpore dumps, which have none)."""
        r = self._rank(rank)
        if r not in self._manifests:
            m = None
            if self.format == "tensorsight":
                file = self._rank_dirs[r] / "manifest.json"
                source = f"Manifest {str(file)!r}"
                try:
                    text = _check.read_limited(file, source, "a tensorsight manifest")
                except FileNotFoundError:
                    msg = (
                        f"{source}: missing (removed since the dump was opened?). Expected "
                        f"rank {r}'s manifest.json; open the dump again with read_dump."
                    )
                    raise DumpFormatError(msg) from None
                m = DumpManifest.from_json(text, source=str(file))
            self._manifests[r] = m
        return self._manifests[r]

    @property
    def complete(self) -> bool:
        """Whether every rank finished normally (msprobe, MindSpore dumps: always ``True``)."""
        return all((m := self.manifest(r)) is None or m.complete for r in self.ranks)

    def step(self, rank: int | None = None, step: int | None = None) -> DumpStep:
        """Open one step (defaults: first rank, first step)."""
        r = self._rank(rank)
        steps = self._layout[r]
        if not steps:
            msg = (
                f"Dump {str(self.path)!r}: rank {r} recorded no step (the run stopped before "
                "its first op reached the disk)."
            )
            raise DumpFormatError(msg)
        s = min(steps) if step is None else step
        if s not in steps:
            msg = (
                f"Dump {str(self.path)!r}: rank {r} has no step {s}. "
                f"Expected one of {sorted(steps)}."
            )
            raise DumpFormatError(msg)
        folder = steps[s]
        if self.format != "tensorsight":
            assert isinstance(folder, Path)  # URLs open tensorsight dumps only
            if self.format == "msprobe":
                from tensorsight.dumpformat.msprobe import MsprobeStep

                return DumpStep(r, s, folder, MsprobeStep(folder))
            if self.format == "tfdbg":  # TensorFlow's debugger: one folder, one step
                from tensorsight.dumpformat.tfdbg import TfdbgStep

                return DumpStep(r, s, folder, TfdbgStep(folder))
            # MindSpore: folder is the rank's; the step is an iteration
            from tensorsight.dumpformat.mindspore import MindSporeStep

            return DumpStep(r, s, folder, MindSporeStep(folder, s))

        def cut_off() -> bool:
            manifest = self.manifest(r)
            return manifest is not None and not manifest.complete

        return DumpStep(r, s, folder, _OwnStep(folder, cut_off), self._step_complete(r, s))

    def _step_complete(self, rank: int, step: int) -> bool:
        """Whether a step of an own dump ended normally.

        Its Parquet table is written only when it ends, so a step without one was cut off.
        The manifest of a killed process lags (it is rewritten at most once a second): a
        step it lists as running, or not at all, but that has its Parquet table, ended. A
        step it lists as not complete in a final manifest (written by ``close`` or after a
        writer failure) was cut short by an exception.
        """
        if not _fs.exists(self._layout[rank][step] / _table.PARQUET_NAME):
            return False
        m = self.manifest(rank)
        info = next((i for i in m.steps if i.step == step), None) if m is not None else None
        if m is None or info is None or info.complete:
            return True
        return not (m.complete or m.incomplete_reason is not None)

    def iter_steps(self) -> Iterator[DumpStep]:
        """Every (rank, step), rank-major."""
        for r in self.ranks:
            for s in self.steps(r):
                yield self.step(r, s)


def _numbered(path: _fs.AnyPath, pattern: re.Pattern[str]) -> dict[int, _fs.AnyPath]:
    out: dict[int, _fs.AnyPath] = {}
    for name in _fs.list_dir(path):
        m = pattern.fullmatch(name)
        if m and _fs.is_dir(path / name):
            out[int(m.group(1))] = path / name
    return out


def read_dump(path: str | os.PathLike[str] | _fs.RemotePath) -> Dump:
    """Open a dump folder (tensorsight's, msprobe's, MindSpore's, TensorFlow debugger's)
    without loading tensors.

    Args:
        path: The dump folder (holding ``rank<N>/``, msprobe's ``step<S>/``, MindSpore's
            ``rank_<R>/`` or TensorFlow's ``tfdbg_events.*`` files), or one rank's folder. A
            URL (``s3://bucket/dumps/fp32``, any fsspec URL) opens a tensorsight dump where
            it is: the folder is listed once and tensors are read in byte ranges (see
            :mod:`tensorsight.dumpformat._fs`).

    Raises:
        InputFileError: ``path`` does not exist or is not a folder (or cannot be listed).
        DumpFormatError: The folder is neither format.
    """
    root = _fs.locate(path)
    if isinstance(root, _fs.RemotePath):
        return _read_remote(root)
    if not _fs.is_dir(root):
        what = "does not exist" if not _fs.exists(root) else "is not a folder"
        msg = f"Dump {str(root)!r}: {what}. Expected a dump folder."
        raise InputFileError(msg)
    own = _own_dump(root)
    if own is not None:
        return own
    from tensorsight.dumpformat.msprobe import msprobe_layout

    layout = msprobe_layout(root)
    if layout:
        return Dump(root, "msprobe", layout)
    from tensorsight.dumpformat.mindspore import mindspore_layout

    layout = mindspore_layout(root)
    if layout:
        return Dump(root, "mindspore", layout)
    from tensorsight.dumpformat.tfdbg import tfdbg_layout

    layout = tfdbg_layout(root)
    if layout:
        return Dump(root, "tfdbg", layout)
    msg = (
        f"Dump {str(root)!r}: not a dump. Expected rank<N>/manifest.json (tensorsight), "
        "step<S>/<rank or proc>/dump.json (msprobe), rank_<R>/execution_order/ (MindSpore) "
        "or tfdbg_events.*.metadata (TensorFlow's debugger)."
    )
    raise DumpFormatError(msg)


def _own_dump(root: _fs.AnyPath) -> Dump | None:
    """``root`` as a tensorsight dump, or ``None`` when it is not one."""
    ranks = _numbered(root, _RANK)
    if not ranks and _fs.exists(root / "manifest.json"):  # one rank's folder
        m = _RANK.fullmatch(root.name)
        ranks = {int(m.group(1)) if m else 0: root}
    if ranks and all(_fs.exists(p / "manifest.json") for p in ranks.values()):
        layout = {r: _numbered(p, _STEP) for r, p in ranks.items()}
        return Dump(root, "tensorsight", layout, ranks)
    return None


def _read_remote(url: _fs.RemotePath) -> Dump:
    """A tensorsight dump at a URL, from one listing of it (msprobe, MindSpore and
    TensorFlow debugger dumps are read from local folders only)."""
    root = _fs.snapshot(url)
    if not _fs.is_dir(root):
        msg = f"Dump {str(root)!r}: no objects below it. Expected a dump folder; check the URL."
        raise InputFileError(msg)
    own = _own_dump(root)
    if own is not None:
        return own
    msg = (
        f"Dump {str(root)!r}: not a tensorsight dump. Expected rank<N>/manifest.json; msprobe, "
        "MindSpore and TensorFlow debugger dumps are read from local folders (copy them down "
        "first)."
    )
    raise DumpFormatError(msg)
