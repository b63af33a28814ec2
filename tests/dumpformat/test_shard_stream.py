"""ShardStream: tensors written as they come, header last; safetensors reads the result."""

from __future__ import annotations

import numpy as np
import pytest

import tensorsight
from tensorsight.capture import read_dump
from tensorsight.dumpformat import writer
from tensorsight.dumpformat._safetensors import ShardFile, ShardStream

torch = pytest.importorskip("torch")


def test_a_streamed_shard_opens_with_safetensors(tmp_path):
    safe_open = pytest.importorskip("safetensors").safe_open
    from tensorsight.capture._torch_stats import dtype_name, tensor_bytes

    tensors = {
        "a": torch.randn(3, 5),
        "b": torch.arange(7, dtype=torch.int64),
        "c": torch.randn(4).to(torch.bfloat16),
        "d": torch.empty(0, 2),
    }
    path = tmp_path / "s.safetensors"
    stream = ShardStream(path, 4096)
    for k, t in tensors.items():
        assert stream.fits(k, dtype_name(t.dtype), tuple(t.shape), t.nbytes)
        stream.add(k, dtype_name(t.dtype), tuple(t.shape), tensor_bytes(t))
    assert not path.exists()  # only the temporary file until the header is written
    written = stream.finish({"who": "test"})
    assert written == path.stat().st_size
    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == {"who": "test"}
        for k, t in tensors.items():
            assert torch.equal(f.get_tensor(k), t), k
    shard = ShardFile(path)
    np.testing.assert_array_equal(shard.get("b"), np.arange(7))
    shard.close()


def test_a_full_header_space_refuses_more_tensors(tmp_path):
    stream = ShardStream(tmp_path / "s.safetensors", 1024)
    n = 0
    while stream.fits(f"t{n}", "float32", (1,), 4):
        stream.add(f"t{n}", "float32", (1,), memoryview(np.float32([n]).tobytes()))
        n += 1
    assert 3 < n < 20
    stream.finish({"format": "tensorsight-dump", "step": "123456"})
    shard = ShardFile(tmp_path / "s.safetensors")
    assert shard.keys() == [f"t{i}" for i in range(n)]
    shard.close()


def test_tensor_mode_opens_new_shards_when_headers_fill(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "SHARD_HEADER_BYTES", 2048)
    xs = [torch.randn(8) for _ in range(60)]
    with tensorsight.dump(tmp_path / "d", mode="tensor", level="op"):
        for x in xs:
            torch.neg(x)
    step = read_dump(tmp_path / "d").step()
    shards = sorted(p.name for p in (tmp_path / "d/rank0/step0").glob("*.safetensors"))
    assert len(shards) > 2
    for op, x in zip(step.ops, xs, strict=True):
        np.testing.assert_array_equal(step.load(op.inputs[0]), x.numpy())
        np.testing.assert_array_equal(step.load(op.outputs[0]), (-x).numpy())


def _aligned(nbytes: int) -> np.ndarray:
    """A uint8 buffer of ``nbytes`` starting on a 4 KiB boundary, filled with a pattern."""
    raw = np.empty(nbytes + 4096, dtype=np.uint8)
    skip = -raw.ctypes.data % 4096
    out = raw[skip : skip + nbytes]
    out[:] = np.arange(nbytes) % 251
    return out


def _direct_supported(folder) -> bool:
    from tensorsight.dumpformat import _fs

    probe = folder / "probe"
    probe.write_bytes(b"")
    fd = _fs.open_direct(probe)
    if fd is None:
        return False
    import os

    os.close(fd)
    return True


def test_large_aligned_tensors_skip_the_page_cache_and_read_back_exactly(tmp_path):
    from tensorsight.dumpformat._safetensors import DIRECT_MIN_BYTES

    big = _aligned(DIRECT_MIN_BYTES * 2)  # aligned address, size a multiple of 4 KiB
    odd = _aligned(DIRECT_MIN_BYTES + 100)  # aligned head, a 100-byte tail
    small = np.arange(7, dtype=np.uint8)  # leaves the next offset unaligned
    after = _aligned(DIRECT_MIN_BYTES)
    stream = ShardStream(tmp_path / "s.safetensors", 64 << 10, direct=True)
    expected = {}
    for key, arr in (("big", big), ("odd", odd), ("small", small), ("after", after)):
        stream.add(key, "uint8", (arr.size,), memoryview(arr))
        expected[key] = arr.copy()
    stream.finish({})
    if _direct_supported(tmp_path):
        # big and odd's head went direct; after "small" the offset is unaligned
        assert stream.direct_bytes == big.size + (odd.size - 100)
    shard = ShardFile(tmp_path / "s.safetensors")
    for key, arr in expected.items():
        np.testing.assert_array_equal(shard.get(key), arr, err_msg=key)
    shard.close()


