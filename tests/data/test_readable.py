"""The readable toggle's rule (data/readable.py) on real graphs.

A torch training step (forward, ``loss.backward()``, SGD with momentum) recorded with
``SummaryWriter.add_graph``; the training graph MindSpore 2.10.0 wrote into
tests/fixtures/mindspore; forward-only graphs, where nothing may be hidden.
"""

from __future__ import annotations

import pytest

from tensorsight.board.views.graphs import graph_impl
from tensorsight.data import LogdirProvider
from tensorsight.data.readable import (
    auxiliary_nodes,
    is_gradient_or_optimizer_name,
    is_parameter_update,
)
from tests.conftest import ROOT
from tests.fixtures.train_step import write_train_step_graph

torch = pytest.importorskip("torch")


def _train_step_graph(tmp_path, optimizer: str) -> dict:
    write_train_step_graph(tmp_path, optimizer)
    return graph_impl(LogdirProvider(tmp_path), ".", "graph")


def _kept(g: dict) -> set[str]:
    hidden = set(g["auxiliary"])
    return {p for i, p in enumerate(g["paths"]) if i not in hidden}


def test_torch_training_step_keeps_only_the_forward(tmp_path):
    g = _train_step_graph(tmp_path, "sgd")
    paths, hidden = g["paths"], set(g["auxiliary"])
    by_name = {p: i for i, p in enumerate(paths)}
    forward = [
        "input/input.0", "input/input.1", "net.0/weight", "net.0/bias", "net.0/aten::addmm_0",
        "net.1/aten::relu_0", "net.2/aten::addmm_1", "aten::_log_softmax_0",
        "aten::nll_loss_forward_0", "output/output.0",
    ]  # fmt: skip
    for name in forward:
        assert by_name[name] not in hidden, name
    # backward ops whose names say nothing, the momentum buffer, the updates and the seed
    for name in ["aten::mm_0", "aten::t_2", "aten::sum_0", "aten::clone_0", "aten::ones_like_0"]:
        assert by_name[name] in hidden, name
    updates = [i for i, op in enumerate(g["ops"]) if "add_" in op]
    assert len(updates) == 4  # one per parameter
    assert set(updates) <= hidden
    # a tensor saved for the backward (detach of relu's output) goes too
    assert by_name["net.1/aten::detach_0"] in hidden
    # nothing of the backward or the optimizer stays, not even its profiler markers
    left = {p for p in _kept(g) if not p.startswith(("net.", "input/", "output/"))}
    assert left == {"aten::_log_softmax_0", "aten::nll_loss_forward_0", "aten::detach_12"}
    assert any(p.startswith("profiler::") for p in paths)


def test_torch_foreach_adam_step(tmp_path):
    g = _train_step_graph(tmp_path, "adam")
    ops, hidden = g["ops"], set(g["auxiliary"])
    foreach = [i for i, op in enumerate(ops) if "_foreach_" in op]
    assert foreach
    assert set(foreach) <= hidden
    kept_ops = {ops[i] for i in range(len(ops)) if i not in hidden}
    assert not any("backward" in op for op in kept_ops)
    assert any("addmm" in op for op in kept_ops)


def test_forward_only_graph_hides_nothing(tmp_path):
    from tensorsight import SummaryWriter

    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(layer.eval(), torch.randn(1, 4, 16))
    g = graph_impl(LogdirProvider(tmp_path), ".", "graph")
    assert g["auxiliary"] == []


def test_mindspore_training_graph():
    g = graph_impl(LogdirProvider(ROOT / "tests" / "fixtures" / "mindspore"), ".", "graph")
    kept = _kept(g)
    assert not any(p.startswith("Gradients/") for p in kept)
    assert not any("optimizer-Momentum" in p for p in kept)
    # optimizer state and hyper-parameters feed only the updates
    assert {"moments.fc1.weight", "learning_rate", "momentum", "global_step"}.isdisjoint(kept)
    # the forward network and its weights stay
    assert "fc1.weight" in kept
    assert any(p.endswith("fc1-Dense/MatMul-op0") for p in kept)
    assert any("SparseSoftmaxCrossEntropyWithLogits-op0" in p for p in kept)


def test_rules_on_small_cases():
    assert is_gradient_or_optimizer_name("Gradients/Default/fc/MatMul-op0", "MatMul")
    assert is_gradient_or_optimizer_name("Default/optimizer-Adam/Adam-op0", "Adam")
    assert is_gradient_or_optimizer_name("x", "ReluGrad")
    assert is_gradient_or_optimizer_name("aten::threshold_backward_0", "aten::threshold_backward")
    assert not is_gradient_or_optimizer_name("optimizer_state", "Parameter")  # a leaf, not a scope
    assert not is_gradient_or_optimizer_name("enc/layers.0/aten::addmm_0", "aten::addmm")
    assert is_parameter_update("aten::add_", ["Parameter", "aten::clone"])
    assert is_parameter_update("aten.add_.Tensor", ["Parameter"])
    assert is_parameter_update("ApplyMomentum", ["Parameter", "Parameter"])
    assert not is_parameter_update("aten::add_", ["aten::mm", "aten::clone"])  # no parameter
    assert not is_parameter_update("aten::add", ["Parameter"])  # not in place
    assert not is_parameter_update("aten::__and__", ["Parameter"])
    # rule 3 stops at a node with a visible consumer and never hides IO nodes
    paths = ["in", "w", "a", "g", "upd", "out"]
    ops = ["IO Node", "Parameter", "aten::mm", "aten::mul", "aten::add_", "IO Node"]
    inputs = [[], [], [0, 1], [2], [1, 3], [2]]
    assert auxiliary_nodes(paths, ops, inputs, [[] for _ in paths]) == [3, 4]
    # without outputs only rule 4 spreads: "g" feeds only the update, "a" also feeds "b"
    ops2 = ["IO Node", "Parameter", "aten::mm", "aten::mul", "aten::add_", "aten::relu"]
    assert auxiliary_nodes(paths, ops2, inputs, [[] for _ in paths]) == [3, 4]
    ops3 = ["IO Node", "Parameter", "aten::mm", "aten::mul", "aten::add_", "aten::gelu"]
    inputs3 = [[], [], [0, 1], [2], [1, 3], []]
    assert auxiliary_nodes(paths, ops3, inputs3, [[] for _ in paths]) == [1, 2, 3, 4]
    # an out-of-range producer index is ignored; an empty graph hides nothing
    assert auxiliary_nodes(["a"], ["aten::add_"], [[7]], [[]]) == []
    assert auxiliary_nodes([], [], [], []) == []
