"""Turn parsed TensorBoard ``Event`` messages into reader items (the protobuf path).

Handles every layout TensorBoard, TF2, tensorboardX and torch.utils.tensorboard write:
legacy ``simple_value``/``histo``/``image``/``audio`` values, TF2 tensor summaries whose
kind comes from ``metadata.plugin_data.plugin_name`` (sent with the first value of a tag
at least, remembered per run), graphs, hparams, and tensorsight's own plugins.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tensorsight.summary._proto import tb
from tensorsight.summary.kinds.data_graph_decode import decode_data_graph
from tensorsight.summary.kinds.graph_decode import decode_graph_def
from tensorsight.summary.kinds.landscape_decode import decode_landscape
from tensorsight.summary.kinds.tensor_decode import decode_tensor, decode_tensorsight_tensor
from tensorsight.summary.records import (
    AudioRecord,
    HistogramRecord,
    HParamsRecord,
    ImageRecord,
    PrCurveRecord,
    TensorRecord,
    TextRecord,
)

__all__ = ["Item", "decode_event", "image_format"]


class Item(NamedTuple):
    """One decoded value: ``kind`` is a Logdir kind, or ``"_start"`` (SessionLog.START)."""

    seq: int
    kind: str
    tag: str
    step: int
    wall_time: float
    payload: Any


_MAGIC = (
    (b"\x89PNG", "png"),
    (b"\xff\xd8", "jpeg"),
    (b"GIF8", "gif"),
    (b"BM", "bmp"),
)


def image_format(data: bytes) -> str:
    """The image format from its first bytes."""
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return "unknown"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _legacy_histogram(step: int, wall: float, h: Any) -> HistogramRecord:
    limits = np.asarray(h.bucket_limit, dtype=np.float64)
    counts = np.asarray(h.bucket, dtype=np.float64)
    if counts.size:
        edges = np.concatenate([[h.min], limits[:-1], [h.max]]).astype(np.float64)
    else:
        edges = np.empty(0, np.float64)
    return HistogramRecord(
        step, wall, edges, counts, min=h.min, max=h.max, num=h.num, sum=h.sum,
        sum_squares=h.sum_squares,
    )  # fmt: skip


def _tensor_histogram(step: int, wall: float, arr: np.ndarray[Any, Any]) -> HistogramRecord:
    data = np.asarray(arr, dtype=np.float64).reshape(-1, 3)
    if data.shape[0] == 0:
        return HistogramRecord(step, wall, np.empty(0), np.empty(0))
    edges = np.concatenate([data[:, 0], data[-1:, 1]])
    return HistogramRecord(step, wall, edges, data[:, 2].copy())


def _hparams(step: int, wall: float, content: bytes) -> HParamsRecord | None:
    data = tb.HParamsPluginData.FromString(content)
    part = data.WhichOneof("data")
    if part == "experiment":
        exp = data.experiment
        hparams: dict[str, Any] = {}
        for info in exp.hparam_infos:
            domain = info.WhichOneof("domain")
            entry: dict[str, Any] = {"type": info.type}
            if domain == "domain_discrete":
                entry["values"] = [_pb_value(v) for v in info.domain_discrete.values]
            elif domain == "domain_interval":
                entry["interval"] = (info.domain_interval.min_value, info.domain_interval.max_value)
            hparams[info.name] = entry
        metrics = tuple(m.name.tag for m in exp.metric_infos)
        return HParamsRecord(step, wall, "experiment", hparams, metrics)
    if part == "session_start_info":
        values = {k: _pb_value(v) for k, v in data.session_start_info.hparams.items()}
        return HParamsRecord(step, wall, "session_start", values)
    if part == "session_end_info":
        return HParamsRecord(step, wall, "session_end", status=data.session_end_info.status)
    return None


def _pb_value(v: Any) -> Any:
    kind = v.WhichOneof("kind")
    if kind == "number_value":
        return v.number_value
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    return None


def _decode_tensor_value(
    plugin: str, content: bytes, v: Any, seq: int, tag: str, step: int, wall: float
) -> list[Item]:
    t = v.tensor
    if plugin == "tensorsight.tensor":
        name, shape, arr = decode_tensorsight_tensor(content, t)
        return [Item(seq, "tensors", tag, step, wall, TensorRecord(step, wall, name, shape, arr))]
    name, shape, arr = decode_tensor(t)
    if plugin == "scalars" or (not plugin and name == "float32" and shape == ()):
        return [Item(seq, "scalars", tag, step, wall, float(arr.reshape(-1)[0]))]
    if plugin == "histograms":
        return [Item(seq, "histograms", tag, step, wall, _tensor_histogram(step, wall, arr))]
    if plugin == "images":
        flat = arr.reshape(-1)
        width, height = (int(flat[i]) if flat.size > i else 0 for i in (0, 1))
        return [
            Item(seq, "images", tag, step, wall,
                 ImageRecord(step, wall, bytes(img), width, height, image_format(img), i))
            for i, img in enumerate(flat[2:])
        ]  # fmt: skip
    if plugin == "audio":
        rows = arr.reshape(-1, 2) if arr.size else arr.reshape(0, 2)
        return [
            Item(seq, "audio", tag, step, wall,
                 AudioRecord(step, wall, bytes(r[0]), 0.0, "audio/wav", i, _text(r[1])))
            for i, r in enumerate(rows)
        ]  # fmt: skip
    if plugin == "text":
        values = tuple(_text(s) for s in arr.reshape(-1))
        return [Item(seq, "text", tag, step, wall, TextRecord(step, wall, values, shape))]
    if plugin == "pr_curves":
        data = np.asarray(arr, dtype=np.float64).reshape(6, -1)
        n = data.shape[1]
        thresholds = np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(n)
        rec = PrCurveRecord(step, wall, thresholds, *(data[i].copy() for i in range(6)))
        return [Item(seq, "pr_curves", tag, step, wall, rec)]
    if plugin in ("tensorsight.landscape", "tensorsight.data_graph"):
        payload = bytes(arr.reshape(-1)[0])
        if plugin == "tensorsight.landscape":
            rec2: Any = decode_landscape(payload, step=step, wall_time=wall, tag=tag)
            return [Item(seq, "landscapes", tag, step, wall, rec2)]
        rec2 = decode_data_graph(payload, step=step, wall_time=wall, tag=tag)
        return [Item(seq, "data_graphs", tag, step, wall, rec2)]
    return [Item(seq, "tensors", tag, step, wall, TensorRecord(step, wall, name, shape, arr))]


def decode_value(v: Any, seq: int, step: int, wall: float, plugins: dict[str, str]) -> list[Item]:
    """Items of one ``Summary.Value``; ``plugins`` maps tag -> plugin name (updated)."""
    tag = v.tag or v.node_name
    meta = v.metadata.plugin_data
    if meta.plugin_name:
        plugins[tag] = meta.plugin_name
    plugin = plugins.get(tag, "")
    if plugin == "hparams":
        rec = _hparams(step, wall, meta.content) if meta.content else None
        return [] if rec is None else [Item(seq, "hparams", tag, step, wall, rec)]
    which = v.WhichOneof("value")
    if which == "simple_value":
        return [Item(seq, "scalars", tag, step, wall, float(v.simple_value))]
    if which == "histo":
        return [Item(seq, "histograms", tag, step, wall, _legacy_histogram(step, wall, v.histo))]
    if which == "image":
        im = v.image
        data = bytes(im.encoded_image_string)
        rec_i = ImageRecord(step, wall, data, im.width, im.height, image_format(data))
        return [Item(seq, "images", tag, step, wall, rec_i)]
    if which == "audio":
        au = v.audio
        rec_a = AudioRecord(
            step, wall, bytes(au.encoded_audio_string), au.sample_rate,
            au.content_type or "audio/wav",
        )  # fmt: skip
        return [Item(seq, "audio", tag, step, wall, rec_a)]
    if which == "tensor":
        return _decode_tensor_value(plugin, meta.content, v, seq, tag, step, wall)
    return []


def decode_event(event: Any, seq: int, plugins: dict[str, str]) -> list[Item]:
    """Items of one parsed ``Event``; unknown or empty events give ``[]``.

    Raises:
        ValueError: A value's data does not match its declared layout.
    """
    step = int(event.step)
    wall = float(event.wall_time)
    which = event.WhichOneof("what")
    if which == "summary":
        items: list[Item] = []
        for v in event.summary.value:
            items.extend(decode_value(v, seq, step, wall, plugins))
        return items
    if which == "graph_def":
        graph_def = tb.GraphDef.FromString(event.graph_def)
        graph = decode_graph_def(graph_def, step=step, wall_time=wall, name="graph")
        return [Item(seq, "graphs", "graph", step, wall, graph)]
    if which == "session_log" and event.session_log.status == tb.SessionLog.START:
        return [Item(seq, "_start", "", step, wall, None)]
    return []
