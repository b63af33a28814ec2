"""Result types for the board's model views: computational graphs and data-pipeline graphs.

These are what :meth:`DataProvider.read_graph` and :meth:`DataProvider.read_data_graphs`
return. They do not depend on the file format the graph came from: a graph written by
``SummaryWriter.add_graph`` (ATen ops with module scopes, shapes and dtypes), a TensorBoard
``GraphDef`` from torch or tensorboardX, a MindSpore ANF graph, or an ONNX model file.
``DataGraph`` is the ``data_graphs`` kind's own record type (``summary/kinds/data_graph.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tensorsight.summary.kinds.data_graph import DataGraphRecord as DataGraph

__all__ = ["DataGraph", "GraphNodeData", "ModelGraph"]


@dataclass(frozen=True)
class GraphNodeData:
    """One node of a computational graph.

    Attributes:
        name: Unique node name; ``/`` separates scopes (``encoder/layer.0/aten::addmm_3``).
        op: Op type (``aten::addmm``, ``Parameter``, ``IO Node``, MindSpore ``MatMul``...).
        inputs: Producer names as written; a leading ``^`` marks a control input and a
            ``:k`` suffix an output index (TensorBoard conventions).
        shapes: Shape of each output (an unknown dimension is -1); empty when unknown.
        dtypes: Dtype name of each output (``"bfloat16"``, ``"float32"``); empty when unknown.
        module_path: Dotted ``nn.Module`` path (MindSpore: the scope); ``""`` at the top.
        attrs: Remaining attributes as JSON-friendly Python values.
        path: The scoped name the hierarchy is built from (``name`` unless the source has a
            better one, e.g. MindSpore's ``full_name``).
    """

    name: str
    op: str
    inputs: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    module_path: str = ""
    attrs: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    path: str = ""

    SCHEMA_VERSION = 1

    @property
    def scoped_name(self) -> str:
        """``path`` when set, else ``name``."""
        return self.path or self.name


@dataclass(frozen=True, eq=False)
class ModelGraph:
    """A computational graph of one run: ``nodes`` in file order.

    Attributes:
        run: Run name.
        tag: Graph tag (``"graph"`` for ``add_graph``; the file name for a model file).
        source: Format it was read from (``"tensorsight"``, ``"tensorboard"``,
            ``"mindspore"``, ``"onnx"``).
        step: Step it was written at (0 when the format has none).
        wall_time: Seconds since the epoch.
        nodes: The nodes.
        error: Why a graph file could not be read (``nodes`` is then empty); ``""`` when it
            was read. Added in SCHEMA_VERSION 2.
    """

    run: str
    tag: str
    source: str
    step: int
    wall_time: float
    nodes: tuple[GraphNodeData, ...]
    error: str = ""

    SCHEMA_VERSION = 2
