"""Simple data flow within one file: where CUDA-specific values go through variables.

The rules see one expression at a time; this prepass (one walk over Python's ``ast``)
tells them what a *name* is used for and what it holds, so that a value can be rewritten
where it is written (``backend = "nccl"``) because of where it is used
(``init_process_group(backend=backend)``).

Names are compared by their **slot**: the last part of a dotted name or the string key of
a subscript, so ``backend``, ``args.backend``, ``self.backend``, ``cfg["backend"]``, the
dataclass field ``backend: str = ...`` and the argparse option ``--backend`` (whose
``dest`` is ``backend``) are one slot. The analysis is flow-insensitive and
intra-file, which is what makes it cheap; a question it cannot answer gets no answer
(``False``), and the rule then reports the site instead of rewriting it.

Example:
    >>> import ast
    >>> flow = collect_flow(ast.parse(
    ...     "backend = 'nccl'\\n"
    ...     "dist.init_process_group(backend=backend)\\n"
    ...     "rank = int(os.environ['LOCAL_RANK'])\\n"
    ...     "x.to(rank)\\n"))
    >>> sorted(flow.backend_slots), sorted(flow.index_slots), sorted(flow.device_slots)
    (['backend'], ['rank'], ['rank'])
"""

from __future__ import annotations

import ast
import string
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

__all__ = [
    "EMPTY_FLOW",
    "FlowFacts",
    "argparse_dest",
    "collect_flow",
    "cst_slot",
    "format_fields_are_positional",
]

#: Device types a device-type string can hold (``torch.device(...).type``).
DEVICE_TYPES = frozenset({"cpu", "cuda", "mps", "xpu", "npu", "hpu", "mtia", "meta", "xla"})
_BACKEND_CALLS = ("init_process_group", "new_group")
_INDEX_CALLS = ("int", "get_rank", "get_local_rank", "current_device", "current_device_index")


@dataclass(frozen=True)
class FlowFacts:
    """What the flow prepass learned about the slots (names) of one file.

    Attributes:
        backend_slots: Slots passed as the backend of ``init_process_group``/``new_group``.
        device_slots: Slots passed where a device goes: ``device=``, ``map_location=``,
            the first argument of ``.to(...)``, ``.cuda(...)`` and ``torch.device(...)``.
        map_location_slots: Slots passed as ``map_location=`` of a load.
        index_slots: Slots every assignment of which is an integer (``int(...)``, an int
            literal, ``dist.get_rank()``, ``LOCAL_RANK``...): in a device slot they are a
            device index.
        device_type_slots: Slots every assignment of which is a device type
            (``x.type``, ``"cpu"``, ``"cuda" if "cuda" in d else "cpu"``).
        cuda_string_slots: Slots assigned a CUDA device string somewhere (``"cuda"``,
            ``"cuda:0"``, ``f"cuda:{i}"``, ``"cuda:{}".format(i)``, an argparse default).
        indexed_slots: The subset of ``cuda_string_slots`` whose string carries an index.
    """

    backend_slots: frozenset[str] = frozenset()
    device_slots: frozenset[str] = frozenset()
    map_location_slots: frozenset[str] = frozenset()
    index_slots: frozenset[str] = frozenset()
    device_type_slots: frozenset[str] = frozenset()
    cuda_string_slots: frozenset[str] = frozenset()
    indexed_slots: frozenset[str] = frozenset()


EMPTY_FLOW = FlowFacts()


