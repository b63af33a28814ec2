"""TensorsightTracker under a real accelerate ``Accelerator``: ``log_with="tensorsight"``
resolves to it (through accelerate's public tracker registry), and loss, learning rate and
the config as hparams are in ``<project_dir>/<run>``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip(
    "accelerate", reason="needs accelerate: pip install 'tensorsight[accelerate]'"
)

import tensorsight  # noqa: E402
from tensorsight.integrations.accelerate import TensorsightTracker, register  # noqa: E402
from tests.integrations._read import read_run, session_hparams, values  # noqa: E402

STEPS = 6


def _train(accelerator, run: str) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step))
    model, opt, sched = accelerator.prepare(model, opt, sched)
    accelerator.init_trackers(run, config={"lr": 0.05, "model": {"hidden": 8}, "note": None})
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
    y = x.sum(dim=1, keepdim=True)
    for step in range(STEPS):
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        opt.step()
        sched.step()
        opt.zero_grad()
        accelerator.log(
            {"loss": loss.detach(), "lr": sched.get_last_lr()[0], "phase": {"a": 1, "b": 2}},
            step=step,
        )
    accelerator.end_training()


def test_log_with_the_name_writes_loss_learning_rate_and_config(tmp_path):
    assert register()  # this accelerate has the public registry
    accelerator = accelerate.Accelerator(log_with="tensorsight", project_dir=tmp_path, cpu=True)
    _train(accelerator, "tiny")

    logdir, run = read_run(tmp_path)
    assert run == "tiny"
    steps, loss = values(logdir, run, "loss")
    assert list(steps) == list(range(STEPS))
    assert np.isfinite(loss).all()
    assert loss[-1] < loss[0]
    _, lr = values(logdir, run, "lr")
    assert lr == pytest.approx([0.05 / (2 + s) for s in range(STEPS)])
    assert list(values(logdir, run, "phase/b")[1]) == [2.0] * STEPS  # dicts in the same run
    assert session_hparams(logdir, run) == {"lr": pytest.approx(0.05), "model/hidden": 8.0}


def test_an_instance_works_too(tmp_path):
    tracker = TensorsightTracker("mine", tmp_path / "logs", flush_secs=1)
    accelerator = accelerate.Accelerator(log_with=[tracker], cpu=True)
    _train(accelerator, "ignored: an instance keeps its own run name")
    logdir, run = read_run(tmp_path / "logs")
    assert run == "mine"
    assert len(values(logdir, run, "loss")[1]) == STEPS


def test_all_ranks_writes_the_process_in_its_own_run(tmp_path):
    tracker = TensorsightTracker("r", tmp_path, all_ranks=True)
    assert tracker.main_process_only is False
    tracker.log({"loss": 1.5}, step=0)  # starts on first use
    tracker.finish()
    logdir, run = read_run(tmp_path)
    assert run == "r/rank0"
    assert list(values(logdir, run, "loss")[1]) == [1.5]


class _Poison(torch.nn.Module):
    """Identity until ``armed``: then it multiplies its input by NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    def forward(self, x):
        return x * float("nan") if self.armed else x


def test_watch_runs_the_monitor_into_the_trackers_run_by_rank(tmp_path):
    from tensorsight.integrations.accelerate import watch
    from tensorsight.monitor import AnomalyWarning
    from tests.integrations._read import findings

    accelerator = accelerate.Accelerator(
        log_with="tensorsight", project_dir=tmp_path / "logs", cpu=True
    )
    accelerator.init_trackers("r", init_kwargs={"tensorsight": {"all_ranks": True}})
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), _Poison(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    model, opt = accelerator.prepare(model, opt)
    w = watch(accelerator, model, opt, every=1, dump_on_anomaly=str(tmp_path / "dump"))
    assert w is not None
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AnomalyWarning)
        for step in range(4):
            model[1].armed = step == 2
            loss = model(x).pow(2).mean()
            accelerator.backward(loss)
            w.log_loss(loss)
            opt.step()
            opt.zero_grad()
            accelerator.log({"loss": loss.detach()}, step=step)
        accelerator.end_training()
    messages = [str(c.message) for c in caught if c.category is AnomalyWarning]
    assert "at step 2, first nan in activation '1' output.0" in messages[0]

    assert w.closed  # end_training closed it
    first = w.anomalies[0]
    assert (first.step, first.kind, first.source, first.where) == (2, "nan", "activation", "1")
    assert w.dumps == [(3, str(tmp_path / "dump"))]
    assert tensorsight.read_dump(tmp_path / "dump").steps() == [3]
    logdir = tensorsight.read_logdir(tmp_path / "logs")
    assert logdir.runs == ["r/rank0"]
    tags = set(logdir.tags("r/rank0")["scalars"])
    assert {"loss", "loss/auto", "lr/group0", "monitor/anomalies"} <= tags
    assert logdir.graph("r/rank0") is not None  # the tracker has none of its own
    assert findings(logdir, "r/rank0")[2]["findings"][0]["module"] == "1"
    assert session_hparams(logdir, "r/rank0")["optimizer"] == "SGD"  # the watch's lineage


def test_watch_without_a_tensorsight_tracker_is_one_line(tmp_path):
    from tensorsight.errors import UsageError
    from tensorsight.integrations.accelerate import watch

    accelerator = accelerate.Accelerator(cpu=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(UsageError, match="no 'tensorsight' tracker"):
        watch(accelerator, model, opt)
    tracker = TensorsightTracker("t", tmp_path)
    with pytest.raises(UsageError, match="monitor option 'evry' is unknown"):
        tracker.watch(model, opt, evry=3)
