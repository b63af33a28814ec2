"""Data flow inside one dump step: which recorded op produced each op's input.

A dump records tensors, not edges, so edges are recovered from identity: an input is the
output of the latest earlier op that holds the same tensor. Two rows hold the same tensor
when they point at the same stored tensor (``data``: a tensor dump stores a tensor once per
storage and version) or, failing that, when shape, dtype and every statistic (min, max,
mean, L2 norm, NaN/Inf counts, all exact) agree. Constant tensors (``min == max``: zeros,
ones) carry no identity by statistics, since any two of them agree.

Parameters are the ``param.<name>`` rows of ``tensorsight.param_grad`` (and msprobe's
parameter rows); an input holding the same tensor as one of them is that parameter.

Memory an allocation op returned (``torch.empty``: whatever the allocator held) is followed
the same way: every later row holding that same tensor, by data or by every statistic, holds
memory no op has written yet (a view or ``detach`` of it, the ``nn.Parameter`` made of it
before its initialiser fills it). Any write changes the statistics (or the stored version),
so the trail ends there.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from tensorsight.dumpformat.schema import OpRecord, TensorRecord

__all__ = [
    "ALLOCATION_OPS",
    "DataFlow",
    "Origin",
    "Origins",
    "Producer",
    "data_flow",
    "forget_flows",
    "op_base",
    "tensor_identity",
]

# dtype conversions, by base name: aten/prims ops, msprobe's API calls, our api-level calls
_CAST_BASES = frozenset(
    {"_to_copy", "to", "type_as", "convert_element_type", "_autocast_to_reduced_precision",
     "_autocast_to_full_precision", "float", "half", "bfloat16", "double", "type",
     "npu_format_cast"}
)  # fmt: skip
# op base names (``aten.empty.memory_format`` -> ``empty``) whose outputs no op wrote
ALLOCATION_OPS = frozenset(
    {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"}
)


def op_base(op: str) -> str:
    """``aten.empty.memory_format`` and msprobe's ``Torch.empty.0.forward`` -> ``empty``."""
    parts = op.split(".")
    return parts[1] if len(parts) > 1 else op


def is_cast(op: str) -> bool:
    """Whether ``op`` is a dtype conversion: one-sided in every autocast run.

    Example:
        >>> [is_cast(o) for o in ("aten._to_copy.default", "Tensor.float.0.forward",
        ...  "torch.Tensor.to", "aten.topk.default", "Tensor.to_sparse.0.forward")]
        [True, True, True, False, False]
    """
    parts = op.split(".")
    if parts[0] == "torch":  # level="api": torch.Tensor.to, torch.Tensor.float
        return parts[-1] in _CAST_BASES
    return len(parts) > 1 and parts[1] in _CAST_BASES


def tensor_identity(rec: TensorRecord) -> Hashable | None:
    """A key equal for two rows holding the same tensor (``None``: no usable identity)."""
    s = rec.stats
    if s is None or s.min is None or s.max is None or s.min == s.max:
        return None
    if s.mean is None or s.norm is None:
        return None
    # as text: NaN statistics of two rows holding the same tensor compare equal too; hex is
    # exact like repr (-0.0 stays apart from 0.0) at half its cost (thousands of rows a side)
    values = (_exact(s.min), _exact(s.max), _exact(s.mean), _exact(s.norm))
    return (rec.shape, rec.dtype, *values, s.nan_count, s.posinf_count, s.neginf_count)


def _exact(v: float) -> str:
    return float(v).hex()


@dataclass(frozen=True)
class Producer:
    """The recorded op whose output an input is.

    Attributes:
        index: The producing op's index.
        op: Its name.
        tensor: Which of its tensors (``output.0``, ``grad.weight``).
    """

    index: int
    op: str
    tensor: str


class DataFlow:
    """Producer edges and parameter identities of one side's ops (module docstring)."""

    def __init__(self, ops: Sequence[OpRecord]) -> None:
        self._producer: dict[tuple[int, str], Producer] = {}
        self._params: set[Hashable] = set()
        self._param_data: set[str] = set()
        by_data: dict[str, Producer] = {}
        by_stats: dict[Hashable, Producer] = {}
        # identities (data or statistics) of memory no op wrote -> the allocation op
        fresh: dict[Hashable, str] = {}
        self._unwritten: dict[tuple[int, str], str] = {}
        self.first_backward: int | None = None
        for op in ops:
            allocates = op_base(op.op) in ALLOCATION_OPS
            # each row's identity once (it was computed up to four times a row)
            idents = {id(t): tensor_identity(t) for t in op.tensors}
            for t in op.tensors:
                ident = idents[id(t)]
                keys: list[Hashable] = [] if ident is None else [ident]
                if t.data is not None:
                    keys.append(("data", t.data))
                if allocates and t.tensor.startswith("output"):
                    for k in keys:
                        fresh[k] = op.op
                hit = next((fresh[k] for k in keys if k in fresh), None)
                if hit is not None:
                    self._unwritten[(op.index, t.tensor)] = hit
            if op.direction == "backward" and self.first_backward is None:
                self.first_backward = op.index
            for t in op.tensors:
                if t.tensor.startswith("param."):
                    key = idents[id(t)]
                    if key is not None:
                        self._params.add(key)
                    if t.data is not None:
                        self._param_data.add(t.data)
            for t in op.inputs:
                p = by_data.get(t.data) if t.data is not None else None
                if p is None:
                    key = idents[id(t)]
                    p = by_stats.get(key) if key is not None else None
                if p is not None:
                    self._producer[(op.index, t.tensor)] = p
            for t in op.outputs:
                p = Producer(op.index, op.op, t.tensor)
                if t.data is not None:
                    by_data[t.data] = p
                key = idents[id(t)]
                if key is not None:
                    by_stats[key] = p

    def unwritten(self, index: int, tensor: str) -> str | None:
        """The allocation op whose unwritten memory row ``tensor`` of op ``index`` holds."""
        return self._unwritten.get((index, tensor))

    def producer(self, index: int, tensor: str) -> Producer | None:
        """The op that produced input ``tensor`` of op ``index`` (``None``: none recorded)."""
        return self._producer.get((index, tensor))

    def is_parameter(self, rec: TensorRecord) -> bool:
        """Whether ``rec`` holds the same tensor as a recorded parameter."""
        if rec.data is not None and rec.data in self._param_data:
            return True
        key = tensor_identity(rec)
        return key is not None and key in self._params

    def before_backward(self, index: int) -> bool:
        """Whether op ``index`` ran before the first backward op (or there is none)."""
        return self.first_backward is None or index < self.first_backward


