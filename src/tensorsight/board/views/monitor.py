"""The monitor view: what ``tensorsight.watch`` found, per module and step, and on the loss.

Reads the ``monitor/findings`` records (UTF-8 JSON in a uint8 tensor, one per step with
findings plus one at step 0 listing the modules; spec in ``docs/guide/watch.md``), the
``monitor/anomalies`` scalar (every checked step) and the ``loss/auto`` scalar. Serves a
heat map (rows = modules, columns = steps or bins of steps, a cell = the worst finding),
markers for the loss curve, one step's findings, and the ranks of one run side by side
(``<run>/rank<r>``, as ``watch`` and the adapters name them). See
``docs/http_api/monitor.md``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorsight.board.errors import NotFound
from tensorsight.board.views.base import (
    View,
    int_param,
    json_numbers,
    offload_json,
    require_param,
)
from tensorsight.monitor.tags import (
    FINDINGS_VERSION,
    KINDS,
    TAG_CHECKED,
    TAG_FINDINGS,
    TAG_LOSS,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider

__all__ = [
    "KINDS",
    "LOSS_ROW",
    "MAX_COLUMNS",
    "heatmap_impl",
    "rank_of",
    "ranks_impl",
    "runs_impl",
    "step_impl",
]

LOSS_ROW = "(loss)"
MAX_COLUMNS = 2000
_SEVERITY = {k: i for i, k in enumerate(KINDS)}
_RANK_RUN = re.compile(r"^(?:(?P<base>.*)/)?rank(?P<rank>\d+)$")


def runs_impl(provider: DataProvider, runs: Sequence[str] | None = None) -> list[str]:
    """Runs (of ``runs``, all when ``None``) that hold monitor findings, in list order."""
    wanted = None if runs is None else set(runs)
    return [
        info.name
        for info in provider.list_runs()
        if (wanted is None or info.name in wanted) and TAG_FINDINGS in info.tags.get("tensors", ())
    ]


def _check_run(provider: DataProvider, run: str) -> None:
    """NotFound unless ``run`` exists and holds findings."""
    try:
        info = provider.run_info(run)
    except KeyError:
        msg = f"Run {run[:200]!r} does not exist."
        raise NotFound(msg) from None
    if TAG_FINDINGS not in info.tags.get("tensors", ()):
        msg = f"Run {run[:200]!r} has no monitor findings (tensorsight.watch writes them)."
        raise NotFound(msg)


def _parsed(rec: Any) -> dict[str, Any] | None:
    """One findings record's well-formed parts, or ``None`` when it is not ours."""
    try:
        doc = json.loads(np.asarray(rec.values, dtype=np.uint8).tobytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None  # not ours: skip it rather than fail the view
    doc = _checked(doc)
    if doc is None:
        return None  # not ours, or of a newer version: skip it rather than fail the view
    doc["step"] = int(rec.step)
    return doc


def _records(provider: DataProvider, run: str) -> list[dict[str, Any]]:
    _check_run(provider, run)
    return [d for d in map(_parsed, provider.read_tensors(run, TAG_FINDINGS)) if d is not None]


_TEXT_FIELDS = ("kind", "source", "where", "tensor", "dtype", "stat", "module")


def _checked(doc: Any) -> dict[str, Any] | None:
    """``doc`` with only well-formed parts (the spec in docs/guide/watch.md), or ``None``.

    A record is any tensor under the tag, so any JSON may arrive: a value that is not the
    spec's type is dropped (a finding that is not an object) or made harmless (a text field
    that is not text becomes ``None``, a value that is not a number NaN).
    """
    if not isinstance(doc, dict):
        return None
    version = doc.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version > FINDINGS_VERSION:
        return None
    findings = doc.get("findings")
    clean: list[dict[str, Any]] = []
    for f in findings if isinstance(findings, list) else ():
        if not isinstance(f, dict):
            continue
        g = {k: (f[k] if isinstance(f.get(k), str) else None) for k in _TEXT_FIELDS}
        for k in ("value", "reference"):
            v = f.get(k)
            ok = isinstance(v, (int, float, str)) and not isinstance(v, bool)
            g[k] = v if ok else ("NaN" if k == "value" else None)
        clean.append(g)
    truncated = doc.get("truncated", 0)
    modules = doc.get("modules")
    return {
        "findings": clean,
        "truncated": truncated if isinstance(truncated, int) and truncated >= 0 else 0,
        "modules": [m for m in modules if isinstance(m, str)] if isinstance(modules, list) else [],
        "dump": _dump(doc.get("dump")),
    }


def _dump(d: Any) -> dict[str, Any] | None:
    """The ``{"step", "path"}`` of a recorded dump, when both have their types."""
    if isinstance(d, dict) and isinstance(d.get("path"), str) and isinstance(d.get("step"), int):
        return {"step": d["step"], "path": d["path"]}
    return None


#: The loss tags tried after ``loss/auto``, in order: where the adapters write the loss
#: (the transformers Trainer's ``train/loss``, Lightning's ``self.log("train_loss")``).
LOSS_FALLBACKS = ("train/loss", "train_loss", "loss")


def _loss(provider: DataProvider, run: str) -> tuple[str, tuple[Any, Any] | None]:
    """The run's loss tag and series: ``loss/auto``, else the first of :data:`LOSS_FALLBACKS`."""
    for tag in (TAG_LOSS, *LOSS_FALLBACKS):
        series = _scalar(provider, run, tag)
        if series is not None:
            return tag, series
    return TAG_LOSS, None


def _scalar(provider: DataProvider, run: str, tag: str) -> tuple[Any, Any] | None:
    if tag not in provider.run_info(run).tags.get("scalars", ()):
        return None
    series = provider.read_scalars(run, tag)
    return series.steps, series.values


def _number(v: Any) -> float:
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, math.nan)
    return float(v)


