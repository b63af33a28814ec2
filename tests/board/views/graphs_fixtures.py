"""A small hand-made mixed-precision graph in an InMemoryProvider (shared by the API tests)."""

from __future__ import annotations

from tensorsight.data import GraphNodeData, InMemoryProvider, ModelGraph


def mixed_graph() -> ModelGraph:
    n = GraphNodeData
    nodes = (
        n("input/input.0", "IO Node", (), ((2, 4),), ("float32",)),
        n("fc/weight", "Parameter", (), ((3, 4),), ("float32",), "fc.weight"),
        n("fc/aten::_to_copy_0", "aten::_to_copy", ("fc/weight",), ((3, 4),), ("bfloat16",), "fc",
          {"tensorsight.attr.dtype": b"bfloat16"}),
        n("fc/aten::addmm_0", "aten::addmm", ("input/input.0", "fc/aten::_to_copy_0:0"),
          ((2, 3),), ("bfloat16",), "fc"),
        n("head/aten::gt_0", "aten::gt", ("fc/aten::addmm_0", "^fc/weight"), ((2, 3),),
          ("bool",), "head"),
        n("héad/ünïcode_0", "MatMul", ("fc/aten::addmm_0",), ((2, 3),), ("DT_HALF",), "héad",
          {"precision_flag": "fp16", "nan": float("nan")}),
        n("output/output.0", "IO Node", ("head/aten::gt_0",), ((2, 3),), ("bool",)),
    )  # fmt: skip
    return ModelGraph("train", "graph", "tensorsight", 0, 1000.0, nodes)


def graph_provider() -> InMemoryProvider:
    p = InMemoryProvider()
    p.add_graph(mixed_graph())
    return p
