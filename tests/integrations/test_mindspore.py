"""TensorsightCollector under a real MindSpore ``Model.train`` (graph mode, CPU): what the
board reads back (loss, learning rate, norms, histograms, the data pipeline, hparams and
lineage), the monitor on a planted NaN, MindSpore's own summary format, and bad options.

MindSpore is not in the dev tool chain; ``make mindspore-tests`` runs this file in a venv of
its own (requirements/mindspore.txt)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

ms = pytest.importorskip("mindspore", reason="needs mindspore: make mindspore-tests")

from mindspore import dataset as ds  # noqa: E402
from mindspore import nn  # noqa: E402
from mindspore.train import Model  # noqa: E402

from tensorsight.errors import AnomalyError, UsageError  # noqa: E402
from tensorsight.integrations.mindspore import TensorsightCollector  # noqa: E402
from tensorsight.monitor.watch import AnomalyWarning  # noqa: E402
from tests.integrations._read import findings, read_run, session_hparams, values  # noqa: E402

BATCHES = 4  # batches of 8 per epoch
EPOCHS = 2


class _Net(nn.Cell):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Dense(6, 12)
        self.act = nn.Tanh()
        self.fc2 = nn.Dense(12, 3)

    def construct(self, x):  # type: ignore[no-untyped-def]
        return self.fc2(self.act(self.fc1(x)))


def _data(nan_batch: int | None = None) -> object:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8 * BATCHES, 6)).astype(np.float32)
    if nan_batch is not None:
        x[8 * nan_batch] = np.nan
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8 * BATCHES)]  # one-hot rows: arrays
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)


def _train(collector: TensorsightCollector, nan_batch: int | None = None) -> None:
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = _Net()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=False, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    Model(net, loss, opt).train(
        EPOCHS, _data(nan_batch), callbacks=[collector], dataset_sink_mode=False
    )


def test_healthy_run_logs_loss_lr_norms_histograms_pipeline_and_lineage(tmp_path):
    collector = TensorsightCollector(tmp_path / "run", collect_freq=3)
    _train(collector)
    assert collector.anomalies == []
    logdir, run = read_run(tmp_path / "run")
    steps, losses = values(logdir, run, "loss/auto")
    # the first step, every collect_freq-th, and the last (the hparams' final metric)
    assert steps.tolist() == [1, 3, 6, 8]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < losses[0] * 1.5
    assert values(logdir, run, "lr/group0")[1] == pytest.approx([0.05] * 3)
    tags = logdir.tags(run)
    params = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert sorted(tags["histograms"]) == sorted(f"weight/{p}" for p in params)
    for p in params:
        norms = values(logdir, run, f"weight_norm/param/{p}")[1]
        assert norms.shape == (3,)
        assert np.all(norms > 0)
    assert "weight_norm/group0" in tags["scalars"]
    checked_steps, checked = values(logdir, run, "monitor/anomalies")
    assert checked_steps.tolist() == list(range(1, BATCHES * EPOCHS + 1))
    assert np.all(checked == 0)
    (graph,) = logdir.data_graphs(run, "dataset_graph")
    kinds = {node["id"]: node["type"] for node in graph.nodes}
    assert sorted(kinds.values()) == ["BatchDataset", "NumpySlicesDataset"]
    assert [(kinds[a], kinds[b]) for a, b in graph.edges] == [
        ("NumpySlicesDataset", "BatchDataset")
    ]
    assert graph.nodes[0]["params"]["batch_size"] == 8
    hp = session_hparams(logdir, run)
    assert hp["optimizer"] == "Momentum"
    assert hp["batch_size"] == 8
    assert hp["train_dataset_size"] == BATCHES
    assert hp["loss_function"] == "SoftmaxCrossEntropyWithLogits"
    assert hp["network"] == "_Net"
    assert hp["epoch"] == EPOCHS
    assert hp["learning_rate"] == pytest.approx(0.05)


def test_histograms_regex_picks_parameters_by_name(tmp_path):
    _train(TensorsightCollector(tmp_path / "run", collect_freq=4, histograms=r"\.weight$"))
    logdir, run = read_run(tmp_path / "run")
    assert sorted(logdir.tags(run)["histograms"]) == ["weight/fc1.weight", "weight/fc2.weight"]


def test_a_nan_batch_is_found_at_its_step_and_then_in_the_parameters(tmp_path):
    collector = TensorsightCollector(tmp_path / "run", collect_freq=3)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", AnomalyWarning)
        _train(collector, nan_batch=1)  # the second batch: step 2
    messages = [str(w.message) for w in seen if w.category is AnomalyWarning]
    assert messages[0].startswith("TensorsightCollector: step 2: nan in loss"), messages
    first = collector.anomalies[0]
    assert (first.step, first.kind, first.source) == (2, "nan", "loss")
    # the update from the NaN loss poisons every parameter: seen on the next collecting step
    params = {a.where for a in collector.anomalies if a.step == 3 and a.source == "state"}
    assert params == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    logdir, run = read_run(tmp_path / "run")
    by_step = findings(logdir, run)
    assert by_step[2]["findings"][0]["kind"] == "nan"
    modules = {f["module"] for f in by_step[3]["findings"]}
    assert modules == {None, "fc1", "fc2"}  # the loss (no module) and both layers
    checked = dict(zip(*values(logdir, run, "monitor/anomalies"), strict=True))
    assert checked[1] == 0
    assert checked[2] >= 1


def test_raise_stops_training_with_the_finding(tmp_path):
    collector = TensorsightCollector(tmp_path / "run", on_anomaly="raise")
    with pytest.raises(AnomalyError, match="step 2: nan in loss"):
        _train(collector, nan_batch=1)
    logdir, run = read_run(tmp_path / "run")  # closed: what it found stays readable
    assert 2 in findings(logdir, run)


def test_mindspore_format_writes_summary_files_the_board_reads(tmp_path):
    _train(TensorsightCollector(tmp_path / "run", collect_freq=3, format="mindspore"))
    files = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert any(name.endswith("_MS") for name in files), files
    logdir, run = read_run(tmp_path / "run")
    assert values(logdir, run, "loss/auto")[0].tolist() == [1, 3, 6, 8]
    assert "weight/fc1.weight" in logdir.tags(run)["histograms"]
    assert session_hparams(logdir, run)["optimizer"] == "Momentum"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"collect_freq": 0}, "collect_freq must be a positive int"),
        ({"on_anomaly": "stop"}, "on_anomaly 'stop' is unknown"),
        ({"format": "csv"}, "format 'csv' is unknown"),
        ({"histograms": "("}, "is not a regular expression"),
        ({"histograms": -1}, "histograms must be a count"),
    ],
)
def test_bad_options_are_named(tmp_path, kwargs, message):
    with pytest.raises(UsageError, match=message):
        TensorsightCollector(tmp_path, **kwargs)


def test_no_warning_on_a_healthy_run(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnomalyWarning)
        _train(TensorsightCollector(tmp_path / "run", collect_freq=8))