def _loss_at(loss: tuple[Any, Any] | None, step: int) -> float | str | None:
    """The loss logged at ``step``, else the last one before it (``None``: none)."""
    if loss is None or not len(loss[0]):
        return None
    i = int(np.searchsorted(loss[0], step, side="right")) - 1
    if i < 0:
        return None
    return json_numbers(np.asarray([loss[1][i]]))[0]


def heatmap_impl(
    provider: DataProvider, run: str, *, max_columns: int = MAX_COLUMNS
) -> dict[str, Any]:
    """The heat map of one run, the loss curve and its markers (see the HTTP API doc)."""
    records = _records(provider, run)
    modules: list[str] = []
    seen: set[str] = set()
    for doc in records:
        for m in doc.get("modules") or ():
            if str(m) not in seen:
                seen.add(str(m))
                modules.append(str(m))
    checked = _scalar(provider, run, TAG_CHECKED)
    loss_tag, loss = _loss(provider, run)
    steps = [doc["step"] for doc in records]
    if checked is not None and len(checked[0]):
        steps += [int(checked[0].min()), int(checked[0].max())]
    first, last = (min(steps), max(steps)) if steps else (0, 0)
    width = max(1, math.ceil((last - first + 1) / max_columns))
    n_cols = (last - first) // width + 1
    cells: dict[tuple[int, int], dict[str, Any]] = {}
    markers = []
    rows = {m: i for i, m in enumerate(modules)}
    for doc in records:
        findings = doc.get("findings") or []
        step = doc["step"]
        if findings or doc.get("dump"):
            worst = min((_SEVERITY.get(f.get("kind"), len(KINDS)) for f in findings), default=None)
            markers.append(
                {
                    "step": step,
                    "count": len(findings) + int(doc.get("truncated", 0)),
                    "worst": None if worst is None or worst >= len(KINDS) else KINDS[worst],
                    "loss": _loss_at(loss, step),
                    "dump": doc.get("dump"),
                }
            )
        col = (step - first) // width
        for f in findings:
            module = f.get("module")
            name = LOSS_ROW if module is None else str(module)
            row = rows.get(name)
            if row is None:
                row = rows[name] = len(modules)
                modules.append(name)
            severity = _SEVERITY.get(f.get("kind"), len(KINDS))
            cell = cells.get((row, col))
            if cell is None:
                cells[(row, col)] = cell = {"row": row, "col": col, "count": 0, "sev": severity}
                cell.update(_finding(f, step))
            elif severity < cell["sev"]:
                cell.update(_finding(f, step), sev=severity)
            cell["count"] += 1
    for cell in cells.values():
        del cell["sev"]
    return {
        "run": run,
        "kinds": list(KINDS),
        "modules": modules,
        "first_step": first,
        "last_step": last,
        "bin": width,
        "columns": n_cols,
        "checked_steps": 0 if checked is None else len(checked[0]),
        "cells": sorted(cells.values(), key=lambda c: (c["row"], c["col"])),
        "markers": markers,
        "loss": None
        if loss is None
        else {"tag": loss_tag, "steps": loss[0].tolist(), "values": json_numbers(loss[1])},
    }


