"""Round trip: tensorsight's SummaryWriter writes, read_logdir reads every kind back."""

from __future__ import annotations

import math

import numpy as np
import torch

import tensorsight
from tensorsight.summary import read_logdir


def test_every_kind_written_by_our_writer_reads_back(tmp_path):
    bf16 = torch.tensor([[1.0, -2.5], [math.inf, 3.140625]], dtype=torch.bfloat16)
    x = np.linspace(-1, 1, 4)
    y = np.linspace(-2, 2, 3)
    surface = np.add.outer(y**2, x**2)
    surface[1, 2] = np.nan
    pipeline = {
        "nodes": [{"id": "ds", "type": "MNIST", "label": "MNIST", "params": {"n": 60000}},
                  {"id": "b", "type": "batch", "label": "batch(64)", "params": {}}],
        "edges": [["ds", "b"]],
    }  # fmt: skip
    with tensorsight.SummaryWriter(tmp_path / "run") as w:
        for step in range(5):
            w.add_scalar("loss/训练", 1.0 / (step + 1), step)
        w.add_scalar("loss/训练", math.nan, 5)
        w.add_histogram("w", np.array([0.0, 1.0, 2.0, 2.0]), 1)
        w.add_image("img", np.zeros((3, 4, 6), np.uint8), 2)
        w.add_text("note", "héllo", 3)
        w.add_tensor("act", bf16, 4)
        w.add_landscape("surface", surface, x, y, path=[(0.5, 0.5, 1.0)], global_step=6)
        w.add_data_graph("pipeline", pipeline, 7)
        w.add_graph(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU()), torch.zeros(1, 3))
    log = read_logdir(tmp_path)
    assert log.runs == ["run"]
    s = log.scalars("run", "loss/训练")
    assert s.steps.tolist() == [0, 1, 2, 3, 4, 5]
    assert s.values[1] == 0.5
    assert math.isnan(s.values[5])
    (h,) = log.histograms("run", "w")
    assert h.counts.sum() == 4
    (im,) = log.images("run", "img")
    assert (im.width, im.height, im.format) == (6, 4, "png")
    assert any(t.startswith("note") for t in log.tags("run")["text"])
    (t,) = log.tensors("run", "act")
    assert (t.dtype, t.shape) == ("bfloat16", (2, 2))
    np.testing.assert_array_equal(t.to_float32(), bf16.float().numpy())
    (ls,) = log.landscapes("run", "surface")
    assert ls.values.shape == (3, 4)
    np.testing.assert_array_equal(ls.x, x)
    assert np.isnan(ls.values[1, 2])
    assert ls.values[2, 3] == surface[2, 3]
    (dg,) = log.data_graphs("run", "pipeline")
    assert dg.edges == (("ds", "b"),)
    assert dg.nodes[0]["params"] == {"n": 60000}
    g = log.graph("run")
    assert g is not None
    assert g.nodes
    typed = [n for n in g.nodes if n.dtypes]
    assert typed, "the writer's tensorsight.output_dtypes attrs should be read"
    assert any(n.module_path for n in g.nodes)


def test_float8_tensor_reads_back_exactly(tmp_path):
    values = torch.tensor([0.5, -448.0, 0.015625], dtype=torch.float8_e4m3fn)
    with tensorsight.SummaryWriter(tmp_path) as w:
        w.add_tensor("f8", values, 0)
    (t,) = read_logdir(tmp_path).tensors(".", "f8")
    assert t.dtype == "float8_e4m3fn"
    assert t.data.dtype == np.uint8
    np.testing.assert_array_equal(t.to_float32(), values.float().numpy())
