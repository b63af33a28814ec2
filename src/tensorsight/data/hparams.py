"""Hyperparameters of one run, and how ``add_hparams`` sub-runs fold into their parent.

``SummaryWriter.add_hparams`` (torch's, tensorboardX's and ours) writes into a new folder
below the writer's own, named by the float timestamp of the call
(``train/bf16/1796149522.2775037``), so TensorBoard shows every call as an extra run. The
board folds such a sub-run into its parent (the run list, the scalars and every view see one
run ``train/bf16``) when it is the parent's only timestamp-named sub-run holding hparams.
Several of them under one parent are a sweep written through one writer (torch's own
``add_hparams`` example): each stays a run of its own, one row per trial.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "HPARAMS_PARTS",
    "SCHEMA_VERSION",
    "RunHParams",
    "fold_hparams_runs",
    "is_hparams_subrun",
    "merge_hparams",
]

SCHEMA_VERSION = 1

# The records whose values are hyperparameters: TensorBoard's session start, MindSpore's
# lineage (train, evaluation, user-defined), in the order later ones override earlier.
HPARAMS_PARTS = ("session_start", "train_lineage", "eval_lineage", "user_defined")

# str(time.time()): ten digits (until 2286), a dot, the fraction.
_TIMESTAMP = re.compile(r"^\d{9,11}\.\d+$")


@dataclass(frozen=True)
class RunHParams:
    """The hyperparameters of one run (SCHEMA_VERSION 1).

    Attributes:
        run: The run (after folding: the parent's name).
        hparams: Name -> value (bool, float or str); for MindSpore lineage, every field of
            the lineage records, nested dicts flattened to ``a.b`` names.
        metrics: Scalar tags the experiment declares as its metrics (``hparam/accuracy``),
            in declaration order.
        domains: Name -> the values a discrete hparam can take (empty when not declared).
        wall_time: When the values were written (the newest record), seconds since the epoch.
    """

    run: str
    hparams: Mapping[str, bool | float | str]
    metrics: tuple[str, ...] = ()
    domains: Mapping[str, tuple[bool | float | str, ...]] = field(default_factory=dict)
    wall_time: float = 0.0

    SCHEMA_VERSION = SCHEMA_VERSION


def is_hparams_subrun(name: str) -> bool:
    """True when the last part of a run name is a float timestamp (``add_hparams``' folder)."""
    return bool(_TIMESTAMP.match(name.rsplit("/", 1)[-1]))


def _parent(name: str) -> str:
    return name.rsplit("/", 1)[0] if "/" in name else "."


def fold_hparams_runs(
    runs: Iterable[str], has_hparams: Callable[[str], bool]
) -> dict[str, tuple[str, ...]]:
    """Shown run -> the stored runs it reads from, in priority order (its own first).

    A stored run folds into its parent when its last name part is a float timestamp, it
    holds hparams (``has_hparams``), and no other such sibling does.

    Example:
        >>> fold_hparams_runs(["a", "a/1796149522.27", "b/1.5"], lambda r: True)
        {'a': ('a', 'a/1796149522.27'), 'b/1.5': ('b/1.5',)}
    """
    names = list(runs)
    children: dict[str, list[str]] = {}
    for name in names:
        if is_hparams_subrun(name) and has_hparams(name):
            children.setdefault(_parent(name), []).append(name)
    folded = {only[0]: parent for parent, only in children.items() if len(only) == 1}
    out: dict[str, list[str]] = {}
    for name in names:
        if name not in folded:
            out.setdefault(name, []).insert(0, name)
    for child, parent in folded.items():
        out.setdefault(parent, []).append(child)
    return {name: tuple(out[name]) for name in sorted(out)}


def _flat(prefix: str, value: Any, into: dict[str, bool | float | str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, into)
    elif isinstance(value, bool | str):
        into[prefix] = value
    elif isinstance(value, int | float):
        into[prefix] = float(value)
    elif value is not None:
        into[prefix] = str(value)


def merge_hparams(run: str, records: Iterable[Any]) -> RunHParams | None:
    """One :class:`RunHParams` from a run's hparams records (``HParamsRecord``-like).

    Values come from the parts in :data:`HPARAMS_PARTS`; metrics and discrete domains from
    ``experiment`` records. ``None`` when no record carries values.
    """
    values: dict[str, bool | float | str] = {}
    metrics: list[str] = []
    domains: dict[str, tuple[bool | float | str, ...]] = {}
    wall = 0.0
    seen = False

    def order(r: Any) -> int:
        return HPARAMS_PARTS.index(r.part) if r.part in HPARAMS_PARTS else -1

    for r in sorted(records, key=order):
        wall = max(wall, float(r.wall_time))
        if r.part == "experiment":
            metrics.extend(m for m in r.metrics if m not in metrics)
            for name, entry in dict(r.hparams).items():
                choices = entry.get("values") if isinstance(entry, Mapping) else None
                if isinstance(choices, list | tuple) and choices:
                    domains[name] = tuple(choices)
        elif r.part in HPARAMS_PARTS:
            seen = True
            _flat("", dict(r.hparams), values)
    if not seen:
        return None
    return RunHParams(run, values, tuple(metrics), domains, wall)
