"""Helpers for the read-side tests: build TensorBoard/MindSpore event files byte by byte.

Events are built with our own message classes (the same field numbers as TensorBoard's and
MindSpore's) and framed with ``_record.encode_record``; the real writers are used in the
tests themselves wherever a real writer exists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tensorsight.summary._proto import tb
from tensorsight.summary._record import encode_record


def scalar_event(tag: str, value: float, step: int, wall: float = 1000.0) -> Any:
    return tb.Event(
        step=step,
        wall_time=wall + step,
        summary=tb.Summary(value=[tb.Summary.Value(tag=tag, simple_value=value)]),
    )


def tensor_scalar_event(
    tag: str, value: float, step: int, *, metadata: bool = True, wall: float = 1000.0
) -> Any:
    """A TF2-style scalar: DT_FLOAT rank-0 tensor with ``scalars`` plugin metadata."""
    v = tb.Summary.Value(tag=tag, tensor=tb.TensorProto(dtype=1, float_val=[value]))
    if metadata:
        v.metadata.plugin_data.plugin_name = "scalars"
    return tb.Event(step=step, wall_time=wall + step, summary=tb.Summary(value=[v]))


def json_event(tag: str, plugin: str, doc: dict[str, Any], step: int) -> Any:
    payload = json.dumps(doc).encode()
    v = tb.Summary.Value(tag=tag, tensor=tb.TensorProto(dtype=7, string_val=[payload]))
    v.metadata.plugin_data.plugin_name = plugin
    v.metadata.plugin_data.content = json.dumps({"version": 1}).encode()
    return tb.Event(step=step, wall_time=1000.0 + step, summary=tb.Summary(value=[v]))


def file_version_event() -> Any:
    return tb.Event(wall_time=999.0, file_version="brain.Event:2")


def frame(events: list[Any]) -> bytes:
    return b"".join(encode_record(e.SerializeToString()) for e in events)


def write_events(path: Path, events: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(frame(events))
    return path
