"""Build and load the C version of the fused kernel (``_kernel.c``) on first use.

The shared library is compiled with the system C compiler (``$CC`` or ``cc``) into a cache
folder (``$TENSORSIGHT_CACHE_DIR`` or ``~/.cache/tensorsight``), keyed by the source, the
compiler flags and the machine, and loaded with :mod:`ctypes`. Without a compiler, or with
``TENSORSIGHT_KERNEL=numpy``, :func:`load` returns ``None`` and the numpy kernel runs.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["NativeKernel", "load"]

_FLAGS = ["-O3", "-march=native", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math"]
_SOURCE = Path(__file__).with_name("_kernel.c")
_LOCK = threading.Lock()
_STATE: dict[str, NativeKernel | None] = {}

_DOUBLE = ctypes.c_double
_ARGS: list[Any] = [
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_int64,
    *([_DOUBLE] * 7),
    ctypes.c_void_p,
]


class NativeKernel:
    """The loaded library: ``ts_pass_f32`` and ``ts_pass_f64`` (see ``_kernel.c``)."""

    def __init__(self, lib: ctypes.CDLL, path: Path) -> None:
        self.path = path
        self.f32 = lib.ts_pass_f32
        self.f64 = lib.ts_pass_f64
        for fn in (self.f32, self.f64):
            fn.argtypes = _ARGS
            fn.restype = None


def _cache_dir() -> Path:
    root = os.environ.get("TENSORSIGHT_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "tensorsight"


def _build(compiler: str) -> Path | None:
    source = _SOURCE.read_bytes()
    key = hashlib.sha256(
        source + " ".join(_FLAGS).encode() + platform.machine().encode() + _cpu().encode()
    ).hexdigest()[:16]
    target = _cache_dir() / f"kernel-{key}.so"
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
        cmd = [compiler, *_FLAGS, "-shared", "-fPIC", "-o", tmp, str(_SOURCE)]
        proc = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
        if proc.returncode != 0:
            os.unlink(tmp)
            return None
        os.replace(tmp, target)  # atomic: concurrent builders each write a whole file
    except (OSError, subprocess.SubprocessError):
        return None
    return target


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith(("model name", "flags")):
                return line
    except OSError:
        pass
    return platform.processor()


def load() -> NativeKernel | None:
    """The compiled kernel, or ``None`` when it cannot be built (numpy is used instead)."""
    with _LOCK:
        if "kernel" in _STATE:
            return _STATE["kernel"]
        kernel: NativeKernel | None = None
        if os.environ.get("TENSORSIGHT_KERNEL", "").lower() != "numpy":
            compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
            path = _build(compiler) if compiler else None
            if path is not None:
                try:
                    kernel = NativeKernel(ctypes.CDLL(str(path)), path)
                except OSError:
                    kernel = None
        _STATE["kernel"] = kernel
        return kernel
