"""What a training run logs without logging code: tag names and the values behind them.

MindSpore's ``SummaryCollector`` defaults, for PyTorch: the loss, each parameter group's
learning rate, gradient and weight norms per group and per parameter, histograms of the
first five parameters (or those whose name matches a pattern), and the hyperparameters
(optimizer class and defaults, batch size) at the end. :func:`tensorsight.watch` uses these;
an adapter for another framework's loop can use them too, so every source writes the same
tags:

=========================  ===================================================
tag                        value
=========================  ===================================================
``loss/auto``              mean of the losses given during the step
``lr/group<i>``            learning rate of parameter group ``i``
``grad_norm/group<i>``     L2 norm of all of group ``i``'s gradients
``grad_norm/param/<name>`` L2 norm of one parameter's gradient
``weight_norm/group<i>``   L2 norm of all of group ``i``'s parameters
``weight_norm/param/<n>``  L2 norm of one parameter
``weight/<name>``          histogram of one parameter (float32 copy)
``dataset_graph``          the data pipeline (``add_data_graph``), once
=========================  ===================================================

At the end, the hyperparameters carry the lineage too, under the names of MindSpore's
``TrainLineage`` fields so both kinds of run line up in the HParams view: ``optimizer``,
``batch_size``, ``loss_function``, ``train_dataset_size``, ``model_path`` (the last
checkpoint) and ``network`` (the model's class; ``model`` is kept as well).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tensorsight.monitor.tags import TAG_LOSS
from tensorsight.summary.lineage import (
    TAG_DATA_GRAPH,
    batch_size_of,
    dataset_size_of,
    lineage_of,
)

__all__ = [
    "HISTOGRAMS_BY_DEFAULT",
    "TAG_DATA_GRAPH",
    "TAG_LOSS",
    "batch_size_of",
    "dataset_size_of",
    "group_norm",
    "histogram_names",
    "hparams_of",
    "learning_rates",
    "lineage_of",
    "param_names",
    "tag_grad_norm",
    "tag_histogram",
    "tag_lr",
    "tag_weight_norm",
]

HISTOGRAMS_BY_DEFAULT = 5  # SummaryCollector's "first five parameters"


def tag_lr(group: int) -> str:
    """``lr/group<i>``."""
    return f"lr/group{group}"


def tag_grad_norm(group: int | None = None, name: str | None = None) -> str:
    """``grad_norm/group<i>`` for a group, ``grad_norm/param/<name>`` for one parameter."""
    return f"grad_norm/group{group}" if name is None else f"grad_norm/param/{name}"


def tag_weight_norm(group: int | None = None, name: str | None = None) -> str:
    """``weight_norm/group<i>`` for a group, ``weight_norm/param/<name>`` for one parameter."""
    return f"weight_norm/group{group}" if name is None else f"weight_norm/param/{name}"


def tag_histogram(name: str) -> str:
    """``weight/<name>``."""
    return f"weight/{name}"


def param_names(
    named: Iterable[tuple[str, Any]], groups: Sequence[Mapping[str, Any]]
) -> list[list[str]]:
    """Each optimizer group's parameter names, from ``model.named_parameters()``.

    A parameter the model does not name (handed to the optimizer only) is called
    ``group<i>.param<j>``.
    """
    by_id = {id(p): n for n, p in named}
    return [
        [by_id.get(id(p), f"group{i}.param{j}") for j, p in enumerate(group["params"])]
        for i, group in enumerate(groups)
    ]


def learning_rates(groups: Sequence[Mapping[str, Any]]) -> list[float]:
    """Each group's ``lr`` as a float (a tensor learning rate is read once); NaN if absent."""
    out = []
    for group in groups:
        lr = group.get("lr")
        out.append(math.nan if lr is None else float(lr))
    return out


def group_norm(norms: Iterable[float]) -> float:
    """The L2 norm of a group from its members' L2 norms."""
    return math.sqrt(sum(n * n for n in norms))


def histogram_names(names: Sequence[str], pattern: str | re.Pattern[str] | None) -> list[str]:
    """Names to histogram: those matching ``pattern`` (``re.search``), else the first five."""
    if pattern is None:
        return list(names[:HISTOGRAMS_BY_DEFAULT])
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    return [n for n in names if rx.search(n)]


def hparams_of(
    optimizer: Any, model: Any = None, batch_size: int | None = None
) -> dict[str, bool | float | str]:
    """Hyperparameters worth a row in the hparams table.

    ``optimizer`` (its class name and every scalar default: ``optimizer.lr``,
    ``optimizer.betas`` as text, ...), the model's class name and parameter count, and the
    batch size when known. Values that are neither bool, number nor text are skipped.
    """
    out: dict[str, bool | float | str] = {"optimizer": type(optimizer).__name__}
    defaults = getattr(optimizer, "defaults", {}) or {}
    for key, value in sorted(defaults.items()):
        flat = _flat(value)
        if flat is not None:
            out[f"optimizer.{key}"] = flat
    if model is not None:
        out["model"] = type(model).__name__
        params = getattr(model, "parameters", None)
        if params is not None:
            out["parameters"] = float(sum(int(p.numel()) for p in params()))
    if batch_size is not None:
        out["batch_size"] = float(batch_size)
    return out


def _flat(value: Any) -> bool | float | str | None:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, tuple | list) and all(isinstance(v, int | float) for v in value):
        return ", ".join(f"{v:g}" for v in value)
    numel = getattr(value, "numel", None)
    if numel is not None and numel() == 1:  # a tensor learning rate
        return float(value)
    return None
