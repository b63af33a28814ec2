"""Pin a worker process's BLAS and OpenMP thread pools to one thread each.

A pool of N worker processes on N cores wants one compute thread per process: OpenBLAS,
MKL and OpenMP each start a thread per core by default, so N workers would run N x N
threads and a pool became several times slower than the same work in one process. The
libraries read these variables when they load, so :func:`pin_threads` runs first in a
worker (a process pool's initializer, the start of a Ray task) and imports nothing heavy;
a library already loaded in the worker (torch) is told directly.
"""

from __future__ import annotations

import os
import sys

__all__ = ["PIN_VARIABLES", "pin_threads"]

PIN_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

_pinned = False


def pin_threads(n: int = 1) -> None:
    """Set :data:`PIN_VARIABLES` to ``n`` in this process (once) and tell a loaded torch."""
    global _pinned
    if _pinned:
        return
    _pinned = True
    for name in PIN_VARIABLES:
        os.environ[name] = str(n)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(n)
