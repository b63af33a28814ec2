"""The writer hands rows to its thread in batches: order, counters and stats stay exact."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorsight
from tensorsight.capture import read_dump
from tensorsight.dumpformat.writer import BATCH_ROWS

torch = pytest.importorskip("torch")


def _ops(tmp_path, mode, n_ops):
    torch.manual_seed(0)
    xs = [torch.randn(5) * (i + 1) for i in range(n_ops)]
    with tensorsight.dump(tmp_path / mode, mode=mode, level="op") as d:
        for i, x in enumerate(xs):
            torch.neg(x)
            if i == n_ops // 2:
                d.step()  # a step boundary inside a batch
    return xs, read_dump(tmp_path / mode)


@pytest.mark.parametrize("mode", ["statistics", "tensor", "md5"])
def test_rows_keep_their_order_and_values_across_batches(tmp_path, mode):
    n_ops = 3 * BATCH_ROWS + 7  # two rows per op: several full batches and a partial one
    xs, dump = _ops(tmp_path, mode, n_ops)
    first, second = dump.step(step=0), dump.step(step=1)
    rows = list(first.rows) + list(second.rows)
    assert len(rows) == 2 * n_ops
    assert [o.index for o in first.ops] == list(range(n_ops // 2 + 1))
    assert [o.index for o in second.ops] == list(range(n_ops - n_ops // 2 - 1))
    steps = dump.manifest().steps
    assert [(s.op_count, s.tensor_count) for s in steps] == [
        (n_ops // 2 + 1, 2 * (n_ops // 2 + 1)),
        (n_ops - n_ops // 2 - 1, 2 * (n_ops - n_ops // 2 - 1)),
    ]
    for op, x in zip(list(first.ops) + list(second.ops), xs, strict=True):
        inp, out = op.inputs[0].stats, op.outputs[0].stats
        assert inp.max == pytest.approx(float(x.max()))
        assert out.min == pytest.approx(-float(x.max()))
        assert inp.norm == pytest.approx(float(x.double().norm()))
        assert not math.isnan(inp.mean)
    if mode == "tensor":
        op = second.ops[-1]
        np.testing.assert_array_equal(second.load(op.outputs[0]), -xs[-1].numpy())


def test_tensor_mode_values_round_trip_across_steps_and_shards(tmp_path):
    xs = [torch.randn(64 * 1024) * (i + 1) for i in range(12)]  # 256 KiB each: 1 MiB shards
    with tensorsight.dump(tmp_path / "d", mode="tensor", level="op", shard_bytes=1 << 20) as d:
        for i, x in enumerate(xs):
            torch.neg(x)
            if i % 3 == 2:
                d.step()
    dump = read_dump(tmp_path / "d")
    ops = [op for s in dump.steps() for op in dump.step(step=s).ops]
    assert len(ops) == len(xs)
    for s in dump.steps():
        step = dump.step(step=s)
        for op, x in zip(step.ops, xs[3 * s : 3 * s + 3], strict=True):
            np.testing.assert_array_equal(step.load(op.inputs[0]), x.numpy())
            np.testing.assert_array_equal(step.load(op.outputs[0]), (-x).numpy())


def test_row_back_pressure_keeps_every_row(tmp_path, monkeypatch):
    from tensorsight.dumpformat import writer

    monkeypatch.setattr(writer, "MAX_QUEUE_ROWS", 3)  # the recorder waits almost every batch
    monkeypatch.setattr(writer, "BATCH_ROWS", 2)
    xs = [torch.randn(4) for _ in range(50)]
    with tensorsight.dump(tmp_path / "d", level="op"):
        for x in xs:
            torch.neg(x)
    step = read_dump(tmp_path / "d").step()
    assert [op.inputs[0].stats.max for op in step.ops] == pytest.approx(
        [float(x.max()) for x in xs]
    )


def test_the_manifest_catches_up_between_steps_without_a_close(tmp_path, monkeypatch):
    import time

    from tensorsight.dumpformat import writer
    from tensorsight.dumpformat.schema import DumpManifest

    monkeypatch.setattr(writer, "MANIFEST_SECS", 0.05)
    d = tensorsight.dump(tmp_path / "d", level="op").start()
    try:
        for _ in range(3):
            torch.neg(torch.ones(3))
            d.step()
        path = tmp_path / "d/rank0/manifest.json"
        deadline = time.monotonic() + 10
        done: list[int] = []
        while time.monotonic() < deadline:
            manifest = DumpManifest.from_json(path.read_text())
            done = [s.step for s in manifest.steps if s.complete]
            if done == [0, 1, 2]:
                break
            time.sleep(0.02)
        assert done == [0, 1, 2]  # written by the idle writer, the dump still open
        assert [s.step for s in manifest.steps] == [0, 1, 2, 3]  # step 3 is running
        assert not manifest.complete
    finally:
        d.close()
    assert read_dump(tmp_path / "d").complete
