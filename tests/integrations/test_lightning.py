"""TensorsightLogger under a real Lightning Trainer: loss, learning rate, hparams and graph
are in the run; rank-zero by default, every rank in ``rank<r>`` with ``all_ranks``."""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
try:
    import lightning.pytorch as pl
except ImportError:  # the older distribution name
    pl = pytest.importorskip(
        "pytorch_lightning", reason="needs lightning: pip install 'tensorsight[lightning]'"
    )

import tensorsight  # noqa: E402
from tensorsight.integrations import lightning as adapter  # noqa: E402
from tensorsight.integrations.lightning import TensorsightLogger  # noqa: E402
from tests.integrations._read import read_run, session_hparams, values  # noqa: E402

# Lightning's hints about a CPU-only, worker-less run, and its use of a torch API that torch
# 2.13 deprecates, are not failures of the adapter.
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning"),
    pytest.mark.filterwarnings("ignore:.*does not have many workers.*"),
    pytest.mark.filterwarnings("ignore:.*GPU available but not used.*"),
    pytest.mark.filterwarnings("ignore:.*number of training batches.*"),
]

STEPS = 8


class _Regression(pl.LightningModule):
    def __init__(self, lr: float = 0.05, hidden: int = 8, extra: dict | None = None) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)
        )
        self.example_input_array = torch.zeros(2, 4)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def _data() -> torch.utils.data.DataLoader:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=gen)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)


def _fit(logger: TensorsightLogger, checkpoints=None, **module_kwargs) -> None:
    torch.manual_seed(0)
    trainer = pl.Trainer(
        max_steps=STEPS,
        logger=logger,
        accelerator="cpu",
        devices=1,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_checkpointing=checkpoints is not None,
        default_root_dir=checkpoints,
        enable_model_summary=False,
        callbacks=[pl.callbacks.LearningRateMonitor(logging_interval="step")],
    )
    trainer.fit(_Regression(**module_kwargs), _data())


def test_a_fit_writes_loss_learning_rate_hparams_and_graph(tmp_path):
    logger = TensorsightLogger(tmp_path, name="tiny")
    _fit(logger, extra={"opt": {"momentum": 0.0}, "layers": [4, 8, 1]})

    logdir, run = read_run(tmp_path)
    assert run == "tiny/version_0"
    assert logger.log_dir == os.path.join(str(tmp_path), "tiny", "version_0")

    steps, loss = values(logdir, run, "train_loss")
    assert list(steps) == list(range(STEPS))
    assert np.isfinite(loss).all()
    assert loss[-1] < loss[0]  # it trained

    lr_tag = next(t for t in logdir.tags(run)["scalars"] if t.startswith("lr-"))
    _, lr = values(logdir, run, lr_tag)
    assert lr[0] == pytest.approx(0.05)
    assert lr[-1] == pytest.approx(0.025)  # StepLR halved it after 4 steps

    hparams = session_hparams(logdir, run)
    assert hparams["lr"] == pytest.approx(0.05)
    assert hparams["hidden"] == 8
    assert hparams["extra/opt/momentum"] == 0.0  # nested dicts flattened
    assert hparams["extra/layers"] == "[4, 8, 1]"  # lists kept readable

    graph = logdir.graph(run)
    assert graph is not None
    ops = {node.op for node in graph.nodes}
    assert any("addmm" in op or "linear" in op for op in ops), ops
    assert any(node.module_path.startswith("net") for node in graph.nodes)


def test_the_end_of_fit_writes_the_data_pipeline_and_lineage(tmp_path):
    logger = TensorsightLogger(tmp_path / "logs", name="tiny")
    _fit(logger, checkpoints=str(tmp_path / "ckpt"))
    logdir, run = read_run(tmp_path / "logs")
    (pipeline,) = logdir.data_graphs(run, "dataset_graph")
    assert {n["type"] for n in pipeline.nodes} >= {"DataLoader", "TensorDataset"}
    hparams = session_hparams(logdir, run)
    assert hparams["lr"] == pytest.approx(0.05)  # save_hyperparameters() is still there
    assert hparams["optimizer"] == "SGD"
    assert hparams["batch_size"] == 8
    assert hparams["train_dataset_size"] == 64
    assert hparams["network"] == "_Regression"
    assert hparams["model_path"].startswith(logger.log_dir)  # Lightning saves beside the logs
    assert hparams["model_path"].endswith(".ckpt")
    assert os.path.isfile(hparams["model_path"])


def test_the_next_run_gets_the_next_version(tmp_path):
    TensorsightLogger(tmp_path, name="exp").log_metrics({"a": 1.0}, step=0)
    second = TensorsightLogger(tmp_path, name="exp")
    assert second.version == 1
    assert TensorsightLogger(tmp_path, name="exp", version="baseline").log_dir.endswith(
        os.path.join("exp", "baseline")
    )


