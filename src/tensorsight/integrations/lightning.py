"""``TensorsightLogger``: a Lightning ``Logger`` that writes through tensorsight's SummaryWriter.

Pass it as ``Trainer(logger=TensorsightLogger("logs"))``: Lightning then logs every
``self.log(...)`` value as a scalar, the module's ``save_hyperparameters()`` as hparams and,
when the module sets ``example_input_array``, its graph once (recorded by tensorsight's
dispatch-mode recorder, with dtypes and module paths; nothing is traced with TorchScript).

Works with both distributions of Lightning: ``lightning`` (``lightning.pytorch``) is used
when installed, else ``pytorch_lightning``. Install with ``pip install
'tensorsight[lightning]'`` (torch comes from your own install: the extra never brings it).
"""

from __future__ import annotations

import os
import re
import warnings
import weakref
from argparse import Namespace
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
from tensorsight.summary.lineage import (
    TAG_DATA_GRAPH,
    batch_size_of,
    dataset_size_of,
    lineage_of,
)

if TYPE_CHECKING:
    from lightning.fabric.loggers.logger import rank_zero_experiment
    from lightning.pytorch.loggers.logger import Logger
    from lightning.pytorch.utilities import rank_zero_only

    from tensorsight.monitor import Watch
else:
    try:
        from lightning.fabric.loggers.logger import rank_zero_experiment
        from lightning.pytorch.loggers.logger import Logger
        from lightning.pytorch.utilities import rank_zero_only
    except ImportError:
        try:
            from lightning_fabric.loggers.logger import rank_zero_experiment
            from pytorch_lightning.loggers.logger import Logger
            from pytorch_lightning.utilities import rank_zero_only
        except ImportError:
            lazy_import("lightning", extra="lightning", needed_by="TensorsightLogger")
            raise

__all__ = ["TensorsightLogger"]

_VERSION = re.compile(r"version_(\d+)$")