def test_without_direct_io_or_when_refused_everything_goes_through_the_page_cache(
    tmp_path, monkeypatch
):
    import errno
    import os

    from tensorsight.dumpformat import _fs

    big = _aligned(4 << 20)
    # a file system without O_DIRECT
    monkeypatch.setattr(_fs, "open_direct", lambda path: None)
    stream = ShardStream(tmp_path / "a.safetensors", 64 << 10, direct=True)
    stream.add("x", "uint8", (big.size,), memoryview(big))
    stream.finish({})
    assert stream.direct_bytes == 0
    monkeypatch.undo()

    # one that opens O_DIRECT but refuses the write (EINVAL): the data goes buffered
    def refuse(fd, data, offset):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))

    monkeypatch.setattr(_fs, "write_at", refuse)
    stream = ShardStream(tmp_path / "b.safetensors", 64 << 10, direct=True)
    stream.add("x", "uint8", (big.size,), memoryview(big))
    stream.add("y", "uint8", (big.size,), memoryview(big))
    stream.finish({})
    assert stream.direct_bytes == 0
    for name in ("a", "b"):
        shard = ShardFile(tmp_path / f"{name}.safetensors")
        np.testing.assert_array_equal(shard.get("x"), big)
        shard.close()


def test_a_full_disk_during_a_direct_write_is_an_error_not_a_fallback(tmp_path, monkeypatch):
    import errno
    import os

    from tensorsight.dumpformat import _fs

    if not _direct_supported(tmp_path):
        pytest.skip("no direct I/O on this file system")

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_fs, "write_at", full)
    big = _aligned(4 << 20)
    stream = ShardStream(tmp_path / "s.safetensors", 64 << 10, direct=True)
    with pytest.raises(OSError, match="No space"):
        stream.add("x", "uint8", (big.size,), memoryview(big))
    stream.abandon()


def test_tensor_mode_writes_large_copies_directly_and_reads_them_back(tmp_path, monkeypatch):
    from tensorsight.dumpformat import _fs

    if not _direct_supported(tmp_path):
        pytest.skip("no direct I/O on this file system")
    direct = []
    write_at = _fs.write_at

    def spy(fd, data, offset):
        direct.append(data.nbytes)
        write_at(fd, data, offset)

    monkeypatch.setattr(_fs, "write_at", spy)
    xs = [torch.randn(1 << 19) for _ in range(3)]  # 2 MiB each
    odd = torch.randn(1000)  # 4,000 bytes: unaligns the offsets after it
    with tensorsight.dump(tmp_path / "d", mode="tensor", level="api"):
        for x in xs:
            torch.neg(x)
        torch.neg(odd)
        torch.neg(xs[0] * 2)
    step = read_dump(tmp_path / "d").step()
    for op, x in zip(step.ops, [*xs, odd], strict=False):
        np.testing.assert_array_equal(step.load(op.inputs[0]), x.numpy())
        np.testing.assert_array_equal(step.load(op.outputs[0]), (-x).numpy())
    # the arena's copies are page-aligned: every 2 MiB copy before the odd one went direct
    assert sum(direct) >= 6 * (2 << 20)


def test_the_arena_page_aligns_large_copies():
    from tensorsight.capture._arena import PAGE_ALIGN_FROM, CopyArena

    arena = CopyArena(64 << 20)
    small = arena.copy(torch.arange(3, dtype=torch.float32))
    big = arena.copy(torch.randn(PAGE_ALIGN_FROM // 4))
    big2 = arena.copy(torch.randn(PAGE_ALIGN_FROM // 4 + 5))
    assert small.data_ptr() % 64 == 0
    assert big.data_ptr() % 4096 == 0
    assert big2.data_ptr() % 4096 == 0
    assert big2.data_ptr() >= big.data_ptr() + big.nbytes
    for t in (small, big, big2):
        arena.release(t)
    assert arena.used == 0
