"""tensorsight.watch on a plain loop: what it logs, and what the monitor catches where."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import tensorsight
from tensorsight.errors import AnomalyError, UsageError
from tensorsight.monitor import AnomalyWarning

torch = pytest.importorskip("torch")


class Poison(torch.nn.Module):
    """Identity until ``armed``: then it multiplies its input by NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    def forward(self, x):
        return x * math.nan if self.armed else x


def _model(dtype=torch.float32):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, 8),
        Poison(),
        torch.nn.Linear(8, 1),
    ).to(dtype)


def _train(model, opt, w, steps, dtype=torch.float32, before_step=None):
    gen = torch.Generator().manual_seed(1)
    losses = []
    for step in range(steps):
        if before_step is not None:
            before_step(step)
        opt.zero_grad()
        x = torch.randn(6, 4, generator=gen).to(dtype)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        w.log_loss(loss)
        losses.append(float(loss.detach()))
        opt.step()
    return losses


def test_healthy_training_logs_loss_lr_norms_histograms_hparams_and_no_anomaly(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    with tensorsight.watch(model, opt, tmp_path, every=2) as w:
        losses = _train(model, opt, w, 7)
    assert w.anomalies == []
    assert w.step == 7
    assert w.batch_size == 6
    logdir = tensorsight.read_logdir(tmp_path)
    tags = logdir.tags(".")
    loss = logdir.scalars(".", "loss/auto")
    assert loss.steps.tolist() == [0, 2, 4, 6]
    np.testing.assert_allclose(loss.values, [losses[i] for i in (0, 2, 4, 6)], rtol=1e-6)
    np.testing.assert_allclose(logdir.scalars(".", "lr/group0").values, [0.05] * 4, rtol=1e-7)
    weight = model[0].weight.detach()
    wn = logdir.scalars(".", "weight_norm/param/0.weight")
    assert wn.values[-1] == pytest.approx(float(weight.norm()), rel=1e-6)  # after step 6
    gn = logdir.scalars(".", "grad_norm/param/4.weight")
    assert gn.values[-1] == pytest.approx(float(model[4].weight.grad.norm()), rel=1e-6)
    group = logdir.scalars(".", "grad_norm/group0").values[-1]
    grads = [p.grad.norm() ** 2 for p in model.parameters()]
    assert group == pytest.approx(math.sqrt(float(sum(grads))), rel=1e-5)
    # the first five parameters (of six) get histograms
    assert tags["histograms"] == sorted(
        ["weight/0.weight", "weight/0.bias", "weight/2.weight", "weight/2.bias", "weight/4.weight"]
    )
    hist = logdir.histograms(".", "weight/0.weight")
    assert [h.step for h in hist] == [0, 2, 4, 6]
    assert logdir.scalars(".", "monitor/anomalies").values.tolist() == [0.0] * 7
    assert "monitor/activation_amax/2" in tags["scalars"]
    assert "monitor/events/text_summary" not in tags["text"]
    (hp_run,) = [r for r in logdir.runs if r != "."]
    hp = logdir.hparams(hp_run, logdir.tags(hp_run)["hparams"][0])
    assert hp  # the experiment record is there
    assert logdir.scalars(hp_run, "hparam/loss").values[-1] == pytest.approx(losses[-1], rel=1e-6)


def test_hooks_are_removed_on_close(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = tensorsight.watch(model, opt, tmp_path)
    assert model[0]._forward_hooks
    w.close()
    w.close()  # twice is fine
    assert not any(m._forward_hooks for m in model.modules())
    assert not model._forward_pre_hooks
    assert not opt._optimizer_step_post_hooks
    with pytest.raises(UsageError, match="closed"):
        w.log_loss(1.0)


def test_histograms_regex_chooses_the_parameters(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tensorsight.watch(model, opt, tmp_path, every=1, histograms=r"bias$") as w:
        _train(model, opt, w, 1)
    tags = tensorsight.read_logdir(tmp_path).tags(".")["histograms"]
    assert tags == ["weight/0.bias", "weight/2.bias", "weight/4.bias"]


def test_planted_nan_is_caught_at_its_module_and_step(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def arm(step):
        model[3].armed = step == 3

    with (
        tensorsight.watch(model, opt, tmp_path, every=5) as w,
        pytest.warns(AnomalyWarning) as caught,
    ):
        _train(model, opt, w, 4, before_step=arm)
    first = w.anomalies[0]
    assert (first.step, first.kind, first.source, first.where) == (3, "nan", "activation", "3")
    assert {a.step for a in w.anomalies} == {3}
    assert {"activation", "grad", "loss"} <= {a.source for a in w.anomalies}
    message = str(caught[0].message)
    assert "at step 3, first nan in activation '3' output.0" in message
    logdir = tensorsight.read_logdir(tmp_path)
    anomalies = logdir.scalars(".", "monitor/anomalies")
    assert anomalies.values[:3].tolist() == [0.0, 0.0, 0.0]
    assert anomalies.values[3] == len(w.anomalies)
    (event,) = logdir.text(".", "monitor/events/text_summary")
    assert event.step == 3
    assert "nan in activation '3' output.0" in event.text


def test_planted_fp16_overflow_is_caught_at_the_scaled_layer(tmp_path):
    model = _model(torch.float16)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def scale(step):
        if step == 2:
            with torch.no_grad():
                model[2].weight.mul_(4e5)  # weights stay finite (<= 0.125 * 4e5), outputs do not
            assert bool(model[2].weight.isfinite().all())

    with (
        tensorsight.watch(model, opt, tmp_path, on_anomaly="ignore") as w,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error")  # "ignore" means no warning
        _train(model, opt, w, 3, dtype=torch.float16, before_step=scale)
    first = w.anomalies[0]
    assert (first.step, first.kind, first.where, first.dtype) == (2, "overflow", "2", "float16")
    assert all(a.step == 2 for a in w.anomalies)
    assert "step 2: overflow in activation '2' output.0 (float16" in first.describe()


def test_raise_stops_training_at_the_bad_step(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def arm(step):
        model[3].armed = step == 1

    with (
        tensorsight.watch(model, opt, tmp_path, on_anomaly="raise") as w,
        pytest.raises(AnomalyError, match=r"at step 1, first nan in activation '3'"),
    ):
        _train(model, opt, w, 4, before_step=arm)
    assert w.step == 2  # step 1 completed (the optimizer stepped), then it raised
    assert isinstance(AnomalyError("x"), FloatingPointError)


def test_dump_on_anomaly_records_the_next_step(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    folder = tmp_path / "dump"

    def arm(step):
        model[3].armed = step >= 2

    with (
        tensorsight.watch(
            model, opt, tmp_path / "logs", on_anomaly="raise", dump_on_anomaly=folder
        ) as w,
        pytest.raises(AnomalyError, match=r"at step 2.*Step 3 was recorded to"),
    ):
        _train(model, opt, w, 6, before_step=arm)
    assert w.step == 4  # raised after the recorded step 3
    assert w.dumps == [(3, str(folder))]
    dump = tensorsight.read_dump(folder)
    assert dump.steps() == [3]
    assert dump.complete
    ops = dump.step(step=3).ops
    modules = {op.module_path for op in ops}
    assert {"Sequential.0", "Sequential.2", "Sequential.4"} <= modules
    assert any(op.direction == "backward" for op in ops)
    # the monitor's own reductions are not in the dump: step 3 went unchecked for activations
    assert not any(a.source == "activation" and a.step == 3 for a in w.anomalies)


def test_a_dump_folder_in_use_is_never_overwritten_and_training_goes_on(tmp_path):
    """Review finding: a second run with the same dump_on_anomaly folder died in opt.step()."""
    folder = tmp_path / "dump"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")  # the folder holds something already
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def arm(step):
        model[3].armed = step >= 2

    with (
        warnings.catch_warnings(record=True) as caught,
        tensorsight.watch(model, opt, tmp_path / "logs", dump_on_anomaly=folder) as w,
    ):
        warnings.simplefilter("always")
        _train(model, opt, w, 5, before_step=arm)
    assert w.step == 5  # trained to the end
    assert w.dumps == []
    assert any("no dump of step 3" in str(c.message) for c in caught)
    assert sorted(x.name for x in folder.iterdir()) == ["notes.txt"]


def test_many_forward_passes_before_a_step_are_folded(tmp_path, monkeypatch):
    import importlib

    watch_module = importlib.import_module("tensorsight.monitor.watch")
    monkeypatch.setattr(watch_module, "_ACT_FOLD", 8)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with tensorsight.watch(model, opt, tmp_path / "logs", every=1) as w:
        for _ in range(20):  # accumulation: 20 forward passes, then one step
            model(torch.randn(4, 4)).sum().backward()
            # folded to one entry per series, plus at most one pass's worth (forward and
            # backward) since the last fold
            assert len(w._act_ids) <= 8 + 2 * len(w.checker.series)
        opt.step()
    assert not [a for a in w.anomalies if a.source in ("activation", "backward")]


def test_dead_activation_and_gradient_spike(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: only the planted changes
    with torch.no_grad():
        model[0].bias.fill_(-100.0)  # ReLU output all zero from the start
    gen = torch.Generator().manual_seed(2)
    with tensorsight.watch(model, opt, tmp_path, on_anomaly="ignore", dead_steps=3) as w:
        for step in range(9):
            opt.zero_grad()
            x = torch.randn(5, 4, generator=gen) * (1000.0 if step == 8 else 1.0)
            loss = model(x).pow(2).mean()
            loss.backward()
            w.log_loss(loss)
            opt.step()
    dead = [a for a in w.anomalies if a.kind == "dead"]
    assert {(a.step, a.where) for a in dead if a.source == "activation"} == {(2, "1")}
    spikes = [a for a in w.anomalies if a.kind == "spike"]
    assert spikes
    assert all(a.step == 8 for a in spikes)
    assert any(a.source == "activation" and a.where == "0" for a in spikes)


def test_bad_options_name_the_option(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(UsageError, match="on_anomaly 'loud'"):
        tensorsight.watch(model, opt, tmp_path, on_anomaly="loud")
    with pytest.raises(UsageError, match="every 0"):
        tensorsight.watch(model, opt, tmp_path, every=0)
    with pytest.raises(UsageError, match="histograms '\\('"):
        tensorsight.watch(model, opt, tmp_path, histograms="(")
    with pytest.raises(UsageError, match=r"Expected a torch\.nn\.Module"):
        tensorsight.watch(object(), opt, tmp_path)
    with pytest.raises(UsageError, match=r"Expected a torch\.optim\.Optimizer"):
        tensorsight.watch(model, object(), tmp_path)


def test_distributed_rank_writes_its_own_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda group=None: 3)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tensorsight.watch(model, opt, tmp_path, every=1) as w:
        _train(model, opt, w, 1)
    assert w.rank == 3
    assert w.logdir == str(tmp_path / "rank3")
    assert "rank3" in tensorsight.read_logdir(tmp_path).runs


def test_findings_record_for_the_board_names_modules_and_the_dump(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def arm(step):
        model[3].armed = step == 2

    with (
        warnings.catch_warnings(),
        tensorsight.watch(model, opt, tmp_path / "logs", dump_on_anomaly=tmp_path / "d") as w,
    ):
        warnings.simplefilter("ignore")
        _train(model, opt, w, 4, before_step=arm)
    records = tensorsight.read_logdir(tmp_path / "logs").tensors(".", "monitor/findings")
    docs = {r.step: json.loads(r.data.tobytes()) for r in records}
    # step 0 lists the modules; then steps with findings (3 too: step 2 left NaN weights)
    assert sorted(docs) == [0, 2, 3]
    assert docs[0]["modules"] == ["", "0", "1", "2", "3", "4"]
    assert docs[0]["findings"] == []
    found = docs[2]["findings"]
    assert len(found) == sum(a.step == 2 for a in w.anomalies)
    assert (found[0]["kind"], found[0]["module"], found[0]["value"]) == ("nan", "3", "NaN")
    grads = [f for f in found if f["source"] == "grad"]
    assert {(f["where"], f["module"]) for f in grads} >= {("0.weight", "0"), ("4.bias", "4")}
    assert [f["module"] for f in found if f["source"] == "loss"] == [None]
    assert docs[2]["dump"] == {"step": 3, "path": str(tmp_path / "d")}


class _NanInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * math.nan


class BackwardPoison(torch.nn.Module):
    """Identity forward; once ``armed``, its backward turns the gradient into NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    def forward(self, x):
        return _NanInBackward.apply(x) if self.armed else x


def test_a_nan_born_in_backward_is_named_at_the_module_whose_backward_made_it(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 16),
        torch.nn.ReLU(inplace=True),  # in-place ops must keep working with the hooks
        torch.nn.Linear(16, 8),
        BackwardPoison(),
        torch.nn.Linear(8, 1),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def arm(step):
        model[3].armed = step == 2

    with (
        tensorsight.watch(model, opt, tmp_path, on_anomaly="ignore") as w,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error")
        _train(model, opt, w, 3, before_step=arm)
    assert {a.step for a in w.anomalies} == {2}
    assert not [a for a in w.anomalies if a.source == "activation"]  # the forward was clean
    first = w.anomalies[0]
    assert (first.kind, first.source, first.where, first.tensor) == (
        "nan",
        "backward",
        "3",
        "grad_input.0",
    )
    backward = {(a.where, a.tensor) for a in w.anomalies if a.source == "backward"}
    # downstream of the poison (its output's gradient, module 4, the model) stays finite
    assert ("3", "grad_output.0") not in backward
    assert ("4", "grad_input.0") not in backward
    assert {("2", "grad_output.0"), ("1", "grad_input.0")} <= backward
    assert "step 2: nan in backward '3' grad_input.0 (float32" in first.describe()


def test_backward_false_checks_no_backward_gradients(tmp_path):
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def arm(step):
        model[3].armed = step == 1

    with tensorsight.watch(model, opt, tmp_path, backward=False, on_anomaly="ignore") as w:
        _train(model, opt, w, 2, before_step=arm)
    sources = {a.source for a in w.anomalies}
    assert "activation" in sources
    assert "backward" not in sources


def test_graph_data_pipeline_and_lineage_once_without_changing_training(tmp_path):
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(24, 4), torch.randn(24, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=6)

    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5),
            torch.nn.Linear(8, 1),
        )  # fmt: skip

    def train(model, w=None):
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        torch.manual_seed(1)
        ctx = (
            tensorsight.watch(
                model, opt, tmp_path, data=loader, loss_fn=torch.nn.functional.mse_loss
            )
            if w
            else None
        )
        watched = ctx.__enter__() if ctx else None
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
        if watched:
            watched.log_checkpoint(tmp_path / "ckpt" / "last.pt")
            ctx.__exit__(None, None, None)
        return [p.detach().clone() for p in model.state_dict().values()]

    plain = train(make())
    watched = train(make(), w=True)
    # the graph's extra forward (BatchNorm statistics, dropout's draws) left no trace
    assert all(torch.equal(a, b) for a, b in zip(plain, watched, strict=True))
    logdir = tensorsight.read_logdir(tmp_path)
    tags = logdir.tags(".")
    assert tags["graphs"] == ["graph"]
    graph = logdir.graph(".")
    ops = {n.op for n in graph.nodes}
    assert "aten.addmm.default" in ops
    assert any("batch_norm" in op for op in ops)
    (pipeline,) = logdir.data_graphs(".", "dataset_graph")
    assert {n["type"] for n in pipeline.nodes} >= {"DataLoader", "TensorDataset"}
    (sub,) = [r for r in logdir.runs if r != "."]
    records = [r for tag in logdir.tags(sub)["hparams"] for r in logdir.hparams(sub, tag)]
    (values,) = [r.hparams for r in records if r.part == "session_start"]
    assert values["optimizer"] == "Adam"
    assert values["loss_function"] == "mse_loss"
    assert values["batch_size"] == 6
    assert values["train_dataset_size"] == 24
    assert values["model_path"] == str(tmp_path / "ckpt" / "last.pt")
    assert values["network"] == "Sequential"