def _finding(f: dict[str, Any], step: int) -> dict[str, Any]:
    return {
        "step": step,
        "kind": f.get("kind"),
        "source": f.get("source"),
        "where": f.get("where"),
        "tensor": f.get("tensor"),
        "dtype": f.get("dtype"),
        "stat": f.get("stat"),
        "value": json_numbers(np.asarray([_number(f.get("value", "NaN"))]))[0],
    }


def step_impl(provider: DataProvider, run: str, step: int) -> dict[str, Any]:
    """Every finding of one step, in the order found, with the dump folder if recorded."""
    _check_run(provider, run)
    # the step's records only: the provider indexes them by step (one click, one step)
    records = provider.read_tensors_at(run, TAG_FINDINGS, step)
    found = [d for d in map(_parsed, records) if d is not None]
    if not found:
        msg = f"Run {run[:200]!r} has no monitor findings at step {step}."
        raise NotFound(msg)
    findings = []
    dump = None
    truncated = 0
    for doc in found:
        for f in doc.get("findings") or []:
            module = f.get("module")
            entry = _finding(f, step)
            entry["module"] = LOSS_ROW if module is None else str(module)
            ref = f.get("reference")
            entry["reference"] = (
                None if ref is None else json_numbers(np.asarray([_number(ref)]))[0]
            )
            findings.append(entry)
        dump = doc.get("dump") or dump
        truncated += int(doc.get("truncated", 0))
    return {
        "run": run,
        "step": step,
        "findings": findings,
        "truncated": truncated,
        "dump": dump,
        "loss": _loss_at(_loss(provider, run)[1], step),
    }


def rank_of(run: str) -> tuple[str, int] | None:
    """``(group, rank)`` of a rank run: ``"exp/rank3"`` -> ``("exp", 3)``, ``"rank0"`` ->
    ``(".", 0)``; None for a run that is not named ``<run>/rank<r>``."""
    m = _RANK_RUN.match(run)
    if m is None:
        return None
    return (m.group("base") or ".", int(m.group("rank")))


