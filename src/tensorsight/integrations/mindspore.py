"""``TensorsightCollector``: a MindSpore ``Callback`` that logs what ``SummaryCollector`` does.

Pass it to ``Model.train`` (graph or PyNative mode, dataset sink mode off or on)::

    from tensorsight.integrations.mindspore import TensorsightCollector
    model.train(epochs, dataset, callbacks=[TensorsightCollector("logs/run1")])

and the run ``logs/run1`` gets, with ``SummaryCollector``'s defaults (``collect_freq=10``,
the first five parameters' histograms, lineage at the end) and the tags every tensorsight
adapter writes (``tensorsight.monitor._collect``):

- ``loss/auto`` (the network's output, or its first element) and ``lr/group<i>`` at the
  first step and every ``collect_freq`` steps after it;
- ``weight_norm/param/<name>``, ``weight_norm/group0`` and histograms ``weight/<name>`` of the
  first five trainable parameters (or those matching ``histograms=REGEX``) at those steps;
- the data pipeline once (``dataset_graph``, from the dataset's chain of operations);
- at the end, the last step's loss (``loss/auto``, the hparams' metric) and the
  hyperparameters and lineage under MindSpore's ``TrainLineage`` names (``optimizer``,
  ``learning_rate``, ``batch_size``, ``epoch``, ``loss_function``, ``train_dataset_size``,
  ``network``, ``device_num``).

The monitor (``monitor=True``, the default) checks the loss on every step and the collected
parameters on collecting steps for NaN, ±Inf and float16 overflow, the way
:func:`tensorsight.watch` does for PyTorch, writes its findings as the ``monitor/findings``
records the board's Monitor view reads, and warns, raises :class:`~tensorsight.errors.AnomalyError`
or stays silent (``on_anomaly``). Gradients are not visible to a MindSpore callback, so they
are not watched.

``format="tensorboard"`` (the default) writes TensorBoard event files with
:class:`~tensorsight.SummaryWriter`; ``format="mindspore"`` writes the scalars and histograms
with MindSpore's own ``SummaryRecord`` (``*_MS`` files that MindInsight reads too), and the
hyperparameters, lineage and monitor findings beside them in an event file. The board reads
both. Ranks: rank 0 writes by default; ``all_ranks=True`` writes rank ``r`` to ``<dir>/rank<r>``.
Install with ``pip install 'tensorsight[mindspore]'`` (or bring your own ``mindspore``; this
module imports it).
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from tensorsight._lazy import lazy_import
from tensorsight._wire import json_number
from tensorsight.errors import AnomalyError, UsageError
from tensorsight.integrations._common import flatten_hparams, rank_dir, scalar_value
from tensorsight.monitor import _collect
from tensorsight.monitor._checks import Anomaly, Checker, Series
from tensorsight.monitor.tags import FINDINGS_VERSION, TAG_CHECKED, TAG_FINDINGS
from tensorsight.monitor.watch import ON_ANOMALY, AnomalyWarning
from tensorsight.summary import SummaryWriter

_ms = lazy_import("mindspore", extra="mindspore", needed_by="TensorsightCollector")

from mindspore.train import Callback  # noqa: E402  (after the import that names the package)

__all__ = ["FORMATS", "TensorsightCollector"]

#: Where the collector writes: TensorBoard event files, or MindSpore's own summary files.
FORMATS = ("tensorboard", "mindspore")
_FINDINGS_PER_STEP = 256
_PIPELINE_DEPTH = 64  # dataset operations followed from the last one back to the source


class TensorsightCollector(Callback):  # type: ignore[misc]  # mindspore is untyped
    """Logs a MindSpore training run without logging code (see the module doc).

    Args:
        summary_dir: The run's folder.
        collect_freq: Collect at the first step and every this many steps after it.
        histograms: How many trainable parameters get histograms and norms (the first
            ones), or a regular expression their names must match.
        monitor: Check the loss and the collected parameters for NaN, Inf and overflow.
        on_anomaly: ``"warn"``, ``"raise"`` (:class:`~tensorsight.errors.AnomalyError`) or
            ``"ignore"`` when the monitor finds something.
        format: ``"tensorboard"`` or ``"mindspore"`` (see the module doc).
        all_ranks: Write every rank to ``<summary_dir>/rank<r>``, not only rank 0.
        hparams: Extra hyperparameters to log at the end (flattened to ``a/b``).

    Raises:
        UsageError: A bad option (the message names it).

    Attributes:
        anomalies: What the monitor found, in the order seen.
        log_dir: The folder this rank writes (None on a rank that does not write).
    """

    def __init__(
        self,
        summary_dir: str | os.PathLike[str],
        *,
        collect_freq: int = 10,
        histograms: int | str = _collect.HISTOGRAMS_BY_DEFAULT,
        monitor: bool = True,
        on_anomaly: str = "warn",
        format: str = "tensorboard",
        all_ranks: bool = False,
        hparams: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        who = "TensorsightCollector"
        if type(collect_freq) is not int or collect_freq < 1:  # a bool or a float is no count
            msg = f"{who}: collect_freq must be a positive int, got {collect_freq!r}."
            raise UsageError(msg)
        if on_anomaly not in ON_ANOMALY:
            msg = f"{who}: on_anomaly {on_anomaly!r} is unknown. Expected one of {ON_ANOMALY}."
            raise UsageError(msg)
        if format not in FORMATS:
            msg = f"{who}: format {format!r} is unknown. Expected one of {FORMATS}."
            raise UsageError(msg)
        if isinstance(histograms, str):
            try:
                re.compile(histograms)
            except re.error as exc:
                msg = f"{who}: histograms {histograms!r} is not a regular expression: {exc}."
                raise UsageError(msg) from None
        elif type(histograms) is not int or histograms < 0:  # a bool or a float is neither
            msg = f"{who}: histograms must be a count >= 0 or a regex, got {histograms!r}."
            raise UsageError(msg)
        self.summary_dir = os.fspath(summary_dir)
        self.collect_freq = collect_freq
        self.histograms = histograms
        self.monitor = monitor
        self.on_anomaly = on_anomaly
        self.format = format
        self.all_ranks = all_ranks
        self.extra_hparams = dict(hparams or {})
        self.anomalies: list[Anomaly] = []
        self.log_dir: str | None = None
        self._writer: SummaryWriter | None = None
        self._record: Any = None  # mindspore's SummaryRecord with format="mindspore"
        self._checker = Checker()
        self._watched: list[tuple[str, Any]] | None = None
        self._last_loss: float | None = None
        self._steps = 0
        self._first_findings = True

    # -- MindSpore's callback points ---------------------------------------------------------

    def on_train_begin(self, run_context: Any) -> None:
        """Open the run and log the data pipeline."""
        rank = _rank()
        if rank != 0 and not self.all_ranks:
            return
        self.log_dir = rank_dir(self.summary_dir, rank, self.all_ranks)
        os.makedirs(self.log_dir, exist_ok=True)
        self._writer = SummaryWriter(self.log_dir)
        if self.format == "mindspore":
            from mindspore.train.summary import SummaryRecord

            self._record = SummaryRecord(self.log_dir, network=None)
        dataset = run_context.original_args().get("train_dataset")
        graph = _pipeline_graph(dataset) if dataset is not None else None
        if graph is not None:
            self._writer.add_data_graph(_collect.TAG_DATA_GRAPH, graph, 0)

    def on_train_step_end(self, run_context: Any) -> None:
        """Check the loss; on collecting steps log loss, learning rates, norms, histograms."""
        if self._writer is None:
            return
        cb = run_context.original_args()
        step = int(cb.get("cur_step_num", self._steps + 1))
        self._steps = step
        loss = _loss_of(cb.get("net_outputs"))
        collecting = step == 1 or step % self.collect_freq == 0
        ids: list[int] = []
        values: list[float] = []
        if loss is not None:
            self._last_loss = loss
            ids.append(self._checker.add(Series("loss", "loss", "loss", "float32", "value")))
            values.append(loss)
        if collecting:
            self._collect(step, cb, loss, ids, values)
        if self.monitor:
            self._check(step, ids, values)

    def on_train_epoch_end(self, run_context: Any) -> None:
        """Flush what the epoch wrote."""
        if self._writer is not None:
            self._writer.flush()

    def on_train_end(self, run_context: Any) -> None:
        """Log hyperparameters and lineage, then close the files."""
        if self._writer is None:
            return
        cb = run_context.original_args()
        params = {**_lineage(cb), **flatten_hparams(self.extra_hparams)}
        metrics = {} if self._last_loss is None else {"loss/auto": self._last_loss}
        # at the last step: a metric is also a scalar point, and a step that goes back
        # would read as a restart that drops the history
        self._writer.add_hparams(
            flatten_hparams(params), metrics, run_name=".", global_step=self._steps
        )
        self.close()

    def close(self) -> None:
        """Close the files (``on_train_end`` does; call it if training stopped early)."""
        if self._record is not None:
            self._record.close()
            self._record = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # -- collecting --------------------------------------------------------------------------

    def _collect(
        self,
        step: int,
        cb: Mapping[str, Any],
        loss: float | None,
        ids: list[int],
        values: list[float],
    ) -> None:
        if loss is not None:
            self._scalar(_collect.TAG_LOSS, loss, step)
        for group, lr in enumerate(_learning_rates(cb.get("optimizer"), step)):
            self._scalar(_collect.tag_lr(group), lr, step)
        norms = []
        for name, param in self._parameters(cb):
            value = np.asarray(param.asnumpy())
            as32 = value.astype(np.float32, copy=False)
            norm = float(np.linalg.norm(as32.ravel().astype(np.float64)))
            norms.append(norm)
            self._scalar(_collect.tag_weight_norm(name=name), norm, step)
            self._histogram(_collect.tag_histogram(name), as32, step)
            dtype = str(value.dtype)
            ids.append(self._checker.add(Series("state", name, "param", dtype, "amax")))
            values.append(float(np.max(np.abs(value))) if value.size else 0.0)
        if norms:
            self._scalar(_collect.tag_weight_norm(0), _collect.group_norm(norms), step)
        if self._record is not None:
            self._record.record(step)

    def _parameters(self, cb: Mapping[str, Any]) -> list[tuple[str, Any]]:
        if self._watched is None:
            network = cb.get("network") or cb.get("train_network")
            params = list(network.trainable_params()) if network is not None else []
            if isinstance(self.histograms, str):
                pattern = re.compile(self.histograms)
                chosen = [p for p in params if pattern.search(p.name)]
            else:
                chosen = params[: self.histograms]
            self._watched = [(str(p.name), p) for p in chosen]
        return self._watched

    def _scalar(self, tag: str, value: float, step: int) -> None:
        if self._record is not None:
            self._record.add_value("scalar", tag, _ms.Tensor(np.float32(value)))
        elif self._writer is not None:
            self._writer.add_scalar(tag, value, step)

    def _histogram(self, tag: str, values: np.ndarray, step: int) -> None:
        if self._record is not None:
            if values.size:
                self._record.add_value("histogram", tag, _ms.Tensor(values))
        elif self._writer is not None:
            self._writer.add_histogram(tag, values, step)

    # -- the monitor -------------------------------------------------------------------------

    def _check(self, step: int, ids: list[int], values: list[float]) -> None:
        found = self._checker.check(
            step, np.asarray(ids, dtype=np.int64), np.asarray(values, dtype=np.float64)
        )
        writer = self._writer
        if writer is None:
            return
        writer.add_scalar(TAG_CHECKED, float(len(found)), step)
        if not found:
            return
        self.anomalies.extend(found)
        self._write_findings(step, found)
        writer.flush()
        lines = "; ".join(a.describe() for a in found[:3])
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        if self.on_anomaly == "raise":
            self.close()
            msg = f"TensorsightCollector: {lines}{more}"
            raise AnomalyError(msg)
        if self.on_anomaly == "warn":
            warnings.warn(f"TensorsightCollector: {lines}{more}", AnomalyWarning, stacklevel=2)

    def _write_findings(self, step: int, found: list[Anomaly]) -> None:
        kept = found[:_FINDINGS_PER_STEP]
        doc: dict[str, Any] = {
            "version": FINDINGS_VERSION,
            "step": step,
            "findings": [
                {
                    "kind": a.kind,
                    "source": a.source,
                    "module": None if a.source == "loss" else a.where.rpartition(".")[0],
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
        if self._first_findings and self._watched is not None:
            doc["modules"] = sorted({name.rpartition(".")[0] for name, _ in self._watched})
        self._first_findings = False
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
        assert self._writer is not None
        self._writer.add_tensor(TAG_FINDINGS, np.frombuffer(text.encode(), dtype=np.uint8), step)


def _rank() -> int:
    """This process's rank, 0 when MindSpore's communication is not initialised."""
    try:
        from mindspore.communication import get_rank

        return int(get_rank())
    except Exception:
        return 0


def _group_size() -> int:
    try:
        from mindspore.communication import get_group_size

        return int(get_group_size())
    except Exception:
        return 1


def _loss_of(outputs: Any) -> float | None:
    """The loss a train step returned: a scalar tensor, or the first element of a tuple."""
    if isinstance(outputs, list | tuple):
        outputs = outputs[0] if outputs else None
    if outputs is None:
        return None
    if hasattr(outputs, "asnumpy"):
        value = np.asarray(outputs.asnumpy())
        return float(value.reshape(-1)[0]) if value.size else None
    return scalar_value(outputs)


def _learning_rates(optimizer: Any, step: int) -> Iterator[float]:
    """The learning rate of each parameter group (a schedule is read at this step)."""
    if optimizer is None:
        return
    try:
        lr = optimizer.get_lr()
    except Exception:
        lr = getattr(optimizer, "learning_rate", None)
    values = lr if isinstance(lr, list | tuple) else [lr]
    for value in values:
        if hasattr(value, "asnumpy"):
            array = np.asarray(value.asnumpy()).reshape(-1)
            if array.size:
                yield float(array[min(step - 1, array.size - 1)] if array.size > 1 else array[0])
        else:
            number = scalar_value(value)
            if number is not None:
                yield number


def _pipeline_graph(dataset: Any) -> dict[str, Any] | None:
    """A MindSpore dataset's chain of operations (``children``) as a data graph."""
    nodes: list[dict[str, Any]] = []
    edges: list[list[str]] = []
    seen: dict[int, str] = {}

    def visit(node: Any, depth: int) -> str | None:
        if node is None or depth > _PIPELINE_DEPTH:
            return None
        if id(node) in seen:
            return seen[id(node)]
        nid = f"op{len(nodes)}"
        seen[id(node)] = nid
        params: dict[str, Any] = {}
        for attr in (
            "batch_size",
            "num_parallel_workers",
            "shuffle_flag",
            "count",
            "drop_remainder",
        ):
            value = getattr(node, attr, None)
            if isinstance(value, bool | int | float | str):
                params[attr] = value
        kind = type(node).__name__
        nodes.append({"id": nid, "type": kind, "label": kind, "params": params})
        for child in getattr(node, "children", None) or ():
            cid = visit(child, depth + 1)
            if cid is not None:
                edges.append([cid, nid])
        return nid

    visit(dataset, 0)
    return {"nodes": nodes, "edges": edges} if nodes else None


