from __future__ import annotations

import contextlib
import logging
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tensorsight import _cbuild
from tensorsight._notices import NOTICE_LOGGER


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


@contextlib.contextmanager
def notices() -> Iterator[list[str]]:
    """The lines logged on the notice logger in the block (a handler of its own: the command
    line's handler makes the logger not propagate, so caplog does not see them)."""
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    notice = logging.getLogger(NOTICE_LOGGER)
    keep, level = Keep(), notice.level
    notice.addHandler(keep)
    notice.setLevel(logging.INFO)
    try:
        yield said
    finally:
        notice.removeHandler(keep)
        notice.setLevel(level)


def test_builds_several_sources_with_a_notice_only_when_building(tmp_path, monkeypatch):
    import ctypes

    monkeypatch.setenv("TENSORSIGHT_CACHE_DIR", str(tmp_path / "cache"))
    a, b = tmp_path / "a.c", tmp_path / "b.c"
    a.write_text(
        "#include <math.h>\nint twice(int x);\ndouble f(int x) { return sqrt(twice(x)); }\n"
    )
    b.write_text("int twice(int x) { return 2 * x; }\n")

    def build(extra: str) -> object:
        return _cbuild.build_library(
            [a, b], ["-O2"], name="two", link=["-lm"], key_extra=extra, notice="building two"
        )

    with notices() as said:
        path = build("v1")
    assert path is not None
    lib = ctypes.CDLL(str(path))
    lib.f.restype = ctypes.c_double
    assert lib.f(8) == 4.0
    assert said == ["building two"]
    with notices() as said:
        assert build("v1") == path  # cached: no notice
    assert said == []
    with notices() as said:
        assert build("v2") != path  # another key (e.g. another torch): another library
    assert said == ["building two"]


def test_no_compiler_means_python_fallback(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TENSORSIGHT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(shutil, "which", lambda _name: None)
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


def test_a_cached_library_loads_without_the_build_modules(tmp_path):
    """subprocess and tempfile are imported only to build (they cost the compare command
    about 6 ms of start-up)."""
    src = tmp_path / "z.c"
    src.write_text("int z(void) { return 7; }\n")
    code = (
        "import sys, pathlib; from tensorsight import _cbuild; "
        f"lib = _cbuild.load_c_library(pathlib.Path({str(src)!r}), [], name='z'); "
        "print(lib.z(), 'subprocess' in sys.modules, 'tempfile' in sys.modules)"
    )
    env = {"TENSORSIGHT_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert first.stdout.split()[0] == "7", first.stderr
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert again.stdout.split() == ["7", "False", "False"], again.stderr


def test_a_compiler_that_cannot_run_leaves_no_file(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TENSORSIGHT_CACHE_DIR", str(tmp_path / "cache"))
    fake = tmp_path / "cc"
    fake.write_text("not a program")  # found on PATH but not executable: OSError
    fake.chmod(0o644)
    monkeypatch.setattr(shutil, "which", lambda name: str(fake))
    src = tmp_path / "w.c"
    src.write_text("int w(void) { return 1; }\n")
    with caplog.at_level(logging.INFO, logger="tensorsight._cbuild"):
        assert _cbuild.load_c_library(src, [], name="w") is None
    assert "compiling w failed" in caplog.text
    assert list((tmp_path / "cache").iterdir()) == []


def test_kernel_path_follows_the_environment_and_the_cpu(monkeypatch, caplog):
    monkeypatch.setattr(_cbuild, "_SAID", set())
    everything = frozenset({"avx2", "fma", "avx512f", "avx512dq"})
    avx2_only = frozenset({"avx2", "fma"})
    cases = [
        ("", everything, "avx512"),
        ("auto", avx2_only, "avx2"),
        ("AVX2", everything, "avx2"),
        ("portable", everything, "portable"),
        ("numpy", everything, None),
        ("auto", frozenset(), "portable"),  # aarch64, or an x86-64 CPU without AVX2
    ]
    for value, features, want in cases:
        monkeypatch.setenv("TENSORSIGHT_KERNEL", value)
        assert _cbuild.kernel_path(features) == want, (value, features)
    assert caplog.records == []
    monkeypatch.setenv("TENSORSIGHT_KERNEL", "avx512")
    for _ in range(2):  # said once per process, however many kernels ask
        assert _cbuild.kernel_path(avx2_only) == "avx2"
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "tensorsight._cbuild",
            "WARNING",
            "tensorsight: TENSORSIGHT_KERNEL=avx512 needs avx512f, avx512dq, which this CPU "
            "lacks; using avx2",
        )
    ]
    assert _cbuild.missing_features("avx2", frozenset({"avx2"})) == ("fma",)
    assert _cbuild.missing_features("portable", frozenset()) == ()


def test_numeric_kernels_are_built_for_the_baseline_not_this_cpu():
    """The loop is chosen at run time (cpuid), so a cached library runs on any CPU of the
    architecture: no -march/-mcpu flag may tie it to the machine that built it."""
    from tensorsight.capture import _native_capture
    from tensorsight.compare.metrics import _native
    from tensorsight.dumpformat import _stats_native

    for flags in (_native._FLAGS, _stats_native._FLAGS, _native_capture._FLAGS):
        assert not [f for f in flags if f.startswith(("-march", "-mcpu", "-mtune", "-mavx"))]


def test_only_the_avx_loops_hold_avx_instructions():
    """What runs before the CPU is asked (the dispatch, the portable loops, the chunk
    walkers) is baseline x86-64 code, so the library loads and runs on any x86-64 CPU."""
    import platform
    import re

    from tensorsight.compare.metrics import _native
    from tensorsight.dumpformat import _stats_native

    objdump = shutil.which("objdump")
    if platform.machine() not in ("x86_64", "AMD64") or objdump is None:
        pytest.skip("needs objdump on x86-64")
    for lib in (_native._library(), _stats_native._library()):
        if lib is None:
            pytest.skip("no C compiler here")
        text = subprocess.run(
            [objdump, "-d", "--no-show-raw-insn", lib._name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        uses: dict[str, bool] = {}
        fn = ""
        for line in text.splitlines():
            # clones keep their origin's name: ts_avx2_mom_f64.constprop.0
            head = re.match(r"^[0-9a-f]+ <([\w.]+)>:", line)
            if head:
                fn = head.group(1)
                uses.setdefault(fn, False)
            elif fn and re.search(r"%[yz]mm|\bv(fmadd|div|add|mul)|\bk(mov|or)", line):
                uses[fn] = True
        ours = {f: u for f, u in uses.items() if f.startswith("ts_")}
        assert any(ours.values())  # the AVX loops are there...
        baseline = [f for f, u in ours.items() if u and "avx" not in f]
        assert baseline == []  # ...and only there
        assert "ts_cpu_features" in ours


def test_a_program_without_logging_config_sees_the_warning_as_the_bare_line(tmp_path):
    """The library logs, never prints; unconfigured logging still shows a user the line."""
    code = "from tensorsight import _cbuild; print(_cbuild.kernel_path(frozenset()))"
    env = {"TENSORSIGHT_KERNEL": "avx2", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.stdout == "portable\n"
    assert done.stderr == (
        "tensorsight: TENSORSIGHT_KERNEL=avx2 needs avx2, fma, which this CPU lacks; "
        "using portable\n"
    )
