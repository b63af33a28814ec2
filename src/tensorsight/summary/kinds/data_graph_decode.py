"""Decode the ``tensorsight.data_graph`` kind (read side).

Payload (the writer's contract): a DT_STRING scalar tensor holding UTF-8 JSON
``{"version": 1, "nodes": [{"id", "type", "label", "params"}], "edges": [[src, dst]]}``.
"""

from __future__ import annotations

from tensorsight.summary.kinds._json_tensor import load_versioned_json
from tensorsight.summary.records import DataGraphRecord

__all__ = ["PLUGIN_NAME", "decode_data_graph"]

PLUGIN_NAME = "tensorsight.data_graph"
SCHEMA_VERSION = 1


def decode_data_graph(payload: bytes, *, step: int, wall_time: float, tag: str) -> DataGraphRecord:
    """Parse one data-graph JSON payload.

    Raises:
        ValueError: The payload is not the documented JSON.
        SchemaVersionError: ``version`` is newer than this reader knows.
    """
    doc = load_versioned_json(payload, what="Data graph", tag=tag, known=SCHEMA_VERSION)
    nodes = tuple(dict(n) for n in doc.get("nodes", []))
    edges = tuple((str(e[0]), str(e[1])) for e in doc.get("edges", []))
    return DataGraphRecord(step, wall_time, nodes, edges)
