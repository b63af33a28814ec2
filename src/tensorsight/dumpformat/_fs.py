"""The one small layer through which the dump code touches files.

Everything the writer and readers do with storage goes through these functions. Local
paths are :class:`~pathlib.Path` and keep the fast paths (memory maps made through libc,
direct I/O). A dump given as a URL (``s3://bucket/dumps/fp32``, ``gs://``, ``az://``,
``hdfs://``, chained ``simplecache::s3://...``) is a :class:`RemotePath` and goes through
fsspec and the scheme's package (``pip install 'tensorsight[s3]'``):

- :func:`locate` turns what the user gave into a ``Path`` or a ``RemotePath``;
  :func:`snapshot` lists a remote folder in one flat recursive request, and the paths made
  from the snapshot answer :func:`exists`, :func:`is_dir`, :func:`list_dir` and
  :func:`size` from it (no request per question);
- small files the reader needs whole (manifest, op table) are one GET each
  (:func:`read_bytes`);
- tensor shards are read in ranges (:class:`RangeReader`): the first read fetches the
  header and what follows it up to :data:`READ_AHEAD` bytes; a tensor outside the blocks
  held is a new ranged GET, so a reader that needs one tensor of a large shard fetches
  that tensor, never the whole object.

An object that vanished or cannot be read raises :class:`~tensorsight.errors.InputFileError`
naming its URL (an ``OSError``; :class:`ObjectMissingError`, also a ``FileNotFoundError``,
when it is gone), as a local file would. Credentials and endpoints come from the scheme's
own configuration (``AWS_*`` variables, ``~/.aws``, ``AWS_ENDPOINT_URL``).
"""

from __future__ import annotations

import errno
import io
import mmap
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeAlias

from tensorsight.errors import InputFileError

