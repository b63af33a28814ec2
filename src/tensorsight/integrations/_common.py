"""What the adapters share: hyperparameter flattening, scalar extraction, rank folders,
the monitor option.

No framework is imported here; torch tensors are recognised by their ``item`` method.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tensorsight.errors import UsageError
from tensorsight.monitor.watch import ADAPTER_OPTIONS

if TYPE_CHECKING:
    from tensorsight.monitor import Watch

__all__ = [
    "HParam",
    "MonitorOption",
    "flatten_hparams",
    "monitor_options",
    "rank_dir",
    "scalar_items",
    "scalar_value",
    "start_monitor",
]

#: An adapter's ``monitor=``: None/False (off), True (``tensorsight.watch``'s defaults) or
#: a mapping of ``watch`` options (``ADAPTER_OPTIONS``).
MonitorOption = bool | Mapping[str, Any] | None

HParam = bool | int | float | str


def flatten_hparams(params: Mapping[str, Any], prefix: str = "") -> dict[str, HParam]:
    """``params`` flattened to ``{"a/b": value}`` with values the hparams plugin can hold.

    Nested mappings become ``parent/child`` names; bool, int, float and str stay as they
    are; one-element tensors and numpy scalars become numbers; ``None`` is dropped;
    anything else (lists, enums, classes, devices) becomes its ``str``.

    Example:
        >>> flatten_hparams({"opt": {"lr": 0.1, "betas": (0.9, 0.99)}, "seed": None})
        {'opt/lr': 0.1, 'opt/betas': '(0.9, 0.99)'}
    """
    flat: dict[str, HParam] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_hparams(value, prefix=f"{name}/"))
        elif value is None:
            continue
        elif isinstance(value, bool | int | float | str):
            flat[name] = value
        else:
            number = scalar_value(value)
            flat[name] = str(value) if number is None else number
    return flat


def scalar_value(value: object) -> float | None:
    """``value`` as a float when it is a real number or a one-element tensor/array, else None.

    Example:
        >>> scalar_value(3), scalar_value("3"), scalar_value(True)
        (3.0, None, 1.0)
    """
    if isinstance(value, numbers.Real):
        return float(value)
    size = getattr(value, "numel", None) or getattr(value, "size", None)
    count = size() if callable(size) else size
    if count == 1 and callable(getattr(value, "item", None)):
        item = value.item()  # type: ignore[attr-defined]
        if isinstance(item, numbers.Real):
            return float(item)
    return None


def scalar_items(values: Mapping[str, object]) -> Iterator[tuple[str, float]]:
    """The ``(tag, value)`` pairs of ``values`` that are numbers (NaN and Inf kept).

    Example:
        >>> list(scalar_items({"loss": 0.5, "note": "x", "acc": float("nan")}))
        [('loss', 0.5), ('acc', nan)]
    """
    for tag, value in values.items():
        number = scalar_value(value)
        if number is not None:
            yield str(tag), number


def rank_dir(log_dir: str | os.PathLike[str], rank: int, all_ranks: bool) -> str:
    """Where rank ``rank`` writes: ``log_dir`` itself, or ``log_dir/rank<r>`` with all ranks.

    Example:
        >>> rank_dir("runs/a", 3, True).replace(os.sep, "/"), rank_dir("runs/a", 0, False)
        ('runs/a/rank3', 'runs/a')
    """
    base = os.fspath(log_dir)
    return os.path.join(base, f"rank{rank}") if all_ranks else base


def monitor_options(monitor: object, who: str) -> dict[str, Any] | None:
    """The ``watch`` options an adapter's ``monitor=`` asks for (None: no monitor).

    Raises:
        UsageError: A key that is not one of ``ADAPTER_OPTIONS``, or a value that is
            neither a bool nor a mapping (the message names it).

    Example:
        >>> monitor_options(True, "X"), monitor_options({"every": 5}, "X")
        ({}, {'every': 5})
    """
    if monitor is None or monitor is False:
        return None
    if monitor is True:
        return {}
    if not isinstance(monitor, Mapping):
        msg = (
            f"{who}: monitor {monitor!r} is not understood. Expected True or a dict of "
            "tensorsight.watch options, such as {'every': 10, 'dump_on_anomaly': 'dumps'}."
        )
        raise UsageError(msg)
    options = {str(k): v for k, v in monitor.items()}
    for key in options:
        if key not in ADAPTER_OPTIONS:
            msg = (
                f"{who}: monitor option {key!r} is unknown. Expected one of "
                f"{', '.join(ADAPTER_OPTIONS)}."
            )
            raise UsageError(msg)
    return options


def start_monitor(
    options: Mapping[str, Any],
    model: Any,
    optimizer: Any,
    folder: str,
    *,
    first_step: int = 0,
    hparams_run: str | None = None,
    graph: bool = True,
) -> Watch:
    """Start ``tensorsight.watch`` for an adapter, writing into the adapter's own run.

    Args:
        options: From :func:`monitor_options`.
        model: The ``torch.nn.Module`` being trained (unwrapped).
        optimizer: Its ``torch.optim.Optimizer`` (unwrapped).
        folder: The run the adapter writes on this rank (its rank folder included, so the
            watch adds none).
        first_step: The framework's number of the first optimizer step, so the monitor's
            steps are the framework's.
        hparams_run: Where the watch's hyperparameters and lineage go: ``"."`` (the run),
            None (nowhere: the adapter writes its own).
        graph: Whether the watch may record the graph (False where the adapter does, or
            the model takes keyword arguments only); ``options["graph"]`` can still say no.
    """
    from tensorsight.monitor.watch import _prepare

    settings = dict(options)
    if not graph:
        settings["graph"] = False
    w = _prepare(model, optimizer, folder, **settings)
    w.rank_folder = False
    w.hparams_run = hparams_run
    w.first_step = first_step
    return w._start()
