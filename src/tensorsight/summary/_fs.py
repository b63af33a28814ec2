"""The one place that touches the file system for reading logs.

Readers never call ``open``/``os.scandir``/``os.stat`` themselves; they go through the four
functions here. Adding fsspec URLs (``s3://``, ``gs://``) later means teaching these
functions about them; no reader changes. Object stores do not append, so :func:`read_range`
is a fresh ranged read every time (readers poll by size, not by keeping a handle open).

Errors are :class:`~tensorsight.errors.InputFileError` with one sentence naming the path.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from collections.abc import Iterator
from dataclasses import dataclass

from tensorsight.errors import InputFileError

__all__ = ["FileInfo", "exists", "is_dir", "join", "read_range", "relpath", "stat", "walk"]


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


def join(base: str, *parts: str) -> str:
    """Join path parts (``os.path.join`` for local paths)."""
    return os.path.join(base, *parts)


def relpath(path: str, start: str) -> str:
    """``path`` relative to ``start`` with ``/`` separators; ``"."`` for ``start`` itself."""
    rel = os.path.relpath(path, start)
    return rel.replace(os.sep, "/")


def exists(path: str) -> bool:
    """True when ``path`` names an existing file or folder."""
    return os.path.exists(path)


def is_dir(path: str) -> bool:
    """True when ``path`` is an existing folder."""
    return os.path.isdir(path)


def stat(path: str) -> FileInfo:
    """Size and modification time of one file.

    Raises:
        InputFileError: The file is missing or cannot be inspected.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _error(path, exc, "stat it") from exc
    return FileInfo(path, st.st_size, st.st_mtime)


def read_range(path: str, offset: int, size: int) -> bytes:
    """Read up to ``size`` bytes of ``path`` starting at ``offset`` (fewer at the end).

    Raises:
        InputFileError: The file cannot be opened or read (permissions, deleted, a folder).
    """
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

    Raises:
        InputFileError: ``root`` does not exist, is not a folder, or cannot be listed.
    """
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
