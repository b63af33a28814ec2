"""Lineage of a PyTorch run, under the names of MindSpore's ``TrainLineage`` fields.

The board shows MindSpore lineage (``*_lineage`` files) as hyperparameters; writing the same
names from PyTorch (``tensorsight.watch`` and the framework adapters add them to the run's
hparams at the end) lines both kinds of run up in the HParams view. The data pipeline goes
to the ``dataset_graph`` tag (:data:`TAG_DATA_GRAPH`), as MindSpore's does.

======================  ==============================================================
field                   value
======================  ==============================================================
``optimizer``           the optimizer's class name
``batch_size``          a DataLoader's ``batch_size``, else the first batch's size
``loss_function``       the loss function's or loss module's name
``train_dataset_size``  samples in the training dataset
``model_path``          the last checkpoint saved
``network``             the model's class name
======================  ==============================================================
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["TAG_DATA_GRAPH", "batch_size_of", "dataset_size_of", "lineage_of"]

TAG_DATA_GRAPH = "dataset_graph"  # MindSpore's lineage tag for the data pipeline


def dataset_size_of(data: Any) -> int | None:
    """Samples in a DataLoader's dataset (or a dataset); ``None`` when it has no length."""
    dataset = getattr(data, "dataset", data)
    try:
        return len(dataset)
    except (TypeError, NotImplementedError):  # an IterableDataset, a generator
        return None


def batch_size_of(data: Any) -> int | None:
    """A DataLoader's ``batch_size`` (``None`` when it batches otherwise, or is no loader)."""
    size = getattr(data, "batch_size", None)
    return int(size) if isinstance(size, int) and not isinstance(size, bool) else None


def lineage_of(
    *,
    loss_fn: Any = None,
    dataset_size: int | None = None,
    checkpoint: Any = None,
    network: Any = None,
) -> dict[str, bool | float | str]:
    """The lineage fields beyond :func:`hparams_of`, named as in MindSpore's TrainLineage.

    ``loss_function`` (a function's or a loss module's name), ``train_dataset_size``,
    ``model_path`` (the last checkpoint's path) and ``network`` (the model's class name);
    fields that are not known are left out.
    """
    out: dict[str, bool | float | str] = {}
    if loss_fn is not None:
        name = getattr(loss_fn, "__name__", None)
        out["loss_function"] = str(name) if name else type(loss_fn).__name__
    if dataset_size is not None:
        out["train_dataset_size"] = float(dataset_size)
    if checkpoint is not None:
        out["model_path"] = str(os.fspath(checkpoint))
    if network is not None:
        out["network"] = type(network).__name__
    return out
