"""Read MindSpore summary folders: ``*_MS`` summaries, ``*_lineage`` files, ``.pb`` graphs.

MindSpore frames its files exactly like TensorBoard (TFRecord records, masked CRC-32C),
but the payloads are MindSpore's own messages (``_proto/mindspore.proto``). How each maps
onto the :class:`~tensorsight.summary.Logdir` kinds:

================================  =========================================================
MindSpore                         tensorsight
================================  =========================================================
``Summary.Value.scalar_value``    ``scalars``
``Summary.Value.image``           ``images`` (PNG bytes, width/height from the message)
``Summary.Value.histogram``       ``histograms``: edges from bucket ``left``/``width``,
                                  ``nan_count``/``pos_inf_count``/``neg_inf_count`` kept
``Summary.Value.tensor``          ``tensors`` (``dims``, ``data_type``; data from whichever
                                  ``*_data`` field or ``raw_data`` is set)
``Summary.Value.loss_landscape``  ``landscapes`` (x, y, z grid; loss path; metadata)
``Event.graph_def``               ``graphs``, tag ``"graph"`` (ANF nodes: op, inputs,
                                  scope as ``module_path``, output shapes/dtypes, attrs)
``*.pb`` (ModelProto)             ``graphs``, tag = file name without ``.pb`` (a file that
                                  is no ModelProto is listed with the reason)
lineage ``dataset_graph``         ``data_graphs``, tag ``"dataset_graph"``
lineage ``train_lineage`` /       ``hparams``, tags ``"lineage/train"``,
``evaluation_lineage`` /          ``"lineage/eval"``, ``"lineage/user_defined"``
``user_defined_info``
================================  =========================================================

MindSpore files never trigger the restart rule of ``_store`` (see its docstring).
"""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tensorsight.summary._graph_file import GraphFileReader
from tensorsight.summary._proto import Messages
from tensorsight.summary._tbdecode import Item, image_format
from tensorsight.summary.reader import EventFileReader
from tensorsight.summary.records import (
    DataGraphRecord,
    Graph,
    GraphNode,
    HistogramRecord,
    HParamsRecord,
    ImageRecord,
    LandscapeRecord,
    TensorRecord,
)

__all__ = [
    "MindSporeGraphFile",
    "MindSporeLineageReader",
    "MindSporeSummaryReader",
    "decode_ms_graph",
    "ms",
]

ms = Messages("mindspore.binpb", "tensorsight.ms")

# MindSpore DataType number -> (name, numpy dtype for raw_data)
MS_DTYPES: dict[int, tuple[str, str]] = {
    1: ("bool", "?"),
    2: ("int8", "i1"),
    3: ("int16", "<i2"),
    4: ("int32", "<i4"),
    5: ("int64", "<i8"),
    6: ("uint8", "u1"),
    7: ("uint16", "<u2"),
    8: ("uint32", "<u4"),
    9: ("uint64", "<u8"),
    10: ("float16", "<f2"),
    11: ("float32", "<f4"),
    12: ("float64", "<f8"),
    13: ("string", "O"),
}


def ms_dtype_name(number: int) -> str:
    """Name of a MindSpore DataType number (``"dtype_<n>"`` when unknown)."""
    entry = MS_DTYPES.get(number)
    return entry[0] if entry else f"dtype_{number}"


