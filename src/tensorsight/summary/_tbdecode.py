"""Turn parsed TensorBoard ``Event`` messages into reader items (the protobuf path).

Handles every layout TensorBoard, TF2, tensorboardX and torch.utils.tensorboard write:
legacy ``simple_value``/``histo``/``image``/``audio`` values, TF2 tensor summaries whose
kind comes from ``metadata.plugin_data.plugin_name`` (sent with the first value of a tag
at least, remembered per run), graphs, hparams, and tensorsight's own plugins.

Plugin values are decoded by their kind's module: :func:`decoders` is the table from plugin
name to :class:`~tensorsight.summary.kinds.Kind`, built from
:data:`tensorsight.summary.kinds.KINDS`. A tensor of an unknown plugin is kept as a tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

from tensorsight.summary._proto import tb
from tensorsight.summary.kinds import KINDS, Kind, Raw
from tensorsight.summary.kinds.audio import AudioRecord
from tensorsight.summary.kinds.graph import decode_graph_def
from tensorsight.summary.kinds.histogram import decode_legacy
from tensorsight.summary.kinds.image import ImageRecord, image_format
from tensorsight.summary.kinds.tensor import TensorRecord
from tensorsight.summary.kinds.tensor_decode import decode_tensor

__all__ = ["Item", "decode_event", "decoders", "image_format"]


class Item(NamedTuple):
    """One decoded value: ``kind`` is a Logdir kind, or ``"_start"`` (SessionLog.START)."""

    seq: int
    kind: str
    tag: str
    step: int
    wall_time: float
    payload: Any


@lru_cache(maxsize=1)
def decoders() -> dict[str, Kind]:
    """Plugin name -> the kind that decodes its values (every kind with a ``decode``)."""
    table: dict[str, Kind] = {}
    for name in KINDS:
        spec = KINDS.get(name)
        if spec.plugin is not None and spec.decode is not None:
            table[spec.plugin] = spec
    return table


#: :func:`decoders` as plugin -> (kind name, decode, reads the content only), built on first use.
_TABLE: dict[str, tuple[str, Callable[[Raw], list[Any]], bool]] = {}


def _table() -> dict[str, tuple[str, Callable[[Raw], list[Any]], bool]]:
    global _TABLE
    if not _TABLE:  # built whole, then bound: a reader thread never sees half a table
        _TABLE = {
            plugin: (spec.name, spec.decode, spec.reads == "metadata")
            for plugin, spec in decoders().items()
            if spec.decode is not None
        }
    return _TABLE


def _decoded(
    kind: str, records: list[Any], seq: int, tag: str, step: int, wall: float
) -> list[Item]:
    out = []
    for r in records:  # a loop, not a comprehension: no extra frame per value (Python 3.11)
        out.append(Item(seq, kind, tag, step, wall, r))
    return out


_new = tuple.__new__  # builds a Raw in C (its generated __new__ is a Python call per value)


def _other_tensor(raw: Raw, plugin: str, seq: int) -> list[Item]:
    """A tensor no kind claims: a plain float32 0-d tensor without plugin is a scalar."""
    name, shape, arr = decode_tensor(raw.tensor)
    step, wall, tag = raw.step, raw.wall_time, raw.tag
    if not plugin and name == "float32" and shape == ():
        return [Item(seq, "scalars", tag, step, wall, float(arr.reshape(-1)[0]))]
    return [Item(seq, "tensors", tag, step, wall, TensorRecord(step, wall, name, shape, arr))]


def decode_value(v: Any, seq: int, step: int, wall: float, plugins: dict[str, str]) -> list[Item]:
    """Items of one ``Summary.Value``; ``plugins`` maps tag -> plugin name (updated)."""
    tag = v.tag or v.node_name
    meta = v.metadata.plugin_data
    if meta.plugin_name:
        plugins[tag] = meta.plugin_name
    plugin = plugins.get(tag, "")
    spec = (_TABLE or _table()).get(plugin)
    if spec is not None and spec[2]:
        records = spec[1](_new(Raw, (step, wall, tag, meta.content, None)))
        return _decoded(spec[0], records, seq, tag, step, wall)
    which = v.WhichOneof("value")
    if which == "simple_value":
        return [Item(seq, "scalars", tag, step, wall, float(v.simple_value))]
    if which == "histo":
        return [Item(seq, "histograms", tag, step, wall, decode_legacy(step, wall, v.histo))]
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
        raw = _new(Raw, (step, wall, tag, meta.content, v.tensor))
        if spec is not None:
            return _decoded(spec[0], spec[1](raw), seq, tag, step, wall)
        return _other_tensor(raw, plugin, seq)
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
