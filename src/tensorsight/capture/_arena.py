"""CopyArena: reused memory for the tensor copies of mode ``tensor`` (torch only).

A tensor an op saw must be copied before the op (or a later one) changes it; the writer
thread stores the copy later. Copying into fresh memory costs more than the copy itself:
every new page faults in (and is zeroed by the kernel) and is unmapped again once written,
which measured here at 0.6-3 GB/s against 20-45 GB/s for a copy into memory already in
use. The arena is one block of ``capacity`` bytes used as a ring: the recording thread
takes regions at the head, the writer thread gives them back once it has written (or
measured) the copy, and the ring's tail follows the oldest region still in use. When nothing
is in use the ring starts again at 0, so a light workload only ever touches the start of the
block.

A copy that does not fit (a full ring, or a tensor larger than a quarter of it) gets fresh
memory, as before: the arena never waits. Waiting here could deadlock, since an op's own
copies are not yet queued for the writer when its next tensor is copied (an op with many
large inputs, such as a foreach optimizer step, can fill the ring by itself). Back-pressure
stays with the writer's queue bound (``max_queue_bytes``), which the recording thread waits
on when it hands the op over.
"""

from __future__ import annotations

import collections
import ctypes
import threading

import torch

__all__ = ["CopyArena"]

_ALIGN = 64  # bytes; every region starts on a cache line (and a multiple of any itemsize)
# Copies from this size start on a 4 KiB boundary, so that the writer can hand them to the
# disk with direct I/O (see _safetensors.ShardStream); the block itself is aligned so.
PAGE_ALIGN = 4096
PAGE_ALIGN_FROM = 1 << 20


class CopyArena:
    """A ring of reusable memory for tensor copies.

    Args:
        capacity: Bytes in the ring (allocated on first use; pages fault in as used).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = max(int(capacity), 1 << 20)
        self._block: torch.Tensor | None = None
        self._base = 0  # data_ptr of the block
        self._lock = threading.Lock()
        self._head = 0  # next free byte
        # regions in allocation order: [start, end, released]
        self._regions: collections.deque[list[int | bool]] = collections.deque()
        self._by_start: dict[int, list[int | bool]] = {}

    @property
    def used(self) -> int:
        """Bytes between the oldest region in use and the head (what the ring holds)."""
        with self._lock:
            if not self._regions:
                return 0
            tail = int(self._regions[0][0])
            if self._head > tail:
                return self._head - tail
            return self.capacity - tail + self._head  # wrapped (head == tail: full)

    def copy(self, t: torch.Tensor) -> torch.Tensor:
        """A contiguous CPU copy of ``t`` (in the arena when it fits)."""
        x = t.detach()
        nbytes = x.numel() * x.element_size()
        if nbytes == 0 or nbytes > self.capacity // 4 or x.device.type != "cpu":
            return _fresh_copy(x)
        start = self._take(nbytes)
        if start is None:
            return _fresh_copy(x)
        assert self._block is not None
        out = self._block[start : start + nbytes].view(x.dtype).view(x.shape)
        if x.is_contiguous() and not (x.is_neg() or x.is_conj()):
            # one thread, GIL released: torch's copy_ would use its intra-op threads, whose
            # barrier then waits for a core the writer thread is busy on
            ctypes.memmove(out.data_ptr(), x.data_ptr(), nbytes)
        else:
            out.copy_(x)
        return out

    def release(self, copy: object) -> None:
        """Give a copy's region back (anything not from this arena is ignored)."""
        if not isinstance(copy, torch.Tensor) or self._block is None:
            return
        start = copy.data_ptr() - self._base
        with self._lock:
            region = self._by_start.pop(start, None)
            if region is None:
                return
            region[2] = True
            regions = self._regions
            while regions and regions[0][2]:
                regions.popleft()
            if not regions:
                self._head = 0  # empty: start again at the beginning

    def _take(self, nbytes: int) -> int | None:
        align = PAGE_ALIGN if nbytes >= PAGE_ALIGN_FROM else _ALIGN
        size = -(-nbytes // align) * align
        with self._lock:
            if self._block is None:
                raw = torch.empty(self.capacity + PAGE_ALIGN, dtype=torch.uint8)
                skip = -raw.data_ptr() % PAGE_ALIGN
                self._block = raw[skip : skip + self.capacity]
                self._base = self._block.data_ptr()
            start = self._fit(size, align)
            if start is None:
                return None
            region: list[int | bool] = [start, start + size, False]
            self._regions.append(region)
            self._by_start[start] = region
            self._head = start + size
            return start

    def _fit(self, size: int, align: int = _ALIGN) -> int | None:
        """Where a region of ``size`` bytes starting on a multiple of ``align`` fits now
        (``None``: it does not)."""
        if not self._regions:
            return 0 if size <= self.capacity else None
        head = -(-self._head // align) * align
        tail = int(self._regions[0][0])
        if self._head > tail:  # free: [head, capacity) and [0, tail)
            if head + size <= self.capacity:
                return head
            return 0 if size <= tail else None
        # head < tail: free is [head, tail); head == tail with regions in use: full
        return head if head + size <= tail and self._head < tail else None

    def close(self) -> None:
        """Free the block (copies still referenced keep it alive until they go)."""
        with self._lock:
            self._block = None
            self._regions.clear()
            self._by_start.clear()
            self._head = 0


def _fresh_copy(x: torch.Tensor) -> torch.Tensor:
    if x.device.type == "cpu":
        return x.clone(memory_format=torch.contiguous_format)
    return x.to("cpu", copy=True).contiguous()
