"""``_fs.map_file``: read-only views of mapped files that unmap when the last user is gone."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tensorsight.dumpformat import _fs

LINUX = sys.platform.startswith("linux")


@pytest.fixture(params=["libc", "mmap module"])
def mapper(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of mapping: libc through ctypes (64-bit Linux) and the mmap module."""
    if request.param == "libc":
        if _fs._LIBC is None:
            pytest.skip("libc mapping is used on 64-bit Linux only")
    else:
        monkeypatch.setattr(_fs, "_LIBC", None)
    return str(request.param)


def _mapped(path: Path) -> bool:
    return str(path) in Path("/proc/self/maps").read_text()


def test_view_holds_the_file_bytes_read_only(tmp_path: Path, mapper: str) -> None:
    data = bytes(range(256)) * 64
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    view = _fs.map_file(path)
    assert isinstance(view, memoryview)
    assert view.readonly
    assert len(view) == len(data)
    assert bytes(view) == data
    assert view[:4] == data[:4]
    arr = np.frombuffer(view, dtype=np.uint8, count=16, offset=256)
    assert not arr.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        arr[0] = 1
    assert arr.tolist() == list(range(16))


@pytest.mark.skipif(not LINUX, reason="reads /proc/self/maps")
def test_unmapped_when_the_last_array_is_gone(tmp_path: Path, mapper: str) -> None:
    path = tmp_path / "mapped-once.bin"
    path.write_bytes(b"\x01" * 100_000)
    view = _fs.map_file(path)
    arr = np.frombuffer(view, dtype=np.uint8)
    del view
    assert _mapped(path)  # the array keeps it mapped
    assert int(arr.sum()) == 100_000
    del arr
    assert not _mapped(path)


def test_empty_file_gives_an_empty_view(tmp_path: Path, mapper: str) -> None:
    path = tmp_path / "empty.bin"
    path.write_bytes(b"")
    assert len(_fs.map_file(path)) == 0


def test_errors_name_the_file(tmp_path: Path, mapper: str) -> None:
    missing = tmp_path / "missing.bin"
    with pytest.raises(FileNotFoundError) as exc:
        _fs.map_file(missing)
    assert exc.value.filename == str(missing)
    with pytest.raises(IsADirectoryError) as exc:  # a folder opens, then cannot be mapped
        _fs.map_file(tmp_path)
    assert exc.value.filename == str(tmp_path)


def test_large_regions_unmap_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above RELEASE_GIL_ABOVE the unmapping lets other threads run (a second libc handle)."""
    if _fs._LIBC is None:
        pytest.skip("libc mapping is used on 64-bit Linux only")
    monkeypatch.setattr(_fs._Libc, "RELEASE_GIL_ABOVE", 1000)
    path = tmp_path / "big.bin"
    path.write_bytes(b"\x02" * 50_000)
    view = _fs.map_file(path)
    assert view[49_999] == 2
    del view
    assert not _mapped(path)


def test_a_path_with_a_nul_byte_is_refused(tmp_path: Path, mapper: str) -> None:
    """C strings end at NUL: ``a\\0b`` must not open ``a``."""
    (tmp_path / "a").write_bytes(b"x")
    with pytest.raises(ValueError, match="null byte"):
        _fs.map_file(tmp_path / "a\0b")
