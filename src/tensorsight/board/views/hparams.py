"""The HParams view: one row per run with hyperparameters and the final value of its metrics.

Rows are the runs that have hyperparameters (``add_hparams``, TensorBoard's hparams plugin,
MindSpore lineage), after ``add_hparams`` sub-runs folded into their parent
(:mod:`tensorsight.data.hparams`). Metric columns are the scalar tags the experiments
declare, plus any scalar tag the client asks for; a cell is that tag's last point. See
``docs/http_api/hparams.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensorsight.board.errors import InvalidArgument
from tensorsight.board.views.base import View, json_number, offload_json

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider, RunHParams

__all__ = ["HParamsView", "table_impl"]

MAX_METRICS = 50


def _json_value(v: object) -> object:
    """An hparam value as JSON can carry it (``inf``, a clipping turned off: ``"Infinity"``)."""
    return json_number(v) if isinstance(v, float) else v


def _kind(values: Sequence[object]) -> str:
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "number"
    return "string"


def _final(provider: DataProvider, run: str, tag: str, scalar_tags: Sequence[str]) -> Any:
    if tag not in scalar_tags:
        return None
    series = provider.read_scalars(run, tag)
    if not len(series):
        return None
    return {
        "value": json_number(float(series.values[-1])),
        "step": int(series.steps[-1]),
        "wall_time": float(series.wall_times[-1]),
    }


def table_impl(
    provider: DataProvider,
    runs: Sequence[str] | None = None,
    metrics: Sequence[str] = (),
) -> dict[str, Any]:
    """The HParams table of ``runs`` (all when ``None``) that have hyperparameters.

    Args:
        provider: Where runs are read.
        runs: Runs to consider; runs without hyperparameters are left out.
        metrics: Scalar tags shown as metric columns besides the declared ones.

    Returns:
        ``{"hparams": [column], "metrics": [column], "runs": [row]}``: an hparam column is
        ``{name, type, values}`` (``type`` ``number`` | ``string`` | ``bool``; ``values``
        the distinct values in the table, sorted, with the declared discrete domain
        first when there is one), a metric column ``{tag, declared}``, a row
        ``{run, wall_time, hparams: {name: value}, metrics: {tag: {value, step,
        wall_time} | null}}``.
    """
    wanted = None if runs is None else set(runs)
    found: list[tuple[RunHParams, tuple[str, ...]]] = []
    for info in provider.list_runs():
        if (wanted is not None and info.name not in wanted) or not info.tags.get("hparams"):
            continue
        try:
            found.append((provider.read_hparams(info.name), info.tags.get("scalars", ())))
        except KeyError:
            continue
    declared: list[str] = []
    for hp, _ in found:
        declared.extend(m for m in hp.metrics if m not in declared)
    extra = [m for m in metrics if m not in declared]
    names: list[str] = []
    for hp, _ in found:
        names.extend(n for n in hp.hparams if n not in names)
    columns = []
    for name in names:
        values = [hp.hparams[name] for hp, _ in found if name in hp.hparams]
        kind = _kind(values)
        domain: list[object] = []
        for hp, _ in found:
            domain.extend(v for v in hp.domains.get(name, ()) if v not in domain)
        distinct = sorted(set(values), key=lambda v: (str(type(v)), v))
        seen = domain + [v for v in distinct if v not in domain]
        columns.append({"name": name, "type": kind, "values": [_json_value(v) for v in seen]})
    rows = []
    for hp, scalar_tags in found:
        finals = {t: _final(provider, hp.run, t, scalar_tags) for t in declared + extra}
        rows.append(
            {
                "run": hp.run,
                "wall_time": hp.wall_time,
                "hparams": {k: _json_value(v) for k, v in hp.hparams.items()},
                "metrics": finals,
            }
        )
    return {
        "hparams": columns,
        "metrics": [{"tag": t, "declared": t in declared} for t in declared + extra],
        "runs": rows,
    }


class HParamsView(View):
    """Hyperparameters and final metrics of every run, as one table."""

    name = "hparams"
    title = "HParams"
    kind = "hparams"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [Route("/table", self._table)]

    async def _table(self, request: Request) -> Response:
        runs = request.query_params.getlist("run") or None
        metrics = request.query_params.getlist("metric")
        if len(metrics) > MAX_METRICS:
            msg = (
                f"Query parameter 'metric': at most {MAX_METRICS} extra metric tags, "
                f"got {len(metrics)}."
            )
            raise InvalidArgument(msg)
        return await offload_json(request, table_impl, self.provider, runs, metrics)
