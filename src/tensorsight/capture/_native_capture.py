"""The native op capture: build and load ``_native_capture.cpp``, and turn its records into rows.

The Python path (a TorchDispatchMode, :mod:`tensorsight.capture.backends.torch_ops`) runs
~10 us of Python per op and its writer competes with training for the GIL; on a small model
that is most of a step. The native path observes ops in C++ (a thread-local RecordFunction
callback), measures their tensors with the same C statistics kernel, and keeps compact
records until Python pulls them: at the end of a step, before any row Python commits itself
(parameter gradients), when capture stops, and from the module hooks once
:data:`PULL_SECS` have passed (so a crash loses about as much as the Python path's log).

It is built once per torch build and machine with the system C++ compiler against the
headers and libraries that come with the torch wheel (no Python headers, no ninja), cached
next to the other compiled kernels (:mod:`tensorsight._cbuild`). When it cannot be built
or a dump needs something only the Python path does, the Python path is used: see
:func:`native_reason`.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from tensorsight import _cbuild
from tensorsight.capture._torch_stats import dtype_name
from tensorsight.capture.backends.base import CaptureBackend
from tensorsight.dumpformat import _stats_native

_log = logging.getLogger(__name__)

__all__ = ["NativeOpCapture", "load", "native_reason"]

_HERE = Path(__file__).parent
_SOURCE = _HERE / "_native_capture.cpp"
# the dump format's statistics kernel, #included by the C++ source: part of the cache key
_KERNEL = Path(_stats_native.__file__).with_name("_stats_kernel.c")
# the statistics kernel's flags (_stats_native._FLAGS) hold for the C++ around it too: the
# architecture's baseline, no -march=native (the kernel picks its loop from cpuid at run time),
# so a library cached on one CPU runs on any other of its architecture (a shared home folder,
# a container image); tests/dumpformat/test_stats_native.py checks the flags
_FLAGS = ("-O2", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math")
_ISA_CODES = {"portable": 0, "avx2": 1, "avx512": 2}  # ts_stats_use() in _stats_kernel.c
PULL_SECS = 0.5  # at most this long between pulls while modules run (as _table.LOG_SECS)

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}  # "lib": _Library | None, "why": str, "busy": bool


class _Library:
    """The loaded library: its ops (``torch.ops.tensorsight_native``) and shared globals."""

    def __init__(self, path: Path) -> None:
        torch.ops.load_library(str(path))  # type: ignore[no-untyped-call]
        self.ops: Any = torch.ops.tensorsight_native
        cdll = ctypes.CDLL(str(path))
        self.module = ctypes.c_int32.in_dll(cdll, "ts_module")
        self.paused = ctypes.c_int32.in_dll(cdll, "ts_paused")
        self.pending = ctypes.c_int64.in_dll(cdll, "ts_pending")
        self.busy = ctypes.c_int32.in_dll(cdll, "ts_busy")
        held = ctypes.PyDLL(str(path))  # a few instructions: keep the GIL
        # the statistics kernel's loop, as _stats_native chooses it (numpy forced: the
        # capture still measures in C, with the fastest loop)
        features = _cbuild.cpu_features(cdll)
        use = held.ts_stats_use
        use.argtypes = [ctypes.c_int]
        use.restype = ctypes.c_int
        isa = _cbuild.kernel_path(features) or next(
            p for p in _cbuild.KERNEL_PATHS if not _cbuild.missing_features(p, features)
        )
        self.stats_isa = ("portable", "avx2", "avx512")[use(_ISA_CODES[isa])]
        self.set_module = held.ts_set_module
        self.set_module.argtypes = [ctypes.c_int32]
        self.set_module.restype = None
        self.dtypes: dict[int, str] = {}
        for dt in (
            torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
            torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64,
            torch.complex128, torch.float8_e4m3fn, torch.float8_e5m2,
        ):  # fmt: skip
            self.dtypes[int(self.ops.dtype_code(torch.empty(0, dtype=dt)))] = dtype_name(dt)

    def dtype(self, code: int) -> str:
        name = self.dtypes.get(code)
        if name is None:  # a dtype not listed above: ask torch once
            for dt in vars(torch).values():
                if isinstance(dt, torch.dtype):
                    try:
                        c = int(self.ops.dtype_code(torch.empty(0, dtype=dt)))
                    except (RuntimeError, TypeError):
                        continue
                    self.dtypes.setdefault(c, dtype_name(dt))
            name = self.dtypes.setdefault(code, f"dtype{code}")
        return name


def _flags() -> tuple[list[str], list[str], str]:
    root = Path(torch.__file__).parent
    inc, lib = root / "include", root / "lib"
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    flags = [
        *_FLAGS,
        "-std=c++17",
        "-DNDEBUG",
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        f"-I{inc}",
        f"-I{inc / 'torch' / 'csrc' / 'api' / 'include'}",
        f"-I{_KERNEL.parent}",
    ]
    link = [f"-L{lib}", f"-Wl,-rpath,{lib}", "-ltorch_cpu", "-lc10"]
    return flags, link, f"torch {torch.__version__} {root} {_KERNEL.read_bytes()!r}"


def load() -> _Library | None:
    """The library (built now if needed, once per process); ``None`` when it cannot be."""
    with _LOCK:
        if "lib" in _STATE:
            return _STATE["lib"]  # type: ignore[no-any-return]
        lib: _Library | None = None
        why = ""
        if sys.platform != "linux":
            why = "the native op capture is built on Linux only"
        else:
            flags, link, extra = _flags()
            try:
                target = _cbuild.build_library(
                    [_SOURCE],
                    flags,
                    name="native_capture",
                    link=link,
                    compilers=("CXX", "c++", "g++"),
                    key_extra=extra,
                    notice="tensorsight: building the native op capture for this torch "
                    "(once; about 10-30 s)",
                )
                if target is None:
                    why = "the native op capture could not be built (no C++ compiler?)"
                else:
                    lib = _Library(target)
            except (OSError, RuntimeError) as exc:
                why = f"the native op capture could not be loaded ({exc})"
            if lib is None:  # once per process: say why dumps run slower than documented
                _log.warning(
                    "tensorsight: %s; level-op statistics use the Python path (slower)", why
                )
        _STATE["lib"], _STATE["why"] = lib, why
        return lib


def native_reason(options: Mapping[str, Any]) -> str | None:
    """Why this dump uses the Python path, or ``None`` when the native one can record it."""
    choice = os.environ.get("TENSORSIGHT_CAPTURE", "auto").strip().lower()
    if choice == "python":
        return "TENSORSIGHT_CAPTURE=python"
    if options["level"] != "op" or options["mode"] != "statistics":
        return "the native op capture records level 'op' in mode 'statistics' only"
    if options["stack"]:
        return "stack=True needs Python frames at each op"
    if torch.cuda.is_available() or _accelerator():
        return "an accelerator is present (the native op capture is verified on CPU only)"
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return "torch.distributed is initialized (collectives are recorded by the Python path)"
    if _STATE.get("busy"):
        return "another dump in this process uses the native op capture"
    if load() is None:
        return str(_STATE.get("why") or "the native op capture is unavailable")
    return None


def _accelerator() -> bool:
    acc = getattr(torch, "accelerator", None)
    is_available = getattr(acc, "is_available", None)
    return bool(is_available()) if callable(is_available) else False


class _Paused:
    """``.on``: tensorsight's own torch calls on this thread are not recorded."""

    __slots__ = ("_flag",)

    def __init__(self, flag: ctypes.c_int32) -> None:
        self._flag = flag

    @property
    def on(self) -> bool:
        return bool(self._flag.value)

    @on.setter
    def on(self, value: bool) -> None:
        self._flag.value = 1 if value else 0


