"""CopyArena: copies equal their sources, regions come back in order, overflow is safe."""

from __future__ import annotations

import pytest

from tensorsight.capture._arena import CopyArena

torch = pytest.importorskip("torch")


def _arena(capacity=1 << 20):
    return CopyArena(capacity)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(16, 8),
        lambda: torch.randn(16, 8).t(),  # not contiguous: copied through torch
        lambda: torch.randn(4, 4)._neg_view(),  # a negative view: its values, not its bits
        lambda: torch.randn(10).to(torch.bfloat16),
        lambda: torch.tensor([True, False, True]),
        lambda: torch.tensor(3.5),
        lambda: torch.empty(0, 3),
    ],
)
def test_copies_equal_their_source_and_are_contiguous(make):
    src = make()
    expected = src.resolve_neg().clone()
    copy = _arena().copy(src)
    assert copy.is_contiguous()
    assert copy.dtype == src.dtype
    assert copy.shape == src.shape
    assert torch.equal(copy, expected)
    src.fill_(0)  # the copy does not follow later writes to the source
    assert torch.equal(copy, expected)


def test_regions_are_reused_after_release_and_the_ring_restarts_when_empty():
    arena = _arena()
    a = arena.copy(torch.ones(1024))  # 4 KiB
    b = arena.copy(torch.ones(1024))
    assert b.data_ptr() == a.data_ptr() + 4096
    assert arena.used == 8192
    arena.release(a)
    assert arena.used == 4096  # the tail moved past a
    arena.release(b)
    assert arena.used == 0
    c = arena.copy(torch.ones(1024))
    assert c.data_ptr() == a.data_ptr()  # empty: starts again at 0


def test_out_of_order_release_frees_only_once_the_oldest_is_back():
    arena = _arena()
    a, b = arena.copy(torch.ones(1024)), arena.copy(torch.ones(1024))
    arena.release(b)
    assert arena.used == 8192
    arena.release(a)
    assert arena.used == 0


def test_the_ring_wraps_around():
    arena = _arena(1 << 20)
    quarter = torch.ones(1 << 16)  # 256 KiB = a quarter of the arena
    first = [arena.copy(quarter) for _ in range(3)]
    arena.release(first[0])
    arena.release(first[1])
    d = arena.copy(quarter)  # fits after the third region
    e = arena.copy(quarter)  # does not fit at the end: wraps to the start
    assert e.data_ptr() == first[0].data_ptr()
    assert torch.equal(d, quarter)
    assert torch.equal(e, quarter)


def test_large_tensors_and_a_full_ring_get_fresh_memory():
    arena = _arena(1 << 20)
    big = torch.ones(1 << 17)  # 512 KiB: more than a quarter
    copy = arena.copy(big)
    assert torch.equal(copy, big)
    assert arena.used == 0
    quarter = torch.ones(1 << 16)
    held = [arena.copy(quarter) for _ in range(4)]
    assert arena.used == 1 << 20
    extra = arena.copy(quarter * 2)  # no room: fresh memory, no waiting
    assert torch.equal(extra, quarter * 2)
    assert arena.used == 1 << 20
    arena.release(extra)  # not from the arena: ignored
    arena.release(torch.ones(3))
    assert all(torch.equal(h, quarter) for h in held)
    arena.release(held[0])
    again = arena.copy(quarter * 3)  # a released region is used again
    assert again.data_ptr() == held[0].data_ptr()
    arena.close()


def test_an_op_larger_than_the_arena_is_recorded_in_tensor_mode(tmp_path):
    import numpy as np

    import tensorsight
    from tensorsight.capture import read_dump

    xs = [torch.randn(1 << 16) for _ in range(24)]  # 6 MiB of inputs, a 1 MiB arena
    with tensorsight.dump(tmp_path / "d", mode="tensor", level="op", max_queue_bytes=1 << 20):
        torch._foreach_neg(xs)
    step = read_dump(tmp_path / "d").step()
    (op,) = step.ops
    for row, x in zip(op.inputs, xs, strict=True):
        np.testing.assert_array_equal(step.load(row), x.numpy())
