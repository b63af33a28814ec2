"""Compile a bundled C source into a shared library on first use, and cache it.

Two hot loops ship as plain C (the event-record scanner and the metric kernel). They are
built with the system compiler (``$CC``, else ``cc``, else ``gcc``) into a cache folder
(``$TENSORSIGHT_CACHE_DIR``, else ``$XDG_CACHE_HOME/tensorsight``, else
``~/.cache/tensorsight``), keyed by the source, the flags and the machine, and loaded with
:mod:`ctypes`: no Python headers and no build step at install time. Every caller keeps a
pure-Python or numpy fallback for when this returns ``None``.

The two numeric kernels (metrics, dump statistics) are built for the architecture's baseline
and hold one loop per instruction set, each compiled with a target attribute; which one runs
is chosen at run time from the CPU's features (:func:`kernel_path`), so a library built on
one machine runs on any other of the architecture.

Nothing here prints. A setting that is ignored (an unknown or unrunnable
``$TENSORSIGHT_KERNEL``) is a WARNING of this module's logger, once per process: with
logging not configured Python writes the bare line to stderr. The line before a build that
takes seconds is a notice (:mod:`tensorsight._notices`), which the command line shows on
stderr. Why a library falls back to Python is INFO of this module's logger.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import zlib
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "KERNEL_PATHS",
    "build_library",
    "cache_dir",
    "cpu_features",
    "kernel_path",
    "load_c_library",
    "missing_features",
    "numpy_forced",
]

_log = logging.getLogger(__name__)

KERNEL_PATHS = ("avx512", "avx2", "portable")
"""The loops of the C kernels, fastest first (``portable``: the baseline, any CPU)."""

# the AVX-512 loops are compiled with AVX2 and FMA too (every AVX-512 CPU has them)
_NEEDS = {
    "avx512": ("avx512f", "avx512dq", "avx2", "fma"),
    "avx2": ("avx2", "fma"),
    "portable": (),
}
_FEATURE_BITS = ("avx2", "fma", "avx512f", "avx512dq")  # bit i of ts_cpu_features()
_CHOICES = ("auto", *KERNEL_PATHS, "numpy")
_SAID: set[str] = set()


def cache_dir() -> Path:
    """Where compiled libraries are cached."""
    env = os.environ.get("TENSORSIGHT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tensorsight"


def _cpu() -> str:
    """A line that changes when the CPU model or its features change (for -march=native)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith(("model name", "flags")):
                return line
    except OSError:
        pass
    return platform.processor()


def cpu_features(lib: ctypes.CDLL) -> frozenset[str]:
    """The vector features a kernel library's ``ts_cpu_features()`` finds (cpuid).

    ``avx2``, ``fma``, ``avx512f``, ``avx512dq`` where both the CPU and the operating system
    support them; empty off x86-64.
    """
    fn = lib.ts_cpu_features
    fn.argtypes = []
    fn.restype = ctypes.c_int
    bits = int(fn())
    return frozenset(f for i, f in enumerate(_FEATURE_BITS) if bits >> i & 1)


def missing_features(path: str, features: frozenset[str]) -> tuple[str, ...]:
    """The features that loop ``path`` needs and ``features`` lacks (empty: it can run)."""
    return tuple(f for f in _NEEDS[path] if f not in features)


def numpy_forced() -> bool:
    """``TENSORSIGHT_KERNEL=numpy``: no C kernel is built or loaded."""
    return os.environ.get("TENSORSIGHT_KERNEL", "").strip().lower() == "numpy"


def kernel_path(features: frozenset[str]) -> str | None:
    """The loop to run given the CPU's ``features``; ``None`` for the numpy fallback.

    ``$TENSORSIGHT_KERNEL`` is ``auto`` (default: the fastest loop the CPU runs),
    ``avx512``, ``avx2``, ``portable`` or ``numpy``. A loop the CPU cannot run, or an
    unknown value, gives the fastest one it can, said once per process (a logged warning).
    """
    if numpy_forced():
        return None
    asked = os.environ.get("TENSORSIGHT_KERNEL", "").strip().lower() or "auto"
    best = next(p for p in KERNEL_PATHS if not missing_features(p, features))
    if asked == "auto":
        return best
    if asked not in KERNEL_PATHS:
        _say_once(
            f"tensorsight: TENSORSIGHT_KERNEL={asked} is not one of {', '.join(_CHOICES)}; "
            f"using {best}"
        )
        return best
    missing = missing_features(asked, features)
    if missing:
        _say_once(
            f"tensorsight: TENSORSIGHT_KERNEL={asked} needs {', '.join(missing)}, which "
            f"this CPU lacks; using {best}"
        )
        return best
    return asked


