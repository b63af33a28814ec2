"""``TensorsightTracker``: an accelerate ``GeneralTracker`` named ``"tensorsight"``.

Importing this module registers the tracker with accelerate's public
``accelerate.tracking.register_tracker_class`` (in the accelerate releases that have it), so::

    import tensorsight.integrations.accelerate  # registers "tensorsight"
    accelerator = Accelerator(log_with="tensorsight", project_dir="logs")
    accelerator.init_trackers("my_run", config={"lr": 1e-3})
    accelerator.log({"loss": loss.item()}, step=step)
    accelerator.end_training()

writes the run ``logs/my_run``. To run the monitor too (``tensorsight.watch``, into the
same run), after ``prepare`` and ``init_trackers``::

    from tensorsight.integrations.accelerate import watch
    monitor = watch(accelerator, model, optimizer, dump_on_anomaly="dumps")

On older accelerate releases, which have no registry, pass
an instance instead: ``Accelerator(log_with=[TensorsightTracker("my_run", "logs")])``.
Install with ``pip install 'tensorsight[accelerate]'`` (torch comes from your own install).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tensorsight._lazy import lazy_import
from tensorsight.errors import UsageError
from tensorsight.integrations._common import (
    flatten_hparams,
    monitor_options,
    rank_dir,
    scalar_value,
    start_monitor,
)
from tensorsight.summary import SummaryWriter

if TYPE_CHECKING:
    from tensorsight.monitor import Watch

_tracking = lazy_import("accelerate.tracking", extra="accelerate", needed_by="TensorsightTracker")

from accelerate import PartialState  # noqa: E402  (after the import that names the extra)
from accelerate.tracking import GeneralTracker  # noqa: E402

__all__ = ["TRACKER_NAME", "TensorsightTracker", "register", "watch"]

TRACKER_NAME = "tensorsight"


class TensorsightTracker(GeneralTracker):  # type: ignore[misc]  # accelerate is untyped
    """Writes an accelerate run to ``<logging_dir>/<run_name>`` as TensorBoard event files.

    - ``store_init_configuration`` (``init_trackers(config=...)``): the config as hparams
      of the run (nested dicts flattened to ``a/b``, other values as their ``str``);
    - ``log``: numbers and one-element tensors as scalars, strings as text, a dict of
      numbers as scalars ``<key>/<sub-key>`` in the same run;
    - ``watch(model, optimizer)`` (or this module's :func:`watch`): runs the monitor,
      ``tensorsight.watch`` with its defaults, into the same run;
    - ``finish`` (``end_training()``): closes the monitor and the files.

    Ranks: by default only the main process writes (accelerate's ``main_process_only``);
    ``all_ranks=True`` (``init_kwargs={"tensorsight": {"all_ranks": True}}``) writes every
    process to its own run ``<run>/rank<process index>``.

    Args:
        run_name: The run's folder (accelerate passes ``init_trackers``' ``project_name``).
        logging_dir: Where runs go (accelerate passes ``project_dir`` / ``logging_dir``).
        all_ranks: Write every process, not only the main one.
        **writer_kwargs: Passed to :class:`~tensorsight.SummaryWriter` (``flush_secs``, ...).
    """

    name = TRACKER_NAME
    requires_logging_directory = True

    def __init__(
        self,
        run_name: str,
        logging_dir: str | os.PathLike[str],
        *,
        all_ranks: bool = False,
        **writer_kwargs: Any,
    ) -> None:
        super().__init__()
        self.run_name = run_name
        self.logging_dir = os.fspath(logging_dir)
        self.all_ranks = all_ranks
        self.main_process_only = not all_ranks
        self._writer_kwargs = writer_kwargs
        self._writer: SummaryWriter | None = None
        self.monitor: Watch | None = None

    @property
    def tracker(self) -> SummaryWriter | None:
        """The :class:`~tensorsight.SummaryWriter` (None before ``start`` or on a silent rank)."""
        return self._writer

    def start(self) -> None:
        """Open the run's folder (accelerate calls this in ``init_trackers``)."""
        if not self._writes() or self._writer is not None:
            return
        state = PartialState()
        base = os.path.join(self.logging_dir, self.run_name)
        folder = rank_dir(base, int(state.process_index), self.all_ranks)
        self._writer = SummaryWriter(folder, **self._writer_kwargs)

    def store_init_configuration(self, values: Mapping[str, Any]) -> None:
        """The run's configuration as hparams, in the run itself."""
        writer = self._started()
        if writer is not None:
            writer.add_hparams(flatten_hparams(values), {}, run_name=".")
            writer.flush()

    def log(self, values: Mapping[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Numbers as scalars, strings as text, dicts of numbers as ``<key>/<sub-key>``."""
        writer = self._started()
        if writer is None:
            return
        for key, value in values.items():
            if isinstance(value, str):
                writer.add_text(str(key), value, step)
            elif isinstance(value, Mapping):
                for sub, inner in value.items():
                    number = scalar_value(inner)
                    if number is not None:
                        writer.add_scalar(f"{key}/{sub}", number, step)
            else:
                number = scalar_value(value)
                if number is not None:
                    writer.add_scalar(str(key), number, step)
        writer.flush()

    def watch(self, model: Any, optimizer: Any, **options: Any) -> Watch | None:
        """Run ``tensorsight.watch`` on ``model`` and ``optimizer`` into this run.

        The monitor's steps count ``optimizer.step()`` calls from 0, its hyperparameters
        and lineage go into the run itself, and it stops at :meth:`finish`. Wrapped models
        (DDP) and accelerate's ``AcceleratedOptimizer`` are unwrapped.

        Args:
            model: The model (as given to, or returned by, ``accelerator.prepare``).
            optimizer: Its optimizer (likewise).
            **options: :func:`tensorsight.watch` options (``every``, ``histograms``,
                ``on_anomaly``, ``dump_on_anomaly``, ``backward``, ``graph``, ``loss_fn``,
                ``spike_factor``, ``spike_window``, ``dead_steps``).

        Returns:
            The running :class:`~tensorsight.monitor.Watch` (also ``self.monitor``), or
            None on a process that does not write.

        Raises:
            UsageError: An unknown option (the message names it).
        """
        settings = monitor_options(options, "TensorsightTracker.watch") or {}
        writer = self._started()
        if writer is None:
            return None
        if self.monitor is not None:
            self.monitor.close()
        inner = getattr(model, "module", model)  # DistributedDataParallel and the like
        self.monitor = start_monitor(
            settings,
            inner,
            getattr(optimizer, "optimizer", optimizer),
            writer.log_dir,
            hparams_run=".",
        )
        return self.monitor

    def finish(self) -> None:
        """Close the monitor and the run's files (accelerate calls this in ``end_training``)."""
        if self.monitor is not None:
            self.monitor.close()  # kept: what it found stays readable
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _writes(self) -> bool:
        return self.all_ranks or bool(PartialState().is_main_process)

    def _started(self) -> SummaryWriter | None:
        if self._writer is None and self._writes():
            self.start()
        return self._writer


def watch(accelerator: Any, model: Any, optimizer: Any, **options: Any) -> Watch | None:
    """Run the monitor through the ``"tensorsight"`` tracker of ``accelerator``.

    Call it after ``accelerator.prepare(...)`` and ``accelerator.init_trackers(...)``; see
    :meth:`TensorsightTracker.watch`. Feed it the loss with ``.log_loss(loss)`` if you
    want the loss checked and logged as ``loss/auto``.

    Returns:
        The running :class:`~tensorsight.monitor.Watch`, or None on a process whose
        tracker does not write (every process but the main one, unless ``all_ranks``).

    Raises:
        UsageError: The accelerator has no ``"tensorsight"`` tracker, or an unknown option.
    """
    trackers = list(getattr(accelerator, "trackers", None) or [])
    tracker = next((t for t in trackers if isinstance(t, TensorsightTracker)), None)
    if tracker is None:
        if not trackers and not PartialState().is_main_process:
            return None  # accelerate makes main-process-only trackers on the main one only
        msg = (
            "watch: the accelerator has no 'tensorsight' tracker. Expected "
            "Accelerator(log_with='tensorsight') and init_trackers() before watch()."
        )
        raise UsageError(msg)
    return tracker.watch(model, optimizer, **options)


def register() -> bool:
    """Make ``Accelerator(log_with="tensorsight")`` resolve to :class:`TensorsightTracker`.

    Called when this module is imported. Returns False when the installed accelerate has
    no ``register_tracker_class``: pass an instance to ``log_with`` there.
    """
    register_class = getattr(_tracking, "register_tracker_class", None)
    if register_class is None:
        return False
    if getattr(_tracking, "LOGGER_TYPE_TO_CLASS", {}).get(TRACKER_NAME) is not TensorsightTracker:
        register_class(TensorsightTracker)
    return True


register()
