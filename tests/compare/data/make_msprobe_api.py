"""Writes ``msprobe_api/``: a real msprobe L1 tensor dump of :class:`Block` (one step).

Run with an environment that has mindstudio-probe 26.2.0 and torch (not needed by the tests,
which read the committed output)::

    python tests/compare/data/make_msprobe_api.py

The tests dump the same model and input with ``tensorsight.dump(level="api")`` and compare.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).parent


class Block(nn.Module):
    """Linear, gelu, a matmul with a transposed weight, a residual add, layer norm, softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 4)
        self.ln = nn.LayerNorm(4)
        self.gelu = "none"  # "tanh" plants a bug in F.gelu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.fc1(x), approximate=self.gelu)
        y = torch.matmul(h, self.fc2.weight.t())
        y = y + x
        return self.ln(y).softmax(-1)


def make() -> tuple[Block, torch.Tensor]:
    """The model and input, after ``torch.manual_seed(0)``."""
    torch.manual_seed(0)
    model = Block()
    return model, torch.randn(2, 4)


def main() -> None:
    from msprobe.pytorch import PrecisionDebugger

    out = HERE / "msprobe_api"
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config.json"
        task = {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}
        cfg.write_text(
            json.dumps(
                {
                    "task": "tensor",
                    "dump_path": str(out),
                    "rank": [],
                    "step": [],
                    "level": "L1",
                    "tensor": task,
                }
            )
        )
        model, x = make()
        dbg = PrecisionDebugger(config_path=str(cfg))
        dbg.start(model)
        model(x).sum().backward()
        dbg.stop()
        dbg.step()
    print("wrote", out, file=sys.stderr)


if __name__ == "__main__":
    main()
