"""Read an adapter's run back the way the board does."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

import tensorsight


def session_hparams(logdir: Any, run: str) -> dict[str, Any]:
    """The hparam values of ``run``: its session starts merged in order, as the board does
    (an adapter writes the configuration first and the lineage at the end)."""
    merged: dict[str, Any] = {}
    for start in logdir.hparams(run, "_hparams_/session_start_info"):
        merged.update(start.hparams)
    return merged


def read_run(path: Any) -> tuple[Any, str]:
    """The logdir at ``path`` and its one run."""
    logdir = tensorsight.read_logdir(path)
    (run,) = logdir.runs
    return logdir, run


def values(logdir: Any, run: str, tag: str) -> tuple[np.ndarray, np.ndarray]:
    series = logdir.scalars(run, tag)
    return series.steps, series.values


def findings(logdir: Any, run: str) -> dict[int, dict[str, Any]]:
    """The monitor's ``monitor/findings`` records of ``run``, by step (the board's input)."""
    out = {}
    for rec in logdir.tensors(run, "monitor/findings"):
        out[int(rec.step)] = json.loads(rec.data.tobytes())
    return out