def ranks_impl(
    provider: DataProvider, run: str, *, max_columns: int = MAX_COLUMNS
) -> dict[str, Any]:
    """Every rank of ``run``'s group side by side: one row per rank, one column per step (or
    bin), a cell = that rank's worst finding there (see the HTTP API doc)."""
    _check_run(provider, run)
    key = rank_of(run)
    if key is None:
        members = [(0, run)]
        group = run
    else:
        group = key[0]
        members = sorted(
            (k[1], name)
            for name in runs_impl(provider)
            if (k := rank_of(name)) is not None and k[0] == group
        )
    per_rank = [(rank, name, _records(provider, name)) for rank, name in members]
    steps = [doc["step"] for _, _, docs in per_rank for doc in docs]
    for _, name, _ in per_rank:
        checked = _scalar(provider, name, TAG_CHECKED)
        if checked is not None and len(checked[0]):
            steps += [int(checked[0].min()), int(checked[0].max())]
    first, last = (min(steps), max(steps)) if steps else (0, 0)
    width = max(1, math.ceil((last - first + 1) / max_columns))
    cells: dict[tuple[int, int], dict[str, Any]] = {}
    ranks = []
    earliest: tuple[int, int, dict[str, Any]] | None = None
    for row, (rank, name, docs) in enumerate(per_rank):
        count = 0
        first_finding = None
        dump = None
        for doc in sorted(docs, key=lambda d: int(d["step"])):
            findings = doc.get("findings") or []
            step = doc["step"]
            dump = dump or doc.get("dump")
            count += len(findings) + int(doc.get("truncated", 0))
            if findings and first_finding is None:
                first_finding = _ranked(findings[0], step)
            col = (step - first) // width
            for f in findings:
                severity = _SEVERITY.get(f.get("kind"), len(KINDS))
                cell = cells.get((row, col))
                if cell is None or severity < cell["sev"]:
                    kept = 0 if cell is None else cell["count"]
                    cells[(row, col)] = cell = {"row": row, "col": col, "sev": severity}
                    cell.update(_ranked(f, step), count=kept)
                cell["count"] += 1
        ranks.append(
            {"rank": rank, "run": name, "findings": count, "first": first_finding, "dump": dump}
        )
        if first_finding is not None:
            candidate = (first_finding["step"], rank, {"rank": rank, "run": name, **first_finding})
            if earliest is None or candidate[:2] < earliest[:2]:
                earliest = candidate
    for cell in cells.values():
        del cell["sev"]
    return {
        "run": run,
        "group": group,
        "kinds": list(KINDS),
        "ranks": ranks,
        "first_step": first,
        "last_step": last,
        "bin": width,
        "columns": (last - first) // width + 1,
        "cells": sorted(cells.values(), key=lambda c: (c["row"], c["col"])),
        "first": None if earliest is None else earliest[2],
    }


def _ranked(f: dict[str, Any], step: int) -> dict[str, Any]:
    """A finding as the ranks view shows it: ``_finding`` with its module's row name."""
    module = f.get("module")
    return {**_finding(f, step), "module": LOSS_ROW if module is None else str(module)}


class MonitorView(View):
    """What ``tensorsight.watch`` found: a per-module heat map over steps, loss markers."""

    name = "monitor"
    title = "Monitor"
    kind = "tensors"

    def is_active(self) -> bool:
        return bool(runs_impl(self.provider))

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/runs", self._runs),
            Route("/heatmap", self._heatmap),
            Route("/step", self._step),
            Route("/ranks", self._ranks),
        ]

    async def _runs(self, request: Request) -> Response:
        runs = request.query_params.getlist("run") or None
        return await offload_json(request, lambda: {"runs": runs_impl(self.provider, runs)})

    async def _heatmap(self, request: Request) -> Response:
        run = require_param(request, "run")
        cols = int_param(request, "max_columns", MAX_COLUMNS, 1, MAX_COLUMNS)
        return await offload_json(request, heatmap_impl, self.provider, run, max_columns=cols)

    async def _ranks(self, request: Request) -> Response:
        run = require_param(request, "run")
        cols = int_param(request, "max_columns", MAX_COLUMNS, 1, MAX_COLUMNS)
        return await offload_json(request, ranks_impl, self.provider, run, max_columns=cols)

    async def _step(self, request: Request) -> Response:
        run = require_param(request, "run")
        require_param(request, "step")
        step = int_param(request, "step", 0, 0, 2**62)
        return await offload_json(request, step_impl, self.provider, run, step)
