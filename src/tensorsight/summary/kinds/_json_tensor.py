"""Shared by the JSON-payload kinds: a DT_STRING scalar tensor holding UTF-8 JSON.

Write side: :func:`json_value`; read side: :func:`load_versioned_json`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tensorsight.errors import SchemaVersionError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import plugin_metadata

__all__ = ["finite_or_none", "json_value", "load_versioned_json"]


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


def load_versioned_json(payload: bytes, *, what: str, tag: str, known: int) -> dict[str, Any]:
    """Parse a JSON payload whose ``"version"`` (default 1) must be at most ``known``.

    Raises:
        ValueError: The payload is not UTF-8 JSON.
        SchemaVersionError: ``version`` is newer than this reader knows.
    """
    doc: dict[str, Any] = json.loads(payload.decode("utf-8"))
    version = int(doc.get("version", 1))
    if version > known:
        msg = (
            f"{what} {tag!r}: written with schema version {version}. Expected "
            f"<= {known}. Upgrade tensorsight to read it."
        )
        raise SchemaVersionError(msg)
    return doc
