"""What the adapters share: hyperparameter flattening, scalar extraction, rank folders.

No framework is imported here; torch tensors are recognised by their ``item`` method.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["HParam", "flatten_hparams", "rank_dir", "scalar_items", "scalar_value"]

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
