"""Build and load the C version of the fused kernel (``_kernel.c``) on first use.

The shared library is compiled for the architecture's baseline and cached by
:mod:`tensorsight._cbuild`. It holds three loops: explicit AVX-512 (F + DQ) and AVX2 + FMA
code, and a portable loop the compiler vectorises; :func:`load` binds the one that
``$TENSORSIGHT_KERNEL`` asks for (``auto``: the fastest the CPU runs, read from cpuid at run
time; see :func:`tensorsight._cbuild.kernel_path`). Without a compiler, or with
``TENSORSIGHT_KERNEL=numpy``, :func:`load` returns ``None`` and the numpy kernel runs.
:func:`build` binds any loop the CPU runs, so the tests can check each of them.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from typing import Any

from tensorsight._cbuild import (
    KERNEL_PATHS,
    cpu_features,
    kernel_path,
    load_c_library,
    missing_features,
    numpy_forced,
)
from tensorsight.compare.metrics._layout import c_defines

__all__ = ["NativeKernel", "build", "features", "load", "path_counts"]

# the accumulator slots come from the one table in _layout.py (ACCUMULATORS)
_FLAGS = ["-O3", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math", *c_defines()]
_SOURCE = Path(__file__).with_name("_kernel.c")
_LOCK = threading.Lock()
_STATE: dict[str, NativeKernel | None] = {}
_LIB: dict[str, ctypes.CDLL | None] = {}

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
    """One loop of the library: ``ts_pass_*`` (one chunk) and ``ts_chunks_*`` (see ``_kernel.c``).

    Attributes:
        path: The shared library.
        isa: ``"avx512"``, ``"avx2"`` or ``"portable"``: which loop this object runs.
        features: The CPU's vector features as the library found them (cpuid).
    """

    def __init__(self, lib: ctypes.CDLL, path: Path, isa: str, features: frozenset[str]) -> None:
        self.path = path
        self.isa = isa
        self.features = features
        self.f32 = getattr(lib, f"ts_pass_f32_{isa}")
        self.f64 = getattr(lib, f"ts_pass_f64_{isa}")
        for fn in (self.f32, self.f64):
            fn.argtypes = _ARGS
            fn.restype = None
        self.chunks_f32 = getattr(lib, f"ts_chunks_f32_{isa}")
        self.chunks_f64 = getattr(lib, f"ts_chunks_f64_{isa}")
        for fn in (self.chunks_f32, self.chunks_f64):
            fn.argtypes = _CHUNK_ARGS
            fn.restype = None
        self.log_ratio = getattr(lib, f"ts_log_ratio_{isa}")
        self.log_ratio.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_int64,
            ctypes.c_void_p,
        ]
        self.log_ratio.restype = None


def _library() -> ctypes.CDLL | None:
    with _LOCK:
        if "lib" not in _LIB:
            _LIB["lib"] = load_c_library(_SOURCE, _FLAGS, name="kernel")
        return _LIB["lib"]


def features() -> frozenset[str] | None:
    """The CPU's vector features (``avx2``, ``fma``, ``avx512f``, ``avx512dq``) as the
    kernel sees them; ``None`` without a compiler."""
    lib = _library()
    return None if lib is None else cpu_features(lib)


PATHS = (
    "squares_derived",
    "squares_direct",
    "equal_runs",
    "kl_redone",
    "xy_derived",
    "xy_direct",
)
"""The names of the counters of :func:`path_counts`, in the order ``_kernel.c`` keeps them."""


def path_counts(*, reset: bool = False) -> dict[str, int]:
    """How often the explicit loops took each data-dependent path since the last reset.

    For tests (``_kernel.c``'s ``ts_path_counts``): blocks whose raw sums of squares were
    derived from the shifted sums or summed directly, AVX2 runs whose sides were equal bit
    for bit, AVX2 runs whose KL sum was redone, AVX2 blocks whose sum x*y was derived from
    their sums of squares or summed directly (sides far from proportional). Shared by
    every thread; all zero without a compiler.
    """
    lib = _library()
    out = (ctypes.c_int64 * len(PATHS))()
    if lib is not None:
        fn = lib.ts_path_counts
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int]
        fn.restype = None
        fn(ctypes.addressof(out), int(reset))
    return dict(zip(PATHS, (int(v) for v in out), strict=True))


def build(isa: str) -> NativeKernel | None:
    """Compile (or take from the cache) and bind loop ``isa``; ``None`` without a compiler.

    Raises:
        ValueError: ``isa`` is not a loop, or the CPU lacks a feature it needs.
    """
    if isa not in KERNEL_PATHS:
        msg = f"unknown kernel loop {isa!r}; choices: {', '.join(KERNEL_PATHS)}"
        raise ValueError(msg)
    lib = _library()
    if lib is None:
        return None
    found = cpu_features(lib)
    missing = missing_features(isa, found)
    if missing:
        msg = f"this CPU lacks {', '.join(missing)}, which the {isa} loop needs"
        raise ValueError(msg)
    return NativeKernel(lib, Path(lib._name), isa, found)


def load() -> NativeKernel | None:
    """The kernel ``$TENSORSIGHT_KERNEL`` chooses, or ``None`` (numpy is used instead)."""
    with _LOCK:
        if "kernel" in _STATE:
            return _STATE["kernel"]
    lib = None if numpy_forced() else _library()
    kernel: NativeKernel | None = None
    if lib is not None:
        isa = kernel_path(cpu_features(lib))
        if isa is not None:
            kernel = NativeKernel(lib, Path(lib._name), isa, cpu_features(lib))
    with _LOCK:
        return _STATE.setdefault("kernel", kernel)
