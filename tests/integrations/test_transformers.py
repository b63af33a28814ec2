"""TensorsightCallback under a real transformers Trainer on a tiny random-init GPT-2
(nothing downloaded): loss, learning rate, gradient norms, eval loss and the arguments and
model config as hparams are in the run; only process zero writes unless ``all_ranks``."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip(
    "transformers", reason="needs transformers: pip install 'tensorsight[transformers]'"
)

import tensorsight  # noqa: E402
from tensorsight.integrations.transformers import TensorsightCallback, rewrite_tag  # noqa: E402
from tests.integrations._read import read_run, session_hparams, values  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

STEPS, VOCAB, SEQ = 6, 64, 8


class _Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int, seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, VOCAB, (n, SEQ), generator=gen)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def _model() -> torch.nn.Module:
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=16, n_layer=1, n_head=2, n_positions=SEQ,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(cfg)


def _train(tmp_path, callback: TensorsightCallback, save: bool = False) -> None:
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=STEPS, per_device_train_batch_size=4,
        learning_rate=1e-3, lr_scheduler_type="linear", logging_steps=2, eval_strategy="steps",
        eval_steps=3, save_strategy="steps" if save else "no", save_steps=STEPS,
        report_to="none", use_cpu=True, disable_tqdm=True, dataloader_num_workers=0, seed=0,
    )  # fmt: skip
    trainer = transformers.Trainer(
        model=_model(), args=args, train_dataset=_Tokens(32, 0), eval_dataset=_Tokens(8, 1),
        callbacks=[callback],
    )  # fmt: skip
    trainer.train()


def test_a_train_writes_loss_learning_rate_grad_norms_eval_and_hparams(tmp_path):
    _train(tmp_path, TensorsightCallback(logdir=tmp_path / "logs", grad_norms=r"h\.0\.mlp"))

    logdir, run = read_run(tmp_path / "logs")
    steps, loss = values(logdir, run, "train/loss")
    assert list(steps) == [2, 4, 6]  # every logging_steps
    assert np.isfinite(loss).all()
    assert 2.0 < loss[0] < 6.0  # about ln(64) = 4.16 for a random model

    _, lr = values(logdir, run, "train/learning_rate")
    assert 0 < lr[-1] < lr[0] <= 1e-3  # the linear schedule decays

    eval_steps, eval_loss = values(logdir, run, "eval/loss")
    assert list(eval_steps) == [3, 6]
    assert np.isfinite(eval_loss).all()

    tags = logdir.tags(run)["scalars"]
    norm_steps, total = values(logdir, run, "grad_norm/total")
    assert list(norm_steps) == [1, 2, 4, 6]  # step 1, then every logging step
    assert (total > 0).all()
    assert np.isfinite(total).all()
    per_param = [t for t in tags if t.startswith("grad_norm/") and t != "grad_norm/total"]
    assert per_param
    assert all("h.0.mlp" in t for t in per_param), per_param
    _, fc = values(logdir, run, "grad_norm/transformer.h.0.mlp.c_fc.weight")
    assert (fc <= total).all()  # one parameter's norm never exceeds the total

    hparams = session_hparams(logdir, run)
    assert hparams["args/learning_rate"] == pytest.approx(1e-3)
    assert hparams["args/max_steps"] == STEPS
    assert hparams["model_config/n_embd"] == 16
    assert hparams["model_config/vocab_size"] == VOCAB


def test_the_data_pipeline_once_and_the_lineage_at_the_end(tmp_path):
    _train(tmp_path, TensorsightCallback(logdir=tmp_path / "runs"), save=True)
    logdir, run = read_run(tmp_path / "runs")
    (pipeline,) = logdir.data_graphs(run, "dataset_graph")
    # accelerate's DataLoaderShard over the dataset, with the trainer's collator
    assert {"DataLoaderShard", "_Tokens"} <= {n["type"] for n in pipeline.nodes}
    hparams = session_hparams(logdir, run)
    assert hparams["args/learning_rate"] == pytest.approx(1e-3)  # the arguments stay
    assert hparams["optimizer"] == "AdamW"
    assert hparams["batch_size"] == 4
    assert hparams["train_dataset_size"] == 32
    assert hparams["network"] == "GPT2LMHeadModel"
    assert hparams["model_path"] == str(tmp_path / "out" / f"checkpoint-{STEPS}")
    assert os.path.isdir(hparams["model_path"])
    assert isinstance(hparams.get("loss_function", ""), str)


def test_only_process_zero_writes_unless_all_ranks(tmp_path):
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), report_to="none")
    state = transformers.TrainerState(is_world_process_zero=False, global_step=5)
    control = transformers.TrainerControl()
    silent = TensorsightCallback(logdir=tmp_path / "silent")
    silent.on_log(args, state, control, logs={"loss": 1.0})
    assert not (tmp_path / "silent").exists()

    loud = TensorsightCallback(logdir=tmp_path / "loud", all_ranks=True)
    loud.on_log(args, state, control, logs={"loss": 1.0, "note": "text is skipped"})
    loud.on_train_end(args, state, control)
    logdir, run = read_run(tmp_path / "loud")
    assert run == f"rank{args.process_index}"
    assert logdir.tags(run)["scalars"] == ["train/loss"]


def test_log_keys_are_tagged_like_tensorboards_callback():
    assert rewrite_tag("eval_runtime") == "eval/runtime"
    assert rewrite_tag("loss") == "train/loss"


class _PoisonAt(transformers.TrainerCallback):
    """Puts a NaN into one weight of the first MLP before the step numbered ``step``."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if state.global_step + 1 == self.step:  # the step about to be taken
            with torch.no_grad():
                model.transformer.h[0].mlp.c_fc.weight[0, 0] = float("nan")