__all__ = [
    "READ_AHEAD",
    "AnyPath",
    "ObjectMissingError",
    "RangeReader",
    "RemotePath",
    "exists",
    "is_dir",
    "is_remote",
    "list_dir",
    "locate",
    "make_dirs",
    "map_file",
    "open_append",
    "open_direct",
    "open_read",
    "open_write",
    "read_text",
    "remove",
    "remove_tree",
    "size",
    "snapshot",
    "staging_dir",
    "to_path",
    "tree_size",
    "upload_tree",
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


def is_remote(path: str | os.PathLike[str]) -> bool:
    """True for a URL that fsspec opens (``s3://...``); ``file://`` and plain paths are local.

    Example:
        >>> is_remote("s3://bucket/dumps"), is_remote("dumps/a"), is_remote("C:/dumps")
        (True, False, False)
    """
    head, sep, _ = os.fspath(path).partition("://")
    return bool(sep) and len(head) > 1 and head != "file"


def locate(path: str | os.PathLike[str] | RemotePath) -> AnyPath:
    """What the reader opens: a :class:`RemotePath` for a URL, else :func:`to_path`."""
    if isinstance(path, RemotePath):
        return path
    if is_remote(path):
        return RemotePath(os.fspath(path))
    text = os.fspath(path)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return to_path(text)


@dataclass
class _Listing:
    """One flat listing of a remote folder: file sizes and folders, by URL."""

    root: str
    sizes: dict[str, int] = field(default_factory=dict)
    children: dict[str, set[str]] = field(default_factory=dict)  # folder URL -> names

    def covers(self, url: str) -> bool:
        return url == self.root or url.startswith(self.root + "/")


class RemotePath:
    """A file or folder named by a URL, standing where the local reader holds a ``Path``.

    It joins (``/``), names (``name``, ``parent``, ``with_name``) and prints (``str``) like
    a path; every question about the storage goes through this module's functions. Paths
    made from a :func:`snapshot` share its listing.

    Example:
        >>> p = RemotePath("s3://bucket/dumps/fp32/") / "rank0" / "manifest.json"
        >>> str(p), p.name, str(p.parent)
        ('s3://bucket/dumps/fp32/rank0/manifest.json', 'manifest.json', 's3://bucket/dumps/fp32/rank0')
    """

    __slots__ = ("_listing", "url")

    def __init__(self, url: str, listing: _Listing | None = None) -> None:
        self.url = url.rstrip("/")
        self._listing = listing

    def __truediv__(self, part: str) -> RemotePath:
        return RemotePath(f"{self.url}/{part}", self._listing)

    @property
    def name(self) -> str:
        """The last part of the URL."""
        return self.url.rpartition("/")[2]

    @property
    def parent(self) -> RemotePath:
        """The folder holding this one (a bucket's root is its own parent)."""
        head, sep, _ = self.url.rpartition("/")
        if not sep or head.endswith(":/"):
            return self
        return RemotePath(head, self._listing)

    def with_name(self, name: str) -> RemotePath:
        """The same folder, another name."""
        return self.parent / name

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemotePath({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __reduce__(self) -> tuple[Any, tuple[str]]:  # the listing stays behind
        return (RemotePath, (self.url,))


AnyPath: TypeAlias = Path | RemotePath
"""A local path or a URL: what the readers take."""

_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure"}


def _remote(url: str) -> tuple[Any, str]:
    """The fsspec file system for ``url`` and the path it knows the object by."""
    scheme = url.partition("://")[0].rpartition("::")[2]
    try:
        import fsspec  # type: ignore[import-untyped]

        fs, path = fsspec.core.url_to_fs(url)
    except ValueError as exc:
        msg = f"Dump {url!r}: cannot open {scheme}:// URLs ({exc}). Check the URL."
        raise InputFileError(msg) from exc
    except ImportError as exc:
        which = _EXTRAS.get(scheme)
        how = (
            f"pip install 'tensorsight[{which}]'" if which else f"install {scheme}'s fsspec package"
        )
        msg = f"Dump {url!r}: cannot open {scheme}:// URLs ({exc}). {how}."
        raise InputFileError(msg) from exc
    return fs, str(path)


class ObjectMissingError(InputFileError, FileNotFoundError):
    """A remote object or folder is not there (deleted since it was listed?)."""


def _os_error(url: str, exc: Exception) -> InputFileError:
    """A backend's error as one sentence naming the URL (an ``OSError``, as a local file's)."""
    if isinstance(exc, FileNotFoundError) or getattr(exc, "errno", None) == errno.ENOENT:
        msg = (
            f"Object {url!r}: not found (deleted or replaced since the dump was listed?). "
            "Check that the dump is complete and open it again."
        )
        return ObjectMissingError(msg)
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    msg = (
        f"Object {url!r}: cannot read it ({what}). Check the URL, the credentials and the network."
    )
    return InputFileError(msg)


def snapshot(path: RemotePath) -> RemotePath:
    """``path`` backed by one flat recursive listing of everything below it.

    Paths joined from the result answer :func:`exists`, :func:`is_dir`, :func:`list_dir`
    and :func:`size` from the listing, as the storage was when it was taken.

    Raises:
        InputFileError: The listing failed (unreachable, no permission).
    """
    fs, base = _remote(path.url)
    try:
        fs.invalidate_cache(base)
        found = fs.find(base, detail=True)
    except Exception as exc:
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        msg = f"Dump {path.url!r}: cannot list it ({what}). Check the URL and the credentials."
        raise InputFileError(msg) from exc
    listing = _Listing(path.url)
    prefix = base.rstrip("/") + "/"
    for key, info in found.items():
        if info.get("type", "file") != "file" or not key.startswith(prefix):
            continue
        parts = key[len(prefix) :].split("/")
        folder = path.url
        for part in parts[:-1]:
            listing.children.setdefault(folder, set()).add(part)
            folder = f"{folder}/{part}"
        listing.children.setdefault(folder, set()).add(parts[-1])
        listing.sizes[f"{folder}/{parts[-1]}"] = int(info.get("size") or 0)
    return RemotePath(path.url, listing)


def tree_size(path: RemotePath) -> int:
    """Bytes of every object below ``path`` (from its snapshot's listing, else a new one)."""
    listing = _listed(path) or snapshot(path)._listing
    assert listing is not None
    prefix = path.url + "/"
    return sum(n for url, n in listing.sizes.items() if url.startswith(prefix))


def staging_dir(prefix: str) -> Path:
    """A new local folder where a remote writer buffers its files before uploading them
    (under ``$TENSORSIGHT_STAGING_DIR``, else the system's temporary folder)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("TENSORSIGHT_STAGING_DIR")))


def upload_tree(local: Path, url: RemotePath, *, replace: bool = False) -> int:
    """Upload every file below ``local`` to ``url``, each once as a whole object (large ones
    in multipart parts, as the scheme's package does), ``manifest.json`` files last so that a
    reader that finds a manifest finds everything it names; the number of objects.

    ``replace`` first deletes what is below ``url`` (an overwritten dump's older steps).

    Raises:
        InputFileError: An upload failed (the message names the object).
    """
    fs, base = _remote(url.url)
    if replace:
        try:
            if fs.exists(base):
                fs.rm(base, recursive=True)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise _os_error(url.url, exc) from exc
    files = sorted(
        (p for p in local.rglob("*") if p.is_file()),
        key=lambda p: (p.name == "manifest.json", p.as_posix()),
    )
    for p in files:
        rel = p.relative_to(local).as_posix()
        try:
            fs.put_file(str(p), f"{base.rstrip('/')}/{rel}")
        except Exception as exc:
            where = f"{url.url}/{rel}"
            raise _os_error(where, exc) from exc
    return len(files)


def _listed(path: RemotePath) -> _Listing | None:
    listing = path._listing
    return listing if listing is not None and listing.covers(path.url) else None


def exists(path: AnyPath) -> bool:
    """Whether ``path`` exists."""
    if isinstance(path, RemotePath):
        listing = _listed(path)
        if listing is not None:
            return path.url in listing.sizes or path.url in listing.children
        fs, p = _remote(path.url)
        try:
            return bool(fs.exists(p))
        except Exception as exc:
            raise _os_error(path.url, exc) from exc
    return path.exists()


def is_dir(path: AnyPath) -> bool:
    """Whether ``path`` is a folder (a URL: a prefix holding objects)."""
    if isinstance(path, RemotePath):
        listing = _listed(path)
        if listing is not None:
            return path.url in listing.children
        fs, p = _remote(path.url)
        try:
            return bool(fs.isdir(p))
        except Exception as exc:
            raise _os_error(path.url, exc) from exc
    return path.is_dir()


def list_dir(path: AnyPath) -> list[str]:
    """Sorted entry names of a folder."""
    if isinstance(path, RemotePath):
        listing = _listed(path)
        if listing is not None:
            return sorted(listing.children.get(path.url, ()))
        fs, p = _remote(path.url)
        try:
            return sorted(str(e).rstrip("/").rpartition("/")[2] for e in fs.ls(p, detail=False))
        except Exception as exc:
            raise _os_error(path.url, exc) from exc
    return sorted(os.listdir(path))


def size(path: AnyPath) -> int:
    """The size of a file in bytes."""
    if isinstance(path, RemotePath):
        listing = _listed(path)
        if listing is not None and path.url in listing.sizes:
            return listing.sizes[path.url]
        fs, p = _remote(path.url)
        try:
            return int(fs.info(p).get("size") or 0)
        except Exception as exc:
            raise _os_error(path.url, exc) from exc
    return path.stat().st_size


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


def read_text(path: AnyPath) -> str:
    """Read a whole UTF-8 file."""
    if isinstance(path, RemotePath):
        return read_bytes(path).decode("utf-8")
    return path.read_text(encoding="utf-8")


def read_bytes(path: AnyPath) -> bytes:
    """Read a whole file (a URL: one GET)."""
    if isinstance(path, RemotePath):
        return read_range(path, 0, None)
    return path.read_bytes()


def read_range(path: RemotePath, start: int, end: int | None) -> bytes:
    """Bytes ``start`` to ``end`` (``None``: the end) of an object, in one ranged GET."""
    fs, p = _remote(path.url)
    try:
        return bytes(fs.cat_file(p, start=start, end=end))
    except Exception as exc:
        raise _os_error(path.url, exc) from exc


# Bytes a ranged read of a shard fetches at least: a comparison reads a shard's tensors in
# about the order they were written, so one GET serves many small tensors. 32 MiB: a remote
# compare of 4 rank pairs (128 MB) took 3.7 s against 5.6 s with 8 MiB, local 1.5-1.8 s
# (`python -m benchmarks remote_dump`, load 20); a reader holds two blocks (64 MiB).
READ_AHEAD = 32 << 20


class RangeReader:
    """Ranged reads of one remote object, holding the last two blocks it fetched.

    ``read(begin, end)`` answers from a held block when one covers the range, else fetches
    ``begin`` to ``max(end, begin + READ_AHEAD)`` (clipped to the object) in one GET.
    Thread-safe: a comparison's threads read the same shard.
    """

    def __init__(self, path: RemotePath, read_ahead: int | None = None) -> None:
        self.path = path
        self.size = size(path)
        self._ahead = READ_AHEAD if read_ahead is None else read_ahead
        self._blocks: list[tuple[int, memoryview]] = []
        self._lock = threading.Lock()
        self.requests = 0

    def read(self, begin: int, end: int) -> memoryview:
        """Bytes ``begin`` to ``end`` (read-only, shared with the held block)."""
        with self._lock:
            for start, block in self._blocks:
                if start <= begin and end <= start + len(block):
                    return block[begin - start : end - start]
            stop = min(self.size, max(end, begin + self._ahead))
            data = memoryview(read_range(self.path, begin, stop))
            self.requests += 1
            if len(data) < end - begin:
                msg = (
                    f"Object {self.path.url!r}: {begin + len(data)} bytes, expected at least "
                    f"{end} (replaced since it was listed?). Open the dump again."
                )
                raise InputFileError(msg)
            self._blocks = [(begin, data), *self._blocks[:1]]
            return data[: end - begin]

    def close(self) -> None:
        """Drop the held blocks (arrays made from them keep their own)."""
        with self._lock:
            self._blocks = []


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


def open_read(path: AnyPath) -> IO[bytes]:
    """Open a binary file for reading (a URL: read whole, one GET)."""
    if isinstance(path, RemotePath):
        return io.BytesIO(read_bytes(path))
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
