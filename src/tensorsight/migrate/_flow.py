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
(``False``), and the rule then reports the site instead of rewriting it. Parameters get
the values that their call sites in the file pass, but only in a script (a module with
an ``if __name__ == "__main__":`` block, whose functions are taken not to be called from
other files): see :func:`_call_site_values` (``mp.spawn`` targets, constructors,
launchers that pass a function on to ``mp.spawn``); elsewhere a parameter is unknown.

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

from tensorsight.migrate._bindings import argparse_dest

__all__ = [
    "EMPTY_FLOW",
    "FlowFacts",
    "argparse_dest",
    "collect_flow",
    "cst_is_index",
    "cst_slot",
    "format_fields_are_positional",
    "slot_of",
]

#: Device types a device-type string can hold (``torch.device(...).type``).
DEVICE_TYPES = frozenset({"cpu", "cuda", "mps", "xpu", "npu", "hpu", "mtia", "meta", "xla"})
_BACKEND_CALLS = ("init_process_group", "new_group")
_INDEX_CALLS = ("int", "get_rank", "get_local_rank", "current_device", "current_device_index")
_INT_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)
#: ``torch.multiprocessing.spawn(fn, args=(...))`` calls ``fn(i, *args)``, ``i`` the
#: process index; so does ``start_processes``.
_SPAWNS = ("spawn", "start_processes")
_UNKNOWN = "?"


@dataclass(frozen=True)
class FlowFacts:
    """What the flow prepass learned about the slots (names) of one file.

    Attributes:
        backend_slots: Slots passed as the backend of ``init_process_group``/``new_group``.
        device_slots: Slots passed where a device goes: ``device=``, ``map_location=``,
            the first argument of ``.to(...)``, ``.cuda(...)`` and ``torch.device(...)``.
        map_location_slots: Slots passed as ``map_location=`` of a load.
        index_slots: Slots every assignment of which is an integer (``int(...)``, an int
            literal, ``dist.get_rank()``, ``LOCAL_RANK``, integer arithmetic of those, a
            script function's parameter every call of which passes one, the first
            parameter of an ``mp.spawn`` target): in a device slot they are a device index.
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


def slot_of(node: ast.expr) -> str | None:
    """The slot of an ``ast`` expression (see the module doc), else ``None``."""
    return _slot(node)


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


_CST_INT_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)


def cst_is_index(node: cst.BaseExpression, index_slots: frozenset[str]) -> bool:
    """Whether a LibCST expression is an integer by the prepass: an int literal, a name of
    ``index_slots``, or integer arithmetic of those (``rank * 2 + 1``)."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Name | cst.Attribute):
        return cst_slot(node) in index_slots
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _CST_INT_OPS):
        return cst_is_index(node.left, index_slots) and cst_is_index(node.right, index_slots)
    return False


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
    if isinstance(node, ast.BinOp) and isinstance(node.op, _INT_OPS):  # rank * 2 + 1
        return _is_index(node.left, index_slots) and _is_index(node.right, index_slots)
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


