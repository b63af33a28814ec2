"""Build and load the C version of the fused kernel (``_kernel.c``) on first use.

The shared library is compiled and cached by :mod:`tensorsight._cbuild`. Without a compiler, or with
``TENSORSIGHT_KERNEL=numpy``, :func:`load` returns ``None`` and the numpy kernel runs.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

from tensorsight._cbuild import load_c_library

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


def load() -> NativeKernel | None:
    """The compiled kernel, or ``None`` when it cannot be built (numpy is used instead)."""
    with _LOCK:
        if "kernel" in _STATE:
            return _STATE["kernel"]
        kernel: NativeKernel | None = None
        if os.environ.get("TENSORSIGHT_KERNEL", "").lower() != "numpy":
            lib = load_c_library(_SOURCE, _FLAGS, name="kernel")
            if lib is not None:
                kernel = NativeKernel(lib, Path(lib._name))
        _STATE["kernel"] = kernel
        return kernel
