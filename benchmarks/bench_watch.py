"""watch: a small transformer's training step with and without ``tensorsight.watch``.

The model is a 4-layer ``nn.TransformerEncoder`` (d_model 256, 4 heads, feed-forward 1024,
batch 16 x sequence 128; quick: 2 layers, d_model 64, batch 4 x 32) with a linear head and
AdamW; one step is zero_grad, forward, MSE loss, backward, ``log_loss`` (watched runs only)
and ``optimizer.step()``. The watched run uses the default settings (``every=10``, the
monitor on, warnings on), so one step in ten also writes the scalars and five histograms.
Each watch's step 0, which records the model's graph once (a one-off forward through the
dispatch-mode recorder), is run untimed. A third run turns the backward-pass checks off
(``backward=False``), to show what they cost. Plain and watched steps alternate in rounds
of ``STEPS`` steps, so drift of the machine hits both; the note gives the median of the
rounds' ratios, and their pooled ratio (total watched time over total plain time). Steps are
timed in CPU time, so other jobs on a shared machine disturb the figure less than wall
time, on two clocks: the training thread's (``time.thread_time``: torch runs on one
thread, and the CPU backward pass runs on the thread that calls ``backward()``; the
table's figures) and the process's (``time.process_time``: the event writer's thread
counted too; in the note).
Goal (issue 24): <= 1.05x.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from typing import Any

from benchmarks.harness import Harness, Result

STEPS = 10


def _build(quick: bool) -> tuple[Any, Any, Any, Any]:
    import torch

    torch.manual_seed(0)
    layers, width, batch, seq = (2, 64, 4, 32) if quick else (4, 256, 16, 128)
    layer = torch.nn.TransformerEncoderLayer(
        width, nhead=4, dim_feedforward=4 * width, dropout=0.0, batch_first=True
    )
    # the nested-tensor fast path only runs in eval mode; say so instead of warning
    encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    model = torch.nn.Sequential(encoder, torch.nn.Linear(width, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, seq, width)
    y = torch.randn(batch, seq, 1)
    return model, opt, x, y


def _steps(model: Any, opt: Any, x: Any, y: Any, n: int, w: Any = None) -> tuple[float, float]:
    """Seconds per step in the thread's and in the process's CPU time."""
    import torch

    start, start_process = time.thread_time(), time.process_time()
    for _ in range(n):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if w is not None:
            w.log_loss(loss)
        opt.step()
    return (time.thread_time() - start) / n, (time.process_time() - start_process) / n


def run(h: Harness) -> None:
    """Alternate rounds of plain and watched steps; note the overhead ratio."""
    import torch

    import tensorsight

    torch.set_num_threads(1)  # the figure should not depend on what else the cores run
    model, opt, x, y = _build(h.quick)
    steps = 3 if h.quick else STEPS
    _steps(model, opt, x, y, 2)  # warm-up (allocator, AdamW state)
    plain = h.results.setdefault("plain step", Result("plain step"))
    watched = h.results.setdefault("watched step", Result("watched step"))
    forward_only = h.results.setdefault(
        "watched, backward=False", Result("watched, backward=False")
    )
    ratios: list[float] = []
    ratios_fwd: list[float] = []
    ratios_process: list[float] = []
    totals = {"plain": 0.0, "watched": 0.0, "fwd": 0.0}
    anomalies = 0
    with tempfile.TemporaryDirectory() as root:
        for i in range(h.repeat):
            base, base_process = _steps(model, opt, x, y, steps)
            plain.seconds.append(base)
            # a fresh watch per round (hooks off during the plain rounds); only steps are timed
            with tensorsight.watch(model, opt, f"{root}/round{i}") as w:
                _steps(model, opt, x, y, 1, w)  # step 0, untimed: it records the graph once
                cost, cost_process = _steps(model, opt, x, y, steps, w)
            watched.seconds.append(cost)
            anomalies += len(w.anomalies)
            ratios.append(cost / base)
            ratios_process.append(cost_process / base_process)
            with tensorsight.watch(model, opt, f"{root}/fwd{i}", backward=False) as w:
                _steps(model, opt, x, y, 1, w)
                fwd, _ = _steps(model, opt, x, y, steps, w)
            forward_only.seconds.append(fwd)
            anomalies += len(w.anomalies)
            ratios_fwd.append(fwd / base)
            totals["plain"] += base
            totals["watched"] += cost
            totals["fwd"] += fwd
    h.compare("plain step")
    load = " ".join(f"{v:.1f}" for v in os.getloadavg())
    h.note(
        f"watch overhead, training thread's CPU time: x{statistics.median(ratios):.3f} of the "
        f"plain step (median of {len(ratios)} rounds of {steps} steps; pooled "
        f"x{totals['watched'] / totals['plain']:.3f}; rounds: "
        + " ".join(f"{r:.3f}" for r in ratios)
        + f"); backward=False x{statistics.median(ratios_fwd):.3f} (pooled "
        f"x{totals['fwd'] / totals['plain']:.3f}); process CPU time "
        f"x{statistics.median(ratios_process):.3f}; goal <= 1.05; anomalies seen: "
        f"{anomalies}; 1 thread; load average {load}"
    )
