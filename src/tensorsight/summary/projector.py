"""The embedding projector's files in a logdir: ``projector_config.pbtxt`` and what it names.

A folder holding ``projector_config.pbtxt`` (torch.utils.tensorboard, tensorboardX and our
``add_embedding`` write it next to the event files) is a run; each ``embeddings`` entry is
one ``embeddings`` record of that run, with tag and step taken from its
``<step:05d>/<tag>/tensors.tsv`` path. The config is read whole, again whenever its size or
modification time changes (writers rewrite or append to it); only entries not seen before
become records, so a rewrite does not list an embedding twice.

The files an entry names are read on demand by :func:`load_embedding`, never while the
logdir loads: sizes are checked before anything is allocated (the file size against
``TENSORSIGHT_MAX_TENSOR_MIB`` x 4, the values against ``TENSORSIGHT_MAX_TENSOR_MIB``), and
a damaged file is a problem sentence naming the file and line, never an exception.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import InputFileError
from tensorsight.summary import _fs
from tensorsight.summary._limits import max_tensor_bytes
from tensorsight.summary._tbdecode import Item
from tensorsight.summary.kinds.embedding_decode import (
    MetadataTable,
    parse_config,
    parse_metadata,
    parse_tensors,
    split_tensor_path,
)
from tensorsight.summary.reader import Batch, EventFileReader
from tensorsight.summary.records import EmbeddingRecord

__all__ = [
    "CONFIG_NAME",
    "MAX_CONFIG_BYTES",
    "MAX_METADATA_BYTES",
    "MAX_SPRITE_BYTES",
    "LoadedEmbedding",
    "ProjectorConfigReader",
    "load_embedding",
    "read_sprite",
]

CONFIG_NAME = "projector_config.pbtxt"
MAX_CONFIG_BYTES = 16 * 1024 * 1024
MAX_METADATA_BYTES = 256 * 1024 * 1024
MAX_SPRITE_BYTES = 64 * 1024 * 1024
# a float32 written as text takes at least 2 bytes ("0\t"), usually ~10: a file more than
# 8 bytes per allowed value cannot hold an allowed matrix of realistic numbers
_TEXT_BYTES_PER_VALUE = 8


class ProjectorConfigReader(EventFileReader):
    """Reads ``projector_config.pbtxt`` whole into ``embeddings`` items (see the module)."""

    format = "projector"

    def __init__(self, path: str, **kwargs: object) -> None:
        super().__init__(path, plugins=None, check_data_crc=True)
        self._listed: set[tuple[str, str, str | None, str | None]] = set()

    def _fast_scalars(self) -> bool:
        return False

    def read(self, sink: Callable[[Batch], None] | None = None) -> Batch:
        batch = self._read_config()
        if sink is None or not batch.items:
            return batch
        sink(batch)
        return Batch(problems=batch.problems, records=batch.records, bytes_read=batch.bytes_read)

    def _read_config(self) -> Batch:
        batch = Batch()
        info = _fs.stat(self.path)
        if info.size == self.size and info.mtime == self.mtime and self.offset == info.size:
            return batch
        self.mtime = info.mtime
        self.size = self.offset = info.size
        if info.size > MAX_CONFIG_BYTES:
            batch.problems.append(
                f"Projector config {self.path!r}: {info.size} bytes is over the "
                f"{MAX_CONFIG_BYTES}-byte limit; its embeddings are not listed."
            )
            return batch
        data = _fs.read_range(self.path, 0, info.size)
        batch.bytes_read = len(data)
        try:
            entries = parse_config(data.decode("utf-8", errors="replace"))
        except ValueError as exc:
            batch.problems.append(
                f"Projector config {self.path!r}: not protobuf text format ({exc}); its "
                "embeddings are not listed."
            )
            return batch
        folder = os.path.dirname(self.path)
        for entry in entries:
            key = (entry.tensor_name, entry.tensor_path, entry.metadata_path, entry.sprite_path)
            if key in self._listed:
                continue
            self._listed.add(key)
            tag, step = split_tensor_path(entry)
            paths = [_resolve(folder, p) for p in (entry.tensor_path, entry.metadata_path,
                                                   entry.sprite_path)]  # fmt: skip
            outside = [p for p in (entry.tensor_path, entry.metadata_path, entry.sprite_path)
                       if p and _resolve(folder, p) is None]  # fmt: skip
            for path in outside:
                batch.problems.append(
                    f"Projector config {self.path!r}: embedding {entry.tensor_name!r} names "
                    f"{path!r}, outside the config's folder; that file is not read."
                )
            if paths[0] is None:
                continue
            record = EmbeddingRecord(
                step=step,
                wall_time=0.0,
                tensor_name=entry.tensor_name,
                tensor_path=paths[0],
                metadata_path=paths[1],
                sprite_path=paths[2],
                sprite_dim=entry.sprite_dim if paths[2] else None,
            )
            # wall_time 0: the files carry no training time, so they stay out of the run's range
            batch.items.append(Item(self.records, "embeddings", tag, step, 0.0, record))
            self.records += 1
            batch.records += 1
        return batch


def _resolve(folder: str, path: str | None) -> str | None:
    """``path`` relative to the config's folder; ``None`` when it is empty or leads outside
    that folder (an absolute path or ``..``): the board reads no file a config points at
    elsewhere on the machine."""
    if not path or os.path.isabs(path):
        return None
    full = os.path.normpath(os.path.join(folder, path))
    base = os.path.normpath(folder)
    if os.path.commonpath([full, base]) != base:
        return None
    return full


@dataclass(frozen=True, eq=False)
class LoadedEmbedding:
    """The files of one :class:`EmbeddingRecord`, read.

    ``matrix`` is ``(points, dims)`` float32 (``None`` when ``tensors.tsv`` could not be
    read); ``metadata`` is ``None`` without (readable) labels; ``problems`` says what was
    skipped, each sentence naming the file.
    """

    matrix: NDArray[np.float32] | None
    metadata: MetadataTable | None
    problems: tuple[str, ...]
    mtime: float


def _read_file(path: str, limit: int, what: str) -> bytes:
    info = _fs.stat(path)
    if info.size > limit:
        msg = f"{what} {path!r}: {info.size} bytes is over the {limit}-byte limit; skipped."
        raise InputFileError(msg)
    return _fs.read_range(path, 0, info.size)


def load_embedding(record: EmbeddingRecord) -> LoadedEmbedding:
    """Read the matrix and labels of ``record``; problems are sentences, never exceptions."""
    problems: list[str] = []
    matrix = None
    metadata = None
    max_values = max_tensor_bytes() // 4
    mtime = 0.0
    try:
        mtime = _fs.stat(record.tensor_path).mtime
        data = _read_file(
            record.tensor_path, max_values * _TEXT_BYTES_PER_VALUE + 1024, "Embedding tensors"
        )
        matrix = parse_tensors(data, max_values=max_values)
    except InputFileError as exc:
        problems.append(str(exc))
    except ValueError as exc:
        problems.append(f"Embedding tensors {record.tensor_path!r}: {exc}; skipped.")
    if matrix is not None and record.metadata_path is not None:
        try:
            raw = _read_file(record.metadata_path, MAX_METADATA_BYTES, "Embedding metadata")
            metadata = parse_metadata(raw, int(matrix.shape[0]))
        except InputFileError as exc:
            problems.append(str(exc))
        except ValueError as exc:
            problems.append(
                f"Embedding metadata {record.metadata_path!r}: {exc}; shown without labels."
            )
    return LoadedEmbedding(matrix, metadata, tuple(problems), mtime)


_IMAGE_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"))


def read_sprite(record: EmbeddingRecord, max_bytes: int = MAX_SPRITE_BYTES) -> tuple[bytes, str]:
    """The sprite image of ``record`` and its media type (PNG or JPEG, told by its bytes).

    Raises:
        InputFileError: No sprite, a missing or unreadable file, over ``max_bytes``, or
            bytes that are neither PNG nor JPEG.
    """
    if record.sprite_path is None:
        msg = f"Embedding {record.tensor_name!r}: has no sprite image."
        raise InputFileError(msg)
    data = _read_file(record.sprite_path, max_bytes, "Embedding sprite")
    for magic, media in _IMAGE_MAGIC:
        if data.startswith(magic):
            return data, media
    msg = f"Embedding sprite {record.sprite_path!r}: neither PNG nor JPEG; not served."
    raise InputFileError(msg)
