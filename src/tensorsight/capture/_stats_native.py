"""The C statistics kernel (``_stats_kernel.c``): one read per element, built on first use.

:func:`buffer_stats` measures a contiguous buffer given its address, element count and
dtype name. The library is compiled and cached by :mod:`tensorsight._cbuild`; without a
compiler, or with ``TENSORSIGHT_KERNEL=numpy``, :func:`load` returns ``None`` and the
callers (``_torch_stats``, ``_np_stats``) use their torch / numpy paths, which compute the
same statistics (float64 accumulation, same NaN/Inf rules) in several passes.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

from tensorsight._cbuild import load_c_library

__all__ = ["DTYPES", "buffer_stats", "load", "load_held"]

_FLAGS = ["-O3", "-march=native", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math"]
_SOURCE = Path(__file__).with_name("_stats_kernel.c")
_LOCK = threading.Lock()
_STATE: dict[str, dict[str, Any] | None] = {}  # "fns", "held"

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


def load() -> dict[str, Any] | None:
    """dtype name -> C function, or ``None`` when the kernel cannot be built.

    The functions release the GIL while they run (other threads go on meanwhile).
    """
    return _load()[0]


def load_held() -> dict[str, Any] | None:
    """Like :func:`load`, but the functions keep the GIL.

    For small buffers: a call that releases the GIL must take it back afterwards, which
    can mean waiting for another thread's time slice, far longer than the measurement.
    """
    return _load()[1]


def _load() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    with _LOCK:
        if "fns" in _STATE:
            return _STATE["fns"], _STATE["held"]
        fns: dict[str, Any] | None = None
        held: dict[str, Any] | None = None
        if os.environ.get("TENSORSIGHT_KERNEL", "").lower() != "numpy":
            lib = load_c_library(_SOURCE, _FLAGS, name="stats")
            if lib is not None:
                fns = _functions(lib)
                held = _functions(ctypes.PyDLL(lib._name))
        _STATE["fns"], _STATE["held"] = fns, held
        return fns, held


def _functions(lib: ctypes.CDLL) -> dict[str, Any]:
    fns = {}
    for dtype, suffix in DTYPES.items():
        fn = getattr(lib, f"ts_stats_{suffix}")
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
        fn.restype = None
        fns[dtype] = fn
    return fns


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
