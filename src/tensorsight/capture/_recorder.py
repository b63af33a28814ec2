"""Recorder: turns tensors seen by a torch capture backend into queued op-table rows.

Backends call :meth:`Recorder.wants` (include/exclude filters), :meth:`Recorder.snapshot`
(statistics, fingerprints and tensor copies, taken at the moment the op sees the tensor),
then :meth:`Recorder.commit` (assigns the execution index and queues the rows).
"""

from __future__ import annotations

import fnmatch
import os
import traceback
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

from tensorsight.capture import _torch_stats as ts
from tensorsight.capture._arena import CopyArena
from tensorsight.dumpformat.writer import MEASURE_COPY, DumpWriter

__all__ = ["Recorder", "Snapshot", "user_stack"]

_SKIP_DIRS = (
    os.path.dirname(torch.__file__),
    os.path.dirname(os.path.abspath(__file__)),
)


def user_stack(limit: int = 12) -> str:
    """The caller's stack without torch and tensorsight frames, innermost last."""
    frames = [
        f
        for f in traceback.extract_stack()
        if not f.filename.startswith(_SKIP_DIRS) and "<frozen" not in f.filename
    ]
    return "\n".join(f"{f.filename}:{f.lineno} in {f.name}" for f in frames[-limit:])


# What was taken from one tensor when an op saw it, in the writer's entry layout
# (:data:`writer.Entry`): (name, shape, dtype, device, stats, fingerprint, copy, same_as,
# store). A tuple, not a dataclass: a step can hold thousands and each costs a microsecond
# to build as an object.
Snapshot = tuple[str, Any, str, str, Any, Any, Any, "str | None", bool]


