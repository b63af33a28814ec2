"""Collection without logging code, and a training monitor: :func:`watch`.

``tensorsight.watch(model, optimizer, logdir=..., every=N, histograms=REGEX)`` logs a plain
PyTorch loop through module and optimizer hooks (loss, learning rates, gradient and weight
norms, histograms, hyperparameters) and checks every step for NaN/Inf, float16/bfloat16
overflow and underflow, spikes and dead tensors. Read ``watch.py`` first, then
``_checks.py`` (the verdicts, numpy only) and ``_collect.py`` (tag names and values, meant
to be shared by every framework adapter); ``tags.py`` holds the names that readers of the
monitor's summaries share (the board's monitor view).
"""

from tensorsight.monitor._checks import Anomaly
from tensorsight.monitor.tags import KINDS
from tensorsight.monitor.watch import ON_ANOMALY, AnomalyWarning, Watch, watch

__all__ = ["KINDS", "ON_ANOMALY", "Anomaly", "AnomalyWarning", "Watch", "watch"]