def test_monitor_catches_a_planted_nan_at_its_module_and_step(tmp_path):
    from tensorsight.monitor import AnomalyWarning
    from tests.integrations._read import findings

    callback = TensorsightCallback(
        logdir=tmp_path / "logs", all_ranks=True,
        monitor={"dump_on_anomaly": str(tmp_path / "dump"), "on_anomaly": "ignore"},
    )  # fmt: skip
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=STEPS, per_device_train_batch_size=4,
        logging_steps=2, report_to="none", use_cpu=True, disable_tqdm=True,
        dataloader_num_workers=0, seed=0, save_strategy="no", max_grad_norm=0.0,
    )  # fmt: skip
    trainer = transformers.Trainer(
        model=_model(), args=args, train_dataset=_Tokens(32, 0),
        callbacks=[callback, _PoisonAt(3)],
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnomalyWarning)  # "ignore": summaries only
        trainer.train()

    w = callback.monitor
    assert w is not None
    assert w.closed
    first = w.anomalies[0]  # numbered as the trainer numbers its steps: the 3rd is 3
    assert (first.step, first.kind, first.source) == (3, "nan", "activation")
    assert first.where == "transformer.h.0.mlp.c_fc"
    assert min(a.step for a in w.anomalies) == 3
    assert w.dumps == [(4, str(tmp_path / "dump"))]
    dump = tensorsight.read_dump(tmp_path / "dump")
    assert dump.steps() == [4]
    assert dump.complete

    logdir = tensorsight.read_logdir(tmp_path / "logs")
    run = f"rank{args.process_index}"
    assert logdir.runs == [run]  # the callback's scalars and the monitor's: one run
    tags = set(logdir.tags(run)["scalars"])
    assert {"train/loss", "lr/group0", "weight_norm/group0", "monitor/anomalies"} <= tags
    assert logdir.tags(run)["histograms"]
    docs = findings(logdir, run)
    assert min(docs) == 1  # the first step's record lists the modules
    assert "transformer.h.0.mlp.c_fc" in docs[1]["modules"]
    assert docs[3]["findings"][0]["module"] == "transformer.h.0.mlp.c_fc"
    assert docs[3]["dump"] == {"step": 4, "path": str(tmp_path / "dump")}
    assert session_hparams(logdir, run)["optimizer"] == "AdamW"  # the callback's lineage