def decode_ms_tensor(t: Any) -> tuple[str, tuple[int, ...], np.ndarray[Any, Any]]:
    """``(dtype name, shape, array)`` of a MindSpore ``TensorProto``.

    MindSpore fills ``float_data`` (float32) even for tensors it labels float64; the values
    are returned widened to the labelled dtype.
    """
    shape = tuple(int(d) for d in t.dims)
    name = ms_dtype_name(int(t.data_type))
    np_dtype = MS_DTYPES.get(int(t.data_type), ("", "<f8"))[1]
    arr: np.ndarray[Any, Any]
    if t.raw_data:
        arr = np.frombuffer(t.raw_data, dtype=np_dtype if np_dtype != "O" else "u1").copy()
    elif len(t.float_data):
        arr = np.asarray(t.float_data, dtype=np.float32)
    elif len(t.double_data):
        arr = np.asarray(t.double_data, dtype=np.float64)
    elif len(t.int64_data):
        arr = np.asarray(t.int64_data, dtype=np.int64)
    elif len(t.uint64_data):
        arr = np.asarray(t.uint64_data, dtype=np.uint64)
    else:
        arr = np.asarray(t.int32_data, dtype=np.int32)
    if np_dtype != "O" and arr.dtype != np.dtype(np_dtype):
        arr = arr.astype(np_dtype)
    count = math.prod(shape)  # Python ints: no overflow
    if arr.size != count:
        msg = f"tensor has {arr.size} values for shape {list(shape)}"
        raise ValueError(msg)
    return name, shape, arr.reshape(shape)


def _histogram(step: int, wall: float, h: Any) -> HistogramRecord:
    lefts = np.array([b.left for b in h.buckets], dtype=np.float64)
    widths = np.array([b.width for b in h.buckets], dtype=np.float64)
    counts = np.array([b.count for b in h.buckets], dtype=np.float64)
    edges = np.concatenate([lefts, lefts[-1:] + widths[-1:]]) if lefts.size else lefts
    return HistogramRecord(
        step, wall, edges, counts,
        nan_count=int(h.nan_count), pos_inf_count=int(h.pos_inf_count),
        neg_inf_count=int(h.neg_inf_count),
        min=h.min if h.HasField("min") else None, max=h.max if h.HasField("max") else None,
        num=float(h.count) if h.HasField("count") else float(counts.sum()),
        sum=h.sum if h.HasField("sum") else None,
    )  # fmt: skip


def _landscape(step: int, wall: float, ls: Any) -> LandscapeRecord:
    x = decode_ms_tensor(ls.landscape.x)[2].astype(np.float64).reshape(-1)
    y = decode_ms_tensor(ls.landscape.y)[2].astype(np.float64).reshape(-1)
    z = decode_ms_tensor(ls.landscape.z)[2].astype(np.float64).reshape(len(y), len(x))
    path = None
    meta: dict[str, Any] = {
        "decomposition": ls.metadata.decomposition,
        "unit": ls.metadata.unit,
        "step_per_epoch": int(ls.metadata.step_per_epoch),
        "source": "mindspore",
    }
    if ls.HasField("loss_path"):
        pts = ls.loss_path.points
        cols = [decode_ms_tensor(c)[2].astype(np.float64).reshape(-1) for c in (pts.x, pts.y)]
        if pts.HasField("z"):
            cols.append(decode_ms_tensor(pts.z)[2].astype(np.float64).reshape(-1))
        path = np.stack(cols, axis=1)
        meta["intervals"] = list(ls.loss_path.intervals)
    return LandscapeRecord(step, wall, x, y, z, path, meta)


def _value_items(v: Any, seq: int, step: int, wall: float) -> list[Item]:
    tag = v.tag
    which = v.WhichOneof("value")
    if which == "scalar_value":
        return [Item(seq, "scalars", tag, step, wall, float(v.scalar_value))]
    if which == "image":
        im = v.image
        data = bytes(im.encoded_image)
        rec = ImageRecord(step, wall, data, im.width, im.height, image_format(data))
        return [Item(seq, "images", tag, step, wall, rec)]
    if which == "histogram":
        return [Item(seq, "histograms", tag, step, wall, _histogram(step, wall, v.histogram))]
    if which == "tensor":
        name, shape, arr = decode_ms_tensor(v.tensor)
        return [Item(seq, "tensors", tag, step, wall, TensorRecord(step, wall, name, shape, arr))]
    if which == "loss_landscape":
        return [Item(seq, "landscapes", tag, step, wall, _landscape(step, wall, v.loss_landscape))]
    return []