class NativeOpCapture(CaptureBackend):
    """Level ``op`` in mode ``statistics``, observed in C++ (see the module docstring).

    Rows are what :class:`~tensorsight.capture.backends.torch_ops.TorchOpCapture` writes
    for the same run: op names, directions, module paths (backward ops through autograd's
    sequence numbers), ``grad_fn`` names, tensor names, shapes, dtypes and statistics
    (sums equal to rounding: both use the same kernel, a few tensor layouts take a float64
    copy here).
    """

    level = "op"
    implementation = "native"
    param_grads = True

    @classmethod
    def unavailable(cls, options: Mapping[str, Any]) -> str | None:
        """:func:`native_reason`: the dispatch mode (``op``) records the dumps this cannot."""
        return native_reason(options)

    def __init__(self, recorder: Any, tracker: Any = None) -> None:
        super().__init__(recorder, tracker)
        lib = load()
        if lib is None:
            msg = "native op capture: not available; use the Python path"
            raise RuntimeError(msg)
        with _LOCK:
            _STATE["busy"] = True
        self._lib = lib
        self._ops = lib.ops
        self._ops.reset()
        self.paused = _Paused(lib.paused)
        self._strings: list[str] = []
        self._paths: list[str] = [""]
        self._path_ids: dict[str, int] = {"": 0}
        self._due = 0.0
        self._closed = False
        # rows Python commits itself (parameter gradients): (C++ ops before them, commit args)
        self._deferred: list[tuple[int, tuple[Any, ...]]] = []
        recorder.defer = self._defer
        recorder.native_stats = self._ops.measure
        if tracker is not None:
            tracker.on_change = self._on_module

    def _module_id(self, path: str) -> int:
        ident = self._path_ids.get(path)
        if ident is None:
            ident = self._path_ids[path] = len(self._paths)
            self._paths.append(path)
        return ident

    def _on_module(self, path: str) -> None:
        """Module hooks: tell C++ the innermost module; pull when :data:`PULL_SECS` passed."""
        ident = self._module_id(path)
        lib = self._lib
        lib.set_module(ident)
        # not while a recorded op runs (a module inside a custom op's Python kernel)
        if lib.pending.value and not lib.busy.value and time.monotonic() >= self._due:
            self.pull()

    def new_step(self) -> None:
        self._ops.new_step()

    def _start(self) -> None:
        # set directly: capture is not running yet, so there is no node to give a module
        self._lib.module.value = self._module_id(self.tracker.current) if self.tracker else 0
        self._due = time.monotonic() + PULL_SECS
        self._ops.start()

    def _stop(self) -> None:
        self._ops.stop()
        self.pull()

    def close(self) -> None:
        """Let another dump in this process use the native path."""
        if self._closed:
            return
        self._closed = True
        self.stop()
        self.recorder.defer = None
        self.recorder.native_stats = None
        with _LOCK:
            _STATE["busy"] = False

    def _defer(self, *args: Any) -> None:
        """An op Python records itself: committed after the C++ ops that ran before it."""
        self._deferred.append((self._lib.pending.value, args))

    def pull(self) -> None:
        """Commit the ops recorded since the last pull, in execution order."""
        self._due = time.monotonic() + PULL_SECS
        ops_t, tensors_t, shapes_t, stats_t, fresh = self._ops.pull()
        strings = self._strings
        strings.extend(fresh)
        deferred, self._deferred = self._deferred, []
        if ops_t.numel() == 0 and not deferred:
            return
        # tolist() is no op call: nothing below is recorded
        ops, tensors, shapes, stats = (t.tolist() for t in (ops_t, tensors_t, shapes_t, stats_t))
        paths, dtype, recorder = self._paths, self._lib.dtype, self.recorder
        dtypes: dict[int, str] = {}
        wants, filtered = recorder.wants, recorder.filtered
        # the rows of many ops go to the writer at once (recorder.commit_many: one lock and
        # one check per pull, not per op); a deferred row first sends the ones before it
        batch: list[tuple[Any, ...]] = []
        commit_many = recorder.commit_many
        k = s = 0
        later = iter(deferred)
        due = next(later, None)
        for position, (name_id, direction, module, grad_fn, count, args) in enumerate(ops):
            while due is not None and due[0] <= position:
                commit_many(batch)
                batch = []
                self._commit_deferred(*due[1])
                due = next(later, None)
            entries = []
            for name, code, ndim, ok, device in tensors[k : k + count]:
                dt = dtypes.get(code)
                if dt is None:
                    dt = dtypes[code] = dtype(code)
                shape = tuple(shapes[s : s + ndim])  # the writer keeps a tuple
                s += ndim
                values = stats[k] if ok else None
                k += 1
                entries.append((strings[name], shape, dt, strings[device], values,
                                None, None, None, True))  # fmt: skip
            op, path = strings[name_id], paths[module]
            if filtered and not wants(op, path):
                continue
            batch.append((
                op, "backward" if direction else "forward", path,
                strings[grad_fn] if grad_fn >= 0 else None, None, entries,
                strings[args] if args >= 0 else None,
            ))  # fmt: skip
        commit_many(batch)
        while due is not None:
            self._commit_deferred(*due[1])
            due = next(later, None)

    def _commit_deferred(
        self,
        op: str,
        direction: str,
        module_path: str,
        snaps: list[Any],
        grad_fn: str | None,
        stack: str | None,
        args: str | None = None,
    ) -> None:
        self.recorder.commit_rows(
            op, direction, module_path, snaps, grad_fn=grad_fn, stack=stack, args=args
        )
