"""The C statistics kernel (``_stats_kernel.c``): one read per element, built on first use.

:func:`buffer_stats` measures a contiguous buffer given its address, element count and
dtype name. The library is compiled for the architecture's baseline and cached by
:mod:`tensorsight._cbuild`; it holds the loop three times (AVX-512, AVX2 + FMA, portable),
and :func:`load` binds the one ``$TENSORSIGHT_KERNEL`` asks for (``auto``: the fastest the
CPU runs, from cpuid; see :func:`tensorsight._cbuild.kernel_path`). Without a compiler, or
with ``TENSORSIGHT_KERNEL=numpy``, :func:`load` returns ``None`` and the callers
(``_torch_stats``, ``_np_stats``) use their torch / numpy paths, which compute the same
statistics (float64 accumulation, same NaN/Inf rules) in several passes.
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

__all__ = ["DTYPES", "StatsKernel", "buffer_stats", "build", "load", "load_held"]

_FLAGS = ["-O3", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math"]
_SOURCE = Path(__file__).with_name("_stats_kernel.c")
_LOCK = threading.Lock()
_STATE: dict[str, StatsKernel | None] = {}  # "fns", "held"
_LIB: dict[str, ctypes.CDLL | None] = {}

# dtype name (torch and numpy spell these alike) -> C function suffix
DTYPES = {
    "float64": "f64",
    "float32": "f32",
    "float16": "f16",
    "bfloat16": "bf16",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "u8",
}


class StatsKernel(dict[str, Any]):
    """dtype name -> C function of one loop; ``isa`` says which (``avx512``, ``avx2``,
    ``portable``) and ``features`` the CPU's vector features as the library found them."""

    def __init__(self, lib: ctypes.CDLL, isa: str, features: frozenset[str]) -> None:
        super().__init__()
        self.isa = isa
        self.features = features
        for dtype, suffix in DTYPES.items():
            fn = getattr(lib, f"ts_stats_{suffix}_{isa}")
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
            fn.restype = None
            self[dtype] = fn


def load() -> StatsKernel | None:
    """dtype name -> C function, or ``None`` when the kernel cannot be built.

    The functions release the GIL while they run (other threads go on meanwhile).
    """
    return _load()[0]


def load_held() -> StatsKernel | None:
    """Like :func:`load`, but the functions keep the GIL.

    For small buffers: a call that releases the GIL must take it back afterwards, which
    can mean waiting for another thread's time slice, far longer than the measurement.
    """
    return _load()[1]


def build(isa: str) -> tuple[StatsKernel, StatsKernel] | None:
    """Loop ``isa`` as (GIL-releasing, GIL-keeping) functions; ``None`` without a compiler.

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
    return StatsKernel(lib, isa, found), StatsKernel(ctypes.PyDLL(lib._name), isa, found)


def _library() -> ctypes.CDLL | None:
    with _LOCK:
        if "lib" not in _LIB:
            _LIB["lib"] = load_c_library(_SOURCE, _FLAGS, name="stats")
        return _LIB["lib"]


def _load() -> tuple[StatsKernel | None, StatsKernel | None]:
    with _LOCK:
        if "fns" in _STATE:
            return _STATE["fns"], _STATE["held"]
    lib = None if numpy_forced() else _library()
    pair: tuple[StatsKernel, StatsKernel] | None = None
    if lib is not None:
        isa = kernel_path(cpu_features(lib))
        if isa is not None:
            pair = build(isa)
    with _LOCK:
        if "fns" not in _STATE:
            _STATE["fns"], _STATE["held"] = pair if pair is not None else (None, None)
        return _STATE["fns"], _STATE["held"]


_OUT = ctypes.c_double * 7


def buffer_stats(fn: Any, address: int, numel: int, repeats: int = 1) -> list[float]:
    """``[min, max, sum, sumsq, nan, +inf, -inf, numel]`` of ``numel`` elements at ``address``.

    ``fn`` is the entry of :func:`load` (or :func:`load_held`) for the buffer's dtype;
    ``numel`` must be > 0 and the buffer must stay alive and unchanged during the call.
    ``repeats`` > 1 measures a tensor that holds each element that many times (a broadcast
    view): sums and counts scale.
    """
    out = _OUT()
    fn(address, numel, out)
    values = out[:]
    if repeats == 1:
        values.append(float(numel))
        return values
    k = float(repeats)
    mn, mx, s, sq, nan, pinf, ninf = values
    return [mn, mx, s * k, sq * k, nan * k, pinf * k, ninf * k, float(numel * repeats)]