# ---------------------------------------------------------------- ANF graphs
def _type_info(tp: Any) -> tuple[list[tuple[int, ...]], list[str]]:
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        shape = tuple(int(d.size) for d in tp.tensor_type.shape.dim)
        return [shape], [ms_dtype_name(tp.tensor_type.elem_type)]
    if which == "sequence_type":
        shapes: list[tuple[int, ...]] = []
        dtypes: list[str] = []
        for elem in tp.sequence_type.elem_types:
            s, d = _type_info(elem)
            shapes += s
            dtypes += d
        return shapes, dtypes
    if tp.data_type:
        return [()], [ms_dtype_name(tp.data_type)]
    return [], []


def _is_repeated(field: Any) -> bool:
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(field.label == field.LABEL_REPEATED)


def ms_value(v: Any) -> Any:
    """A MindSpore ``ValueProto`` as a plain Python value."""
    dt = int(v.dtype)
    if dt in (31, 32):
        return [ms_value(x) for x in v.values]
    if dt == 33:
        return {d.key: ms_value(d.value) for d in v.dict_val}
    if dt == 14 and v.HasField("tensor_val"):
        t = v.tensor_val
        return {"dtype": ms_dtype_name(t.data_type), "shape": list(t.dims)}
    for field, value in v.ListFields():
        if field.name == "dtype":
            continue
        if field.name in ("values", "dict_val", "graph", "graphs", "tensor_vals", "type_val"):
            return None
        if _is_repeated(field):
            return list(value)
        return value
    return None


def decode_ms_graph(graph: Any, *, step: int, wall_time: float, name: str) -> Graph:
    """Turn a MindSpore ``GraphProto`` into a :class:`Graph`.

    Parameters become nodes with op ``"Parameter"``, constants op ``"Const"``; a node's
    ``scope`` is its ``module_path``; ``full_name`` and ``instance_name`` go into ``attrs``.
    """
    nodes: list[GraphNode] = []
    for p in graph.parameters:
        shapes, dtypes = _type_info(p.type)
        nodes.append(GraphNode(p.name, "Parameter", (), tuple(shapes), tuple(dtypes)))
    for c in graph.const_vals:
        nodes.append(GraphNode(c.key, "Const", attrs={"value": ms_value(c.value)}))
    for n in graph.node:
        shapes, dtypes = _type_info(n.output_type)
        attrs: dict[str, Any] = {a.name: ms_value(a.value) for a in n.attribute}
        if n.full_name:
            attrs["full_name"] = n.full_name
        if n.instance_name:
            attrs["instance_name"] = n.instance_name
        nodes.append(
            GraphNode(
                name=n.name,
                op=n.op_type,
                inputs=tuple(i.name for i in n.input),
                shapes=tuple(shapes),
                dtypes=tuple(dtypes),
                module_path=n.scope,
                attrs=attrs,
            )
        )
    return Graph(step, wall_time, tuple(nodes), "mindspore", name)


# ---------------------------------------------------------------- readers
class MindSporeSummaryReader(EventFileReader):
    """Incremental reader of one MindSpore ``*_MS`` summary file (same rules as TensorBoard)."""

    format = "mindspore"

    def _fast_scalars(self) -> bool:
        return False

    def decode(self, payload: bytes, seq: int) -> list[Item]:
        ev = ms.Event.FromString(payload)
        step, wall = int(ev.step), float(ev.wall_time)
        which = ev.WhichOneof("what")
        if which == "summary":
            items: list[Item] = []
            for v in ev.summary.value:
                items.extend(_value_items(v, seq, step, wall))
            return items
        if which == "graph_def":
            graph = decode_ms_graph(ev.graph_def, step=step, wall_time=wall, name="graph")
            return [Item(seq, "graphs", "graph", step, wall, graph)]
        return []


def _json_text(text: str) -> Any:
    """MindSpore writes some values JSON-encoded (``'"label"'``, ``'{"data_type": "int32"}'``)."""
    if text[:1] in ('"', "{", "["):
        with contextlib.suppress(ValueError):
            return json.loads(text)
    return text


