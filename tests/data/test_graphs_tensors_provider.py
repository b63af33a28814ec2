"""LogdirProvider / InMemoryProvider for the model views, on logs written by SummaryWriter."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tensorsight import SummaryWriter
from tensorsight.data import (
    DataGraph,
    DataProvider,
    InMemoryProvider,
    LogdirProvider,
    ModelGraph,
    TensorValue,
)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("logs")
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    with SummaryWriter(str(d / "run")) as w:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            w.add_graph(model, torch.randn(2, 4))
        w.add_tensor("t", torch.tensor([[1.5, float("nan")], [0.0, 2.0]]).to(torch.bfloat16), 3)
        w.add_tensor("t", torch.arange(4).reshape(2, 2), 4)
        w.add_data_graph("pipe", torch.utils.data.DataLoader(list(range(8)), batch_size=2))
    return d


def test_logdir_provider_reads_graphs_tensors_and_data_graphs(logdir):
    p = LogdirProvider(logdir)
    info = p.run_info("run")
    assert info.tags["graphs"] == ("graph",)
    g = p.read_graph("run", "graph")
    assert isinstance(g, ModelGraph)
    assert g is p.read_graph("run", "graph")  # cached per generation
    addmm = next(n for n in g.nodes if "addmm" in n.op)
    assert addmm.dtypes == ("bfloat16",)
    assert addmm.module_path == "0"
    assert addmm.scoped_name == addmm.name
    t = p.read_tensors("run", "t")
    assert [(v.step, v.dtype) for v in t] == [(3, "bfloat16"), (4, "int64")]
    assert t[0].values.dtype == np.float32
    assert t[0].values[0, 0] == 1.5
    assert np.isnan(t[0].values[0, 1])
    assert t[1].values.tolist() == [[0, 1], [2, 3]]
    assert t[0].shape == (2, 2)
    dg = p.read_data_graphs("run", "pipe")
    assert isinstance(dg[0], DataGraph)
    assert any(n["type"] == "DataLoader" for n in dg[0].nodes)
    for call in (p.read_graph, p.read_tensors, p.read_data_graphs):
        with pytest.raises(KeyError):
            call("run", "missing")
    with pytest.raises(KeyError):
        p.read_graph("nope", "graph")


def test_in_memory_provider_and_base_defaults():
    p = InMemoryProvider()
    p.add_tensor("r", "x", TensorValue.from_array(0, 5.0, [1, 2], dtype="float16"))
    assert p.run_info("r").tags == {"tensors": ("x",)}
    v = p.read_tensors("r", "x")[0]
    assert v.values.dtype == np.float32
    assert not v.values.flags.writeable
    p.add_graph(ModelGraph("r", "g", "tensorsight", 0, 1.0, ()))
    assert p.read_graph("r", "g").nodes == ()

    class Minimal(DataProvider):  # a third-party provider without model views
        def list_runs(self):
            return []

        read_scalars = read_histograms = read_images = read_text = list_runs  # type: ignore[assignment]

    with pytest.raises(KeyError):
        Minimal().read_graph("r", "g")


def test_read_tensors_at_answers_one_step_and_follows_appends_and_restarts(tmp_path):
    """The index behind the Monitor tab's /step: the step's records, also after the run
    grows, and after a restarted run rewrites steps it had (the reader purges them)."""
    w = SummaryWriter(str(tmp_path / "run"), flush_secs=1)
    for step in (0, 2, 2, 5):
        w.add_tensor("t", np.array([step, 10 * step]), step)
    w.flush()
    p = LogdirProvider(tmp_path)
    at = lambda step: [r.values.tolist() for r in p.read_tensors_at("run", "t", step)]  # noqa: E731
    assert at(2) == [[2, 20], [2, 20]]
    assert at(3) == []
    assert at(5) == [[5, 50]]
    w.add_tensor("t", np.array([7, 1]), 7)  # the run grows: the index is extended
    w.flush()
    p.reload()
    assert at(7) == [[7, 1]]
    assert at(0) == [[0, 0]]
    w.close()
    with SummaryWriter(str(tmp_path / "run")) as again:  # restarted from step 2: 2..7 dropped
        again.add_tensor("t", np.array([2, -1]), 2)
    p.reload()
    assert at(2) == [[2, -1]]
    assert at(7) == []
    assert [r.step for r in p.read_tensors("run", "t")] == [0, 2]
    assert DataProvider.read_tensors_at(p, "run", "t", 2)[0].values.tolist() == [2, -1]
    with pytest.raises(KeyError):
        p.read_tensors_at("run", "missing", 0)
