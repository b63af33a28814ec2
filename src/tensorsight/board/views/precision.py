"""The reduced-precision operators view: every op of a graph with its computation dtype.

The computation dtype of an op is its first floating-point output dtype (what autocast or a
half model really produced), else its first floating-point input dtype, else its first output
dtype. An op runs in *reduced precision* when that dtype is bfloat16, float16 or a float8.
MindSpore ops that carry a ``precision_flag`` attribute show it too. Parameters, buffers,
constants and graph inputs/outputs are not operators and are left out. The table can be
exported as ``.xlsx`` (openpyxl, the ``board`` extra). See ``docs/http_api/precision.md``.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensorsight.board.patterns import compile_filter
from tensorsight.board.views.base import (
    View,
    int_param,
    offload,
    offload_json,
    require_param,
)
from tensorsight.board.views.graphs import load_graph, split_input

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider

__all__ = ["PrecisionView", "compute_dtype", "normalize_dtype", "table_impl", "xlsx_impl"]

NOT_OPS = frozenset({"Parameter", "Buffer", "IO Node", "Constant", "Const", "Input", "Output"})
REDUCED = frozenset({"bfloat16", "float16"})
_ALIASES = {
    "half": "float16",
    "fp16": "float16",
    "bf16": "bfloat16",
    "float": "float32",
    "fp32": "float32",
    "double": "float64",
    "dt_half": "float16",
    "dt_bfloat16": "bfloat16",
    "dt_float": "float32",
    "dt_float16": "float16",
    "dt_float32": "float32",
    "dt_float64": "float64",
    "dt_double": "float64",
}
COLUMNS = ("name", "op", "module_path", "compute_dtype", "reduced", "input_dtypes", "output_dtypes")


def normalize_dtype(name: str) -> str:
    """``"bfloat16"`` for ``"DT_BFLOAT16"``/``"bf16"``/``"torch.bfloat16"``; lower case."""
    low = name.strip().lower().removeprefix("torch.").removeprefix("mindspore.")
    return _ALIASES.get(low, low)


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat", "complex"))


def compute_dtype(inputs: Sequence[str], outputs: Sequence[str]) -> str:
    """The computation dtype from normalized input and output dtypes ("" when unknown)."""
    for group in (outputs, inputs):
        for d in group:
            if _is_float(d):
                return d
    return outputs[0] if outputs else ""


def _rows(provider: DataProvider, run: str, tag: str) -> list[dict[str, Any]]:
    g = load_graph(provider, run, tag)
    by_name = {n.name: n for n in g.nodes}
    rows = []
    for n in g.nodes:
        if n.op in NOT_OPS:
            continue
        outs = [normalize_dtype(d) for d in n.dtypes]
        ins = []
        for raw in n.inputs:
            src, control = split_input(raw)
            p = by_name.get(src)
            if p is not None and not control and p.dtypes:
                ins.append(normalize_dtype(p.dtypes[0]))
        dtype = compute_dtype(ins, outs)
        flag = n.attrs.get("precision_flag")
        reduced = dtype in REDUCED or dtype.startswith("float8")
        if isinstance(flag, str) and flag.lower() in ("fp16", "bf16", "reduce"):
            reduced = True
        rows.append(
            {
                "name": n.name,
                "op": n.op,
                "module_path": n.module_path,
                "compute_dtype": dtype,
                "reduced": reduced,
                "input_dtypes": ins,
                "output_dtypes": outs,
            }
        )
    return rows


def _filter(rows: list[dict[str, Any]], query: str, reduced_only: bool) -> list[dict[str, Any]]:
    if query:
        rx = compile_filter(query, param="q")  # RE2: linear time, whatever the pattern
        rows = [
            r
            for r in rows
            if rx.search(r["name"]) or rx.search(r["op"]) or rx.search(r["compute_dtype"])
        ]
    if reduced_only:
        rows = [r for r in rows if r["reduced"]]
    return rows


def table_impl(
    provider: DataProvider,
    run: str,
    tag: str,
    *,
    query: str = "",
    reduced_only: bool = False,
    limit: int = 5000,
) -> dict[str, Any]:
    """The op table (filtered by an RE2 regex over name/op/dtype), at most ``limit`` rows."""
    rows = _rows(provider, run, tag)
    by_dtype = Counter(r["compute_dtype"] or "unknown" for r in rows)
    total_reduced = sum(1 for r in rows if r["reduced"])
    picked = _filter(rows, query, reduced_only)
    return {
        "run": run,
        "tag": tag,
        "total_ops": len(rows),
        "reduced_ops": total_reduced,
        "by_dtype": dict(by_dtype.most_common()),
        "matched": len(picked),
        "rows": picked[:limit],
    }


def xlsx_impl(
    provider: DataProvider, run: str, tag: str, *, query: str = "", reduced_only: bool = False
) -> bytes:
    """The (filtered) op table as an .xlsx workbook: sheet "ops" plus a "summary" sheet."""
    from tensorsight._lazy import lazy_import

    openpyxl = lazy_import("openpyxl", extra="board")
    rows = _filter(_rows(provider, run, tag), query, reduced_only)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "ops"
    ws.append(list(COLUMNS))
    for r in rows:
        ws.append(
            [
                r["name"],
                r["op"],
                r["module_path"],
                r["compute_dtype"],
                "yes" if r["reduced"] else "no",
                ", ".join(r["input_dtypes"]),
                ", ".join(r["output_dtypes"]),
            ]
        )
    ws.freeze_panes = "A2"
    summary = wb.create_sheet("summary")
    summary.append(["run", run])
    summary.append(["graph", tag])
    summary.append(["filter", query])
    summary.append(["ops", len(rows)])
    summary.append(["reduced-precision ops", sum(1 for r in rows if r["reduced"])])
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def _bool(request: Request, name: str) -> bool:
    return request.query_params.get(name, "") in ("1", "true", "yes")


class PrecisionView(View):
    """Which ops compute in bf16/fp16: a filterable table with .xlsx export."""

    name = "precision"
    title = "Precision"
    kind = "graphs"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/tags", self._tags),
            Route("/table", self._table),
            Route("/export.xlsx", self._export),
        ]

    async def _table(self, request: Request) -> Response:
        return await offload_json(
            request,
            table_impl,
            self.provider,
            require_param(request, "run"),
            require_param(request, "tag"),
            query=request.query_params.get("q", ""),
            reduced_only=_bool(request, "reduced"),
            limit=int_param(request, "limit", 5000, 1, 100_000),
        )

    async def _export(self, request: Request) -> Response:
        from starlette.responses import Response

        run, tag = require_param(request, "run"), require_param(request, "tag")
        data = await offload(
            request,
            xlsx_impl,
            self.provider,
            run,
            tag,
            query=request.query_params.get("q", ""),
            reduced_only=_bool(request, "reduced"),
        )
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{run}-{tag}")[:80] or "graph"
        return Response(
            data,
            media_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            headers={"Content-Disposition": f'attachment; filename="precision-{safe}.xlsx"'},
        )
