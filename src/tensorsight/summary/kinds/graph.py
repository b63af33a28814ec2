"""Computational graphs (kind ``graphs``): the record types, and the decoder of a TensorBoard
``GraphDef`` (``Event.graph_def``) into a :class:`Graph`.

The writer side lives in ``summary/graph.py`` (tracing a torch model); MindSpore ``.pb`` and
ONNX files are read by their own readers into the same :class:`Graph`.

Reads graphs from torch's ``add_graph``, tensorboardX and TensorFlow, plus the attributes
tensorsight's writer adds to each ``NodeDef``: ``_output_shapes`` (list of shapes),
``tensorsight.output_dtypes`` (list of strings), ``tensorsight.module_path``,
``tensorsight.op`` and ``tensorsight.attr.<name>``. torch's writer keeps the shapes in
``_output_shapes`` and the module scope in the node name (``Net/Linear[fc]/...``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tensorsight.summary.kinds._kind import Kind
from tensorsight.summary.kinds.tensor_decode import decode_tensor, tensor_dtype_name

__all__ = ["KIND", "SPEC", "Graph", "GraphNode", "attr_value", "decode_graph_def"]

KIND = "graphs"


@dataclass(frozen=True)
class GraphNode:
    """One node of a computational graph.

    ``shapes``/``dtypes`` describe each output (empty when unknown; an unknown dimension is
    -1); ``module_path`` is the dotted nn.Module (or MindSpore scope) path; ``attrs`` holds
    the remaining attributes as plain Python values.
    """

    name: str
    op: str
    inputs: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    module_path: str = ""
    attrs: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True, eq=False)
class Graph:
    """A computational graph: ``nodes`` in file order; ``source`` names the format.

    ``error`` is set (and ``nodes`` empty) for a graph file that could not be decoded: the
    sentence says why.
    """

    step: int
    wall_time: float
    nodes: tuple[GraphNode, ...]
    source: str = "tensorboard"
    name: str = "graph"
    error: str = ""

    def node(self, name: str) -> GraphNode | None:
        """The node called ``name``, or ``None``."""
        for n in self.nodes:
            if n.name == name:
                return n
        return None


_PREFIX = "tensorsight.attr."


def _shape(shape: Any) -> tuple[int, ...]:
    return tuple(int(d.size) for d in shape.dim)


def _s(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def attr_value(attr: Any) -> Any:
    """An ``AttrValue`` as a plain Python value (shapes as tuples, tensors as lists)."""
    which = attr.WhichOneof("value")
    if which is None:
        return None
    if which == "s":
        return _s(attr.s)
    if which in ("i", "f", "b"):
        return getattr(attr, which)
    if which == "type":
        return tensor_dtype_name(attr.type)
    if which == "shape":
        return _shape(attr.shape)
    if which == "tensor":
        try:
            return decode_tensor(attr.tensor)[2].tolist()
        except ValueError:
            return None
    if which == "placeholder":
        return attr.placeholder
    lst = attr.list
    if lst.s:
        return [_s(v) for v in lst.s]
    if lst.shape:
        return [_shape(s) for s in lst.shape]
    if lst.type:
        return [tensor_dtype_name(t) for t in lst.type]
    for name in ("i", "f", "b"):
        values = getattr(lst, name)
        if values:
            return list(values)
    return []


def decode_graph_def(graph_def: Any, *, step: int, wall_time: float, name: str) -> Graph:
    """Turn a parsed ``GraphDef`` message into a :class:`Graph`."""
    nodes = []
    for node in graph_def.node:
        attrs: dict[str, Any] = {}
        shapes: tuple[tuple[int, ...], ...] = ()
        dtypes: tuple[str, ...] = ()
        module_path = ""
        op = node.op
        for key in sorted(node.attr):
            value = attr_value(node.attr[key])
            if key == "_output_shapes" and isinstance(value, list):
                shapes = tuple(tuple(s) for s in value if isinstance(s, tuple))
            elif key == "tensorsight.output_dtypes" and isinstance(value, list):
                dtypes = tuple(str(v) for v in value)
            elif key == "tensorsight.module_path":
                module_path = str(value)
            elif key == "tensorsight.op":
                op = str(value)
            elif key.startswith(_PREFIX):
                attrs[key[len(_PREFIX) :]] = value
            elif key == "dtype" and not dtypes and isinstance(value, str):
                dtypes = (value,)
                attrs[key] = value
            else:
                attrs[key] = value
        if not module_path and "/" in node.name:
            module_path = node.name.rsplit("/", 1)[0]
        nodes.append(
            GraphNode(
                name=node.name,
                op=op,
                inputs=tuple(node.input),
                shapes=shapes,
                dtypes=dtypes,
                module_path=module_path,
                attrs=attrs,
            )
        )
    return Graph(step, wall_time, tuple(nodes), "tensorboard", name)


# graphs come from ``Event.graph_def`` and graph files, not from plugin values
SPEC = Kind(KIND, Graph)
