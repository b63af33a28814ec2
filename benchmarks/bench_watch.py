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
rounds' ratios. Steps are timed in the process's CPU time (``time.process_time``: torch
runs on one thread, and the event writer's thread is counted too), so other jobs on a
shared machine disturb the figure less than wall time.
Goal (issue 24): <= 1.05x.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from typing import Any

from benchmarks.harness import Harness, Result

STEPS = 20


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


def _steps(model: Any, opt: Any, x: Any, y: Any, n: int, w: Any = None) -> float:
    import torch

    start = time.process_time()
    for _ in range(n):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if w is not None:
            w.log_loss(loss)
        opt.step()
    return (time.process_time() - start) / n


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
    ratios = []
    ratios_fwd = []
    anomalies = 0
    with tempfile.TemporaryDirectory() as root:
        for i in range(h.repeat):
            plain.seconds.append(_steps(model, opt, x, y, steps))
            # a fresh watch per round (hooks off during the plain rounds); only steps are timed
            with tensorsight.watch(model, opt, f"{root}/round{i}") as w:
                _steps(model, opt, x, y, 1, w)  # step 0, untimed: it records the graph once
                watched.seconds.append(_steps(model, opt, x, y, steps, w))
            anomalies += len(w.anomalies)
            ratios.append(watched.seconds[-1] / plain.seconds[-1])
            with tensorsight.watch(model, opt, f"{root}/fwd{i}", backward=False) as w:
                _steps(model, opt, x, y, 1, w)
                forward_only.seconds.append(_steps(model, opt, x, y, steps, w))
            anomalies += len(w.anomalies)
            ratios_fwd.append(forward_only.seconds[-1] / plain.seconds[-1])
    h.compare("plain step")
    h.note(
        f"watch overhead: x{statistics.median(ratios):.3f} of the plain step (median of "
        f"{len(ratios)} rounds of {steps} steps; rounds: "
        + " ".join(f"{r:.3f}" for r in ratios)
        + f"); backward=False x{statistics.median(ratios_fwd):.3f}; goal <= 1.05; "
        f"anomalies seen: {anomalies}; 1 thread, process CPU time"
    )
