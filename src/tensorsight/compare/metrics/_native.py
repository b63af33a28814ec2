"""Build and load the C version of the fused kernel (``_kernel.c``) on first use.

The shared library is compiled and cached by :mod:`tensorsight._cbuild`. Without a compiler, or with
``TENSORSIGHT_KERNEL=numpy``, :func:`load` returns ``None`` and the numpy kernel runs.
``_kernel.c`` holds two loops, an explicit AVX-512 one (used where ``-march=native`` offers
AVX-512 F and DQ) and a portable one the compiler vectorises; :func:`build` with
``portable=True`` builds the second anywhere, so the tests can check both.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

from tensorsight._cbuild import load_c_library

__all__ = ["NativeKernel", "build", "load"]

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


_CHUNK_ARGS: list[Any] = [
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_int64,
    ctypes.c_int64,
    *([_DOUBLE] * 5),
    ctypes.c_void_p,
]


class NativeKernel:
    """The loaded library: ``ts_pass_*`` (one chunk) and ``ts_chunks_*`` (see ``_kernel.c``).

    Attributes:
        path: The shared library.
        isa: ``"avx512"`` or ``"portable"``: which loop the library runs.
    """

    def __init__(self, lib: ctypes.CDLL, path: Path) -> None:
        self.path = path
        self.f32 = lib.ts_pass_f32
        self.f64 = lib.ts_pass_f64
        for fn in (self.f32, self.f64):
            fn.argtypes = _ARGS
            fn.restype = None
        self.chunks_f32 = lib.ts_chunks_f32
        self.chunks_f64 = lib.ts_chunks_f64
        for fn in (self.chunks_f32, self.chunks_f64):
            fn.argtypes = _CHUNK_ARGS
            fn.restype = None
        self.log_ratio = lib.ts_log_ratio
        self.log_ratio.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_int64,
            ctypes.c_void_p,
        ]
        self.log_ratio.restype = None
        isa = lib.ts_kernel_isa
        isa.argtypes = []
        isa.restype = ctypes.c_int
        self.isa = "avx512" if isa() == 1 else "portable"


def build(*, portable: bool = False) -> NativeKernel | None:
    """Compile (or take from the cache) and load the kernel; ``None`` without a compiler."""
    flags = [*_FLAGS, "-DTS_PORTABLE"] if portable else _FLAGS
    lib = load_c_library(_SOURCE, flags, name="kernel")
    return None if lib is None else NativeKernel(lib, Path(lib._name))


def load() -> NativeKernel | None:
    """The compiled kernel, or ``None`` when it cannot be built (numpy is used instead)."""
    with _LOCK:
        if "kernel" in _STATE:
            return _STATE["kernel"]
        kernel: NativeKernel | None = None
        if os.environ.get("TENSORSIGHT_KERNEL", "").lower() != "numpy":
            kernel = build()
        _STATE["kernel"] = kernel
        return kernel
