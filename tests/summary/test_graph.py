"""add_graph: one NodeDef per ATen op that ran, with scopes, producers, shapes and dtypes."""

from __future__ import annotations

import pytest

from tensorsight import SummaryWriter
from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.graph import build_graph_def, scope_of
from tests.summary._tb import load

torch = pytest.importorskip("torch")
nn = torch.nn


class Attn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.o = nn.Linear(8, 8)

    def forward(self, x):
        return self.o(torch.softmax(self.q(x), dim=-1))


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.ModuleList([Attn(), Attn()])
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        for block in self.layer:
            x = block(x)
        return self.norm(x)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.encoder(x).relu())


def _nodes(graph):
    return {n.name: n for n in graph.node}


def _s(node, key):
    return node.attr[key].s.decode()


def test_scope_of_joins_numeric_children():
    assert scope_of("encoder.layer.0.attn") == "encoder/layer.0/attn"
    assert scope_of("") == ""
    assert scope_of("0.1") == "0.1"


def test_nodes_have_scoped_names_producers_and_attrs():
    graph = build_graph_def(Model(), torch.zeros(2, 8))
    nodes = _nodes(graph)
    addmm = nodes["encoder/layer.0/q/aten::addmm_0"]
    assert addmm.op == "aten::addmm"
    assert _s(addmm, "tensorsight.op") == "aten.addmm.default"
    assert _s(addmm, "tensorsight.module_path") == "encoder.layer.0.q"
    assert [d.size for d in addmm.attr["_output_shapes"].list.shape[0].dim] == [2, 8]
    assert list(addmm.attr["tensorsight.output_dtypes"].list.s) == [b"float32"]
    assert "encoder/layer.0/q/bias" in addmm.input
    assert "input/input.0" in addmm.input
    softmax = nodes["encoder/layer.0/aten::_softmax_0"]
    assert softmax.attr["tensorsight.attr.dim"].i == -1
    assert softmax.input == ["encoder/layer.0/q/aten::addmm_0"]
    assert nodes["encoder/norm/weight"].op == "Parameter"
    assert nodes["output/output.0"].input == ["head/aten::addmm_4"]
    for node in graph.node:  # every input names a node of the graph
        assert set(node.input) <= nodes.keys(), node.name


def test_autocast_records_reduced_precision_dtypes():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        graph = build_graph_def(Model(), torch.zeros(2, 8))
    nodes = _nodes(graph)
    assert list(nodes["head/aten::addmm_4"].attr["tensorsight.output_dtypes"].list.s) == [
        b"bfloat16"
    ]
    assert list(nodes["input/input.0"].attr["tensorsight.output_dtypes"].list.s) == [b"float32"]
    casts = [n for n in graph.node if n.op == "aten::_to_copy"]
    assert casts
    assert all(_s(n, "tensorsight.attr.dtype") == "bfloat16" for n in casts)


def test_only_the_branch_taken_is_recorded():
    class Branchy(nn.Module):
        def forward(self, x):
            return x.exp() if x.sum() > 0 else x.neg()

    ops = {n.op for n in build_graph_def(Branchy(), torch.ones(3)).node}
    assert "aten::exp" in ops
    assert "aten::neg" not in ops


def test_tuple_inputs_no_inputs_and_hooks_removed():
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, a, b):
            return self.lin(a) + b, a * 2

    model = Two()
    graph = build_graph_def(model, (torch.zeros(1, 2), torch.ones(1, 2)))
    names = _nodes(graph).keys()
    assert {"input/input.0", "input/input.1", "output/output.0", "output/output.1"} <= names
    assert not model.lin._forward_hooks
    assert not model.lin._forward_pre_hooks

    class NoInput(nn.Module):
        def forward(self):
            return torch.arange(3)

    assert next(n.op for n in build_graph_def(NoInput()).node) == "aten::arange"


def test_bad_model_and_failing_forward_are_usage_errors():
    with pytest.raises(UsageError, match=r"Expected a torch.nn.Module"):
        build_graph_def(lambda x: x, torch.zeros(1))
    with pytest.raises(UsageError, match="running it on input_to_model failed"):
        build_graph_def(nn.Linear(3, 2), torch.zeros(1, 5))


def test_tensorboard_reads_the_graph(tmp_path):
    model = Model()
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, torch.zeros(2, 8), verbose=True)
    graph = load(tmp_path).Graph()
    assert isinstance(graph.node[0].name, str)
    ours = build_graph_def(model, torch.zeros(2, 8))
    assert [n.name for n in graph.node] == [n.name for n in ours.node]
    assert tb.GraphDef.FromString(graph.SerializeToString()).node[0].op == ours.node[0].op