def _self_copy(target: ast.expr, value: ast.expr) -> bool:
    """``self.x = x``, ``x = self.x`` or ``x = x``: the slot keeps what its other values
    say. (``device = src.device`` is not one: ``src`` is another object.)"""

    def name(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            return node.attr
        return None

    return name(target) is not None and name(target) == name(value)


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
    parameters = _call_site_values(tree)

    def assigned(target: ast.expr, value: ast.expr) -> None:
        if _self_copy(target, value):
            return
        slot = _slot(target)
        if slot is None:
            if isinstance(target, ast.Tuple | ast.List):
                for t in target.elts:
                    if (s := _slot(t)) is not None:
                        values.setdefault(s, []).append(ast.Name(_UNKNOWN))  # unknown value
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
                    values.setdefault(slot, []).append(ast.Name(_UNKNOWN))
        elif isinstance(node, ast.arguments):
            passed = parameters.get(id(node), {})
            for arg in [*node.posonlyargs, *node.args, *node.kwonlyargs]:
                hint = arg.annotation
                if isinstance(hint, ast.Name) and hint.id == "int":
                    values.setdefault(arg.arg, []).append(ast.Constant(0))
                elif arg.arg in passed:  # setup(rank) passes the slot on: no new value
                    here = [v for v in passed[arg.arg] if not _self_copy(ast.Name(arg.arg), v)]
                    if here:  # an empty list would make every test hold
                        values.setdefault(arg.arg, []).extend(here)
                else:
                    values.setdefault(arg.arg, []).append(ast.Name(_UNKNOWN))
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
                elif (
                    kw.arg is not None
                    and name not in ("add_argument",)
                    and not _self_copy(ast.Name(kw.arg), kw.value)  # f(rank=rank): nothing new
                ):
                    values.setdefault(kw.arg, []).append(kw.value)  # dict(x=...), Config(x=...)
            if name in ("to", "cuda", "device") and node.args:
                used_as_device(node.args[0])
            if name == "add_argument":
                opts = [s for a in node.args if (s := _str(a)) is not None]
                dest_kw = next((_str(k.value) for k in node.keywords if k.arg == "dest"), None)
                dest = argparse_dest(opts, dest_kw)
                default = next((k.value for k in node.keywords if k.arg == "default"), None)
                if dest is not None:
                    values.setdefault(dest, []).append(default or ast.Name(_UNKNOWN))
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


_Callable = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
#: One call of a function: its positional arguments, keywords, and how many leading
#: parameters the call does not pass (``self`` of ``__init__``).
_CallSite = tuple[list[ast.expr], list[ast.keyword], int]


def _is_script(tree: ast.Module) -> bool:
    """Whether the module has a top-level ``if __name__ == "__main__":`` block."""
    for stmt in tree.body:
        test = stmt.test if isinstance(stmt, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and len(test.comparators) == 1
            and _str(test.comparators[0]) == "__main__"
        ):
            return True
    return False


def _own_functions(tree: ast.Module) -> dict[str, _Callable]:
    """Functions (not methods) and classes defined once in the module, undecorated, whose
    name is bound nowhere else (no assignment, import, parameter or second ``def``)."""
    found: dict[str, list[_Callable]] = {}
    methods: set[int] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            methods.update(id(s) for s in node.body)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if id(node) not in methods:
                found.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.ClassDef):
                bound.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    out: dict[str, _Callable] = {}
    for name, defs in found.items():
        node = defs[0]
        if len(defs) != 1 or name in bound or node.decorator_list:
            continue
        if isinstance(node, ast.ClassDef) and (
            node.keywords or _init(node) is None or _member(node, "__new__") is not None
        ):
            continue
        out[name] = node
    return out


def _member(cls: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
            return stmt
    return None


def _init(cls: ast.ClassDef) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    init = _member(cls, "__init__")
    return None if init is None or init.decorator_list else init


def _bind(args: ast.arguments, site: _CallSite) -> dict[str, ast.expr] | None:
    """The argument each parameter gets at one call site (its default where not passed),
    or ``None`` where the call cannot be read (``*xs``, ``**kw``, a bad arity)."""
    pos, keywords, skip = site
    if any(isinstance(a, ast.Starred) for a in pos) or any(k.arg is None for k in keywords):
        return None
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([a.arg for a in positional[::-1]], args.defaults[::-1], strict=False))
    defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d)
    positional = positional[skip:]
    if len(pos) > len(positional) and args.vararg is None:
        return None
    bound = {p.arg: a for p, a in zip(positional, pos, strict=False)}
    for keyword in keywords:
        if keyword.arg is not None:
            bound[keyword.arg] = keyword.value
    for param in [*positional, *args.kwonlyargs]:
        if param.arg not in bound:
            if param.arg not in defaults:
                return None
            bound[param.arg] = defaults[param.arg]
    return bound


