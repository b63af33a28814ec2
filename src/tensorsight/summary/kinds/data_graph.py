"""Data graphs: the stages of an input pipeline (datasets, transforms, sampler, loader).

Spec (docs/formats/summaries.md, "data graphs"): plugin ``tensorsight.data_graph``, a
DT_STRING scalar of UTF-8 JSON ``{"version": 1, "nodes": [{"id", "type", "label", "params"}],
"edges": [[src_id, dst_id], ...]}``. ``tensorsight.summary.data_graph`` builds the dict from a
torch DataLoader or Dataset; this module only checks and encodes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tensorsight.errors import UsageError
from tensorsight.summary.kinds._json_tensor import json_value, load_versioned_json
from tensorsight.summary.kinds._kind import Kind, Raw
from tensorsight.summary.kinds.tensor_decode import decode_tensor

__all__ = [
    "KIND",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SPEC",
    "DataGraphRecord",
    "decode",
    "decode_data_graph",
    "encode",
    "validate",
]

KIND = "data_graphs"
PLUGIN_NAME = "tensorsight.data_graph"
SCHEMA_VERSION = 1


def validate(tag: str, graph: Mapping[str, Any] | object) -> dict[str, Any]:
    """Check ``graph`` has the documented shape; return it with ``version`` set.

    Raises:
        UsageError: Missing keys, duplicate node ids, an edge naming an unknown node, or
            values that are not JSON.
    """
    where = f"Data graph {tag!r}"
    if not isinstance(graph, Mapping) or "nodes" not in graph:
        msg = f"{where}: got {type(graph).__name__}. Expected a dict with 'nodes' and 'edges'."
        raise UsageError(msg)
    nodes = []
    ids: set[str] = set()
    for i, node in enumerate(graph["nodes"]):
        if not isinstance(node, Mapping) or not isinstance(node.get("id"), str):
            msg = f"{where}: node {i} is {node!r:.80}. Expected a dict with a str 'id'."
            raise UsageError(msg)
        if node["id"] in ids:
            msg = f"{where}: node id {node['id']!r} appears twice. Expected unique ids."
            raise UsageError(msg)
        ids.add(node["id"])
        params = node.get("params") or {}
        if not isinstance(params, Mapping):
            msg = (
                f"{where}: node {node['id']!r} params is {type(params).__name__}. Expected a dict."
            )
            raise UsageError(msg)
        nodes.append(
            {
                "id": node["id"],
                "type": str(node.get("type", "")),
                "label": str(node.get("label", node["id"])),
                "params": dict(params),
            }
        )
    edges = []
    for edge in graph.get("edges", []):
        if len(edge) != 2 or edge[0] not in ids or edge[1] not in ids:
            msg = (
                f"{where}: edge {edge!r:.80} does not join two known node ids. Expected "
                "[source_id, destination_id]."
            )
            raise UsageError(msg)
        edges.append([edge[0], edge[1]])
    result = {"version": SCHEMA_VERSION, "nodes": nodes, "edges": edges}
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as exc:
        msg = f"{where}: params are not JSON-serialisable ({exc}). Expected numbers, str, lists."
        raise UsageError(msg) from exc
    return result


def encode(tag: str, graph: Mapping[str, Any] | object) -> Any:
    """A ``Summary.Value`` holding the data graph ``graph`` (validated first)."""
    return json_value(tag, PLUGIN_NAME, validate(tag, graph))


# ------------------------------------------------------------ read side
@dataclass(frozen=True, eq=False)
class DataGraphRecord:
    """One data-pipeline graph (``add_data_graph`` or a MindSpore lineage dataset graph).

    What ``Logdir.records(run, "data_graphs", tag)`` and the board's data layer
    (``tensorsight.data.DataGraph`` is this type) return.

    Attributes:
        step: Step it was written at.
        wall_time: Seconds since the epoch.
        nodes: ``{"id", "type", "label", "params"}`` objects (see docs/formats/summaries.md).
        edges: ``(source id, target id)`` pairs in the direction data flows.
    """

    step: int
    wall_time: float
    nodes: tuple[Mapping[str, Any], ...]
    edges: tuple[tuple[str, str], ...]

    SCHEMA_VERSION = 1  # of the record (the payload's is the module's SCHEMA_VERSION)


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


def decode(raw: Raw) -> list[DataGraphRecord]:
    """A ``tensorsight.data_graph`` value (the JSON payload in a string scalar)."""
    _, _, arr = decode_tensor(raw.tensor)
    payload = bytes(arr.reshape(-1)[0])
    return [decode_data_graph(payload, step=raw.step, wall_time=raw.wall_time, tag=raw.tag)]


SPEC = Kind(KIND, DataGraphRecord, PLUGIN_NAME, decode)
