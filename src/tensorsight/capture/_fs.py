"""The one small layer through which the dump code touches files.

Everything the writer and readers do with storage goes through these functions, so that
fsspec URLs (``s3://``, ``gs://``) can be added here without touching them. Object stores do
not append: a remote writer would upload finished chunks, a remote reader reopen on poll.
"""

from __future__ import annotations

import mmap
import os
import shutil
from pathlib import Path
from typing import IO

__all__ = [
    "exists",
    "is_dir",
    "list_dir",
    "make_dirs",
    "map_file",
    "open_append",
    "open_direct",
    "open_read",
    "open_write",
    "read_text",
    "remove",
    "remove_tree",
    "to_path",
    "write_at",
    "write_text_atomic",
]

# Direct I/O (``O_DIRECT``) moves a buffer from user memory to the disk without the page
# cache: buffer address, file offset and length must all be multiples of this (the
# largest logical block size in common use; 512-byte devices accept it too).
DIRECT_ALIGN = 4096


def to_path(path: str | os.PathLike[str]) -> Path:
    """Normalize a user path (``~`` expanded)."""
    return Path(os.fspath(path)).expanduser()


def exists(path: Path) -> bool:
    """Whether ``path`` exists."""
    return path.exists()


def is_dir(path: Path) -> bool:
    """Whether ``path`` is a folder."""
    return path.is_dir()


def list_dir(path: Path) -> list[str]:
    """Sorted entry names of a folder."""
    return sorted(os.listdir(path))


def make_dirs(path: Path) -> None:
    """Create a folder and its parents."""
    path.mkdir(parents=True, exist_ok=True)


def remove_tree(path: Path) -> None:
    """Delete a folder and everything in it."""
    shutil.rmtree(path)


def remove(path: Path) -> None:
    """Delete one file if it exists."""
    path.unlink(missing_ok=True)


def read_text(path: Path) -> str:
    """Read a whole UTF-8 file."""
    return path.read_text(encoding="utf-8")


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Write a file so that readers see either the old or the new content.

    The new content goes to a temporary name, then replaces the file (a rename), so a
    process that dies at any point leaves the old or the new file. ``durable`` also waits
    for the disk (fsync) before the rename, which only matters if the whole machine stops.
    """
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def open_append(path: Path) -> IO[bytes]:
    """Open a log for appending (binary)."""
    return open(path, "ab")


def open_write(path: Path) -> IO[bytes]:
    """Open a new binary file for writing."""
    return open(path, "wb")


def open_direct(path: Path) -> int | None:
    """A second, ``O_DIRECT`` descriptor for writing an existing file (``None`` where the
    platform or file system has no direct I/O, e.g. tmpfs): for :func:`write_at`."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    try:
        return os.open(path, os.O_WRONLY | flag | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def write_at(fd: int, data: memoryview, offset: int) -> None:
    """Write all of ``data`` at ``offset`` of a descriptor (the GIL is released meanwhile)."""
    done = 0
    n = data.nbytes
    while done < n:
        done += os.pwrite(fd, data[done:], offset + done)


def open_read(path: Path) -> IO[bytes]:
    """Open a binary file for reading."""
    return open(path, "rb")


def map_file(path: Path) -> mmap.mmap | bytes:
    """Memory-map a file read-only (an empty file gives ``b""``).

    A bare descriptor, not a Python file object: a comparison maps thousands of files from
    several threads, and the file object's set-up is Python work that holds the GIL.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if os.fstat(fd).st_size == 0:
            return b""
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
