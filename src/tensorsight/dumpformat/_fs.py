"""The one small layer through which the dump code touches files.

Everything the writer and readers do with storage goes through these functions, so that
fsspec URLs (``s3://``, ``gs://``) can be added here without touching them. Object stores do
not append: a remote writer would upload finished chunks, a remote reader reopen on poll.
"""

from __future__ import annotations

import errno
import mmap
import os
import sys
from collections.abc import Callable
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
    import shutil  # here: with bz2 and lzma, a few ms of every reader's start (compare)

    shutil.rmtree(path)


def remove(path: Path) -> None:
    """Delete one file if it exists."""
    path.unlink(missing_ok=True)


def read_text(path: Path) -> str:
    """Read a whole UTF-8 file."""
    return path.read_text(encoding="utf-8")


def read_bytes(path: Path) -> bytes:
    """Read a whole file."""
    return path.read_bytes()


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


def map_file(path: Path) -> memoryview:
    """Memory-map a file read-only, as a read-only byte view (empty for an empty file).

    The view keeps the mapping alive, and so do numpy arrays made from it
    (``np.frombuffer``); the file is unmapped when the last of them is gone.

    On 64-bit Linux the mapping is made by libc's ``open``/``lseek``/``mmap``/``close``
    called through ctypes *with the GIL held*: a comparison maps thousands of files from
    worker threads that spend most of their time in the metric kernel, and each of the
    four GIL releases of ``os.open`` + ``mmap.mmap`` made the thread queue behind the
    other worker's Python work (measured: ~80 us per file instead of ~9). Elsewhere the
    :mod:`mmap` module does it.
    """
    if _LIBC is not None:
        return _LIBC.map(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if os.fstat(fd).st_size == 0:
            return memoryview(b"")
        try:
            return memoryview(mmap.mmap(fd, 0, access=mmap.ACCESS_READ))
        except OSError as exc:  # mmap's own error does not say which file
            raise _map_error(path, exc.errno or errno.EINVAL) from None
    finally:
        os.close(fd)


def _map_error(path: Path, code: int) -> OSError:
    """The error of a failed ``mmap``, naming the file (a folder opens, then cannot map)."""
    if os.path.isdir(path):
        code = errno.EISDIR
    return OSError(code, os.strerror(code), str(path))


class _Mapping:
    """A region mapped by :class:`_Libc`: numpy reads it through ``__array_interface__``
    (read-only), and dropping the last reference unmaps it."""

    __slots__ = ("__array_interface__", "_unmap", "addr", "size")

    def __init__(self, addr: int, size: int, unmap: Callable[[int, int], int]) -> None:
        self.addr, self.size, self._unmap = addr, size, unmap
        self.__array_interface__ = {
            "data": (addr, True),
            "shape": (size,),
            "typestr": "|u1",
            "version": 3,
        }

    def __del__(self) -> None:
        self._unmap(self.addr, self.size)


class _Libc:
    """libc's file-mapping calls through ctypes (64-bit Linux only; see :func:`map_file`)."""

    # unmapping a large region is worth letting other threads run meanwhile
    RELEASE_GIL_ABOVE = 16 << 20

    def __init__(self) -> None:
        import ctypes

        held = ctypes.PyDLL(None, use_errno=True)  # PyDLL: calls keep the GIL
        free = ctypes.CDLL(None, use_errno=True)
        c_int, c_void_p, c_size_t = ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t
        c_int64 = ctypes.c_int64
        self._open = held.open
        self._open.argtypes, self._open.restype = [ctypes.c_char_p, c_int], c_int
        self._lseek = held.lseek
        self._lseek.argtypes, self._lseek.restype = [c_int, c_int64, c_int], c_int64
        self._mmap = held.mmap
        self._mmap.argtypes = [c_void_p, c_size_t, c_int, c_int, c_int, c_int64]
        self._mmap.restype = c_void_p
        self._close = held.close
        self._close.argtypes, self._close.restype = [c_int], c_int
        munmaps = []
        for lib in (held, free):
            fn = lib.munmap
            fn.argtypes, fn.restype = [c_void_p, c_size_t], c_int
            munmaps.append(fn)
        self._munmap_held, self._munmap_free = munmaps
        self._errno = ctypes.get_errno
        self._failed = ctypes.c_void_p(-1).value
        self._flags = os.O_RDONLY | os.O_CLOEXEC

    def _error(self, path: Path) -> OSError:
        code = self._errno()
        return OSError(code, os.strerror(code), str(path))

    def unmap(self, addr: int, size: int) -> int:
        fn = self._munmap_free if size > self.RELEASE_GIL_ABOVE else self._munmap_held
        return int(fn(addr, size))

    def map(self, path: Path) -> memoryview:
        import numpy as np

        name = os.fsencode(path)
        if b"\0" in name:  # C would stop at the NUL and open another file
            msg = f"Path {str(path)!r}: embedded null byte."
            raise ValueError(msg)
        fd = self._open(name, self._flags)
        if fd < 0:
            raise self._error(path)
        try:
            size = self._lseek(fd, 0, os.SEEK_END)
            if size < 0:
                raise self._error(path)
            if size == 0:
                return memoryview(b"")
            addr = self._mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr is None or addr == self._failed:
                raise _map_error(path, self._errno())
        finally:
            self._close(fd)
        view: memoryview = np.asarray(_Mapping(addr, size, self.unmap)).data
        return view


def _load_libc() -> _Libc | None:
    if not sys.platform.startswith("linux") or sys.maxsize < 2**63 - 1:
        return None
    try:
        return _Libc()
    except (OSError, AttributeError):  # no dlopen(NULL) or a libc without these names
        return None


_LIBC = _load_libc()