def _lineage(cb: Mapping[str, Any]) -> dict[str, Any]:
    """Hyperparameters and lineage under MindSpore's ``TrainLineage`` names."""
    out: dict[str, Any] = {}
    optimizer = cb.get("optimizer")
    if optimizer is not None:
        out["optimizer"] = type(optimizer).__name__
        rates = list(_learning_rates(optimizer, 1))
        if rates:
            out["learning_rate"] = rates[0]
    dataset = cb.get("train_dataset")
    if dataset is not None:
        for key, method in (
            ("batch_size", "get_batch_size"),
            ("train_dataset_size", "get_dataset_size"),
        ):
            try:
                value = getattr(dataset, method)()
            except Exception:
                continue
            if isinstance(value, int) and value >= 0:
                out[key] = value
    for key, field in (("epoch", "epoch_num"), ("batch_num", "batch_num")):
        value = cb.get(field)
        if isinstance(value, int):
            out[key] = value
    loss_fn = cb.get("loss_fn")
    if loss_fn is not None:
        out["loss_function"] = type(loss_fn).__name__
    network = cb.get("network")
    if network is not None:
        out["network"] = type(network).__name__
    out["device_num"] = _group_size()
    return {k: v for k, v in out.items() if not (isinstance(v, float) and math.isnan(v))}