def _spawn_site(call: ast.Call) -> _CallSite:
    """``spawn(fn, args=(a, b))`` as a call ``fn(<index>, a, b)``."""
    extra: ast.expr | None = call.args[1] if len(call.args) > 1 else None
    extra = next((k.value for k in call.keywords if k.arg == "args"), extra)
    if extra is None:
        rest: list[ast.expr] = []
    elif isinstance(extra, ast.Tuple | ast.List):
        rest = list(extra.elts)
    else:
        rest = [ast.Starred(extra)]  # unreadable: the call is not followed
    return [ast.Constant(0), *rest], [], 0


def _is_spawn(call: ast.Call) -> bool:
    return _callee(call) in _SPAWNS and bool(call.args) and isinstance(call.args[0], ast.Name)


def _call_site_values(tree: ast.Module) -> dict[int, dict[str, list[ast.expr]]]:
    """The values the parameters of a script's own functions get at their call sites.

    Keyed by ``id`` of the function's ``ast.arguments``. Only in a script (a module with an
    ``if __name__ == "__main__":`` block, so its functions are not called from elsewhere),
    only for functions of :func:`_own_functions` whose every use in the module is a call
    that can be read, a ``torch.multiprocessing.spawn`` target (its first parameter the
    process index), or an argument to a parameter of such a function that is only used as
    a spawn target (``run_demo(demo_basic, 8)``). A function used any other way, or never
    called, is not followed: its parameters stay unknown.
    """
    if not _is_script(tree):
        return {}
    functions = _own_functions(tree)
    sites: dict[str, list[_CallSite]] = {name: [] for name in functions}
    handled: set[int] = set()
    passed: list[tuple[str, str, int | str]] = []  # (function, callee, position or keyword)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in functions:
            handled.add(id(func))
            skip = 1 if isinstance(functions[func.id], ast.ClassDef) else 0
            sites[func.id].append((node.args, node.keywords, skip))
            for i, a in enumerate(node.args):
                if isinstance(a, ast.Name) and a.id in functions:
                    passed.append((a.id, func.id, i + skip))
                    handled.add(id(a))
            for k in node.keywords:
                if isinstance(k.value, ast.Name) and k.value.id in functions and k.arg:
                    passed.append((k.value.id, func.id, k.arg))
                    handled.add(id(k.value))
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Name) and first.id in functions:
            if _is_spawn(node):
                sites[first.id].append(_spawn_site(node))
                handled.add(id(first))
            elif isinstance(func, ast.Name) and func.id == "super":
                handled.add(id(first))  # super(Net, self).__init__()
    escaped = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id in functions and id(node) not in handled
    }
    for name, callee, where in passed:
        spawned = _spawned_by(functions[callee], where)
        if spawned is None:
            escaped.add(name)
        else:
            sites[name].extend(spawned)
    out: dict[int, dict[str, list[ast.expr]]] = {}
    for name, node in functions.items():
        target_def = _init(node) if isinstance(node, ast.ClassDef) else node
        if name in escaped or not sites[name] or target_def is None:
            continue
        binds = [_bind(target_def.args, site) for site in sites[name]]
        readable = [b for b in binds if b is not None]
        if len(readable) != len(binds):
            continue
        params: dict[str, list[ast.expr]] = {}
        for b in readable:
            for param, value in b.items():
                params.setdefault(param, []).append(value)
        out[id(target_def.args)] = params
    return out


def _spawned_by(node: _Callable, where: int | str) -> list[_CallSite] | None:
    """The spawn calls through which function ``node`` calls the function passed as its
    parameter ``where``, or ``None`` when that parameter is used any other way."""
    if isinstance(node, ast.ClassDef):
        return None
    positional = [*node.args.posonlyargs, *node.args.args]
    if isinstance(where, int):
        if where >= len(positional):
            return None
        name = positional[where].arg
    else:
        name = where
    spawns: list[_CallSite] = []
    uses = 0
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and inner.id == name:
            uses += 1
        elif isinstance(inner, ast.Call) and _is_spawn(inner):
            first = inner.args[0]
            if isinstance(first, ast.Name) and first.id == name:
                spawns.append(_spawn_site(inner))
    return spawns if spawns and uses == len(spawns) else None
