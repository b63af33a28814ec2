"""torch.distributed: two processes on gloo, one folder per rank."""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tensorsight.capture import read_dump


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, world: int, port: int, out: str) -> None:
    import tensorsight

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        x = torch.full((3, 4), float(rank + 1))
        with tensorsight.dump(out, mode="md5") as d:
            loss = model(x).sum()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            d.step()
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not built")
def test_two_gloo_ranks_write_one_folder_each(tmp_path):
    out = str(tmp_path / "d")
    mp.start_processes(
        _worker, args=(2, _free_port(), out), nprocs=2, join=True, start_method="spawn"
    )
    d = read_dump(out)
    assert d.ranks == [0, 1]
    assert d.complete
    for rank in (0, 1):
        m = d.manifest(rank)
        assert (m.rank, m.world_size) == (rank, 2)
        ops = d.step(rank, 0).ops
        reduce = [o for o in ops if "allreduce" in o.op]
        assert reduce, [o.op for o in ops]
    # inputs differ per rank, the all-reduced gradients agree
    x0 = d.step(0, 0).ops[1].inputs[1]
    x1 = d.step(1, 0).ops[1].inputs[1]
    assert x0.fingerprint != x1.fingerprint
    g0 = [t for o in d.step(0, 0).ops if "allreduce" in o.op for t in o.outputs]
    g1 = [t for o in d.step(1, 0).ops if "allreduce" in o.op for t in o.outputs]
    assert g0
    assert [t.fingerprint for t in g0] == [t.fingerprint for t in g1]
