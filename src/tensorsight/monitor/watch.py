"""``tensorsight.watch``: log and monitor a plain PyTorch loop through hooks only.

Hooks, all removed by :meth:`Watch.close`:

- a forward hook on every module (while gradients are enabled): the absolute maximum of each
  floating-point output, one reduction per output, kept on the device;
- a forward pre-hook and, through the forward hook, tensor hooks (``backward=True``, the
  default): the absolute maximum of the gradient flowing into each module output and out
  towards each module input that requires one, reduced in the backward pass;
- a forward pre-hook on the model, once: the batch size (the first tensor input's first
  dimension);
- an optimizer step post-hook: the end of a step. It batches the gradients' L2 norms and the
  optimizer states' absolute maxima (``torch._foreach_norm``), stacks every statistic of
  the step into one vector and copies it to the host once (the step's only sync), then
  runs :class:`~tensorsight.monitor._checks.Checker` and writes the summaries.

A step is one ``optimizer.step()`` call (counted from 0). Forward passes run with gradients
disabled (evaluation) are not checked. A step that ``GradScaler`` skips (no
``optimizer.step()``) folds into the next one.
"""

from __future__ import annotations

import json
import os
import re
import threading
import warnings
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

import numpy as np

from tensorsight._lazy import lazy_import
from tensorsight._wire import json_number
from tensorsight.errors import AnomalyError, TensorsightError, UsageError
from tensorsight.monitor import _collect
from tensorsight.monitor._checks import Anomaly, Checker, Series
from tensorsight.monitor.tags import FINDINGS_VERSION, TAG_CHECKED, TAG_FINDINGS

__all__ = [
    "ADAPTER_OPTIONS",
    "FINDINGS_VERSION",
    "ON_ANOMALY",
    "TAG_CHECKED",
    "TAG_FINDINGS",
    "AnomalyWarning",
    "Watch",
    "watch",
]

_ACT_FOLD = 4096  # activation statistics gathered before they are folded per series

_FINDINGS_PER_STEP = 256  # findings kept in one step's record; the rest are counted

ON_ANOMALY = ("warn", "raise", "ignore")
#: The options of :func:`watch` a framework adapter's ``monitor={...}`` may set.
ADAPTER_OPTIONS = (
    "every",
    "histograms",
    "on_anomaly",
    "dump_on_anomaly",
    "backward",
    "graph",
    "loss_fn",
    "spike_factor",
    "spike_window",
    "dead_steps",
)
_WARN_LISTED = 3  # anomalies named in one warning


class AnomalyWarning(RuntimeWarning):
    """Warned by :func:`watch` (``on_anomaly="warn"``) the first time a tensor goes bad."""