class Recorder:
    """Applies filters and mode to tensors and feeds the :class:`DumpWriter`.

    Args:
        writer: Destination.
        mode: ``statistics``, ``tensor`` or ``md5``.
        include: Glob patterns; an op is kept when one matches its name or module path.
        exclude: Glob patterns; an op is dropped when one matches its name or module path.
        stack: Record the user call stack of each forward op.
        arena: Reused memory for tensor copies (modes tensor and md5); ``None``: fresh
            memory for each copy.
    """

    def __init__(
        self,
        writer: DumpWriter,
        *,
        mode: str,
        include: Sequence[str] | None,
        exclude: Sequence[str] | None,
        stack: bool,
        arena: CopyArena | None = None,
    ) -> None:
        self.writer = writer
        self.arena = arena
        self.mode = mode
        self.include = tuple(include or ())
        self.exclude = tuple(exclude or ())
        self.filtered = bool(self.include or self.exclude)  # False: wants() is always True
        self.stack = stack
        self.index = 0
        self.cache = ts.StatsCache()  # statistics and fingerprints: valid across steps
        self.copies = ts.StatsCache()  # stored copies: shards belong to one step
        self._wants: dict[tuple[str, str], bool] = {}
        self._copy_id = 0
        self._bumped: list[tuple[weakref.ref[torch.Tensor], int, Any]] = []
        self._one = self._one_statistics if mode == "statistics" else self._one_general
        # set by the native capture, which holds the ops it records until it is asked for
        # them: commit() hands it this op to be committed after those
        self.defer: Callable[..., None] | None = None
        # and its measurement of one tensor (its cache holds what the ops saw)
        self.native_stats: Callable[[torch.Tensor], list[float]] | None = None

    def new_step(self) -> None:
        """Restart the execution index (cached statistics stay valid across steps)."""
        self.index = 0
        self.copies.clear()
        self.cache.sweep()  # the ended step's intermediates are gone: so go their entries

    def wants(self, op: str, module_path: str) -> bool:
        """Whether the filters keep an op (memoized)."""
        key = (op, module_path)
        hit = self._wants.get(key)
        if hit is None:
            hit = _matches(self.include, op, module_path) if self.include else True
            if hit and self.exclude and _matches(self.exclude, op, module_path):
                hit = False
            self._wants[key] = hit
        return hit

    def snapshot(
        self, named: Iterable[tuple[str, torch.Tensor]], *, fresh: bool = False
    ) -> list[Snapshot]:
        """Statistics (and copies or fingerprints) of tensors, taken now.

        ``fresh`` skips the cache: outputs of ops that write into their inputs, whose
        version counter is bumped only after the op returns (and never by collectives).
        """
        if self._bumped:
            self._flush_bumped()
        one = self._one
        return [one(name, t, fresh) for name, t in named]

    def invalidate(self, written: Sequence[Any]) -> None:
        """An op wrote into these arguments (tensors or tensor lists): forget what was measured
        or copied from their storages (a version number alone does not name the contents:
        ``t.data`` has a counter of its own)."""
        for value in written:
            for t in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(t, torch.Tensor):
                    self.cache.invalidate(t)
                    self.copies.invalidate(t)

    def after_bump(
        self, named: Sequence[tuple[str, torch.Tensor]], snaps: Sequence[Snapshot]
    ) -> None:
        """Remember measurements of an in-place op's outputs for after its version bump.

        Autograd bumps the version counter of a tensor written in place only after the op
        returns; the measurement becomes reusable (cached) once the bump is seen, at the next
        snapshot. A tensor whose version did not move by exactly one is not cached.
        """
        for (_, t), s in zip(named, snaps, strict=True):
            stats = s[4]
            if (
                stats is not None
                and stats is not MEASURE_COPY
                and t.numel() > _CACHE_MIN_NUMEL
                and not t.is_inference()  # no version counter
            ):
                self._bumped.append((weakref.ref(t), t._version + 1, stats))

    def _flush_bumped(self) -> None:
        for ref, version, stats in self._bumped:
            t = ref()
            if t is not None and t._version == version:
                self.cache.put(self.cache.key(t, exact=False), t, stats)
        self._bumped.clear()

    def _one_statistics(self, name: str, t: torch.Tensor, fresh: bool = False) -> Snapshot:
        """Mode statistics: measure now (or reuse the measurement of the same memory)."""
        native = self.native_stats
        stats: torch.Tensor | list[float] | None
        if native is not None and t.is_cpu:  # the native capture's cache knows these tensors
            stats = native(t) or None
        elif fresh or t.numel() <= _CACHE_MIN_NUMEL:  # small: cheaper to measure than look up
            stats = ts.stats_tensor(t)
        else:
            cache = self.cache
            key = cache.key(t, exact=False)
            stats = cache.get(key)
            if stats is None:
                stats = ts.stats_tensor(t)
                cache.put(key, t, stats)
        device = "cpu" if t.is_cpu else _device_name(t)
        return (name, t.shape, ts.dtype_name(t.dtype), device, stats, None, None, None, True)

    def _one_general(self, name: str, t: torch.Tensor, fresh: bool = False) -> Snapshot:
        """Modes tensor and md5 (and statistics of tensors that cannot be copied)."""
        cache = self.cache
        # small tensors are cheaper to measure again than to look up
        fresh = fresh or t.numel() <= _CACHE_MIN_NUMEL
        dtype = ts.dtype_name(t.dtype)
        if self.mode == "tensor" and t.device.type == "cpu" and dtype in _STORABLE:
            return self._copied(name, t, dtype, fresh)
        key = None if fresh else cache.key(t, exact=False)
        stats = cache.get(key)
        if stats is None:
            stats = ts.stats_tensor(t)
            cache.put(key, t, stats)
        fp = copy = same_as = None
        exact = None if fresh else cache.key(t, exact=True)
        ekey = None if exact is None else ("exact", *exact)
        hit = cache.get(ekey)
        if self.mode == "md5":
            if hit is None:
                hit = ts.fingerprint(t)
                cache.put(ekey, t, hit)
            fp = hit
        elif t.device.type != "meta" and dtype in _STORABLE:
            hit = self.copies.get(ekey)
            if hit is None:
                self._copy_id += 1
                same_as = f"c{self._copy_id}"
                copy = self._copy(t)
                self.copies.put(ekey, t, same_as)
            else:
                same_as = hit
        return (name, t.shape, dtype, _device_name(t), stats, fp, copy, same_as, True)

    def _copied(self, name: str, t: torch.Tensor, dtype: str, fresh: bool) -> Snapshot:
        """Mode tensor, CPU tensors: copy now; the writer thread measures and stores the copy.

        The copy is needed anyway, so measuring it moves that work off the training thread.
        (For modes statistics and md5 a copy would cost more than measuring in place: fresh
        large allocations page-fault.)
        """
        cache = self.copies
        key = None if fresh else cache.key(t, exact=self.mode != "statistics")
        same_as = cache.get(key)
        copy = None
        if same_as is None:
            self._copy_id += 1
            same_as = f"c{self._copy_id}"
            copy = self._copy(t)
            cache.put(key, t, same_as)
        fp = MEASURE_COPY if self.mode == "md5" else None
        store = self.mode == "tensor"
        return (name, t.shape, dtype, _device_name(t), MEASURE_COPY, fp, copy, same_as, store)

    def _copy(self, t: torch.Tensor) -> torch.Tensor:
        arena = self.arena
        return _cpu_copy(t) if arena is None else arena.copy(t)

    def commit(
        self,
        op: str,
        direction: str,
        module_path: str,
        snaps: list[Snapshot],
        *,
        grad_fn: str | None = None,
        stack: str | None = None,
        args: str | None = None,
    ) -> None:
        """Queue the rows of one op under the next execution index."""
        if self.defer is not None:  # the native capture holds ops that ran before this one
            self.defer(op, direction, module_path, snaps, grad_fn, stack, args)
            return
        self.commit_rows(op, direction, module_path, snaps, grad_fn=grad_fn, stack=stack, args=args)

    def commit_rows(
        self,
        op: str,
        direction: str,
        module_path: str,
        snaps: list[Snapshot],
        *,
        grad_fn: str | None = None,
        stack: str | None = None,
        args: str | None = None,
    ) -> None:
        """:meth:`commit` without asking the native capture for its rows first."""
        index = self.index
        self.index += 1
        nbytes = 0
        if self.mode != "statistics":
            nbytes = sum(int(s[6].nbytes) for s in snaps if s[6] is not None)
        self.writer.add_op(index, op, direction, module_path, grad_fn, stack, snaps, nbytes, args)

    def commit_many(
        self,
        ops: Sequence[tuple[str, str, str, str | None, str | None, list[Snapshot], str | None]],
    ) -> None:
        """:meth:`commit_rows` of many statistics-mode ops at once, in order: each
        ``(op, direction, module_path, grad_fn, stack, snaps, args)``, with no tensor copies
        (the native capture's rows: one writer call for a whole pull)."""
        if not ops:
            return
        index = self.index
        self.index += len(ops)
        self.writer.add_ops([(index + i, *row) for i, row in enumerate(ops)])


