"""Write the MindSpore Dump fixtures in ``mindspore/``: one training step of a tiny MLP, twice.

Run it with a Python that has MindSpore (2.10.0 made the stored fixtures; the tests only read
them, MindSpore is not needed for that)::

    python3 -m venv /tmp/msvenv && /tmp/msvenv/bin/pip install mindspore==2.10.0 numpy
    /tmp/msvenv/bin/python tests/dumpformat/data/make_mindspore_dump.py [RUN ...]

(no RUN: all three; names as below. Each run rewrites its folder, with new timestamps.)

The model is ``Dense(4, 8) -> LayerNorm(8) -> GELU (erf) -> Dense(8, 3)`` with weights drawn
from a fixed seed, trained for one step (MSE loss, SGD with learning rate 0.1) in graph mode
through ``TrainOneStepCell(WithLossCell(net, loss))`` on the CPU, with MindSpore's Dump
(``MINDSPORE_DUMP_CONFIG``, ``saved_data: tensor``, every kernel, inputs and outputs):

- ``mindspore/fp32``: the healthy run (LayerNorm epsilon 1e-5);
- ``mindspore/ln_eps``: the same run with one planted bug, LayerNorm epsilon 1e-1;
- ``mindspore/casts``: a forward pass only, ``x`` cast to bfloat16 and float16 and back
  (MindSpore writes bfloat16 ``.npy`` files with the descr ``<E2``, which numpy lacks).

Each run goes to a fresh process, because MindSpore reads the Dump configuration once at
start-up. The Dump refuses output paths with characters other than letters, digits, ``-``,
``_`` and ``/``, so the runs write to a plain temporary folder and are copied here. Removed
from what MindSpore writes: ``rank_0/graphs/`` (the IR and protobuf graphs, about 220 KB a
run, that the reader does not use). Kept: the tensors, ``execution_order/`` and
``.dump_metadata/`` (whose ``data_dump.json`` names the temporary path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent / "mindspore"
RUNS = {"fp32": 1e-5, "ln_eps": 1e-1, "casts": 0.0}  # name -> LayerNorm epsilon (0: casts)


def _config(out: Path) -> dict[str, object]:
    return {
        "common_dump_settings": {
            "op_debug_mode": 0,
            "dump_mode": 0,  # every kernel
            "path": str(out),
            "net_name": "MLP",
            "iteration": "all",
            "saved_data": "tensor",  # "statistic" is refused on the CPU
            "input_output": 0,  # inputs and outputs
            "kernels": [],
            "support_device": [0],
        },
        "e2e_dump_settings": {"enable": True, "trans_flag": True},
    }


def run_casts() -> None:
    """A jitted forward pass through bfloat16 and float16 kernels."""
    import mindspore as ms
    import numpy as np
    from mindspore import Tensor, nn, ops

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")

    class Casts(nn.Cell):
        def construct(self, x):
            a = ops.cast(x, ms.bfloat16)
            b = ops.cast(x, ms.float16)
            return ops.cast(a * a, ms.float32) + ops.cast(b + b, ms.float32)

    x = Tensor((np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5) / 7)
    print("out", Casts()(x).asnumpy().tolist())


def run_step(eps: float) -> None:
    """One jitted forward + backward + SGD step (the Dump is configured by the parent)."""
    import mindspore as ms
    import numpy as np
    from mindspore import Tensor, nn

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")

    class MLP(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Dense(4, 8)
            self.norm = nn.LayerNorm((8,), epsilon=eps)
            self.act = nn.GELU(approximate=False)
            self.fc2 = nn.Dense(8, 3)

        def construct(self, x):
            return self.fc2(self.act(self.norm(self.fc1(x))))

    net = MLP()
    rng = np.random.RandomState(25)
    for p in net.trainable_params():  # fixed weights: the same in both runs
        value = rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)
        if "gamma" in p.name:
            value = 1.0 + 0.1 * value
        p.set_data(Tensor(value))
    x = Tensor(rng.randn(2, 4).astype(np.float32))
    y = Tensor(rng.randn(2, 3).astype(np.float32))
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    print("loss", float(step(x, y).asnumpy()))


def main(names: list[str]) -> None:
    HERE.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="msdump_") as tmp:
        for name in names or RUNS:
            eps = RUNS[name]
            out = Path(tmp) / name
            cfg = Path(tmp) / f"{name}_config.json"
            cfg.write_text(json.dumps(_config(out)))
            env = dict(os.environ, MINDSPORE_DUMP_CONFIG=str(cfg))
            cmd = [sys.executable, __file__, "--run", repr(eps)]
            subprocess.run(cmd, env=env, check=True)
            shutil.rmtree(out / "rank_0" / "graphs", ignore_errors=True)
            dst = HERE / name
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(out, dst)
            for f in dst.rglob("*"):  # MindSpore writes its files read-only
                f.chmod(0o755 if f.is_dir() else 0o644)
            print(name, sum(1 for _ in dst.rglob("*.npy")), "tensor files")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--run":
        eps = float(sys.argv[2])
        run_step(eps) if eps else run_casts()
    else:
        main(sys.argv[1:])