def watch(
    model: Any,
    optimizer: Any,
    logdir: str | os.PathLike[str] | None = None,
    every: int | None = None,
    histograms: str | re.Pattern[str] | None = None,
    *,
    on_anomaly: str | None = None,
    dump_on_anomaly: str | os.PathLike[str] | None = None,
    monitor: bool | None = None,
    backward: bool | None = None,
    graph: bool | None = None,
    data: Any = None,
    loss_fn: Any = None,
    spike_factor: float | None = None,
    spike_window: int | None = None,
    dead_steps: int | None = None,
) -> Watch:
    """Log a plain PyTorch training loop and watch it for NaN, overflow, spikes, dead tensors.

    Every ``every`` steps (a step is one ``optimizer.step()``, counted from 0, so steps 0,
    N, 2N, ...) it writes the loss (given with :meth:`Watch.log_loss`), the learning rate of
    each parameter group, gradient and weight norms per group and per parameter, and
    histograms of the first five parameters (or those matching ``histograms``); the
    hyperparameters (optimizer class and defaults, model, batch size) at :meth:`Watch.close`.
    Tags are listed in ``docs/guide/watch.md``. When ``torch.distributed`` is initialised,
    each rank writes to ``<logdir>/rank<r>``.

    The monitor checks, on every step, each module's outputs, each gradient, each optimizer
    state tensor and the loss for NaN/Inf, float16/bfloat16 overflow (Inf or the dtype's
    largest value) and underflow (all subnormal), sudden spikes (vs a running median) and
    dead (all-zero) tensors; it logs ``monitor/...`` summaries and acts per ``on_anomaly``.

    Args:
        model: The ``torch.nn.Module`` being trained.
        optimizer: Its ``torch.optim.Optimizer``; its steps define the steps.
        logdir: Folder for the event files (default: ``SummaryWriter``'s ``runs/<time>_<host>``).
        every: Log every this many steps (default 10, SummaryCollector's ``collect_freq``).
        histograms: Regular expression (``re.search``) choosing the parameters to
            histogram; default: the first five.
        on_anomaly: ``"warn"`` (default: an :class:`AnomalyWarning` the first time each
            tensor shows each kind), ``"raise"`` (:class:`~tensorsight.errors.AnomalyError`
            from ``optimizer.step()``) or ``"ignore"`` (summaries only).
        dump_on_anomaly: Folder; on the first anomaly, record the next step with
            ``tensorsight.dump`` (statistics mode, op level) into it as
            ``rank<r>/step<S>``. With ``on_anomaly="raise"`` the error is raised after
            that step, so the dump exists.
        monitor: Run the checks (default True); False logs only.
        backward: Also check the gradients flowing through each module in the backward
            pass (default True): the gradient arriving at each floating-point output
            (``grad_output.<i>``) and the one leaving towards each input that requires a
            gradient (``grad_input.<i>``), so a NaN born in a backward pass is named at the
            module whose backward made it.
        graph: Record the model's graph once, at the end of step 0, by running the model
            again on step 0's positional inputs under ``torch.no_grad()`` with
            ``SummaryWriter.add_graph`` (the dispatch-mode recorder: ATen ops, dtypes, module
            paths); buffers and random-number state are restored afterwards, so training is
            unchanged. Default True; a model called with keyword arguments only is skipped.
        data: The training ``DataLoader`` (or dataset): its pipeline is logged once as
            ``dataset_graph``, and its batch size and dataset size go into the lineage.
        loss_fn: The loss function or module, named in the lineage (``loss_function``).
        spike_factor: A statistic above this many times its running median is a spike
            (default 10).
        spike_window: Steps in the running median (default 50).
        dead_steps: All-zero steps in a row before a tensor is dead (default 3).

    Returns:
        A started :class:`Watch`; use it as a context manager or call :meth:`Watch.close`.

    Raises:
        UsageError: A model without forward hooks, an optimizer without step hooks, or a
            bad option value (the message names it).

    Example:
        >>> import torch, tempfile, tensorsight
        >>> model = torch.nn.Linear(4, 1)
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> with tensorsight.watch(model, opt, tempfile.mkdtemp(), every=1) as w:
        ...     for _ in range(3):
        ...         opt.zero_grad()
        ...         loss = model(torch.ones(2, 4)).pow(2).mean()
        ...         loss.backward()
        ...         w.log_loss(loss)
        ...         opt.step()
    """
    return _prepare(
        model,
        optimizer,
        logdir,
        every,
        histograms,
        on_anomaly=on_anomaly,
        dump_on_anomaly=dump_on_anomaly,
        monitor=monitor,
        backward=backward,
        graph=graph,
        data=data,
        loss_fn=loss_fn,
        spike_factor=spike_factor,
        spike_window=spike_window,
        dead_steps=dead_steps,
    )._start()


def _prepare(
    model: Any,
    optimizer: Any,
    logdir: str | os.PathLike[str] | None = None,
    every: int | None = None,
    histograms: str | re.Pattern[str] | None = None,
    *,
    on_anomaly: str | None = None,
    dump_on_anomaly: str | os.PathLike[str] | None = None,
    monitor: bool | None = None,
    backward: bool | None = None,
    graph: bool | None = None,
    data: Any = None,
    loss_fn: Any = None,
    spike_factor: float | None = None,
    spike_window: int | None = None,
    dead_steps: int | None = None,
) -> Watch:
    """:func:`watch`'s checks and defaults: a :class:`Watch` not yet started (the framework
    adapters set where it writes before they start it)."""
    if not callable(getattr(model, "register_forward_hook", None)):
        msg = f"Model {type(model).__name__!r}: has no forward hooks. Expected a torch.nn.Module."
        raise UsageError(msg)
    if not callable(getattr(optimizer, "register_step_post_hook", None)):
        msg = (
            f"Optimizer {type(optimizer).__name__!r}: has no step hooks. Expected a "
            "torch.optim.Optimizer (torch >= 2.0)."
        )
        raise UsageError(msg)
    every = _positive_int("every", 10 if every is None else every)
    if isinstance(histograms, str):
        try:
            histograms = re.compile(histograms)
        except re.error as exc:
            msg = (
                f"histograms {histograms!r}: not a regular expression ({exc}). "
                "Expected one such as 'weight$'."
            )
            raise UsageError(msg) from exc
    action = "warn" if on_anomaly is None else on_anomaly
    if action not in ON_ANOMALY:
        msg = f"on_anomaly {on_anomaly!r}: unknown. Expected one of {', '.join(ON_ANOMALY)}."
        raise UsageError(msg)
    factor = 10.0 if spike_factor is None else float(spike_factor)
    if not factor > 1:
        msg = f"spike_factor {spike_factor!r}: too small. Expected a number above 1, such as 10."
        raise UsageError(msg)
    checker = Checker(
        spike_factor=factor,
        spike_window=_positive_int("spike_window", 50 if spike_window is None else spike_window),
        dead_steps=_positive_int("dead_steps", 3 if dead_steps is None else dead_steps),
    )
    return Watch(
        model,
        optimizer,
        logdir,
        every=every,
        histograms=histograms,
        on_anomaly=action,
        dump_on_anomaly=dump_on_anomaly,
        monitor=True if monitor is None else bool(monitor),
        backward=True if backward is None else bool(backward),
        graph=True if graph is None else bool(graph),
        data=data,
        loss_fn=loss_fn,
        checker=checker,
    )


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"{name} {value!r}: not a positive integer. Expected 1 or more."
        raise UsageError(msg)
    return value