_CACHE_MIN_NUMEL = 1 << 13

_STORABLE = frozenset(
    {
        "float64",
        "float32",
        "float16",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "int64",
        "int32",
        "int16",
        "int8",
        "uint8",
        "bool",
    }
)


_DEVICE_NAMES: dict[torch.device, str] = {}


def _device_name(t: torch.Tensor) -> str:
    """``str(t.device)``, memoized ("cpu" without building a device object)."""
    if t.is_cpu:
        return "cpu"
    device = t.device
    name = _DEVICE_NAMES.get(device)
    if name is None:
        name = _DEVICE_NAMES[device] = str(device)
    return name


def _cpu_copy(t: torch.Tensor) -> torch.Tensor:
    x = t.detach()
    if x.device.type == "cpu":
        return x.clone(memory_format=torch.contiguous_format)
    return x.to("cpu", copy=True).contiguous()


def _matches(patterns: tuple[str, ...], op: str, module_path: str) -> bool:
    return any(fnmatch.fnmatchcase(op, p) or fnmatch.fnmatchcase(module_path, p) for p in patterns)


_NAMES: dict[str, tuple[str, ...]] = {
    p: tuple(f"{p}.{i}" for i in range(64)) for p in ("input", "output", "x")
}


def _name(prefix: str, i: int) -> str:
    names = _NAMES.get(prefix)
    return names[i] if names is not None and i < 64 else f"{prefix}.{i}"


def iter_tensors(value: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
    """Name the tensors in an argument list / output: ``prefix.0``, ``prefix.1.0``, ...

    Nested tensors are left out: they have no shape to record (as in the native capture).
    """
    tensor = torch.Tensor
    if isinstance(value, tensor):
        return [] if value.is_nested else [(_name(prefix, 0), value)]
    out: list[tuple[str, torch.Tensor]] = []
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if isinstance(v, tensor):
                if not v.is_nested:
                    out.append((_name(prefix, i), v))
            elif isinstance(v, (list, tuple)):
                out.extend(
                    (f"{prefix}.{i}.{j}", x) for j, x in enumerate(v) if isinstance(x, tensor)
                )
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, tensor):
                out.append((f"{prefix}.{k}", v))
    return out
