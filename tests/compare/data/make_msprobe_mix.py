"""Writes ``msprobe_mix/{fp32,bf16}``: real msprobe mix-level tensor dumps of :class:`Net`.

One training step (forward, backward, AdamW) of a tiny conv net, once in float32 and once
under CPU bfloat16 autocast: a healthy pair that differs only by rounding. The conv's bias
feeds a BatchNorm, so its gradient is 0 in exact arithmetic and both runs hold rounding noise
there (relative difference ~1, inherited, not an error). Run with an environment that has
mindstudio-probe 26.2.0 and torch (the tests read the committed output)::

    python tests/compare/data/make_msprobe_mix.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).parent


class Net(nn.Module):
    """Conv, BatchNorm, ReLU, max pool, Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.fc = nn.Linear(3 * 2 * 2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn(self.conv(x)))
        return self.fc(nn.functional.max_pool2d(h, 2).flatten(1))


def dump(out: Path, bf16: bool) -> None:
    from msprobe.pytorch import PrecisionDebugger

    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config.json"
        task = {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}
        cfg.write_text(
            json.dumps(
                {"task": "tensor", "dump_path": str(out), "rank": [], "step": [], "level": "mix",
                 "tensor": task}
            )
        )  # fmt: skip
        torch.manual_seed(0)
        model = Net()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = torch.randn(2, 2, 4, 4), torch.tensor([1, 2])
        dbg = PrecisionDebugger(config_path=str(cfg))
        dbg.start(model)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        dbg.stop()
        dbg.step()
    for proc in out.glob("step0/proc*"):
        (proc / "stack.json").unlink(missing_ok=True)  # call stacks name this machine's paths


def main() -> None:
    if len(sys.argv) == 2:  # one run per process: msprobe's debugger is a singleton
        dump(HERE / "msprobe_mix" / sys.argv[1], sys.argv[1] == "bf16")
        return
    for name in ("fp32", "bf16"):
        subprocess.run([sys.executable, __file__, name], check=True)
    print("wrote", HERE / "msprobe_mix", file=sys.stderr)


if __name__ == "__main__":
    main()
