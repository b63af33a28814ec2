from __future__ import annotations

import logging

from tensorsight import _cbuild


def test_builds_once_and_loads_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORSIGHT_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "add.c"
    src.write_text("int ts_add(int a, int b) { return a + b; }\n")
    lib = _cbuild.load_c_library(src, ["-O2"], name="add")
    assert lib is not None
    assert lib.ts_add(2, 3) == 5
    built = list((tmp_path / "cache").glob("add-*.so"))
    assert len(built) == 1
    mtime = built[0].stat().st_mtime_ns
    assert _cbuild.load_c_library(src, ["-O2"], name="add") is not None
    assert built[0].stat().st_mtime_ns == mtime  # reused, not rebuilt


def test_no_compiler_means_python_fallback(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TENSORSIGHT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_cbuild.shutil, "which", lambda _name: None)
    src = tmp_path / "x.c"
    src.write_text("int x(void) { return 1; }\n")
    with caplog.at_level(logging.INFO, logger="tensorsight._cbuild"):
        assert _cbuild.load_c_library(src, [], name="x") is None
    assert "no C compiler" in caplog.text


def test_compile_error_means_python_fallback_and_leaves_no_file(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TENSORSIGHT_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "broken.c"
    src.write_text("int broken( { \n")
    with caplog.at_level(logging.INFO, logger="tensorsight._cbuild"):
        assert _cbuild.load_c_library(src, [], name="broken") is None
    assert "compiling broken failed" in caplog.text
    assert list((tmp_path / "cache").iterdir()) == []


def test_unwritable_cache_means_python_fallback(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TENSORSIGHT_CACHE_DIR", str(blocker / "cache"))
    src = tmp_path / "y.c"
    src.write_text("int y(void) { return 1; }\n")
    assert _cbuild.load_c_library(src, [], name="y") is None


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("TENSORSIGHT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _cbuild.cache_dir() == tmp_path / "tensorsight"