_FLOWS: list[tuple[Sequence[OpRecord], DataFlow]] = []  # the last few, newest last
_FLOWS_LOCK = threading.Lock()


def data_flow(ops: Sequence[OpRecord]) -> DataFlow:
    """``DataFlow(ops)``, shared while the same sequence object is asked for again.

    Pairing (:mod:`~tensorsight.compare.match`) and judging (:class:`Origins`) both need
    the flow of each side's ops; building it walks every row (~20 ms per 1,000 ops).
    Only tuples are shared (a list could change); :func:`forget_flows` drops them."""
    if type(ops) is not tuple:
        return DataFlow(ops)
    with _FLOWS_LOCK:
        for seq, flow in _FLOWS:
            if seq is ops:
                return flow
    flow = DataFlow(ops)
    with _FLOWS_LOCK:
        _FLOWS.append((ops, flow))
        del _FLOWS[:-8]  # ranks run in parallel: room for a few pairs of sides
    return flow


def forget_flows() -> None:
    """Drop the flows :func:`data_flow` keeps (a comparison calls it when it ends)."""
    with _FLOWS_LOCK:
        _FLOWS.clear()


@dataclass(frozen=True)
class Origin:
    """Where an input row's tensor came from.

    Attributes:
        kind: ``produced`` (an earlier recorded op's output), ``parameter``, ``model input``
            (an input that no recorded op produced, of an op inside a module, before any
            backward op: a parameter, buffer or the model's input) or ``unknown`` (no
            recorded producer otherwise: a gradient reaching the optimizer, a loss made by
            ops left out of a partial dump).
        producer: The producing op (``kind == "produced"``).
        side: The dump whose edges were used (``bench`` or ``target``).
        diverted: The target's producer when it is not the counterpart of the bench's
            producer (the runs' data flows part here), else ``None``.
    """

    kind: str
    producer: Producer | None = None
    side: str = "bench"
    diverted: Producer | None = None


class Origins:
    """:class:`Origin` of the input rows of one rank's comparison, from both sides' flows."""

    def __init__(
        self,
        bench: Sequence[OpRecord],
        target: Sequence[OpRecord],
        mates: dict[int, int] | None = None,
    ) -> None:
        self.bench, self.target = data_flow(bench), data_flow(target)
        self._bench_ops = {op.index: op for op in bench}
        self._target_ops = {op.index: op for op in target}
        self._mates = mates or {}  # bench index -> target index of paired ops
        self._mated = set(self._mates.values())

    def _target_source(self, p: Producer | None) -> Producer | None:
        """Follow the target's producer up through one-sided dtype casts (autocast's)."""
        for _ in range(8):
            if p is None or p.index in self._mated or not is_cast(p.op):
                return p
            op = self._target_ops.get(p.index)
            if op is None or not op.inputs:
                return p
            up = self.target.producer(p.index, op.inputs[0].tensor)
            if up is None:
                return None  # a cast of something no recorded op made (a parameter)
            p = up
        return p

    def unwritten(self, index: int | None, index_target: int | None, tensor: str) -> str | None:
        """The allocation op whose unwritten memory the row holds, on either side."""
        hit = self.bench.unwritten(index, tensor) if index is not None else None
        if hit is None and index_target is not None:
            hit = self.target.unwritten(index_target, tensor)
        return hit

    def __call__(self, index: int, index_target: int | None, tensor: str) -> Origin:
        """The origin of input ``tensor`` of bench op ``index`` (target op ``index_target``)."""
        p = self.bench.producer(index, tensor)
        pt = None
        if index_target is not None:
            pt = self._target_source(self.target.producer(index_target, tensor))
        if p is not None:
            mate = self._mates.get(p.index)
            diverted = pt if pt is not None and mate is not None and pt.index != mate else None
            if pt is not None and mate is None and pt.index in self._mated:
                diverted = pt
            return Origin("produced", p, diverted=diverted)
        if pt is not None:
            return Origin("produced", pt, "target", diverted=pt)
        op = self._bench_ops.get(index)
        rec = next((t for t in op.tensors if t.tensor == tensor), None) if op else None
        if rec is not None and (tensor.startswith("param.") or self.bench.is_parameter(rec)):
            return Origin("parameter")
        if (
            op is not None
            and op.direction == "forward"
            and op.module_path  # read by the model (an op outside every module is not)
            and self.bench.before_backward(index)
        ):
            return Origin("model input")
        return Origin("unknown")