def _slot(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    return None


def cst_slot(node: cst.BaseExpression) -> str | None:
    """The slot of a LibCST expression (same rules as the prepass), else ``None``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            value = index.value.evaluated_value
            return value if isinstance(value, str) else None
    return None


def argparse_dest(option_strings: list[str], dest: str | None) -> str | None:
    """The ``dest`` argparse gives an option: ``dest=``, else the first long option."""
    if dest is not None:
        return dest
    longs = [s for s in option_strings if s.startswith("--")]
    chosen = longs[0] if longs else (option_strings[0] if option_strings else None)
    if chosen is None:
        return None
    return chosen.lstrip("-").replace("-", "_") or None


def format_fields_are_positional(template: str) -> bool:
    """Whether every replacement field of a ``str.format`` template is a bare ``{}``."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError:
        return False
    return all(f == "" for f in fields)


def _callee(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _str(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _cuda_string(node: ast.expr) -> tuple[bool, bool] | None:
    """``(is a CUDA device string, carries an index)`` for the forms rules rewrite."""
    value = _str(node)
    if value is not None:
        if value == "cuda":
            return True, False
        if value.startswith("cuda:"):
            return True, True
        return None
    if isinstance(node, ast.JoinedStr) and node.values:
        head = _str(node.values[0])
        if head is not None and head.startswith("cuda:"):
            return True, True
        return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        template = _str(node.func.value)
        if template is not None and template.startswith("cuda:"):
            return True, True
    return None


def _is_index(node: ast.expr, index_slots: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Call):
        return _callee(node) in _INDEX_CALLS
    slot = _slot(node)
    return slot is not None and slot in index_slots


def _is_device_type(node: ast.expr, type_slots: set[str]) -> bool:
    value = _str(node)
    if value is not None:
        return value in DEVICE_TYPES
    if isinstance(node, ast.Attribute):
        return node.attr == "type"
    if isinstance(node, ast.IfExp):
        return _is_device_type(node.body, type_slots) and _is_device_type(node.orelse, type_slots)
    slot = _slot(node)
    return slot is not None and slot in type_slots


def _every(
    values: dict[str, list[ast.expr]], test: Callable[[ast.expr, set[str]], bool]
) -> set[str]:
    """Slots all of whose values pass ``test`` (a fixpoint over slot-to-slot copies)."""
    known: set[str] = set()
    while True:
        new = {slot for slot, exprs in values.items() if all(test(e, known) for e in exprs)}
        if new == known:
            return known
        known = new


def collect_flow(tree: ast.Module) -> FlowFacts:
    """Run the flow prepass over one module's ``ast``.

    Args:
        tree: The parsed module.

    Returns:
        The :class:`FlowFacts` of the module.
    """
    backend: set[str] = set()
    device: set[str] = set()
    map_location: set[str] = set()
    cuda: set[str] = set()
    indexed: set[str] = set()
    values: dict[str, list[ast.expr]] = {}

    def assigned(target: ast.expr, value: ast.expr) -> None:
        slot = _slot(target)
        if slot is None:
            if isinstance(target, ast.Tuple | ast.List):
                for t in target.elts:
                    if (s := _slot(t)) is not None:
                        values.setdefault(s, []).append(ast.Name("?"))  # unknown value
            return
        values.setdefault(slot, []).append(value)
        found = _cuda_string(value)
        if found is not None:
            cuda.add(slot)
            if found[1]:
                indexed.add(slot)

    def used_as_device(node: ast.expr) -> None:
        if (slot := _slot(node)) is not None:
            device.add(slot)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                assigned(target, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            assigned(node.target, node.value)
        elif isinstance(node, ast.AugAssign | ast.For | ast.With | ast.NamedExpr):
            targets = [node.target] if not isinstance(node, ast.With) else []
            if isinstance(node, ast.With):
                targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
            for target in targets:
                if isinstance(node, ast.NamedExpr):
                    assigned(target, node.value)
                elif (slot := _slot(target)) is not None:
                    values.setdefault(slot, []).append(ast.Name("?"))
        elif isinstance(node, ast.arguments):
            for arg in [*node.posonlyargs, *node.args, *node.kwonlyargs]:
                hint = arg.annotation
                if isinstance(hint, ast.Name) and hint.id == "int":
                    values.setdefault(arg.arg, []).append(ast.Constant(0))
                else:
                    values.setdefault(arg.arg, []).append(ast.Name("?"))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (k := _str(key)) is not None:
                    values.setdefault(k, []).append(value)
                    if _cuda_string(value) is not None:
                        cuda.add(k)
        elif isinstance(node, ast.Call):
            name = _callee(node)
            if name in _BACKEND_CALLS:
                slots = [k.value for k in node.keywords if k.arg == "backend"]
                if name == "init_process_group" and node.args:
                    slots.append(node.args[0])
                for value in slots:
                    if (slot := _slot(value)) is not None:
                        backend.add(slot)
            for kw in node.keywords:
                if kw.arg in ("device", "map_location"):
                    used_as_device(kw.value)
                    if kw.arg == "map_location" and (slot := _slot(kw.value)) is not None:
                        map_location.add(slot)
                elif kw.arg is not None and name not in ("add_argument",):
                    values.setdefault(kw.arg, []).append(kw.value)  # dict(x=...), Config(x=...)
            if name in ("to", "cuda", "device") and node.args:
                used_as_device(node.args[0])
            if name == "add_argument":
                opts = [s for a in node.args if (s := _str(a)) is not None]
                dest_kw = next((_str(k.value) for k in node.keywords if k.arg == "dest"), None)
                dest = argparse_dest(opts, dest_kw)
                default = next((k.value for k in node.keywords if k.arg == "default"), None)
                if dest is not None:
                    values.setdefault(dest, []).append(default or ast.Name("?"))
                    if default is not None and _cuda_string(default) is not None:
                        cuda.add(dest)
    index = _every(values, _is_index)
    types = _every(values, _is_device_type)
    return FlowFacts(
        backend_slots=frozenset(backend),
        device_slots=frozenset(device),
        map_location_slots=frozenset(map_location),
        index_slots=frozenset(index),
        device_type_slots=frozenset(types),
        cuda_string_slots=frozenset(cuda),
        indexed_slots=frozenset(indexed),
    )
