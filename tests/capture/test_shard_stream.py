"""ShardStream: tensors written as they come, header last; safetensors reads the result."""

from __future__ import annotations

import numpy as np
import pytest

import tensorsight
from tensorsight.capture import read_dump, writer
from tensorsight.capture._safetensors import ShardFile, ShardStream

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
