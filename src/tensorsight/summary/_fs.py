"""The one place that touches the file system for reading logs.

Readers never call ``open``/``os.scandir``/``os.stat`` themselves; they go through the four
functions here. Adding fsspec URLs (``s3://``, ``gs://``) later means teaching these
functions about them; no reader changes. Object stores do not append, so :func:`read_range`
is a fresh ranged read every time (readers poll by size, not by keeping a handle open).

Errors are :class:`~tensorsight.errors.InputFileError` with one sentence naming the path.

Remote logdirs: a path with a scheme (``s3://bucket/logs``, ``gs://``, ``az://``,
``hdfs://``, chained ``simplecache::s3://...``) goes through fsspec and the scheme's package
(``pip install 'tensorsight[s3]'``, ``[gcs]``, ``[azure]``). Per poll that costs one flat
recursive listing of the logdir (:func:`walk`; the listing also answers :func:`stat`, so a
poll of N unchanged files is one LIST request, not N HEADs) and one ranged GET per file that
grew. Credentials and endpoints come from the scheme's own configuration (``AWS_*``
variables, ``~/.aws``, or fsspec's ``FSSPEC_S3_ENDPOINT_URL``-style variables).
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat as stat_mod
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tensorsight.errors import InputFileError

__all__ = [
    "FileInfo",
    "exists",
    "is_dir",
    "is_remote",
    "join",
    "read_range",
    "relpath",
    "stat",
    "walk",
]


@dataclass(frozen=True)
class FileInfo:
    """What a reader needs to know about one file: its size and modification time."""

    path: str
    size: int
    mtime: float


def _error(path: str, exc: OSError, action: str) -> InputFileError:
    if exc.errno in (errno.EACCES, errno.EPERM):
        how = "Check the file's permissions (chmod +r) or run as a user who may read it."
    elif exc.errno == errno.ENOENT:
        how = "Check the path; the file may have been deleted while reading."
    else:
        how = "Check that the path is a readable local file."
    msg = f"Log file {path!r}: cannot {action} ({exc.strerror or exc}). {how}"
    return InputFileError(msg)


def is_remote(path: str) -> bool:
    """True for a URL that fsspec opens (``s3://...``); ``file://`` and plain paths are local.

    Example:
        >>> is_remote("s3://bucket/logs"), is_remote("runs/a"), is_remote("C:/runs")
        (True, False, False)
    """
    head, sep, _ = path.partition("://")
    return bool(sep) and len(head) > 1 and head != "file"


# the sizes and times of each remote file as the last listing of its logdir gave them
_LISTED: dict[str, FileInfo] = {}
_FS_LOCK = threading.Lock()


def _remote(url: str) -> tuple[Any, str]:
    """The fsspec file system for ``url`` and the path it knows the object by."""
    scheme = url.partition("://")[0].rpartition("::")[2]
    extra = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure"}
    try:
        import fsspec  # type: ignore[import-untyped]

        fs, path = fsspec.core.url_to_fs(url)
    except ValueError as exc:
        if "rotocol not known" not in str(exc):  # a known scheme whose package refuses it
            msg = f"Logdir {url!r}: cannot open it ({exc}). Check the URL and its configuration."
            raise InputFileError(msg) from exc
        msg = f"Logdir {url!r}: cannot open {scheme}:// URLs ({exc}). Check the scheme."
        raise InputFileError(msg) from exc
    except ImportError as exc:
        which = extra.get(scheme)
        how = (
            f"pip install 'tensorsight[{which}]'" if which else f"install {scheme}'s fsspec package"
        )
        msg = f"Logdir {url!r}: cannot open {scheme}:// URLs ({exc}). {how}."
        raise InputFileError(msg) from exc
    return fs, path


def _remote_error(url: str, exc: Exception, action: str) -> InputFileError:
    what = type(exc).__name__ if not str(exc) else f"{type(exc).__name__}: {exc}"
    how = "Check the URL, the credentials and that the object still exists."
    return InputFileError(f"Log file {url!r}: cannot {action} ({what}). {how}")


def join(base: str, *parts: str) -> str:
    """Join path parts (``os.path.join`` for local paths, ``/`` for URLs)."""
    if is_remote(base):
        return posixpath.join(base, *parts)
    return os.path.join(base, *parts)


def relpath(path: str, start: str) -> str:
    """``path`` relative to ``start`` with ``/`` separators; ``"."`` for ``start`` itself."""
    if is_remote(start):
        rel = path[len(start.rstrip("/")) :].strip("/")
        return rel or "."
    if path == start:
        return "."
    # the folders walk() yields begin with ``start`` as given: strip it instead of
    # os.path.relpath's two abspath calls (a third of listing a 1,000-run logdir)
    prefix = start if start.endswith(os.sep) else start + os.sep
    if path.startswith(prefix):
        parts = path[len(prefix) :].split(os.sep)
        if all(p not in ("", ".", "..") for p in parts):
            return "/".join(parts)
    rel = os.path.relpath(path, start)
    return rel.replace(os.sep, "/")


def exists(path: str) -> bool:
    """True when ``path`` names an existing file or folder."""
    if is_remote(path):
        fs, p = _remote(path)
        try:
            return bool(fs.exists(p))
        except Exception as exc:  # any backend error: unreachable is "cannot open" below
            raise _remote_error(path, exc, "reach it") from exc
    return os.path.exists(path)


def is_dir(path: str) -> bool:
    """True when ``path`` is an existing folder (a URL: a prefix holding objects)."""
    if is_remote(path):
        fs, p = _remote(path)
        try:
            return bool(fs.isdir(p))
        except Exception as exc:
            raise _remote_error(path, exc, "reach it") from exc
    return os.path.isdir(path)


def stat(path: str) -> FileInfo:
    """Size and modification time of one file.

    Raises:
        InputFileError: The file is missing or cannot be inspected.
    """
    if is_remote(path):
        listed = _LISTED.get(path)
        if listed is not None:  # the poll's listing already said
            return listed
        fs, p = _remote(path)
        try:
            return _info(path, fs.info(p))
        except Exception as exc:
            raise _remote_error(path, exc, "stat it") from exc
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _error(path, exc, "stat it") from exc
    return FileInfo(path, st.st_size, st.st_mtime)


def _info(url: str, info: dict[str, Any]) -> FileInfo:
    """A listing entry as :class:`FileInfo` (object stores name the time differently).

    Example:
        >>> _info("gs://b/f", {"size": 3, "updated": "2026-01-02T00:00:00Z"}).mtime
        1767312000.0
    """
    when = next(  # S3, local/SFTP/HDFS, Azure, GCS
        (info[k] for k in ("LastModified", "mtime", "last_modified", "updated") if k in info),
        0.0,
    )
    if isinstance(when, str):  # GCS: an ISO 8601 time
        try:
            when = datetime.fromisoformat(when.replace("Z", "+00:00"))
        except ValueError:
            when = 0.0
    if isinstance(when, datetime):
        when = when.timestamp()
    try:
        mtime = float(when)
    except (TypeError, ValueError):
        mtime = 0.0
    return FileInfo(url, int(info.get("size") or 0), mtime)


def read_range(path: str, offset: int, size: int) -> bytes:
    """Read up to ``size`` bytes of ``path`` starting at ``offset`` (fewer at the end).

    Raises:
        InputFileError: The file cannot be opened or read (permissions, deleted, a folder).
    """
    if is_remote(path):
        if size <= 0:
            return b""
        fs, p = _remote(path)
        try:  # a fresh ranged read: a replaced object is read as it is now
            return bytes(fs.cat_file(p, start=offset, end=offset + size))
        except Exception as exc:
            raise _remote_error(path, exc, "read it") from exc
    try:
        with open(path, "rb", buffering=0) as f:
            if offset:
                f.seek(offset)
            return f.read(size)
    except OSError as exc:
        raise _error(path, exc, "read it") from exc


def walk(root: str, unlisted: list[str] | None = None) -> Iterator[tuple[str, list[str]]]:
    """Yield ``(folder, file names)`` for ``root`` and every folder below it, sorted.

    Symbolic links to folders are followed once: a link that leads back to a folder already
    visited (a loop) is skipped. A folder below ``root`` that cannot be listed (permissions,
    deleted meanwhile) is skipped, and one sentence naming it and the reason is appended to
    ``unlisted`` when given (``Folder '<path>': cannot list it (Permission denied); skipped,
    ...``).

    A URL is listed in one flat recursive request (fsspec's ``find``), its cache dropped
    first so that each poll sees new and replaced objects.

    Raises:
        InputFileError: ``root`` does not exist, is not a folder, or cannot be listed.
    """
    if is_remote(root):
        yield from _walk_remote(root)
        return
    try:
        st = os.stat(root)
    except OSError as exc:
        raise _error(root, exc, "open it") from exc
    if not stat_mod.S_ISDIR(st.st_mode):
        msg = (
            f"Logdir {root!r}: not a folder. Expected a folder holding event files, "
            "got a file. Pass the folder that contains it."
        )
        raise InputFileError(msg)
    seen: set[tuple[int, int]] = set()
    stack = [root]
    first = True
    while stack:
        folder = stack.pop()
        try:
            fst = os.stat(folder)
            key = (fst.st_dev, fst.st_ino)
            if key in seen:
                continue
            seen.add(key)
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            if first:
                raise _error(folder, exc, "list it") from exc
            if unlisted is not None:
                unlisted.append(
                    f"Folder {folder!r}: cannot list it ({exc.strerror or exc}); skipped, the "
                    "rest of the logdir was read. Check its permissions (chmod +rx)."
                )
            continue
        first = False
        files: list[str] = []
        subdirs: list[str] = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=True):
                    subdirs.append(entry.path)
                elif entry.is_file(follow_symlinks=True):
                    files.append(entry.name)
            except OSError:
                continue
        yield folder, files
        stack.extend(reversed(subdirs))


def _walk_remote(root: str) -> Iterator[tuple[str, list[str]]]:
    fs, base = _remote(root)
    try:
        fs.invalidate_cache(base)
        found = fs.find(base, detail=True)
    except Exception as exc:
        raise _remote_error(root, exc, "list it") from exc
    try:
        empty = not found and not fs.isdir(base)
    except Exception as exc:
        raise _remote_error(root, exc, "list it") from exc
    if empty:
        msg = f"Logdir {root!r}: not found. Expected a prefix holding event files. Check the URL."
        raise InputFileError(msg)
    prefix = base.rstrip("/")
    folders: dict[str, list[str]] = {}
    listed: dict[str, FileInfo] = {}
    for path, info in found.items():
        if info.get("type", "file") != "file" or not path.startswith(prefix + "/"):
            continue
        rel = path[len(prefix) + 1 :]
        folder, _, name = rel.rpartition("/")
        url = join(root.rstrip("/"), rel)
        folders.setdefault(folder, []).append(name)
        listed[url] = _info(url, info)
    with _FS_LOCK:  # this poll's sizes answer stat() until the next listing
        for url in [u for u in _LISTED if u.startswith(root.rstrip("/") + "/")]:
            del _LISTED[url]
        _LISTED.update(listed)
    for folder in sorted(folders):
        yield (
            (join(root.rstrip("/"), folder) if folder else root.rstrip("/")),
            sorted(folders[folder]),
        )
