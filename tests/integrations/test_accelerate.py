"""TensorsightTracker under a real accelerate ``Accelerator``: ``log_with="tensorsight"``
resolves to it (through accelerate's public tracker registry), and loss, learning rate and
the config as hparams are in ``<project_dir>/<run>``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip(
    "accelerate", reason="needs accelerate: pip install 'tensorsight[accelerate]'"
)

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
