"""Statistics, fingerprints and identity keys of torch tensors (imported only with torch).

Statistics run on the tensor's own device. On the CPU, tensors whose elements fill one
block of memory (contiguous, or a permutation of contiguous such as ``w.t()``) are read
once by the C kernel of :mod:`._stats_native` (every element converted to float64 before
it is accumulated). Other tensors, and every tensor when the kernel cannot be built, are
copied once into float64 (exact for every float and for integers up to 2**53), then
min/max, the sum and the sum of squares come from that copy, so nothing is ever
accumulated in bf16 or fp16. On accelerators the result is a small float64 tensor on the
device; turning it into Python numbers (a device sync) happens later, on the background
writer thread.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from tensorsight.dumpformat import _stats_native
from tensorsight.dumpformat._np_stats import array_stats, stats_from_values

__all__ = [
    "StatsCache",
    "dtype_name",
    "fingerprint",
    "stats_from_values",
    "stats_tensor",
    "tensor_bytes",
]


_DTYPE_NAMES: dict[torch.dtype, str] = {}


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"``."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


_NUMPY_DTYPES = frozenset(
    {torch.float64, torch.float32, torch.float16, torch.int64, torch.int32, torch.int16,
     torch.int8, torch.uint8}
)  # fmt: skip
_SMALL = 1 << 13  # elements; below this, numpy's per-call overhead beats torch's


# torch dtype -> (C function keeping the GIL, C function releasing it)
_NATIVE: dict[torch.dtype, tuple[Any, Any]] = {}
_NATIVE_STATE: list[bool] = []  # [loaded?]
# Elements up to which the kernel keeps the GIL (about 10 us of work on float32).
HELD_NUMEL = 1 << 16


def _native_fns() -> dict[torch.dtype, tuple[Any, Any]]:
    """torch dtype -> C statistics functions (empty when the kernel cannot be built)."""
    if not _NATIVE_STATE:
        fns: dict[str, Any] = _stats_native.load() or {}
        held: dict[str, Any] = _stats_native.load_held() or {}
        for name, fn in fns.items():
            dtype = getattr(torch, name, None)
            if isinstance(dtype, torch.dtype):
                _NATIVE[dtype] = (held.get(name, fn), fn)
        _NATIVE_STATE.append(True)
    return _NATIVE


_PLAIN = (torch.Tensor, torch.nn.Parameter)
_STRIDED = torch.strided


def _one_block(x: torch.Tensor, n: int) -> int:
    """``k`` when ``x`` holds ``k`` repeats of the ``n / k`` consecutive elements at
    ``data_ptr()`` (``k`` > 1: broadcast views, stride 0); 0 when it does not."""
    if x.is_contiguous():
        return 1
    layout = _canonical_layout(x)
    if layout and layout[0][0] == 0:  # stride-0 dims sort (and merge) first
        k = layout[0][1]
        layout = layout[1:]
    else:
        k = 1
    return k if layout in (((1, n // k),), ()) else 0


def stats_tensor(t: torch.Tensor, *, native: bool = True) -> torch.Tensor | list[float] | None:
    """``[min, max, sum, sumsq, nan, +inf, -inf, numel]`` in float64, on ``t``'s device.

    CPU tensors held in one block of memory go through the C kernel (one read; ``native``
    ``False`` or no compiler: the torch/numpy path below, same statistics to rounding).
    The three counts are computed only when min/max are not finite; on CPU the check is
    free, on accelerators the counts are always computed to avoid a sync. Other small CPU
    tensors go through numpy (same float64 arithmetic, a tenth of the call overhead) and
    come back as a list. Returns ``None`` for empty and meta tensors.
    """
    n = t.numel()
    if n == 0:
        return None
    if native and t.is_cpu and type(t) in _PLAIN:  # no detach: only the memory is read
        fns = (_NATIVE if _NATIVE_STATE else _native_fns()).get(t.dtype)
        if fns is not None and t.layout is _STRIDED and not (t.is_neg() or t.is_nested):
            k = 1 if t.is_contiguous() else _one_block(t, n)
            if k:
                fn = fns[0] if n <= HELD_NUMEL else fns[1]
                return _stats_native.buffer_stats(fn, t.data_ptr(), n // k, k)
    if t.layout is not _STRIDED:  # sparse and other layouts: no statistics (as the native path)
        return None
    x = t.detach()
    if x.device.type == "meta":
        return None
    if n <= _SMALL and x.device.type == "cpu" and x.dtype in _NUMPY_DTYPES:
        try:
            arr = x.numpy()
        except (RuntimeError, TypeError):  # conjugate/negative views, subclasses
            pass
        else:
            return array_stats(arr, native=False)
    if x.is_complex():
        x = torch.view_as_real(x)
        n = x.numel()
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    xd = _scratch(n, x.device).view(x.shape).copy_(x).view(-1)
    if x.dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        mn, mx = torch.aminmax(x)
    else:
        mn, mx = torch.aminmax(xd)
    s = xd.sum()
    sq = torch.dot(xd, xd)
    if x.device.type == "cpu":  # the values are needed on the host anyway: no stacking
        lo, hi = mn.item(), mx.item()
        counts = [0.0, 0.0, 0.0]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            counts = [float(c.item()) for c in _counts(xd)]
        return [float(lo), float(hi), s.item(), sq.item(), *counts, float(n)]
    numel = torch.tensor(float(n), dtype=torch.float64, device=x.device)
    dev = [mn.to(torch.float64), mx.to(torch.float64), s, sq]
    return torch.stack([*dev, *_counts(xd), numel])


_SCRATCH: dict[Any, torch.Tensor] = {}
_SCRATCH_MAX = 1 << 25  # elements (256 MiB of float64); larger tensors get their own buffer


def _scratch(n: int, device: torch.device) -> torch.Tensor:
    """A reusable float64 buffer of ``n`` elements (fresh 8-byte-per-element allocations
    page-fault on every call and cost more than the statistics themselves)."""
    if n > _SCRATCH_MAX:
        return torch.empty(n, dtype=torch.float64, device=device)
    key: Any = device
    if device.type == "cuda":  # one buffer per stream: reuse is ordered only within a stream
        key = (device, torch.cuda.current_stream(device).cuda_stream)
    buf = _SCRATCH.get(key)
    if buf is None or buf.numel() < n:
        buf = torch.empty(max(n, 1 << 16), dtype=torch.float64, device=device)
        _SCRATCH[key] = buf
    return buf[:n]


def _counts(xd: torch.Tensor) -> list[torch.Tensor]:
    return [
        torch.isnan(xd).sum().to(torch.float64),
        (xd == math.inf).sum().to(torch.float64),
        (xd == -math.inf).sum().to(torch.float64),
    ]


def tensor_bytes(t: torch.Tensor) -> memoryview:
    """The contiguous little-endian bytes of a CPU tensor (no copy when already contiguous)."""
    flat = t.detach().contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.view(torch.uint8)
    return memoryview(flat.view(torch.uint8).numpy()).cast("B")  # type: ignore[arg-type]


def fingerprint(t: torch.Tensor) -> str:
    """CRC-32 of the tensor's bytes as 8 hex digits (see :data:`schema.FINGERPRINT_HASH`)."""
    x = t.detach()
    if x.device.type != "cpu":
        x = x.cpu()
    if x.is_conj():
        x = x.resolve_conj()
    return f"{zlib.crc32(tensor_bytes(x)) & 0xFFFFFFFF:08x}"