class Watch:
    """A running :func:`watch`; create it with :func:`watch`.

    Attributes:
        step: Steps completed so far (the next step's number).
        rank: This process's ``torch.distributed`` rank (0 when not distributed).
        logdir: The folder this rank's event files go to.
        anomalies: Every :class:`~tensorsight.monitor.Anomaly` found, in the order seen.
        dumps: ``(step, folder)`` of each step recorded through ``dump_on_anomaly``.
    """

    def __init__(
        self,
        model: Any,
        optimizer: Any,
        logdir: str | os.PathLike[str] | None,
        *,
        every: int,
        histograms: re.Pattern[str] | None,
        on_anomaly: str,
        dump_on_anomaly: str | os.PathLike[str] | None,
        monitor: bool,
        checker: Checker,
        backward: bool = True,
        graph: bool = True,
        data: Any = None,
        loss_fn: Any = None,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.every = every
        self.on_anomaly = on_anomaly
        self.dump_on_anomaly = dump_on_anomaly
        self.monitor = monitor
        self.backward = monitor and backward
        self.data = data
        self.loss_fn = loss_fn
        self.checkpoint: str | None = None
        self._graph_wanted = graph
        self._graph_input: tuple[Any, ...] | None = None
        self.checker = checker
        self.step = 0
        self.rank = 0
        # set by the framework adapters before _start (tensorsight.integrations._common):
        # their own rank folders, hparams in the run itself (or none), their step numbers
        self.rank_folder = True
        self.hparams_run: str | None = ""  # "": a folder of its own; None: not written
        self.first_step = 0
        self.anomalies: list[Anomaly] = []
        self.dumps: list[tuple[int, str]] = []
        self.batch_size: int | None = None
        self._logdir_arg = logdir
        self._histograms = histograms
        self.logdir = ""
        self._writer: Any = None
        self._torch: Any = None
        self._handles: list[Any] = []
        self._closed = False
        self._act_ids: list[int] = []
        self._act_vals: list[Any] = []
        # the hooks' appends go in pairs (an id, then its min and max): autograd runs one
        # thread per device and DataParallel one per replica, so they append under a lock
        self._act_lock = threading.RLock()
        self._act_series: dict[tuple[int, int, Any], int] = {}
        self._grad_series: dict[tuple[int, str, Any], int] = {}
        # id(tensor) -> (weak reference, version, series ids) of each tensor whose gradient
        # is watched this step: one tensor hook per tensor, however many modules share it
        self._grad_hooked: dict[int, tuple[Any, int, list[int]]] = {}
        # id(tensor) -> (weak reference, version, min, max) of each module output reduced
        # this step: a parent returning a child's output tensor reuses its reduction
        self._reduced: dict[int, tuple[Any, int, Any, Any]] = {}
        self._losses: list[Any] = []
        self._last_loss: float | None = None
        self._warned: set[tuple[str, str, str, str]] = set()
        self._dump: Any = None
        self._pending_raise: str | None = None
        self._dumped_once = False

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (the hooks are gone)."""
        return self._closed

    # ---------------------------------------------------------------- lifecycle
    def _start(self) -> Watch:
        torch = lazy_import("torch", extra="torch", needed_by="tensorsight.watch")
        self._torch = torch
        from tensorsight.summary import SummaryWriter

        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            self.rank = int(dist.get_rank())
        self.step = self.first_step
        writer = SummaryWriter(self._logdir_arg)
        if self.rank_folder and dist.is_available() and dist.is_initialized():
            base = writer.log_dir
            writer.close()
            writer = SummaryWriter(os.path.join(base, f"rank{self.rank}"))
        self._writer = writer
        self.logdir = writer.log_dir
        groups = self.optimizer.param_groups
        self._names = _collect.param_names(self.model.named_parameters(), groups)
        self._params = [list(g["params"]) for g in groups]
        self._names_by_id = {
            id(p): n
            for ps, ns in zip(self._params, self._names, strict=True)
            for p, n in zip(ps, ns, strict=True)
        }
        self._sids: dict[tuple[Any, ...], int] = {}  # gradient and state series ids
        flat = [n for names in self._names for n in names]
        self._hist = set(_collect.histogram_names(flat, self._histograms))
        self._modules = [path for path, _ in self.model.named_modules()]
        self._module_of = {
            f"{path}.{name}" if path else name: path
            for path, module in self.model.named_modules()
            for name, _ in module.named_parameters(recurse=False)
        }
        if self.data is not None:
            try:
                writer.add_data_graph(_collect.TAG_DATA_GRAPH, self.data, 0)
            except TensorsightError as exc:
                warnings.warn(f"tensorsight.watch: no data pipeline: {exc}", stacklevel=3)
        self._handles.append(self.optimizer.register_step_post_hook(self._after_step))
        self._handles.append(
            self.model.register_forward_pre_hook(self._see_batch, with_kwargs=True)
        )
        if self.monitor:
            for index, (path, module) in enumerate(self.model.named_modules()):
                self._handles.append(module.register_forward_hook(self._hook_for(index, path)))
                if self.backward:
                    self._handles.append(
                        module.register_forward_pre_hook(self._input_hook_for(index, path))
                    )
        return self

    def close(self) -> None:
        """Remove every hook, write the hyperparameters and close the event files."""
        if self._closed:
            return
        self._closed = True
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        try:
            if self._dump is not None:
                self._dump.close(complete=False, reason="tensorsight.watch closed mid-step")
                self._dump = None
            metrics = {} if self._last_loss is None else {"hparam/loss": self._last_loss}
            batch = _collect.batch_size_of(self.data) or self.batch_size
            hp = _collect.hparams_of(self.optimizer, self.model, batch)
            hp.update(
                _collect.lineage_of(
                    loss_fn=self.loss_fn,
                    dataset_size=None if self.data is None else _collect.dataset_size_of(self.data),
                    checkpoint=self.checkpoint,
                    network=self.model,
                )
            )
            if self.hparams_run is not None:
                self._writer.add_hparams(
                    hp, metrics, run_name=self.hparams_run or None, global_step=self.step
                )
        finally:
            self._writer.close()

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---------------------------------------------------------------- user calls
    def log_loss(self, loss: Any) -> None:
        """Record the loss of the current step (a tensor stays on its device; no sync).

        Several calls in one step (gradient accumulation) are averaged. The loss is logged
        as ``loss/auto`` on logging steps and checked on every step.
        """
        if self._closed:
            msg = "Watch: it is closed. Expected log_loss() between watch() and close()."
            raise UsageError(msg)
        torch = self._torch
        if isinstance(loss, torch.Tensor):
            self._losses.append(loss.detach().reshape(-1)[:1].float())
        else:
            self._losses.append(torch.tensor([float(loss)]))

    def log_checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Note a checkpoint just saved; the last one is the lineage's ``model_path``."""
        self.checkpoint = os.fspath(path)

    # ---------------------------------------------------------------- hooks
    def _see_batch(self, module: Any, args: Any, kwargs: Any) -> None:
        first = self._graph_wanted and self.step == self.first_step and self._graph_input is None
        if first and args and not kwargs and self._torch.is_grad_enabled():
            self._graph_input = tuple(args)
        if self.batch_size is None:
            torch = self._torch
            for leaf in torch.utils._pytree.tree_leaves((args, kwargs)):
                if isinstance(leaf, torch.Tensor) and leaf.dim() > 0:
                    self.batch_size = int(leaf.shape[0])
                    break

    def _hook_for(self, index: int, path: str) -> Callable[[Any, Any, Any], None]:
        torch = self._torch
        tensor_type = torch.Tensor
        minmax = _minmax_for(torch)
        leaves = torch.utils._pytree.tree_leaves
        series = self._act_series
        ids = self._act_ids
        vals = self._act_vals
        backward = self.backward
        reduced = self._reduced

        lock = self._act_lock

        def hook(module: Any, args: Any, output: Any) -> None:
            if self._dump is not None or not torch.is_grad_enabled():
                return
            with lock:
                _record(output)

        def _record(output: Any) -> None:
            outs = (output,) if isinstance(output, tensor_type) else leaves(output)
            for i, t in enumerate(outs):
                if not isinstance(t, tensor_type) or not t.is_floating_point() or not t.numel():
                    continue
                key = (index, i, t.dtype)
                sid = series.get(key)
                if sid is None:
                    sid = self.checker.add(
                        Series("activation", path, f"output.{i}", _dtype(t), "amax")
                    )
                    series[key] = sid
                ids.append(sid)
                # a module that returns its last child's output (a block returning its
                # final norm's result, a Sequential) reuses that reduction
                key_t = id(t)
                seen = reduced.get(key_t)
                if seen is not None and seen[0]() is t and seen[1] == t._version:
                    low, high = seen[2], seen[3]
                else:
                    low, high = minmax(t.detach())
                    reduced[key_t] = (weakref.ref(t), t._version, low, high)
                vals.append(low)
                vals.append(high)
                if backward and t.requires_grad:
                    self._watch_grad(t, index, path, f"grad_output.{i}", consumer=False)
            if len(ids) > _ACT_FOLD:  # many forward passes before a step: keep it bounded
                self._fold_activations()

        return hook

    def _input_hook_for(self, index: int, path: str) -> Callable[[Any, Any], None]:
        torch = self._torch
        tensor_type = torch.Tensor
        leaves = torch.utils._pytree.tree_leaves

        lock = self._act_lock

        def pre_hook(module: Any, args: Any) -> None:
            if self._dump is not None or not torch.is_grad_enabled():
                return
            with lock:  # _watch_grad's tables, as the forward hooks (DataParallel's threads)
                for i, t in enumerate(leaves(args)):
                    if isinstance(t, tensor_type) and t.requires_grad and t.is_floating_point():
                        self._watch_grad(t, index, path, f"grad_input.{i}", consumer=True)

        return pre_hook

    def _watch_grad(self, t: Any, index: int, path: str, name: str, *, consumer: bool) -> None:
        """Check the gradient of ``t`` in the backward pass, as seen by module ``path``.

        A tensor is the output of one module and the input of the next: it gets one tensor
        hook, and its series list names the consumers first, so a gradient that goes bad in
        a module's backward is reported at that module (``grad_input``) before the producer
        that merely receives it (``grad_output``). A tensor changed in place since it was
        hooked is a new tensor (its version moved on).
        """
        key = (index, name, t.dtype)
        sid = self._grad_series.get(key)
        if sid is None:
            sid = self.checker.add(Series("backward", path, name, _dtype(t), "amax"))
            self._grad_series[key] = sid
        entry = self._grad_hooked.get(id(t))
        if entry is not None and entry[0]() is t and entry[1] == t._version:
            if sid not in entry[2]:
                if consumer:
                    entry[2].insert(0, sid)
                else:
                    entry[2].append(sid)
            return
        series = [sid]
        self._grad_hooked[id(t)] = (weakref.ref(t), t._version, series)
        minmax = _minmax_for(self._torch)
        ids = self._act_ids
        vals = self._act_vals
        lock = self._act_lock

        def grad_hook(grad: Any) -> None:
            if grad is None or not grad.numel() or self._dump is not None:
                return
            low, high = minmax(grad.detach())
            with lock:
                for s in series:
                    ids.append(s)
                    vals.append(low)
                    vals.append(high)

        t.register_hook(grad_hook)

    def _fold_activations(self) -> None:
        """Keep one (min, max) per series of what the hooks gathered since the last step."""
        torch = lazy_import("torch", extra="torch", needed_by="tensorsight.watch")
        lows: dict[int, list[Any]] = {}
        highs: dict[int, list[Any]] = {}
        for j, sid in enumerate(self._act_ids):
            lows.setdefault(sid, []).append(self._act_vals[2 * j])
            highs.setdefault(sid, []).append(self._act_vals[2 * j + 1])
        self._act_ids.clear()  # the hooks hold these lists: refill them in place
        self._act_vals.clear()
        self._grad_hooked = {k: v for k, v in self._grad_hooked.items() if v[0]() is not None}
        self._reduced.clear()  # bounded like the rest: micro-batches add their outputs
        for sid, low in lows.items():  # one series: one module output, one device and dtype
            self._act_ids.append(sid)
            self._act_vals.append(torch.stack(low).amin())  # NaN propagates, as in aminmax
            self._act_vals.append(torch.stack(highs[sid]).amax())

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        step = self.step
        if self._dump is not None:  # the recorded step ends here
            self._dump.close()
            self._dump = None
        try:
            found = self._step_impl(step)
        finally:
            self.step = step + 1
        if self._graph_wanted and step == self.first_step:
            self._record_graph()
        dumped = len(self.dumps)
        if found and self.dump_on_anomaly is not None and not self._dumped_once:
            self._start_dump(step + 1)
        if self.monitor and (found or step == self.first_step):
            self._write_findings(
                step, found, self.dumps[dumped] if len(self.dumps) > dumped else None
            )
        pending, self._pending_raise = self._pending_raise, None
        if pending is not None:
            raise AnomalyError(pending)
        if found:
            self._act(step, found)

    # ---------------------------------------------------------------- one step
    def _step_impl(self, step: int) -> list[Anomaly]:
        torch = self._torch
        logging = step % self.every == 0 or step == self.first_step
        grads: list[Any] = []
        grad_ids: list[int] = []
        grad_where: list[tuple[int, str]] = []
        for g, (params, names) in enumerate(zip(self._params, self._names, strict=True)):
            for p, name in zip(params, names, strict=True):
                if p.grad is not None:
                    grads.append(p.grad)
                    grad_where.append((g, name))
                    if self.monitor:
                        key = (name, p.grad.dtype)
                        sid = self._sids.get(key)
                        if sid is None:  # once per parameter and dtype, not every step
                            series = Series("grad", name, "grad", _dtype(p.grad), "norm")
                            sid = self._sids[key] = self.checker.add(series)
                        grad_ids.append(sid)
        states: list[Any] = []
        state_ids: list[int] = []
        if self.monitor:
            names_by_id = self._names_by_id
            for p, state in self.optimizer.state.items():
                for key, value in state.items():
                    if (
                        isinstance(value, torch.Tensor)
                        and value.is_floating_point()
                        and value.dim() > 0
                    ):
                        states.append(value)
                        name = names_by_id.get(id(p), "?")
                        skey = (name, key, value.dtype)
                        sid = self._sids.get(skey)
                        if sid is None:
                            series = Series("state", name, str(key), _dtype(value), "norm")
                            sid = self._sids[skey] = self.checker.add(series)
                        state_ids.append(sid)
        weights = [p.detach() for ps in self._params for p in ps] if logging else []
        parts: list[Any] = []
        f32 = torch.float32
        if grads:
            parts.append(_stack(torch, torch._foreach_norm(grads, 2, dtype=f32)))
        if states:
            parts.append(_stack(torch, torch._foreach_norm(states, 2, dtype=f32)))
        if weights:
            parts.append(_stack(torch, torch._foreach_norm(weights, 2, dtype=f32)))
        act_ids, act_vals = list(self._act_ids), list(self._act_vals)
        self._act_ids.clear()  # the hooks hold these lists: empty them in place
        self._act_vals.clear()
        self._grad_hooked.clear()
        self._reduced.clear()
        if act_vals:
            by_dtype: dict[Any, list[Any]] = {}
            order: dict[Any, list[int]] = {}
            for j in range(len(act_ids)):  # act_vals: min, max of each output in turn
                low, high = act_vals[2 * j], act_vals[2 * j + 1]
                by_dtype.setdefault(low.dtype, []).extend((low, high))
                order.setdefault(low.dtype, []).append(j)
            for group in by_dtype.values():
                parts.append(_stack(torch, group).float())
            act_perm = [j for js in order.values() for j in js]
        loss = (
            torch.cat([x.to(self._losses[0].device) for x in self._losses]).mean().reshape(1)
            if self._losses
            else None
        )
        if loss is not None:
            parts.append(loss)
        self._losses = []
        host = _to_host(torch, parts)  # the step's one sync
        at = 0
        grad_norms = host[at : at + len(grads)]
        at += len(grads)
        state_norms = host[at : at + len(states)]
        at += len(states)
        weight_norms = host[at : at + len(weights)]
        at += len(weights)
        acts = np.empty(len(act_ids))
        if act_vals:
            pairs = np.abs(host[at : at + len(act_vals)].reshape(-1, 2))
            acts[act_perm] = np.maximum(pairs[:, 0], pairs[:, 1])  # NaN wins
        at += len(act_vals)
        loss_value = float(host[at]) if loss is not None else None
        if loss_value is not None:
            self._last_loss = loss_value
        found: list[Anomaly] = []
        if self.monitor:
            ids, values = _reduce_max(np.asarray(act_ids, dtype=np.int64), acts)
            ids = np.concatenate([ids, np.asarray(grad_ids + state_ids, dtype=np.int64)])
            values = np.concatenate([values, grad_norms, state_norms])
            if loss_value is not None:
                dtype = "float32"
                ids = np.append(
                    ids, self.checker.add(Series("loss", "loss", "loss", dtype, "value"))
                )
                values = np.append(values, loss_value)
            found = self.checker.check(step, ids, values)
            self.anomalies.extend(found)
            self._write_monitor(step, found, logging, ids, values)
        if logging:
            self._write_logs(step, grad_where, grad_norms, weight_norms, loss_value)
        return found

    def _write_logs(
        self,
        step: int,
        grad_where: list[tuple[int, str]],
        grad_norms: Any,
        weight_norms: Any,
        loss: float | None,
    ) -> None:
        w = self._writer
        if loss is not None:
            w.add_scalar(_collect.TAG_LOSS, loss, step)
        for g, lr in enumerate(_collect.learning_rates(self.optimizer.param_groups)):
            w.add_scalar(_collect.tag_lr(g), lr, step)
        per_group: dict[int, list[float]] = {}
        for (g, name), value in zip(grad_where, grad_norms, strict=True):
            per_group.setdefault(g, []).append(float(value))
            w.add_scalar(_collect.tag_grad_norm(name=name), float(value), step)
        for g, values in sorted(per_group.items()):
            w.add_scalar(_collect.tag_grad_norm(g), _collect.group_norm(values), step)
        at = 0
        for g, (params, names) in enumerate(zip(self._params, self._names, strict=True)):
            norms = [float(v) for v in weight_norms[at : at + len(params)]]
            at += len(params)
            for p, name, value in zip(params, names, norms, strict=True):
                w.add_scalar(_collect.tag_weight_norm(name=name), value, step)
                if name in self._hist:
                    w.add_histogram(_collect.tag_histogram(name), _host_copy(p), step)
            w.add_scalar(_collect.tag_weight_norm(g), _collect.group_norm(norms), step)

    def _write_monitor(
        self, step: int, found: list[Anomaly], logging: bool, ids: Any, values: Any
    ) -> None:
        w = self._writer
        w.add_scalar(TAG_CHECKED, float(len(found)), step)
        if not (found or logging):
            return
        for sid, value in zip(ids.tolist(), values.tolist(), strict=True):
            s = self.checker.series[sid]
            if s.source == "activation":
                tag = f"monitor/activation_amax/{s.where or '(root)'}"
                if s.tensor != "output.0":
                    tag += f"/{s.tensor}"
                w.add_scalar(tag, value, step)
        if found:
            counts: dict[str, int] = {}
            for a in found:
                counts[a.kind] = counts.get(a.kind, 0) + 1
            for kind, n in counts.items():
                w.add_scalar(f"monitor/{kind}", float(n), step)
            w.add_text("monitor/events", "\n".join(f"- {a.describe()}" for a in found), step)

    def _record_graph(self) -> None:
        """The model's graph, once, from step 0's inputs (see ``graph`` in :func:`watch`)."""
        self._graph_wanted = False
        args, self._graph_input = self._graph_input, None
        if args is None:
            return
        torch = self._torch
        model = self.model
        saved = [b.detach().clone() for b in model.buffers()]  # BatchNorm's running stats
        devices = sorted(
            {p.device.index or 0 for p in model.parameters() if p.device.type == "cuda"}
        )
        try:
            with torch.random.fork_rng(devices=devices):  # dropout draws nothing for real
                self._writer.add_graph(model, args)
        except TensorsightError as exc:
            warnings.warn(f"tensorsight.watch: no graph: {exc}", stacklevel=4)
        finally:
            with torch.no_grad():
                for buffer, value in zip(model.buffers(), saved, strict=True):
                    buffer.copy_(value)

    def _write_findings(
        self, step: int, found: list[Anomaly], dump: tuple[int, str] | None
    ) -> None:
        """One ``monitor/findings`` record: the step's findings as UTF-8 JSON in a uint8
        tensor (spec: ``docs/guide/watch.md``, "What the board reads"). The first step's
        record also lists every module, so the board's heat map has a row for each."""
        kept = found[:_FINDINGS_PER_STEP]
        doc: dict[str, Any] = {
            "version": FINDINGS_VERSION,
            "step": step,
            "findings": [
                {
                    "kind": a.kind,
                    "source": a.source,
                    "module": self._module_for(a),
                    "where": a.where,
                    "tensor": a.tensor,
                    "dtype": a.dtype,
                    "stat": a.stat,
                    "value": json_number(a.value),
                    "reference": None if a.reference is None else json_number(a.reference),
                }
                for a in kept
            ],
            "truncated": len(found) - len(kept),
        }
        if step == self.first_step:
            doc["modules"] = self._modules
        if dump is not None:
            doc["dump"] = {"step": dump[0], "path": dump[1]}
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
        payload = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        self._writer.add_tensor(TAG_FINDINGS, payload, step)

    def _module_for(self, a: Anomaly) -> str | None:
        """The module a finding belongs to (``None``: the loss)."""
        if a.source in ("grad", "state"):
            owner: str = self._module_of.get(a.where, a.where.rpartition(".")[0])
            return owner
        if a.source == "loss":
            return None
        return a.where

    # ---------------------------------------------------------------- anomalies
    def _act(self, step: int, found: list[Anomaly]) -> None:
        if self.on_anomaly == "ignore":
            return
        self._writer.flush()
        first = found[0]
        noun = "anomaly" if len(found) == 1 else "anomalies"
        head = f"tensorsight.watch: {len(found)} {noun} at step {step}"
        listed = "; ".join(a.describe() for a in found[:_WARN_LISTED])
        more = f"; and {len(found) - _WARN_LISTED} more" if len(found) > _WARN_LISTED else ""
        where = f" (summaries: {self.logdir!r}, tag 'monitor/events')"
        if self.on_anomaly == "raise":
            message = f"{head}, first {first.kind} in {_label(first)}: {listed}{more}{where}."
            if self._dump is not None:
                self._pending_raise = (
                    f"{message} Step {step + 1} was recorded to "
                    f"{os.fspath(self.dump_on_anomaly or '')!r}."
                )
                return
            raise AnomalyError(message)
        fresh = [a for a in found if (a.kind, a.source, a.where, a.tensor) not in self._warned]
        if not fresh:
            return
        self._warned.update((a.kind, a.source, a.where, a.tensor) for a in fresh)
        listed = "; ".join(a.describe() for a in fresh[:_WARN_LISTED])
        more = f"; and {len(fresh) - _WARN_LISTED} more" if len(fresh) > _WARN_LISTED else ""
        dump = ""
        if self._dump is not None:
            dump = f" Recording step {step + 1} to {os.fspath(self.dump_on_anomaly or '')!r}."
        message = (
            f"{head}, first {fresh[0].kind} in {_label(fresh[0])}: {listed}{more}{where}.{dump}"
        )
        warnings.warn(message, AnomalyWarning, stacklevel=4)

    def _start_dump(self, step: int) -> None:
        from tensorsight.capture import dump

        self._dumped_once = True
        try:
            session = dump(self.dump_on_anomaly or "", steps=[step])
            session.current_step = step  # the folder is named after the watched step
            self._dump = session.start()
        except TensorsightError as exc:  # a folder holding an earlier dump: never overwritten
            warnings.warn(f"watch: no dump of step {step}: {exc}", AnomalyWarning, stacklevel=4)
            return
        self.dumps.append((step, os.fspath(session.path)))


_SPLIT_MIN = 4096  # elements from which amin + amax beat aminmax (float32/float64, CPU)


def _minmax_for(torch: Any) -> Callable[[Any], tuple[Any, Any]]:
    """``t -> (min, max)`` as 0-d tensors, NaN propagating, in the cheapest way per tensor.

    ``torch.aminmax`` reads a tensor once, but on CPU its float32 kernel is slower than
    ``amin`` and ``amax`` run one after the other (on 16x128x1024: 396 us against 275 us,
    one thread); for small tensors, float16 and bfloat16 it is the faster one (half and
    bfloat16: 55 us against 140-210 us on 16x128x256), and on GPUs it is one launch
    instead of two. Both propagate NaN.
    """
    aminmax = torch.aminmax
    split = (torch.float32, torch.float64)

    def minmax(t: Any) -> tuple[Any, Any]:
        if t.dtype in split and t.device.type == "cpu" and t.numel() >= _SPLIT_MIN:
            return t.amin(), t.amax()
        low, high = aminmax(t)
        return low, high

    return minmax


def _label(a: Anomaly) -> str:
    return Series(a.source, a.where, a.tensor, a.dtype, a.stat).label


def _dtype(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def _stack(torch: Any, xs: list[Any]) -> Any:
    """``torch.stack(xs)``, moving to the first tensor's device when a model is spread over
    several (``device_map="auto"``, manual model parallelism)."""
    device = xs[0].device
    if any(x.device != device for x in xs):
        xs = [x.to(device) for x in xs]
    return torch.stack(xs)


def _to_host(torch: Any, parts: list[Any]) -> Any:
    """Concatenate the step's statistics per device and copy them to the host."""
    if not parts:
        return np.empty(0)
    if len({part.device for part in parts}) == 1:
        return torch.cat(parts).cpu().double().numpy()
    flat = [p.reshape(-1).cpu() for p in parts]  # one copy per part: several devices
    return torch.cat(flat).double().numpy()


def _reduce_max(ids: Any, values: Any) -> tuple[Any, Any]:
    """One value per series: the largest of its calls this step (NaN wins)."""
    if ids.size == 0:
        return ids, values
    unique, first = np.unique(ids, return_index=True)
    if unique.size == ids.size:
        return ids, values
    out = np.full(unique.size, -np.inf)
    inverse = np.searchsorted(unique, ids)
    np.maximum.at(out, inverse, values)
    order = np.argsort(first, kind="stable")  # keep the order of first appearance
    return unique[order], out[order]


def _host_copy(p: Any) -> Any:
    return p.detach().float().cpu().numpy()
