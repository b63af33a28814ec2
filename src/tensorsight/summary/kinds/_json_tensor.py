"""Shared by the JSON-payload kinds: a DT_STRING scalar tensor holding UTF-8 JSON."""

from __future__ import annotations

import json
import math
from typing import Any

from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import plugin_metadata

__all__ = ["finite_or_none", "json_value"]


def finite_or_none(number: float) -> float | None:
    """``number`` as a float, or None when it is NaN or ±Inf (JSON has no such values)."""
    value = float(number)
    return value if math.isfinite(value) else None


def json_value(tag: str, plugin_name: str, payload: dict[str, Any]) -> Any:
    """``Summary.Value(tag, tensor=DT_STRING scalar of JSON, metadata=plugin, TENSOR class)``."""
    text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    tensor = tb.TensorProto(
        dtype=tb.DataType["DT_STRING"],
        tensor_shape=tb.TensorShapeProto(),
        string_val=[text.encode("utf-8")],
    )
    metadata = plugin_metadata(plugin_name, b"", tb.DataClass["DATA_CLASS_TENSOR"])
    return tb.Summary.Value(tag=tag, tensor=tensor, metadata=metadata)
