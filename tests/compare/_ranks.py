"""Four real ranks dumped by ``tensorsight.dump`` from a tiny MLP, for the multi-rank tests.

The target's rank :data:`BUG_RANK` has a planted bug (one weight scaled by 1.05); ``short``
holds one rank fewer than ``bench``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

RANKS = 4
BUG_RANK = 2


def _capture(path: Path, model: object, x: object) -> Path:
    from tensorsight.capture import dump

    with dump(path, mode="tensor", steps=[0], overwrite=True):
        model(x).sum().backward()  # type: ignore[operator]
    return path


def make_rank_dumps(root: Path) -> dict[str, Path]:
    """Write ``bench``, ``target`` and ``short`` under ``root``; return their paths."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    x = torch.randn(4, 8)
    ok = _capture(root / "ok", model, x)
    with torch.no_grad():
        model[2].weight.mul_(1.05)
    bug = _capture(root / "bug", model, x)
    bench, target, short = root / "bench", root / "target", root / "short"
    for r in range(RANKS):
        shutil.copytree(ok / "rank0", bench / f"rank{r}")
        shutil.copytree((bug if r == BUG_RANK else ok) / "rank0", target / f"rank{r}")
        if r < RANKS - 1:
            shutil.copytree(ok / "rank0", short / f"rank{r}")
    return {"bench": bench, "target": target, "short": short}
