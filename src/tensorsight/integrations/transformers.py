"""``TensorsightCallback``: a Hugging Face ``TrainerCallback`` writing tensorsight summaries.

Pass it as ``Trainer(..., callbacks=[TensorsightCallback(logdir="logs")])`` (and
``report_to="none"`` in ``TrainingArguments`` unless TensorBoard's callback should write
too). Install with ``pip install 'tensorsight[transformers]'``; torch comes from your own
install (the extra never brings it).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tensorsight._lazy import lazy_import
from tensorsight.errors import TensorsightError
from tensorsight.integrations._common import (
    HParam,
    MonitorOption,
    flatten_hparams,
    monitor_options,
    rank_dir,
    scalar_items,
    start_monitor,
)
from tensorsight.summary import SummaryWriter
from tensorsight.summary.lineage import TAG_DATA_GRAPH, dataset_size_of, lineage_of

if TYPE_CHECKING:
    from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

    from tensorsight.monitor import Watch
else:
    TrainerCallback = lazy_import(
        "transformers", extra="transformers", needed_by="TensorsightCallback"
    ).TrainerCallback

__all__ = ["TensorsightCallback", "rewrite_tag"]


def rewrite_tag(key: str) -> str:
    """The tag of a ``Trainer`` log key: ``eval_loss`` -> ``eval/loss``, ``loss`` -> ``train/loss``.

    The same names as transformers' TensorBoard callback, so dashboards carry over.

    Example:
        >>> rewrite_tag("eval_loss"), rewrite_tag("test_acc"), rewrite_tag("learning_rate")
        ('eval/loss', 'test/acc', 'train/learning_rate')
    """
    for prefix in ("eval", "test"):
        if key.startswith(f"{prefix}_"):
            return f"{prefix}/{key[len(prefix) + 1 :]}"
    return f"train/{key}"


class TensorsightCallback(TrainerCallback):
    """Writes a ``Trainer`` run as TensorBoard event files (``tensorsight.read_logdir`` reads them).

    What is written (steps are ``state.global_step``):

    - ``on_train_begin``: hparams of the run: every ``TrainingArguments`` field
      (``args/<name>``) and the model's config (``model_config/<name>``), nested values
      flattened, lists written as their ``str``; and the training DataLoader's pipeline
      once (``dataset_graph``);
    - ``on_log``: every numeric log value, tagged as transformers' TensorBoard callback tags
      it (``train/loss``, ``train/learning_rate``, ``train/grad_norm``, ``eval/loss``);
    - ``on_pre_optimizer_step`` (transformers >= 4.41 calls it): gradient norms right
      before the optimizer uses them, on logging steps: ``grad_norm/total`` and one
      ``grad_norm/<parameter name>`` per parameter matching ``grad_norms`` (a regex);
      with mixed precision, the gradients as the optimizer sees them;
    - ``on_evaluate``: flushes, so the evaluation metrics (``eval/loss``, ...; the trainer
      passes them to ``on_log``) are on disk at once;
    - ``on_save``: notes the checkpoint folder (``<output_dir>/checkpoint-<step>``);
    - ``on_train_end``: the lineage as hparams of the run (``optimizer``, ``batch_size``,
      ``loss_function``, ``train_dataset_size``, ``model_path``: the last checkpoint,
      ``network``; named as MindSpore's TrainLineage fields), then closes the files.
      No graph: the trainer calls the model with keyword arguments, which the graph
      recorder does not take.

    Ranks: by default only the world's process zero writes. With ``all_ranks=True`` every
    process writes its own run ``<logdir>/rank<process index>``.

    Monitor: with ``monitor=True`` (or a dict of :func:`tensorsight.watch` options) each
    process that writes also runs ``tensorsight.watch`` on the model and the optimizer
    from ``on_train_begin`` to ``on_train_end``, into the same run: NaN/Inf, overflow,
    spikes and dead tensors per module and step (numbered as ``state.global_step``: the
    first optimizer step is step 1), the findings for the board's Monitor tab, the dump
    of the step after the first anomaly with ``dump_on_anomaly``; and the SummaryCollector
    defaults (``lr/group<i>``, gradient and weight norms, histograms). No graph (keyword
    arguments only, as above). ``monitor`` (the :class:`~tensorsight.monitor.Watch`) holds
    what it found.

    Args:
        logdir: Folder of the run. None: ``<output_dir>/runs``.
        all_ranks: Write every process, not only process zero.
        grad_norms: Regex over parameter names whose gradient norms are written (``"."``:
            all, the default); None or ``""``: no gradient norms at all.
        flush_secs: Passed to :class:`~tensorsight.SummaryWriter`.
        monitor: Run the monitor (see above): None or False (default) no, True with
            ``tensorsight.watch``'s defaults, or a dict of its options (``every``,
            ``histograms``, ``on_anomaly``, ``dump_on_anomaly``, ``backward``,
            ``loss_fn``, ``spike_factor``, ``spike_window``, ``dead_steps``).

    Raises:
        UsageError: An unknown ``monitor`` option (the message names it).

    Example:
        >>> cb = TensorsightCallback(logdir="runs/demo", grad_norms=r"\\.weight$")
        >>> cb.logdir
        'runs/demo'
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str] | None = None,
        *,
        all_ranks: bool = False,
        grad_norms: str | None = ".",
        flush_secs: int = 120,
        monitor: MonitorOption = None,
    ) -> None:
        self._monitor_options = monitor_options(monitor, "TensorsightCallback")
        self.monitor: Watch | None = None
        self.logdir = None if logdir is None else os.fspath(logdir)
        self.all_ranks = all_ranks
        self._grad_norms = re.compile(grad_norms) if grad_norms else None
        self._flush_secs = flush_secs
        self._writer: SummaryWriter | None = None
        self._checkpoint: str | None = None

    # ------------------------------------------------------------ events
    def on_train_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: Any = None,
        **kwargs: Any,
    ) -> None:
        """Open the run and write the arguments and model config as hparams."""
        writer = self._open(args, state)
        if writer is None:
            return
        hparams: dict[str, HParam] = flatten_hparams(
            args.to_dict(),  # type: ignore[no-untyped-call]
            prefix="args/",
        )
        config = getattr(model, "config", None)
        if config is not None and callable(getattr(config, "to_dict", None)):
            hparams.update(flatten_hparams(config.to_dict(), prefix="model_config/"))
        writer.add_hparams(hparams, {}, run_name=".", global_step=state.global_step)
        optimizer = kwargs.get("optimizer")
        if self._monitor_options is not None and model is not None and optimizer is not None:
            if self.monitor is not None:  # a second train() on the same callback
                self.monitor.close()
            self.monitor = start_monitor(
                self._monitor_options,
                model,
                getattr(optimizer, "optimizer", optimizer),  # accelerate's AcceleratedOptimizer
                writer.log_dir,
                first_step=int(state.global_step) + 1,  # the trainer counts steps from 1
                hparams_run=None,  # the lineage is the callback's (on_train_end)
                graph=False,  # the trainer calls the model with keyword arguments only
            )
        loader = kwargs.get("train_dataloader")
        if loader is not None:
            try:
                writer.add_data_graph(TAG_DATA_GRAPH, loader, state.global_step)
            except TensorsightError as exc:
                warnings.warn(f"TensorsightCallback: no data pipeline: {exc}", stacklevel=2)

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Note the checkpoint just saved (the lineage's ``model_path``)."""
        folder = f"checkpoint-{state.global_step}"  # the Trainer's PREFIX_CHECKPOINT_DIR
        self._checkpoint = os.path.join(args.output_dir or ".", folder)

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """One scalar per numeric log value, at the current global step."""
        writer = self._open(args, state)
        if writer is None or not logs:
            return
        for key, value in scalar_items(logs):
            writer.add_scalar(rewrite_tag(key), value, state.global_step)

    def on_pre_optimizer_step(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: Any = None,
        **kwargs: Any,
    ) -> None:
        """Gradient norms of the step about to be taken, on logging steps."""
        if self._grad_norms is None or model is None:
            return
        step = state.global_step + 1  # the optimizer step being taken
        if not _is_logging_step(args, state, step):
            return
        writer = self._open(args, state)
        if writer is None:
            return
        torch = lazy_import("torch", extra="torch", needed_by="TensorsightCallback")
        names, norms = [], []
        for name, param in model.named_parameters():
            if param.grad is not None:
                names.append(name)
                norms.append(torch.linalg.vector_norm(param.grad.detach().float()))
        if not norms:
            return
        device = norms[0].device  # a model spread over devices (device_map="auto")
        stacked = torch.stack([n if n.device == device else n.to(device) for n in norms])
        values = [*stacked.tolist(), float(torch.linalg.vector_norm(stacked))]  # one sync
        writer.add_scalar("grad_norm/total", values[-1], step)
        for name, value in zip(names, values, strict=False):
            if self._grad_norms.search(name):
                writer.add_scalar(f"grad_norm/{name}", value, step)

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Put the evaluation's scalars on disk now, so the board shows them at once.

        The trainer hands the same metrics to ``on_log`` first (``eval_loss`` ->
        ``eval/loss``); writing them here too would double every point.
        """
        writer = self._open(args, state)
        if writer is not None:
            writer.flush()

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Write the lineage and close the run's files (a later ``train()`` opens new ones
        in the same run)."""
        if self.monitor is not None:
            self.monitor.close()  # kept: what it found stays readable
        writer = self._open(args, state)
        if writer is not None:
            writer.add_hparams(
                _lineage(args, state, self._checkpoint, **kwargs),
                {},
                run_name=".",
                global_step=state.global_step,
            )
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # ------------------------------------------------------------ internals
    def _open(self, args: TrainingArguments, state: TrainerState) -> SummaryWriter | None:
        if not (self.all_ranks or state.is_world_process_zero):
            return None
        if self._writer is None:
            base = self.logdir or getattr(args, "logging_dir", None)
            base = base or os.path.join(args.output_dir or ".", "runs")
            folder = rank_dir(base, int(args.process_index), self.all_ranks)
            self._writer = SummaryWriter(folder, flush_secs=self._flush_secs)
        return self._writer


def _lineage(
    args: TrainingArguments, state: TrainerState, checkpoint: str | None, **kwargs: Any
) -> dict[str, HParam]:
    model = kwargs.get("model")
    optimizer = kwargs.get("optimizer")
    loader = kwargs.get("train_dataloader")
    out: dict[str, HParam] = {}
    if optimizer is not None:
        inner = getattr(optimizer, "optimizer", optimizer)  # accelerate's AcceleratedOptimizer
        out["optimizer"] = type(inner).__name__
    batch = getattr(state, "train_batch_size", None) or args.per_device_train_batch_size
    out["batch_size"] = float(batch)
    try:
        loss_fn = getattr(model, "loss_function", None)  # transformers >= 4.46
    except (AttributeError, ValueError, KeyError):  # no loss known for this model type
        loss_fn = None
    out.update(
        lineage_of(
            loss_fn=loss_fn,
            dataset_size=None if loader is None else dataset_size_of(loader),
            checkpoint=state.best_model_checkpoint or checkpoint,
            network=model,
        )
    )
    return out


def _is_logging_step(args: TrainingArguments, state: TrainerState, step: int) -> bool:
    """Step 1 and every ``logging_steps``-th step (the trainer's absolute interval)."""
    every = int(getattr(state, "logging_steps", 0) or 0)
    if str(getattr(args.logging_strategy, "value", args.logging_strategy)) != "steps":
        every = 0
    return step == 1 or (every > 0 and step % every == 0)