def _canonical_layout(t: torch.Tensor) -> tuple[tuple[int, int], ...]:
    """(stride, size) pairs with size-1 dims dropped and mergeable dims merged.

    Two tensors on the same storage offset with equal canonical layouts hold the same set
    of elements (``w`` and ``w.t()``, ``x`` and ``x.view(-1)``), so their statistics agree.
    """
    pairs = sorted((st, sz) for st, sz in zip(t.stride(), t.shape, strict=True) if sz != 1)
    merged: list[tuple[int, int]] = []
    for st, sz in pairs:
        if merged and merged[-1][0] * merged[-1][1] == st:
            pst, psz = merged[-1]
            merged[-1] = (pst, psz * sz)
        else:
            merged.append((st, sz))
    return tuple(merged)


def _storage_ref(t: torch.Tensor) -> StorageWeakRef:
    return StorageWeakRef(t.untyped_storage())  # type: ignore[no-untyped-call]


def _expired(ref: StorageWeakRef) -> bool:
    return bool(ref.expired())  # type: ignore[no-untyped-call]


def _address(key: tuple[Any, ...]) -> Any:
    """The storage address in a key of :meth:`StatsCache.key` (or one prefixed ``"exact"``)."""
    return key[1] if key[0] == "exact" else key[0]


class StatsCache:
    """Reuses work for tensors already seen in this step (weights read by several ops).

    An entry is valid while the storage of the tensor that produced it is alive (so its
    memory cannot be reused) and the shared version counter is unchanged (no in-place write
    since). The storage, not the Python tensor object, is what is watched: an intermediate
    tensor of the backward pass gets a new Python object each time an op sees it.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[Any, ...], tuple[StorageWeakRef, Any]] = {}
        self._by_storage: dict[int, list[tuple[Any, ...]]] = {}  # storage address -> keys

    @staticmethod
    def key(t: torch.Tensor, *, exact: bool) -> tuple[Any, ...] | None:
        """Identity of ``t``'s elements; ``exact`` also requires the same shape and strides."""
        if (
            t.device.type == "meta"
            or t.is_sparse
            or t.is_inference()  # no version counter: a write would go unseen
            or type(t) not in (torch.Tensor, torch.nn.Parameter)
        ):
            return None
        try:
            ptr = t.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):
            return None
        if exact:
            layout: Any = (tuple(t.shape), t.stride())
        elif t.is_contiguous():  # what _canonical_layout gives, without sorting the strides
            n = t.numel()
            layout = ((1, n),) if n > 1 else ()
        else:
            layout = _canonical_layout(t)
        return (ptr, t.storage_offset(), t.dtype, t.device, t._version, exact, layout)

    def get(self, key: tuple[Any, ...] | None) -> Any:
        """Cached value or ``None``."""
        if key is None:
            return None
        hit = self._entries.get(key)
        if hit is None or _expired(hit[0]):
            return None
        return hit[1]

    def put(self, key: tuple[Any, ...] | None, t: torch.Tensor, value: Any) -> None:
        """Remember ``value`` for ``key`` while ``t``'s storage lives."""
        if key is None:
            return
        if len(self._entries) > 50_000:
            self._entries = {k: v for k, v in self._entries.items() if not _expired(v[0])}
            self._by_storage = {}
            for k in self._entries:
                self._by_storage.setdefault(_address(k), []).append(k)
        if key not in self._entries:
            self._by_storage.setdefault(_address(key), []).append(key)
        self._entries[key] = (_storage_ref(t), value)

    def invalidate(self, t: torch.Tensor) -> None:
        """Forget every entry of ``t``'s storage (an op wrote into it)."""
        if not self._by_storage:
            return
        try:
            ptr = t.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):
            return
        for key in self._by_storage.pop(ptr, ()):
            self._entries.pop(key, None)

    def sweep(self) -> None:
        """Drop the entries of storages that died (at step boundaries): a step's
        intermediates die with it, and their entries (a weak reference and a measurement
        each) would otherwise pile up until :meth:`put`'s cap."""
        live = {k: v for k, v in self._entries.items() if not _expired(v[0])}
        if len(live) == len(self._entries):
            return
        self._entries = live
        by_storage: dict[int, list[tuple[Any, ...]]] = {}
        for k in live:
            by_storage.setdefault(_address(k), []).append(k)
        self._by_storage = by_storage

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget everything (at step boundaries)."""
        self._entries.clear()
        self._by_storage.clear()