def _params(p: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out.update({k: _json_text(v) for k, v in p.mapStr.items()})
    out.update({k: [_json_text(x) for x in v.strValue] for k, v in p.mapStrList.items()})
    out.update(dict(p.mapBool))
    out.update(dict(p.mapInt))
    out.update(dict(p.mapDouble))
    return out


def _dataset_graph(step: int, wall: float, g: Any) -> DataGraphRecord:
    nodes: list[dict[str, Any]] = []
    edges: list[tuple[str, str]] = []

    def visit(node: Any, node_id: str) -> None:
        params = _params(node.parameter)
        if node.operations:
            params["operations"] = [_params(op.operationParam) for op in node.operations]
        if node.HasField("sampler"):
            params["sampler"] = _params(node.sampler.operationParam)
        op_type = str(params.get("op_type", "dataset"))
        nodes.append({"id": node_id, "type": op_type, "label": op_type, "params": params})
        for i, child in enumerate(node.children):
            child_id = f"{node_id}.{i}"
            visit(child, child_id)
            edges.append((child_id, node_id))  # data flows from the child into its parent

    visit(g, "0")
    return DataGraphRecord(step, wall, tuple(nodes), tuple(edges))


def _user_info(u: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sub in u.user_info:
        out.update(_user_info(sub))
    out.update({k: _user_info(v) for k, v in u.map_dict.items()})
    out.update(dict(u.map_int32))
    out.update(dict(u.map_str))
    out.update(dict(u.map_double))
    return out


def _fields(msg: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, value in msg.ListFields():
        if field.message_type is not None and not _is_repeated(field):
            out.update(_fields(value))
        else:
            out[prefix + field.name] = value
    return out


class MindSporeLineageReader(EventFileReader):
    """Incremental reader of one MindSpore ``*_lineage`` file."""

    format = "mindspore"

    def _fast_scalars(self) -> bool:
        return False

    def decode(self, payload: bytes, seq: int) -> list[Item]:
        ev = ms.LineageEvent.FromString(payload)
        step, wall = int(ev.step), float(ev.wall_time)
        which = ev.WhichOneof("what")
        if which == "dataset_graph":
            rec = _dataset_graph(step, wall, ev.dataset_graph)
            return [Item(seq, "data_graphs", "dataset_graph", step, wall, rec)]
        if which == "train_lineage":
            values = _fields(ev.train_lineage)
            hp = HParamsRecord(step, wall, "train_lineage", values)
            return [Item(seq, "hparams", "lineage/train", step, wall, hp)]
        if which == "evaluation_lineage":
            values = _fields(ev.evaluation_lineage)
            metric = values.get("metric")
            if isinstance(metric, str):
                with contextlib.suppress(json.JSONDecodeError):
                    values["metric"] = json.loads(metric)
            hp = HParamsRecord(step, wall, "eval_lineage", values)
            return [Item(seq, "hparams", "lineage/eval", step, wall, hp)]
        if which == "user_defined_info":
            hp = HParamsRecord(step, wall, "user_defined", _user_info(ev.user_defined_info))
            return [Item(seq, "hparams", "lineage/user_defined", step, wall, hp)]
        return []


class MindSporeGraphFile(GraphFileReader):
    """A standalone MindSpore graph (``*.pb``, a ``ModelProto``); re-read on change."""

    format = "mindspore"
    suffix = ".pb"

    def _decode(self, data: bytes, tag: str) -> Graph:
        try:
            model = ms.ModelProto.FromString(data)
            graph = decode_ms_graph(model.graph, step=0, wall_time=0.0, name=tag)
        except (DecodeError, ValueError, KeyError, IndexError) as exc:
            msg = f"not a MindSpore ModelProto ({type(exc).__name__}: {exc})"
            raise ValueError(msg) from None
        if not graph.nodes:
            msg = (
                "not a MindSpore ModelProto (no graph nodes; a TensorFlow GraphDef or an ONNX "
                "model named .pb?)"
            )
            raise ValueError(msg)
        return graph