def test_rank_zero_by_default_other_ranks_write_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(adapter.rank_zero_only, "rank", 1)
    logger = TensorsightLogger(tmp_path, name="exp", version=0)
    logger.log_metrics({"loss": 1.0}, step=0)
    logger.log_hyperparams({"lr": 0.1})
    logger.experiment.add_scalar("x", 1.0, 0)  # a no-op object, not an error
    logger.finalize("success")
    assert not (tmp_path / "exp").exists()


def test_all_ranks_writes_each_rank_in_its_own_run(tmp_path, monkeypatch):
    for rank in (0, 1):
        monkeypatch.setattr(adapter.rank_zero_only, "rank", rank)
        logger = TensorsightLogger(tmp_path, name="exp", all_ranks=True)
        assert logger.version == 0  # both ranks agree without talking
        logger.log_metrics({"loss": float(rank), "bad": float("nan")}, step=3)
        logger.finalize("success")
    import tensorsight

    logdir = tensorsight.read_logdir(tmp_path)
    assert logdir.runs == ["exp/version_0/rank0", "exp/version_0/rank1"]
    assert list(logdir.scalars("exp/version_0/rank1", "loss").values) == [1.0]
    assert np.isnan(logdir.scalars("exp/version_0/rank0", "bad").values[0])  # NaN kept


class _Fp16Block(torch.nn.Module):
    """A layer computed in float16, scaled past float16's range once ``factor`` is raised."""

    def __init__(self) -> None:
        super().__init__()
        self.factor = 1.0

    def forward(self, x):
        return x.half() * self.factor


class _Planted(pl.LightningModule):
    """The regression model with an fp16 layer that overflows at ``OVERFLOW_STEP``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.Tanh(), _Fp16Block(), torch.nn.Linear(8, 1).half()
        )

    def forward(self, x):
        return self.net(x).float()

    def training_step(self, batch, batch_idx):
        self.net[2].factor = 1e6 if self.global_step == OVERFLOW_STEP else 1.0
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def on_before_optimizer_step(self, optimizer):
        for p in self.parameters():  # as a loss scaler would: the weights stay finite
            p.grad.nan_to_num_(0.0, 0.0, 0.0)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


OVERFLOW_STEP = 3


def test_monitor_catches_a_planted_fp16_overflow_at_its_module_and_step(tmp_path):
    from tensorsight.monitor import AnomalyWarning
    from tests.integrations._read import findings

    logger = TensorsightLogger(
        tmp_path / "logs", name="tiny", all_ranks=True,
        monitor={"every": 2, "dump_on_anomaly": str(tmp_path / "dump")},
    )  # fmt: skip
    torch.manual_seed(0)
    trainer = pl.Trainer(
        max_steps=STEPS, logger=logger, accelerator="cpu", devices=1, log_every_n_steps=1,
        enable_progress_bar=False, enable_checkpointing=False, enable_model_summary=False,
    )  # fmt: skip
    with pytest.warns(AnomalyWarning, match=r"at step 3, first overflow in activation 'net\.2'"):
        trainer.fit(_Planted(), _data())

    w = logger.monitor
    assert w is not None
    assert w.closed  # finalize closed it; what it found stays
    first = w.anomalies[0]
    assert (first.step, first.kind, first.where, first.dtype) == (3, "overflow", "net.2", "float16")
    assert all(a.step == OVERFLOW_STEP for a in w.anomalies)  # only that step went bad
    assert w.dumps == [(4, str(tmp_path / "dump"))]  # the next step, recorded
    dump = tensorsight.read_dump(tmp_path / "dump")
    assert dump.steps() == [4]
    assert dump.complete
    modules = {op.module_path for op in dump.step(step=4).ops}
    assert "_Planted.net.2" in modules, modules

    logdir = tensorsight.read_logdir(tmp_path / "logs")
    run = "tiny/version_0/rank0"  # tagged by rank, one run for the logger and the monitor
    assert logdir.runs == [run]
    tags = logdir.tags(run)["scalars"]
    assert {"train_loss", "lr/group0", "grad_norm/group0", "monitor/anomalies"} <= set(tags)
    assert "weight/net.0.weight" in logdir.tags(run)["histograms"]
    docs = findings(logdir, run)
    assert sorted(docs) == [0, OVERFLOW_STEP]  # step 0 lists the modules
    assert "net.2" in docs[0]["modules"]
    assert docs[OVERFLOW_STEP]["findings"][0]["module"] == "net.2"
    assert docs[OVERFLOW_STEP]["dump"] == {"step": 4, "path": str(tmp_path / "dump")}
    assert logdir.graph(run) is None  # no example input: the logger records no graph, nor the watch


def test_an_unknown_monitor_option_is_one_line_naming_it():
    from tensorsight.errors import UsageError

    with pytest.raises(UsageError, match="monitor option 'evry' is unknown"):
        TensorsightLogger("logs", monitor={"evry": 2})
