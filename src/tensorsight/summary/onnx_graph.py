"""Read ONNX model files (``*.onnx``) in a logdir as computational graphs.

The file is parsed with the ``onnx`` package (``tensorsight[onnx]``); nothing is run and no
external-data file is opened (an initializer stored outside the file keeps its declared shape
and dtype). When the file has no ``value_info`` for intermediate tensors (torch's TorchScript
exporter writes none), ONNX's static shape inference fills in their shapes and dtypes, for
files up to 512 MiB; a model it cannot handle keeps what the file says. How the model maps onto
:class:`~tensorsight.summary.records.Graph` (docs/formats/summaries.md, "ONNX model files"):

* each graph input that is not an initializer becomes an ``IO Node`` ``input/<name>``, each
  graph output an ``IO Node`` ``output/<name>`` fed by its producer;
* each initializer becomes a ``Parameter`` node whose scope comes from its dotted name
  (``encoder.layers.0.fc.weight`` -> ``encoder/layers.0/fc/weight``, as ``add_graph`` does);
* each node keeps its op type (``MatMul``; ``com.microsoft::FusedMatMul`` outside the default
  domain) and gets its scope from its name (torch's exporter writes
  ``/encoder/layers.0/fc/MatMul``); an unnamed or repeated name gets ``_<k>`` appended;
* inputs name their producer node (``name:k`` for its k-th output); shapes and dtypes of
  each output come from ``value_info``, the graph outputs and the initializers;
* attributes become plain values (a tensor attribute: its dtype and shape; a subgraph of
  ``If``/``Loop``/``Scan``: its name and node count).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorsight._lazy import lazy_import
from tensorsight.errors import MissingDependencyError
from tensorsight.summary._graph_file import GraphFileReader
from tensorsight.summary.graph import scope_of
from tensorsight.summary.records import Graph, GraphNode

__all__ = ["OnnxGraphFile", "decode_onnx_model", "onnx_dtype_name"]

_DTYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8_e4m3fn",
    18: "float8_e4m3fnuz", 19: "float8_e5m2", 20: "float8_e5m2fnuz", 21: "uint4", 22: "int4",
    23: "float4_e2m1",
}  # fmt: skip
_MAX_ATTR_LIST = 64
_MAX_INFER_BYTES = 512 * 2**20


def onnx_dtype_name(elem_type: int) -> str:
    """``TensorProto.DataType`` number -> dtype name (``""`` for undefined/unknown)."""
    return _DTYPES.get(int(elem_type), "")


def _type_info(value_type: Any) -> tuple[tuple[int, ...], str] | None:
    """(shape, dtype) of a ``TypeProto`` holding a tensor; -1 for a symbolic dimension."""
    if value_type.WhichOneof("value") != "tensor_type":
        return None
    t = value_type.tensor_type
    dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim)
    return dims, onnx_dtype_name(t.elem_type)


def _f32(value: float) -> float:
    """The shortest decimal that reads back as the same float32."""
    return float(str(np.float32(value)))


def _attr_value(onnx: Any, attr: Any) -> Any:
    a = onnx.AttributeProto
    kind = attr.type
    if kind == a.TENSOR:
        return f"tensor {onnx_dtype_name(attr.t.data_type)}[{', '.join(map(str, attr.t.dims))}]"
    if kind == a.GRAPH:
        return f"graph {attr.g.name!r} ({len(attr.g.node)} nodes)"
    if kind == a.GRAPHS:
        return [f"graph {g.name!r} ({len(g.node)} nodes)" for g in attr.graphs[:_MAX_ATTR_LIST]]
    if kind == a.TENSORS:
        return [f"tensor {onnx_dtype_name(t.data_type)}" for t in attr.tensors[:_MAX_ATTR_LIST]]
    value = onnx.helper.get_attribute_value(attr)
    if kind == a.FLOAT:  # stored as float32: show 1e-05, not 9.999999747378752e-06
        return _f32(value)
    if kind == a.FLOATS:
        return [_f32(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return value if isinstance(value, int | float | str) else repr(value)[:200]


def _one(
    known: tuple[tuple[int, ...], str] | None,
) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """(shapes, dtypes) of an IO node from its (shape, dtype), if known."""
    if known is None:
        return (), ()
    return (known[0],), ((known[1],) if known[1] else ())


def _unique(name: str, taken: set[str]) -> str:
    if name and name not in taken:
        taken.add(name)
        return name
    base = name or "node"
    k = 1
    while f"{base}_{k}" in taken:
        k += 1
    taken.add(f"{base}_{k}")
    return f"{base}_{k}"


def decode_onnx_model(model: Any, *, tag: str) -> Graph:
    """Turn an ``onnx.ModelProto`` into a :class:`Graph` (see the module docstring)."""
    onnx = lazy_import("onnx", extra="onnx", needed_by="reading ONNX model files")
    g = model.graph
    if len(g.value_info) < len(g.node) and model.ByteSize() <= _MAX_INFER_BYTES:
        try:
            g = onnx.shape_inference.infer_shapes(model, strict_mode=False).graph
        except Exception:  # static inference is a bonus: keep the file's own info
            g = model.graph
    info: dict[str, tuple[tuple[int, ...], str]] = {}
    for vi in (*g.input, *g.value_info, *g.output):
        known = _type_info(vi.type)
        if known is not None:
            info[vi.name] = known
    nodes: list[GraphNode] = []
    taken: set[str] = set()
    producer: dict[str, str] = {}  # tensor name -> "node" or "node:k"
    for init in g.initializer:
        name = _unique(scope_of(init.name) or init.name, taken)
        dims = tuple(int(d) for d in init.dims)
        module_path = init.name if "." in init.name and "::" not in init.name else ""
        nodes.append(
            GraphNode(name, "Parameter", (), (dims,), (onnx_dtype_name(init.data_type),),
                      module_path, {"onnx.name": init.name})
        )  # fmt: skip
        producer[init.name] = name
    for vi in g.input:
        if vi.name in producer:  # an initializer listed as an input too (old exporters)
            continue
        name = _unique(f"input/{vi.name}", taken)
        shapes, dtypes = _one(info.get(vi.name))
        nodes.append(GraphNode(name, "IO Node", (), shapes, dtypes))
        producer[vi.name] = name
    for k, node in enumerate(g.node):
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
        raw = node.name.strip("/") or f"{node.op_type}_{k}"
        name = _unique(raw, taken)
        for j, out in enumerate(node.output):
            if out:
                producer[out] = name if j == 0 else f"{name}:{j}"
        inputs = tuple(producer.get(i, i) for i in node.input if i)
        outs = [info.get(o) for o in node.output if o]
        shapes = tuple(x[0] for x in outs if x is not None)
        dtypes = tuple(x[1] for x in outs if x is not None)
        attrs: dict[str, Any] = {a.name: _attr_value(onnx, a) for a in node.attribute}
        if node.name:
            attrs["onnx.name"] = node.name
        module_path = ".".join(name.split("/")[:-1])
        nodes.append(GraphNode(name, op, inputs, shapes, dtypes, module_path, attrs))
    for vi in g.output:
        name = _unique(f"output/{vi.name}", taken)
        shapes, dtypes = _one(info.get(vi.name))
        src = producer.get(vi.name)
        nodes.append(GraphNode(name, "IO Node", (src,) if src else (), shapes, dtypes))
    return Graph(0, 0.0, tuple(nodes), "onnx", tag)


class OnnxGraphFile(GraphFileReader):
    """An ONNX model file (``*.onnx``) in a logdir; re-read on change."""

    format = "onnx"
    suffix = ""  # the tag keeps ".onnx": "model.onnx" never clashes with add_graph's "graph"

    def _decode(self, data: bytes, tag: str) -> Graph:
        try:
            onnx = lazy_import("onnx", extra="onnx", needed_by="reading ONNX model files")
        except MissingDependencyError as exc:
            raise ValueError(str(exc)) from None
        from google.protobuf.message import DecodeError

        try:
            model = onnx.load_model_from_string(data)
        except (DecodeError, ValueError, RuntimeError) as exc:
            msg = f"not an ONNX model ({type(exc).__name__}: {exc})"
            raise ValueError(msg) from None
        if not model.graph.node and not model.graph.input:
            msg = "not an ONNX model (no graph nodes or inputs)"
            raise ValueError(msg)
        return decode_onnx_model(model, tag=tag)
