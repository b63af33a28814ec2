"""Writing summaries: tensorsight.SummaryWriter vs torch.utils.tensorboard.SummaryWriter.

Same data through both writers: ``add_scalar`` x 100k and ``add_histogram`` x 1k (of 10k
values each), each case timed from the first call until ``close()`` returns (so the
background thread's work counts). ``--quick`` shrinks both by 20x.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.harness import Harness


def _scalars(cls: Any, n: int) -> Callable[[], None]:
    def run() -> None:
        folder = tempfile.mkdtemp(prefix="bench_write_")
        try:
            writer = cls(folder)
            for step in range(n):
                writer.add_scalar("loss/train", 1.0 / (step + 1), step)
            writer.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    return run


def _histograms(cls: Any, n: int, values: Any) -> Callable[[], None]:
    def run() -> None:
        folder = tempfile.mkdtemp(prefix="bench_write_")
        try:
            writer = cls(folder)
            for step in range(n):
                writer.add_histogram("weights", values[step % len(values)], step)
            writer.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    return run


def run(h: Harness) -> None:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from tensorsight import SummaryWriter

    scale = 20 if h.quick else 1
    n_scalars, n_hists = 100_000 // scale, 1_000 // scale
    rng = np.random.default_rng(0)
    values = [rng.normal(size=10_000).astype(np.float32) for _ in range(8)]

    h.measure("torch add_scalar", _scalars(TorchWriter, n_scalars))
    h.measure("tensorsight add_scalar", _scalars(SummaryWriter, n_scalars))
    h.compare("torch add_scalar")
    torch_med = h.results["torch add_scalar"].median
    ours_med = h.results["tensorsight add_scalar"].median
    h.note(
        f"add_scalar x {n_scalars}: torch {n_scalars / torch_med:,.0f}/s, "
        f"tensorsight {n_scalars / ours_med:,.0f}/s (x{torch_med / ours_med:.2f})"
    )

    hist = Harness("write: add_histogram", repeat=h.repeat, quick=h.quick)
    hist.measure("torch add_histogram", _histograms(TorchWriter, n_hists, values))
    hist.measure("tensorsight add_histogram", _histograms(SummaryWriter, n_hists, values))
    hist.compare("torch add_histogram")
    torch_h = hist.results["torch add_histogram"].median
    ours_h = hist.results["tensorsight add_histogram"].median
    hist.note(
        f"add_histogram x {n_hists} (10k values each): torch {n_hists / torch_h:,.0f}/s, "
        f"tensorsight {n_hists / ours_h:,.0f}/s (x{torch_h / ours_h:.2f})"
    )
    h.note("")
    h.note(hist.table())