def _say_once(line: str) -> None:
    if line not in _SAID:
        _SAID.add(line)
        _log.warning("%s", line)


def load_c_library(source: Path, flags: Sequence[str], *, name: str) -> ctypes.CDLL | None:
    """Build ``source`` with ``flags`` (once per source/flags/machine) and load it.

    Args:
        source: The C file.
        flags: Compiler flags, e.g. ``["-O2"]``.
        name: Short name for the cached file and log messages.

    Returns:
        The loaded library, or ``None`` when there is no compiler, compiling fails, or the
        result cannot be loaded (the reason is logged at INFO level).
    """
    try:
        target = build_library([source], flags, name=name)
        return None if target is None else ctypes.CDLL(str(target))
    except OSError as exc:
        _log.info("%s unavailable (%s); falling back to Python", name, exc)
        return None


def build_library(
    sources: Sequence[Path],
    flags: Sequence[str],
    *,
    name: str,
    link: Sequence[str] = (),
    compilers: Sequence[str] = ("CC", "cc", "gcc"),
    key_extra: str = "",
    notice: str = "",
) -> Path | None:
    """The cached shared library built from ``sources`` (built now if missing).

    Args:
        sources: Source files, compiled and linked in one command (``-x c`` / ``-x c++``
            in ``flags`` choose the language per file, as with gcc).
        flags: Flags placed before the sources.
        name: Short name for the cached file and log messages.
        link: Flags placed after the sources (``-L``, ``-l``).
        compilers: Where to find the compiler: the first entry is an environment variable
            naming it, the others are program names tried in order.
        key_extra: More text that must change the cache key (e.g. a library's version).
        notice: A line said (:func:`tensorsight._notices.notice`) before a build starts,
            for builds that take seconds.

    Returns:
        The library's path, or ``None`` (logged) when no compiler runs or compiling fails.

    Raises:
        OSError: A source cannot be read.
    """
    blob = b"".join(Path(s).read_bytes() for s in sources)
    blob += " ".join([*flags, "|", *link, key_extra]).encode()
    blob += platform.machine().encode() + _cpu().encode()
    # a cache key, not a signature: two 32-bit checksums (hashlib's OpenSSL start-up was
    # 3 ms of every compare command)
    key = f"{zlib.crc32(blob):08x}{zlib.adler32(blob):08x}"
    target = cache_dir() / f"{name}-{key}.so"
    if target.is_file() or _build(sources, flags, link, target, name, compilers, notice):
        return target
    return None


def _build(
    sources: Sequence[Path],
    flags: Sequence[str],
    link: Sequence[str],
    target: Path,
    name: str,
    compilers: Sequence[str],
    notice: str = "",
) -> bool:
    """Compile ``sources`` into ``target``; ``False`` (logged) when that is not possible.

    Its modules load only here: a cached library is the common case, and subprocess and
    tempfile were a sixth of the compare command's imports.
    """
    import shutil
    import subprocess
    import tempfile

    env_name, *programs = compilers
    compiler = next(
        (
            found
            for c in (os.environ.get(env_name, ""), *programs)
            if c and (found := shutil.which(c))
        ),
        None,
    )
    if compiler is None:
        _log.info("no C compiler found; %s falls back to Python", name)
        return False
    if notice:
        from tensorsight._notices import notice as say

        say(notice)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    cmd = [compiler, *flags, "-shared", "-fPIC", "-o", tmp, *map(str, sources), *link]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError) as exc:  # not runnable, or timed out
        os.unlink(tmp)
        _log.info("compiling %s failed: %s", name, exc)
        return False
    if proc.returncode != 0:
        os.unlink(tmp)
        _log.info("compiling %s failed: %s", name, proc.stderr[-500:])
        return False
    os.replace(tmp, target)  # atomic: concurrent builders each write a whole file
    return True
