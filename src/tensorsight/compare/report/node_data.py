"""Model Explorer node data: per module, the worst error/budget ratio of its ops.

The file is Model Explorer's "graph node data" JSON: ``results`` maps a node id (here the
module path, the id Model Explorer's PyTorch adapter shows in its layer hierarchy) to
``{"value": <worst error / budget>}``, and ``thresholds`` colour values below 1 green, up to
10 amber and above red. Load it in Model Explorer's "Node data" panel.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from tensorsight.compare.report import ReportFormat
from tensorsight.compare.result import Comparison

__all__ = ["FORMAT", "render_node_data"]


def render_node_data(comparison: Comparison, path: str | Path | None = None) -> str:
    """Render the node-data JSON text; also write it to ``path`` when given."""
    worst: dict[str, float] = {}
    for row in comparison.rows:
        if row.error is None or row.budget is None or not math.isfinite(row.error):
            continue
        ratio = row.error / row.budget if row.budget > 0 else (0.0 if row.error == 0 else 1e9)
        key = row.module_path or "<root>"
        worst[key] = max(worst.get(key, 0.0), ratio)
    doc = {
        "results": {k: {"value": round(v, 6)} for k, v in sorted(worst.items())},
        "thresholds": [
            {"value": 1.0, "bgColor": "#c6efce"},
            {"value": 10.0, "bgColor": "#ffeb9c"},
            {"value": 1e300, "bgColor": "#ffc7ce"},
        ],
    }
    text = json.dumps(doc, indent=1)
    if path is not None:
        Path(path).write_text(text + "\n", encoding="utf-8")
    return text


FORMAT = ReportFormat(
    "node_data", ".node_data.json", render_node_data, "Model Explorer node data per module"
)
