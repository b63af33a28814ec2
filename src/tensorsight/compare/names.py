"""Cross-format op names: pair tensorsight ops with msprobe ops by what call they are.

A tensorsight dump names ops by the torch callable (level ``api``:
``torch.nn.functional.linear``, ``torch.Tensor.add``, ``torch.matmul``) or the module class
(level ``module``: ``Linear`` in ``Model.fc1``); msprobe names them by family, call and
per-name counter (``Functional.linear.0.forward``, ``Tensor.__add__.3.forward``,
``Torch.matmul.1.backward``, ``Module.fc1.Linear.forward.0``). Both map to one canonical
:class:`CallName` whose :attr:`CallName.key` is the same for the same call:

==================================  ===========================  ======================
tensorsight                         msprobe                      key
==================================  ===========================  ======================
``torch.nn.functional.linear``      ``Functional.linear.N``      ``Functional.linear``
``torch.Tensor.add`` (``x + y``)    ``Tensor.__add__.N``         ``Tensor.add``
``torch.matmul``                    ``Torch.matmul.N``           ``Torch.matmul``
``torch._VF.lstm``                  ``VF.lstm.N``                ``VF.lstm``
``Linear`` in ``Model.fc1``         ``Module.fc1.Linear...N``    ``Module.fc1.Linear``
``tensorsight.param_grad`` (fc1)    ``Module.fc1.Linear.``       ``ParamGrad.fc1``
                                    ``parameters_grad.N``
==================================  ===========================  ======================

Operator dunders are folded into the method they run (``__add__``/``__radd__`` -> ``add``,
``__iadd__`` -> ``add_``, ``__truediv__`` -> ``div``), since torch reports ``x + y`` as
``Tensor.add`` while msprobe wraps ``Tensor.__add__``. The per-name counter is kept in
:attr:`CallName.count` (msprobe's; :func:`call_names` counts tensorsight's calls); the
matcher aligns sequences of keys, which survives calls recorded on one side only.

Parameter gradients differ in shape, not only in name: msprobe writes one
``parameters_grad`` entry per module (tensors ``weight``, ``bias``), tensorsight one
``tensorsight.param_grad`` op per parameter (``param.weight``, ``grad.weight``).
:func:`normalise` merges tensorsight's per module and renames msprobe's tensors
``grad.<name>``, so gradients pair by name.

ATen ops (tensorsight level ``op``) have no msprobe counterpart: :func:`check_pairable`
raises a one-line :class:`~tensorsight.errors.CompareError` naming the level to dump with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tensorsight.dumpformat.schema import OpRecord
from tensorsight.errors import CompareError

__all__ = [
    "CallName",
    "call_name",
    "call_names",
    "check_pairable",
    "cross_key",
    "normalise",
    "rename_tensors",
    "unmatched_reason",
]

_API = re.compile(r"(?P<family>[A-Za-z]+)\.(?P<name>.+)\.(?P<count>\d+)\.(?P<dir>forward|backward)")
_MODULE = re.compile(
    r"Module\.(?P<path>.+)\.(?P<cls>[^.]+)\.(?P<dir>forward|backward|parameters_grad)\.(?P<count>\d+)"
)
# torch callable prefixes (tensorsight level api) -> msprobe family
_PREFIXES = (
    ("torch.nn.functional.", "Functional"),
    ("torch.Tensor.", "Tensor"),
    ("torch._VF.", "VF"),
    ("torch.", "Torch"),
)
_DUNDERS = {
    "__add__": "add",
    "__radd__": "add",
    "__iadd__": "add_",
    "__sub__": "sub",
    "__isub__": "sub_",
    "__mul__": "mul",
    "__rmul__": "mul",
    "__imul__": "mul_",
    "__truediv__": "div",
    "__div__": "div",
    "__itruediv__": "div_",
    "__idiv__": "div_",
    "__matmul__": "matmul",
    "__neg__": "neg",
    "__abs__": "abs",
    "__gt__": "gt",
    "__ge__": "ge",
    "__lt__": "lt",
    "__le__": "le",
    "__eq__": "eq",
    "__ne__": "ne",
    "__and__": "bitwise_and",
    "__or__": "bitwise_or",
    "__xor__": "bitwise_xor",
    "__invert__": "bitwise_not",
    "__mod__": "remainder",
    "__floordiv__": "floor_divide",
}


@dataclass(frozen=True)
class CallName:
    """One recorded call, named the same way for both formats.

    Attributes:
        family: ``Functional``, ``Tensor``, ``Torch``, ``VF`` (msprobe's other families keep
            their names), ``Module`` or ``ParamGrad`` (parameter gradients of a module).
        name: Call name with operator dunders folded (``linear``, ``add``), for ``Module``
            the module path without the root and the class (``fc1.Linear``), for
            ``ParamGrad`` the module path without the root (``fc1``).
        count: Per-name call counter (msprobe's ``N``; ``None`` until counted).
        direction: ``forward``, ``backward`` or ``parameters_grad``.
    """

    family: str
    name: str
    count: int | None
    direction: str

    @property
    def key(self) -> str:
        """``<family>.<name>``: equal for the same call in both formats."""
        return f"{self.family}.{self.name}"


def _fold(name: str) -> str:
    return _DUNDERS.get(name, name)


def _msprobe_call(op: str) -> CallName | None:
    m = _MODULE.fullmatch(op)
    if m and op.startswith("Module."):
        if m["dir"] == "parameters_grad":
            return CallName("ParamGrad", m["path"], int(m["count"]), m["dir"])
        name = f"{m['path']}.{m['cls']}"
        return CallName("Module", name, int(m["count"]), m["dir"])
    m = _API.fullmatch(op)
    if m:
        return CallName(m["family"], _fold(m["name"]), int(m["count"]), m["dir"])
    return None


def _own_call(op: OpRecord) -> CallName | None:
    name = op.op
    _, _, path = op.module_path.partition(".")  # drop the root module's class name
    if name == _PARAM_GRAD:
        return CallName("ParamGrad", path, None, "parameters_grad")
    if name.startswith(("aten.", "tensorsight.")):
        return None
    for prefix, family in _PREFIXES:
        if name.startswith(prefix):
            return CallName(family, _fold(name[len(prefix) :]), None, op.direction)
    if not name or "." in name:  # not a torch callable nor a module class
        return None
    return CallName("Module", f"{path}.{name}" if path else name, None, op.direction)


def call_name(op: OpRecord, fmt: str) -> CallName | None:
    """The canonical :class:`CallName` of ``op`` from a dump of format ``fmt``.

    Args:
        op: An op of a dump.
        fmt: ``"msprobe"`` or ``"tensorsight"`` (:attr:`~tensorsight.dumpformat.Dump.format`).

    Returns:
        ``None`` for ops without a cross-format name (ATen ops, other ``tensorsight.*`` ops).
    """
    return _msprobe_call(op.op) if fmt == "msprobe" else _own_call(op)


_PARAM_GRAD = "tensorsight.param_grad"
_NOT_API = ("Module", "ParamGrad")


def normalise(ops: Sequence[OpRecord], fmt: str) -> list[OpRecord]:
    """The cross-format view of one side's ops: parameter gradients alike on both sides.

    tensorsight: the ``tensorsight.param_grad`` ops of one module become one op (at the first
    one's place, tensors concatenated). msprobe: the tensors of ``parameters_grad`` entries
    are renamed ``grad.<name>``. Every other op is returned as it is; no tensor is dropped.
    """
    if fmt == "msprobe":
        out = []
        for op in ops:
            c = _msprobe_call(op.op)
            if c is not None and c.family == "ParamGrad":
                tensors = tuple(replace(t, tensor=f"grad.{t.tensor}") for t in op.tensors)
                op = replace(op, tensors=tensors)
            out.append(op)
        return out
    grads: dict[str, list[OpRecord]] = {}
    for op in ops:
        if op.op == _PARAM_GRAD:
            grads.setdefault(op.module_path, []).append(op)
    merged = []
    for op in ops:
        if op.op != _PARAM_GRAD:
            merged.append(op)
            continue
        group = grads[op.module_path]
        if group and group[0] is op:
            tensors = tuple(t for g in group for t in g.tensors)
            merged.append(replace(op, tensors=tensors))
    return merged


def call_names(ops: Sequence[OpRecord], fmt: str) -> list[CallName | None]:
    """:func:`call_name` of each op, tensorsight's counted per (key, direction).

    msprobe names carry their own counter; a tensorsight op's is the number of earlier ops
    of its side with the same key and direction.
    """
    seen: dict[tuple[str, str], int] = {}
    out: list[CallName | None] = []
    for op in ops:
        c = call_name(op, fmt)
        if c is not None and c.count is None:
            n = seen.get((c.key, c.direction), 0)
            seen[(c.key, c.direction)] = n + 1
            c = replace(c, count=n)
        out.append(c)
    return out


def _shapes(op: OpRecord) -> tuple[tuple[int, ...], ...]:
    return tuple(t.shape for t in op.tensors if t.tensor.startswith(("input", "output")))


CrossKey = tuple[str, str, tuple[tuple[int, ...], ...]]


def cross_key(op: OpRecord, fmt: str) -> CrossKey:
    """Alignment key across formats: ``(call key, direction, input/output shapes)``.

    Module paths are left out: msprobe's L1 dumps carry none, and its module names drop the
    root class that tensorsight's keep. Ops without a call name get a key of their own
    (``"?" + op``), which never equals one of the other format.
    """
    c = call_name(op, fmt)
    key = c.key if c is not None else f"?{fmt}:{op.op}"
    return (key, op.direction, _shapes(op))


def _level_of(ops: Sequence[OpRecord]) -> str:
    names = [o.op for o in ops]
    if any(n.startswith("aten.") for n in names):
        return "op"
    if any(n.startswith("torch.") for n in names):
        return "api"
    return "module"


def check_pairable(
    bench: Sequence[OpRecord], target: Sequence[OpRecord], formats: tuple[str, str]
) -> None:
    """Raise when a tensorsight dump and an msprobe dump cannot be paired call by call.

    Raises:
        CompareError: The tensorsight side is an op-level (ATen) dump, or no call is named
            on both sides (e.g. level ``module`` against msprobe L1); the message names the
            level to dump with.
    """
    own, ms = (bench, target) if formats[0] == "tensorsight" else (target, bench)
    if not own or not ms:
        return
    ms_keys = {c.key for c in call_names(ms, "msprobe") if c is not None}
    modules = any(k.startswith(_NOT_API) for k in ms_keys)
    apis = any(not k.startswith(_NOT_API) for k in ms_keys)
    want = "level='api' to compare against msprobe L1" if apis else ""
    if modules and not apis:
        want = "level='module' to compare against msprobe L0"
    level = _level_of(own)
    if level == "op":
        msg = (
            "Dumps (tensorsight vs msprobe): an op-level (ATen) tensorsight dump cannot be "
            "paired with msprobe's API calls one to one. Expected a tensorsight dump of level "
            f"'api' or 'module', got level 'op'. Dump with {want or 'level=api'}."
        )
        raise CompareError(msg)
    own_keys = {c.key for c in call_names(own, "tensorsight") if c is not None}
    if not own_keys & ms_keys:
        msg = (
            f"Dumps (tensorsight vs msprobe): no call of the tensorsight dump (level {level!r}) "
            "is named in the msprobe dump. Expected the same run at matching levels. Dump with "
            f"{want or 'level=api'}."
        )
        raise CompareError(msg)


def rename_tensors(bench: OpRecord, target: OpRecord) -> OpRecord:
    """``target`` with its tensors renamed after ``bench``'s, so the engine pairs them.

    Per role (inputs, outputs), tensors with the same name pair first; the rest pair in
    order when shapes agree (tensorsight names keyword arguments ``input.weight`` where
    msprobe, wrapping the public function, saw them by position: ``input.2``). Tensors
    left over keep their names (and stay unmatched).
    """
    renamed: dict[int, str] = {}
    for role in ("input", "output"):
        bs = [t for t in bench.tensors if t.tensor.startswith(role)]
        ts = [(i, t) for i, t in enumerate(target.tensors) if t.tensor.startswith(role)]
        b_names = {t.tensor for t in bs}
        t_names = {t.tensor for _, t in ts}
        free_b = [t for t in bs if t.tensor not in t_names]
        free_t = [(i, t) for i, t in ts if t.tensor not in b_names]
        for b, (i, t) in zip(free_b, free_t, strict=False):
            if b.shape != t.shape:
                break
            renamed[i] = b.tensor
    if not renamed:
        return target
    tensors = tuple(
        replace(t, tensor=renamed[i]) if i in renamed else t for i, t in enumerate(target.tensors)
    )
    return replace(target, tensors=tensors)


def unmatched_reason(op: OpRecord, side: str, formats: tuple[str, str]) -> str:
    """Why a cross-format op has no partner (one sentence)."""
    fmt = formats[0] if side == "bench" else formats[1]
    other = formats[1] if side == "bench" else formats[0]
    c = call_name(op, fmt)
    what = c.key if c is not None else op.op
    reason = f"Call {what} ({op.direction}) only in the {fmt} dump"
    api = c is not None and c.family not in _NOT_API
    if other == "tensorsight" and op.direction == "backward" and api:
        reason += "; tensorsight level 'api' records the forward pass only"
    elif fmt == "tensorsight" and api:
        reason += "; msprobe does not wrap every torch call"
    return reason + "."