class TensorsightLogger(Logger):
    """Writes a Lightning run to ``<save_dir>/<name>/<version>`` as TensorBoard event files.

    What is written, and where (``tensorsight.read_logdir(save_dir)`` reads it back):

    - ``log_metrics``: one scalar per metric (tensors and numbers; other values skipped),
      tagged as Lightning names it (``train_loss``, ``val/acc``, ``epoch``), at ``step``;
    - ``log_hyperparams``: the hparams (nested dicts flattened to ``a/b``; values that are
      not bool, number or str written as their ``str``) into the same run, so the board's
      HParams view shows them beside the run's scalars;
    - ``log_graph``: the model's graph once, when ``example_input_array`` (or
      ``input_array``) is set and ``log_graph`` is true; without an input nothing is
      recorded;
    - ``finalize`` (end of ``fit``), once: the data pipeline of ``trainer.train_dataloader``
      (``dataset_graph``) and the lineage, as hparams of the run: ``optimizer`` (class
      and defaults), ``batch_size``, ``train_dataset_size``, ``model_path`` (the last
      checkpoint Lightning saved), ``network``, named as MindSpore's TrainLineage fields
      (``tensorsight.summary.lineage``);
    - ``experiment``: the :class:`~tensorsight.SummaryWriter` itself, for
      ``self.logger.experiment.add_histogram(...)`` in a ``LightningModule``.

    Ranks: by default only global rank 0 writes (``experiment`` is a no-op object on the
    others). With ``all_ranks=True`` every rank writes its own run ``<log_dir>/rank<r>``,
    so runs diverging between ranks show side by side on the board.

    Monitor: with ``monitor=True`` (or a dict of :func:`tensorsight.watch` options) each
    rank that writes also runs ``tensorsight.watch`` on the module and the first
    optimizer from the start of ``fit`` (when Lightning calls ``log_graph``) to
    ``finalize``, into the same run: NaN/Inf, overflow, spikes and dead tensors per module
    and step (Lightning's ``global_step``), the findings for the board's Monitor tab, the
    dump of the step after the first anomaly with ``dump_on_anomaly``; and the
    SummaryCollector defaults (learning rates, gradient and weight norms, histograms).
    The graph stays the logger's. ``monitor`` (the :class:`~tensorsight.monitor.Watch`)
    holds what it found.

    Args:
        save_dir: Root folder of the logs.
        name: Experiment folder under ``save_dir`` (``""`` or None: none).
        version: Run folder under the experiment: an int ``n`` is ``version_<n>``, a str is
            the folder name. None: the next free ``version_<n>`` (with ``all_ranks``, the
            next one whose ``rank<r>`` folder is free, so fresh ranks agree without talking).
        all_ranks: Write every rank, not only rank 0.
        log_graph: Record the model's graph when Lightning calls ``log_graph``.
        prefix: Put before every metric name, joined with ``-`` (Lightning's convention).
        flush_secs: Passed to :class:`~tensorsight.SummaryWriter`.
        monitor: Run the monitor (see above): None or False (default) no, True with
            ``tensorsight.watch``'s defaults, or a dict of its options (``every``,
            ``histograms``, ``on_anomaly``, ``dump_on_anomaly``, ``backward``, ``graph``,
            ``loss_fn``, ``spike_factor``, ``spike_window``, ``dead_steps``).

    Raises:
        UsageError: An unknown ``monitor`` option (the message names it).

    Example:
        >>> import tempfile
        >>> logger = TensorsightLogger(tempfile.mkdtemp(), name="demo", version=0)
        >>> logger.log_metrics({"loss": 0.5}, step=0)
        >>> logger.finalize("success")
        >>> logger.log_dir.endswith(os.path.join("demo", "version_0"))
        True
    """

    def __init__(
        self,
        save_dir: str | os.PathLike[str],
        name: str | None = "lightning_logs",
        version: int | str | None = None,
        *,
        all_ranks: bool = False,
        log_graph: bool = True,
        prefix: str = "",
        flush_secs: int = 120,
        monitor: MonitorOption = None,
    ) -> None:
        super().__init__()
        self._monitor_options = monitor_options(monitor, "TensorsightLogger")
        self.monitor: Watch | None = None
        self._save_dir = os.fspath(save_dir)
        self._name = name or ""
        self._version = version
        self._all_ranks = all_ranks
        self._log_graph = log_graph
        self._prefix = prefix
        self._flush_secs = flush_secs
        self._writer: SummaryWriter | None = None
        self._module: Any = None  # weak reference to the LightningModule (log_graph)
        self._checkpoint: str | None = None
        self._lineage_written = False

    # ------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        """The experiment folder name."""
        return self._name

    @property
    def version(self) -> int | str:
        """The run's version: the one given, or the next free ``version_<n>`` (decided once)."""
        if self._version is None:
            self._version = self._next_version()
        return self._version

    @property
    def save_dir(self) -> str:
        """The root folder given as ``save_dir``."""
        return self._save_dir

    @property
    def root_dir(self) -> str:
        """``<save_dir>/<name>``: the folder holding every version."""
        return os.path.join(self._save_dir, self._name)

    @property
    def log_dir(self) -> str:
        """Where this process writes: ``<root_dir>/<version>`` (``.../rank<r>`` with all ranks)."""
        version = self.version
        folder = version if isinstance(version, str) else f"version_{version}"
        return rank_dir(os.path.join(self.root_dir, folder), self._rank(), self._all_ranks)

    @property
    def experiment(self) -> Any:
        """The :class:`~tensorsight.SummaryWriter` of this run (opened on first use).

        On a rank that does not write, an object whose every method does nothing.
        """
        if self._all_ranks:
            return self._open()
        return _rank_zero_writer(self)

    # ------------------------------------------------------------ Logger API
    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """One scalar per numeric metric at ``step`` (NaN and Inf kept; other values skipped)."""
        if not self._writes():
            return
        writer = self._open()
        for tag, value in scalar_items(metrics):
            writer.add_scalar(f"{self._prefix}-{tag}" if self._prefix else tag, value, step)

    def log_hyperparams(
        self, params: Mapping[str, Any] | Namespace, metrics: Mapping[str, Any] | None = None
    ) -> None:
        """The hparams of the run (and, if given, metrics declared for the HParams view).

        Args:
            params: A dict (nested dicts are flattened) or an ``argparse.Namespace``.
            metrics: Metric name -> value, also written as scalars of the run.
        """
        if not self._writes():
            return
        plain = vars(params) if isinstance(params, Namespace) else dict(params)
        flat = flatten_hparams(plain)
        self._open().add_hparams(flat, dict(scalar_items(metrics or {})), run_name=".")

    def log_graph(self, model: Any, input_array: Any = None) -> None:
        """Record ``model``'s graph once, run on ``input_array`` or ``model.example_input_array``.

        Does nothing when ``log_graph`` is false or the model has no example input.
        """
        self._module = weakref.ref(model)
        fresh = self.monitor is None or self.monitor.closed
        if self._monitor_options is not None and fresh and self._writes():
            self._start_monitor(model)
        if not (self._log_graph and self._writes()):
            return
        example = (
            getattr(model, "example_input_array", None) if input_array is None else input_array
        )
        if example is None:
            return
        torch = lazy_import("torch", extra="torch", needed_by="TensorsightLogger.log_graph")
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
        if isinstance(example, torch.Tensor):
            example = example.to(device)
        elif isinstance(example, list | tuple):
            example = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in example)
        was_training = model.training
        model.eval()
        try:
            self._open().add_graph(model, example)
        finally:
            model.train(was_training)

    def save(self) -> None:
        """Hand what is queued to the operating system (Lightning calls this every few steps)."""
        if self._writer is not None:
            self._writer.flush()

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        """Note the checkpoint just saved (the lineage's ``model_path``)."""
        path = getattr(checkpoint_callback, "last_model_path", "") or getattr(
            checkpoint_callback, "best_model_path", ""
        )
        if path:
            self._checkpoint = os.fspath(path)

    def finalize(self, status: str) -> None:
        """Write the data pipeline and lineage once, close the run's files; a later call
        (``trainer.test`` after ``fit``) reopens them."""
        del status  # the same for "success", "failed" and "finished"
        if self.monitor is not None:
            self.monitor.close()  # kept: what it found stays readable
        if not self._lineage_written and self._writes():
            self._write_lineage()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # ------------------------------------------------------------ internals
    def _start_monitor(self, module: Any) -> None:
        """``tensorsight.watch`` on ``module`` and the trainer's first optimizer, when fitting."""
        trainer = getattr(module, "_trainer", None)
        fn = getattr(getattr(trainer, "state", None), "fn", None)
        optimizers = list(getattr(trainer, "optimizers", None) or [])
        if trainer is None or str(getattr(fn, "value", fn)) != "fit" or not optimizers:
            return  # validate/test/predict: no optimizer steps to watch
        self.monitor = start_monitor(
            self._monitor_options or {},
            module,
            optimizers[0],
            self.log_dir,
            first_step=int(trainer.global_step),
            hparams_run=None,  # the lineage is the logger's (finalize)
            graph=False,  # the graph is the logger's (log_graph)
        )

    def _write_lineage(self) -> None:
        module = self._module() if self._module is not None else None
        trainer = getattr(module, "_trainer", None)
        if trainer is None:  # not fitted through a Trainer: nothing known
            return
        self._lineage_written = True
        writer = self._open()
        loader = getattr(trainer, "train_dataloader", None)
        if loader is not None:
            try:
                writer.add_data_graph(TAG_DATA_GRAPH, loader, 0)
            except TensorsightError as exc:
                warnings.warn(f"TensorsightLogger: no data pipeline: {exc}", stacklevel=3)
        callback = getattr(trainer, "checkpoint_callback", None)
        checkpoint = self._checkpoint or getattr(callback, "best_model_path", "") or None
        optimizers = list(getattr(trainer, "optimizers", []) or [])
        lineage: dict[str, HParam] = {}
        if optimizers:
            lineage["optimizer"] = type(optimizers[0]).__name__
        batch = batch_size_of(loader)
        if batch is not None:
            lineage["batch_size"] = float(batch)
        lineage.update(
            lineage_of(
                dataset_size=None if loader is None else dataset_size_of(loader),
                checkpoint=checkpoint,
                network=module,
            )
        )
        writer.add_hparams(lineage, {}, run_name=".")

    def _rank(self) -> int:
        return int(getattr(rank_zero_only, "rank", 0) or 0)

    def _writes(self) -> bool:
        return self._all_ranks or self._rank() == 0

    def _open(self) -> SummaryWriter:
        if self._writer is None:
            self._writer = SummaryWriter(self.log_dir, flush_secs=self._flush_secs)
        return self._writer

    def _next_version(self) -> int:
        root = self.root_dir
        try:
            entries = os.listdir(root)
        except OSError:  # no experiment folder yet
            return 0
        taken = []
        for entry in entries:
            match = _VERSION.match(entry)
            if match is None or not os.path.isdir(os.path.join(root, entry)):
                continue
            mine = rank_dir(os.path.join(root, entry), self._rank(), self._all_ranks)
            if os.path.isdir(mine):
                taken.append(int(match.group(1)))
        return max(taken) + 1 if taken else 0


def _open_writer(logger: TensorsightLogger) -> SummaryWriter:
    return logger._open()


# Lightning's own rank-zero guard: rank 0 gets the writer, the others a do-nothing object.
_rank_zero_writer = rank_zero_experiment(_open_writer)
