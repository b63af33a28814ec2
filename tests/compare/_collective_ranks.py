"""Two real ranks joined by a ``broadcast`` (gloo, CPU), dumped by ``tensorsight.dump``.

Rank 1 computes a tiny MLP and broadcasts its output; rank 0 computes nothing and receives
it, like a later pipeline stage. In the target, rank 1's second layer has a planted bug
(a weight scaled by 1.05), so rank 0 diverges at the broadcast's output, an op that runs
*earlier in rank 0's execution order* than the bug in rank 1's. Run as
``python -m tests.compare._collective_ranks ROOT RANK`` (two processes, ranks 0 and 1).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BUG_RANK = 1


def make_collective_dumps(root: Path) -> dict[str, Path]:
    """Run both ranks; return the ``bench`` and ``target`` dump folders under ``root``."""
    repo = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.compare._collective_ranks", str(root), str(rank)],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in (0, 1)
    ]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"rank process failed ({p.returncode}):\n{out}")
    return {"bench": root / "bench", "target": root / "target"}


def _rank(root: Path, rank: int) -> None:
    import torch
    import torch.distributed as dist

    from tensorsight.capture import dump

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{root / 'rendezvous'}", rank=rank, world_size=2
    )
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    x = torch.randn(4, 8)
    for side in ("bench", "target"):
        if side == "target" and rank == BUG_RANK:
            with torch.no_grad():
                model[2].weight.mul_(1.05)
        with torch.no_grad(), dump(root / side / f"p{rank}", mode="tensor", steps=[0]):
            h = model(x) if rank == BUG_RANK else torch.zeros(4, 4)
            dist.broadcast(h, src=BUG_RANK)
            torch.tanh(h)
        dist.barrier()
    dist.destroy_process_group()
    for side in ("bench", "target"):  # one dump folder of rank folders, as a job writes it
        (root / side / f"p{rank}" / f"rank{rank}").rename(root / side / f"rank{rank}")


if __name__ == "__main__":
    _rank(Path(sys.argv[1]), int(sys.argv[2]))
