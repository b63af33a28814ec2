"""A CUDA-only DDP script, migrated with the default rule set, trains under torchrun with two
CPU processes (gloo): the backend, device strings, device indices, ``device_ids`` and the
device-type test all reach the process group and the model through names (issue 19)."""

import os
import subprocess
import sys
import textwrap

import pytest

from tensorsight.migrate.rulesets import load_ruleset
from tensorsight.migrate.source import migrate_source

SCRIPT = textwrap.dedent(
    """\
    import argparse
    import os
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", default="nccl", choices=["nccl", "gloo"])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    dist.init_process_group(backend=args.dist_backend)
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = f"cuda:{local_rank}"
    device_type = "cuda" if "cuda" in device else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(local_rank)
    model = DDP(model, device_ids=[local_rank], output_device=local_rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        x = torch.randn(8, 4)
        x = x.pin_memory().to(device) if device_type == "cuda" else x.to(device)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    path = os.path.join(args.out, "w.pt")
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), path)
    dist.barrier()
    loc = "cuda:{}".format(local_rank)
    state = torch.load(path, map_location=loc)
    line = f"ok {dist.get_rank()} {dist.get_backend()} {device_type} {sorted(state)}"
    with open(os.path.join(args.out, f"rank{dist.get_rank()}.txt"), "w") as f:
        f.write(line)  # one file a rank: printed lines of two processes can interleave
    dist.destroy_process_group()
    """
)


#: Each process takes a share of the node's GPUs (``--local_world_size``), as in the
#: launcher tutorials: on the CPU the share was 0 and ``device_ids[0]`` an index of nothing.
SPLIT = textwrap.dedent(
    """\
    import argparse
    import os
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    parser = argparse.ArgumentParser()
    parser.add_argument("--local_world_size", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    n = torch.cuda.device_count() // args.local_world_size
    device_ids = list(range(local_rank * n, (local_rank + 1) * n))
    model = DDP(torch.nn.Linear(3, 2).cuda(device_ids[0]), device_ids)
    y = torch.randn(4, 2).to(device_ids[0])
    loss = (model(torch.randn(4, 3)) - y).square().mean()
    loss.backward()
    with open(os.path.join(args.out, f"rank{dist.get_rank()}.txt"), "w") as f:
        f.write(f"ok {dist.get_rank()} {dist.get_backend()} {n} {device_ids}")
    dist.destroy_process_group()
    """
)


def _torchrun(script, tmp_path, *args):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc_per_node=2", str(script), "--out", str(tmp_path), *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, env=env, check=False, cwd=tmp_path
    )


@pytest.mark.slow
def test_a_share_of_the_gpus_per_process_trains_on_two_cpu_processes(tmp_path):
    pytest.importorskip("torch.distributed.run")
    out = migrate_source(SPLIT, load_ruleset("accelerator").instantiate(), path="split.py")
    assert [s.status for s in out.sites if s.status not in ("rewritten", "kept")] == []
    script = tmp_path / "split.py"
    script.write_text(out.new_code)
    proc = _torchrun(script, tmp_path, "--local_world_size=2")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    for rank in (0, 1):
        line = (tmp_path / f"rank{rank}.txt").read_text()
        assert line == f"ok {rank} gloo 1 [{rank}]"  # one device each: the CPU


@pytest.mark.slow
def test_migrated_ddp_script_trains_on_two_cpu_processes(tmp_path):
    pytest.importorskip("torch.distributed.run")
    out = migrate_source(SCRIPT, load_ruleset("accelerator").instantiate(), path="ddp.py")
    left = [(s.line, s.rule_id, s.status) for s in out.sites if s.status != "rewritten"]
    assert left == []  # every CUDA value in the script was followed and fixed by default
    assert "nccl" not in out.new_code.replace('"nccl", "gloo"', "")
    script = tmp_path / "ddp.py"
    script.write_text(out.new_code)
    proc = _torchrun(script, tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    for rank in (0, 1):
        line = (tmp_path / f"rank{rank}.txt").read_text()
        assert line == f"ok {rank} gloo cpu ['bias', 'weight']"


def test_ddp_device_ids_planted_and_fixed_in_a_one_process_gloo_group():
    """Unmigrated, ``device_ids=[rank]`` raises for a CPU module; migrated, the same runs."""
    torch = pytest.importorskip("torch")
    dist = torch.distributed
    snippet = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "local_rank = 0\nmodel = DDP(torch.nn.Linear(1, 1), device_ids=[local_rank])\n"
    )
    migrated = migrate_source(snippet, load_ruleset("accelerator").instantiate()).new_code
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        with pytest.raises(ValueError, match="device_ids"):
            exec(snippet, {})
        namespace: dict[str, object] = {}
        exec(migrated, namespace)
        assert isinstance(namespace["model"], torch.nn.parallel.DistributedDataParallel)
    finally:
        dist.destroy_process_group()
