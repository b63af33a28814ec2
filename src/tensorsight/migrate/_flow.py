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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import libcst as cst

from tensorsight.migrate._bindings import ANY, Bindings, Key, Scope, argparse_dest, collect_bindings

__all__ = [
    "EMPTY_FLOW",
    "FlowFacts",
    "argparse_dest",
    "ast_item",
    "collect_flow",
    "cst_is_index",
    "cst_item",
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


#: The kinds of use the prepass records (:attr:`FlowFacts.elsewhere` keys).
USE_KINDS = ("backend", "device", "map_location")


@dataclass(frozen=True)
class Held:
    """What a value defined in another module holds (from that module's prepass).

    Attributes:
        index: Every assignment is an integer.
        device_type: Every assignment is a device type.
        cuda: Some assignment is a CUDA device string.
        indexed: Some assignment is a CUDA device string with an index.
        nccl: Some assignment is the backend name ``"nccl"``.
        where: ``file:line`` of its first assignment there.
    """

    index: bool = False
    device_type: bool = False
    cuda: bool = False
    indexed: bool = False
    nccl: bool = False
    where: str = ""


@dataclass(frozen=True)
class External:
    """What one module learns from the rest of its project (:mod:`._project`).

    Attributes:
        values: A key of this module (a name it imports, ``(("@", module), name)`` for
            ``module.name`` through an imported module, or an attribute slot ``(ANY, x)``
            shared with a module it imports or is imported by) -> what the other modules
            store there.
        uses: ``(kind, key)`` of this module -> ``file:line`` of a use of that kind in
            another module (``backend = "nccl"`` here, ``init_process_group(backend=...)``
            there).
        modules: Local names bound to a project module (``import config``) -> its id.
    """

    values: Mapping[Key, tuple[Held, ...]] = field(default_factory=dict)
    uses: Mapping[tuple[str, Key], str] = field(default_factory=dict)
    modules: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FlowFacts:
    """What the flow prepass learned about the keys of one file.

    A **key** is a :data:`~._bindings.Key`, ``(scope, name)``, for a plain name (resolved
    as Python does, so two functions' ``device`` are two keys); attributes (``self.x``,
    ``args.x``), string-keyed subscripts, dict keys, keyword arguments, dataclass fields and
    argparse ``dest`` s share ``(ANY, slot)``; ``module.name`` through an imported project
    module is ``(("@", module), name)``.

    Attributes:
        backend: Keys passed as the backend of ``init_process_group``/``new_group``.
        device: Keys passed where a device goes: ``device=``, ``map_location=``,
            the first argument of ``.to(...)``, ``.cuda(...)`` and ``torch.device(...)``.
        map_location: Keys passed as ``map_location=`` of a load.
        index: Keys every assignment of which is an integer (``int(...)``, an int
            literal, ``dist.get_rank()``, ``LOCAL_RANK``, integer arithmetic of those, a
            script function's parameter every call of which passes one, the first
            parameter of an ``mp.spawn`` target, a loop over a list of ints): in a device
            slot they are a device index.
        index_list: Keys every assignment of which is a list of integers
            (``list(range(a, b))``, ``[rank]``, ``range(n)``): an item of one
            (``device_ids[0]``) is an integer like those of :attr:`index`.
        device_type: Keys every assignment of which is a device type
            (``x.type``, ``"cpu"``, ``"cuda" if "cuda" in d else "cpu"``).
        cuda_string: Keys assigned a CUDA device string somewhere (``"cuda"``,
            ``"cuda:0"``, ``f"cuda:{i}"``, ``"cuda:{}".format(i)``, an argparse default).
        indexed: The subset of ``cuda_string`` whose string carries an index.
        nccl: Keys assigned the backend name ``"nccl"`` somewhere.
        valued: Keys with at least one assignment (in this file or, imported, elsewhere).
        use_lines: ``(kind, key)`` -> the line of its first use of that kind in this file
            (kinds: :data:`USE_KINDS`, ``"tested"``: compared with ``"cuda"``, and
            ``"nprocs"``: the number of processes of ``mp.spawn``).
        elsewhere: ``(kind, key)`` used that way only in another module -> ``file:line``.
        modules: Local names of imported project modules -> module id.
    """

    backend: frozenset[Key] = frozenset()
    device: frozenset[Key] = frozenset()
    map_location: frozenset[Key] = frozenset()
    index: frozenset[Key] = frozenset()
    index_list: frozenset[Key] = frozenset()
    device_type: frozenset[Key] = frozenset()
    cuda_string: frozenset[Key] = frozenset()
    indexed: frozenset[Key] = frozenset()
    nccl: frozenset[Key] = frozenset()
    valued: frozenset[Key] = frozenset()
    use_lines: Mapping[tuple[str, Key], int] = field(default_factory=dict)
    elsewhere: Mapping[tuple[str, Key], str] = field(default_factory=dict)
    modules: Mapping[str, str] = field(default_factory=dict)

    # name views (any scope): for the pre-scan's supersets and for tests
    @property
    def backend_slots(self) -> frozenset[str]:
        return _names(self.backend)

    @property
    def device_slots(self) -> frozenset[str]:
        return _names(self.device)

    @property
    def map_location_slots(self) -> frozenset[str]:
        return _names(self.map_location)

    @property
    def index_slots(self) -> frozenset[str]:
        return _names(self.index)

    @property
    def index_list_slots(self) -> frozenset[str]:
        return _names(self.index_list)

    @property
    def device_type_slots(self) -> frozenset[str]:
        return _names(self.device_type)

    @property
    def cuda_string_slots(self) -> frozenset[str]:
        return _names(self.cuda_string)

    @property
    def indexed_slots(self) -> frozenset[str]:
        return _names(self.indexed)


def _names(keys: frozenset[Key]) -> frozenset[str]:
    return frozenset(name for _, name in keys)


def flow_key(
    bindings: Bindings, scope: Scope, node: ast.expr, modules: Mapping[str, str] | None = None
) -> Key | None:
    """The flow key (see :class:`FlowFacts`) of an ``ast`` expression read in ``scope``."""
    if isinstance(node, ast.Name):
        return bindings.key_of_name(scope, node.id)
    if isinstance(node, ast.Attribute):
        owner = node.value
        if isinstance(owner, ast.Name):
            if owner.id == "self":
                return bindings.key_of_self(scope, node.attr)
            if modules and owner.id in modules:
                return ("@", modules[owner.id]), node.attr
        return ANY, node.attr
    slot = _slot(node)
    return None if slot is None else (ANY, slot)


def cst_flow_key(
    bindings: Bindings,
    scope: Scope,
    node: cst.BaseExpression,
    modules: Mapping[str, str] | None = None,
) -> Key | None:
    """:func:`flow_key` of a LibCST expression."""
    if isinstance(node, cst.Name):
        return bindings.key_of_name(scope, node.value)
    if isinstance(node, cst.Attribute):
        owner = node.value
        if isinstance(owner, cst.Name):
            if owner.value == "self":
                return bindings.key_of_self(scope, node.attr.value)
            if modules and owner.value in modules:
                return ("@", modules[owner.value]), node.attr.value
        return ANY, node.attr.value
    slot = cst_slot(node)
    return None if slot is None else (ANY, slot)


def attribute_alias(key: Key) -> Key | None:
    """The attribute slot ``(ANY, x)`` through which other objects reach a class
    attribute ``(cls, ".x")`` (a dataclass field read as ``cfg.x``), else ``None``."""
    _, name = key
    return (ANY, name[1:]) if name.startswith(".") else None


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


def cst_item(node: cst.Subscript) -> cst.BaseExpression | None:
    """The list of ``xs[i]`` (one index that is not a slice or a string), else ``None``."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    if isinstance(node.slice[0].slice.value, cst.SimpleString | cst.ConcatenatedString):
        return None
    return node.value


def ast_item(node: ast.Subscript) -> ast.expr | None:
    """:func:`cst_item` of an ``ast`` subscript."""
    key = node.slice
    if isinstance(key, ast.Slice | ast.Tuple) or (
        isinstance(key, ast.Constant) and not isinstance(key.value, int)
    ):
        return None
    return node.value


_CST_INT_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)


def cst_is_index(node: cst.BaseExpression, is_index: Callable[[cst.BaseExpression], bool]) -> bool:
    """Whether a LibCST expression is an integer by the prepass: an int literal, a name or
    attribute ``is_index`` accepts (a key of :attr:`FlowFacts.index`), an item of a list
    ``is_index`` accepts (``device_ids[0]``, ``device_ids`` a key of
    :attr:`FlowFacts.index_list`), or integer arithmetic of those (``rank * 2 + 1``)."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Name | cst.Attribute):
        return is_index(node)
    if isinstance(node, cst.Subscript):
        return cst_item(node) is not None and is_index(node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _CST_INT_OPS):
        return cst_is_index(node.left, is_index) and cst_is_index(node.right, is_index)
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


class _Held(ast.expr):
    """A value stored in another module (:class:`Held`), as one more assignment here."""

    def __init__(self, held: Held) -> None:
        super().__init__()
        self.held = held


#: A value and the scope it is evaluated in; the key function of the module.
_Value = tuple[Scope, ast.expr]
_KeyOf = Callable[[Scope, ast.expr], Key | None]


def _is_index(
    node: ast.expr,
    scope: Scope,
    known: set[Key],
    key_of: _KeyOf,
    lists: frozenset[Key] = frozenset(),
) -> bool:
    if isinstance(node, _Held):
        return node.held.index
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Call):
        return _callee(node) in _INDEX_CALLS
    if isinstance(node, ast.BinOp) and isinstance(node.op, _INT_OPS):  # rank * 2 + 1
        return _is_index(node.left, scope, known, key_of, lists) and _is_index(
            node.right, scope, known, key_of, lists
        )
    if isinstance(node, ast.Subscript):  # device_ids[0]
        item = ast_item(node)
        return item is not None and key_of(scope, item) in lists
    key = key_of(scope, node)
    return key is not None and key in known


def _is_index_list(
    node: ast.expr, scope: Scope, known: set[Key], key_of: _KeyOf, index: frozenset[Key]
) -> bool:
    """``range(...)``, ``list(range(...))``, ``[rank, rank + 1]``: integers only."""
    if isinstance(node, ast.List | ast.Tuple):
        return bool(node.elts) and all(_is_index(e, scope, set(index), key_of) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id == "range":
            return True
        if node.func.id in ("list", "tuple", "sorted") and len(node.args) == 1:
            return _is_index_list(node.args[0], scope, known, key_of, index)
        return False
    key = key_of(scope, node) if isinstance(node, ast.Name | ast.Attribute) else None
    return key is not None and key in known


def _is_device_type(node: ast.expr, scope: Scope, known: set[Key], key_of: _KeyOf) -> bool:
    if isinstance(node, _Held):
        return node.held.device_type
    value = _str(node)
    if value is not None:
        return value in DEVICE_TYPES
    if isinstance(node, ast.Attribute):
        return node.attr == "type"
    if isinstance(node, ast.IfExp):
        return _is_device_type(node.body, scope, known, key_of) and _is_device_type(
            node.orelse, scope, known, key_of
        )
    key = key_of(scope, node)
    return key is not None and key in known


def _every(
    values: dict[Key, list[_Value]],
    test: Callable[[ast.expr, Scope, set[Key], _KeyOf], bool],
    key_of: _KeyOf,
) -> set[Key]:
    """Keys all of whose values pass ``test`` (a fixpoint over key-to-key copies)."""
    known: set[Key] = set()
    while True:
        new = {
            key
            for key, exprs in values.items()
            if all(test(e, scope, known, key_of) for scope, e in exprs)
        }
        if new == known:
            return known
        known = new


def _walk(tree: ast.Module) -> list[tuple[Scope, ast.AST]]:
    """Every node of ``tree`` with the scope it is evaluated in (decorators, defaults and
    annotations in the enclosing one; a function's ``ast.arguments`` in its own)."""
    out: list[tuple[Scope, ast.AST]] = []
    stack: list[tuple[Scope, ast.AST]] = [((), tree)]
    while stack:
        scope, node = stack.pop()
        out.append((scope, node))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = (*scope, node.name)
            a = node.args
            outer: list[ast.AST] = [*node.decorator_list, *a.defaults]
            outer += [d for d in a.kw_defaults if d is not None]
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            outer += [p.annotation for p in params if p is not None and p.annotation]
            if node.returns is not None:
                outer.append(node.returns)
            stack.extend((scope, n) for n in outer)
            out.append((inner, a))
            stack.extend((inner, n) for n in node.body)
        elif isinstance(node, ast.ClassDef):
            inner = (*scope, node.name)
            outer = [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
            stack.extend((scope, n) for n in outer)
            stack.extend((inner, n) for n in node.body)
        else:
            stack.extend((scope, n) for n in ast.iter_child_nodes(node))
    return out


def collect_flow(
    tree: ast.Module, bindings: Bindings | None = None, external: External | None = None
) -> FlowFacts:
    """Run the flow prepass over one module's ``ast``.

    Args:
        tree: The parsed module.
        bindings: Its :func:`~._bindings.collect_bindings` (computed when not given).
        external: What the rest of the project says about its keys (:mod:`._project`).

    Returns:
        The :class:`FlowFacts` of the module.
    """
    if bindings is None:
        bindings = collect_bindings(tree)
    external = external or External()
    modules = external.modules

    def key_of(scope: Scope, node: ast.expr) -> Key | None:
        return flow_key(bindings, scope, node, modules)

    uses: dict[str, set[Key]] = {kind: set() for kind in USE_KINDS}
    use_lines: dict[tuple[str, Key], int] = {}
    cuda: set[Key] = set()
    indexed: set[Key] = set()
    nccl: set[Key] = set()
    values: dict[Key, list[_Value]] = {}
    nodes = _walk(tree)
    parameters = _call_site_values(tree, nodes)

    def add(key: Key, scope: Scope, value: ast.expr) -> None:
        values.setdefault(key, []).append((scope, value))
        if _str(value) == "nccl":
            nccl.add(key)
        found = _cuda_string(value)
        if found is not None:
            cuda.add(key)
            if found[1]:
                indexed.add(key)

    def assigned(scope: Scope, target: ast.expr, value: ast.expr) -> None:
        key = key_of(scope, target)
        if key is None:
            if isinstance(target, ast.Tuple | ast.List):
                for t in target.elts:
                    if (k := key_of(scope, t)) is not None:
                        add(k, scope, ast.Name(_UNKNOWN))  # unknown value
            return
        if key_of(scope, value) == key:  # `x = x`
            return
        add(key, scope, value)
        alias = attribute_alias(key)
        if alias is not None and isinstance(target, ast.Name):  # a field: `cfg.x` reads it
            add(alias, scope, value)

    def used(kind: str, scope: Scope, node: ast.expr, line: int) -> None:
        if (key := key_of(scope, node)) is not None:
            if kind in uses:
                uses[kind].add(key)
            use_lines[kind, key] = min(line, use_lines.get((kind, key), line))

    for scope, node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                assigned(scope, target, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            assigned(scope, node.target, node.value)
        elif isinstance(node, ast.For | ast.AsyncFor) and _int_display(node.iter):
            assigned(scope, node.target, ast.Constant(0))  # for rank in [0, 1]
        elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor | ast.With | ast.NamedExpr):
            targets = [node.target] if not isinstance(node, ast.With) else []
            if isinstance(node, ast.With):
                targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
            for target in targets:
                if isinstance(node, ast.NamedExpr):
                    assigned(scope, target, node.value)
                elif (key := key_of(scope, target)) is not None:
                    add(key, scope, ast.Name(_UNKNOWN))
        elif isinstance(node, ast.arguments):
            passed = parameters.get(id(node), {})
            for arg in [*node.posonlyargs, *node.args, *node.kwonlyargs]:
                key = bindings.key_of_name(scope, arg.arg)
                hint = arg.annotation
                if isinstance(hint, ast.Name) and hint.id == "int":
                    add(key, scope, ast.Constant(0))
                elif arg.arg in passed:  # setup(rank) passes the key on: no new value
                    here = [(s, v) for s, v in passed[arg.arg] if key_of(s, v) != key]
                    for s, v in here:  # none: the key gets no value from here
                        add(key, s, v)
                else:
                    add(key, scope, ast.Name(_UNKNOWN))
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
            sides = [node.left, node.comparators[0]]  # `dev == "cuda"`, `"cuda" in dev`
            for side, other in (sides, sides[::-1]):
                if _str(other) == "cuda":
                    used("tested", scope, side, node.lineno)
        elif isinstance(node, ast.Dict):
            for k, value in zip(node.keys, node.values, strict=True):
                if (name := _str(k)) is not None:
                    add((ANY, name), scope, value)
        elif isinstance(node, ast.Call):
            name = _callee(node)
            if name in _BACKEND_CALLS:
                slots = [k.value for k in node.keywords if k.arg == "backend"]
                if name == "init_process_group" and node.args:
                    slots.append(node.args[0])
                for value in slots:
                    used("backend", scope, value, node.lineno)
            for kw in node.keywords:
                if kw.arg in ("device", "map_location"):
                    used("device", scope, kw.value, node.lineno)
                    if kw.arg == "map_location":
                        used("map_location", scope, kw.value, node.lineno)
                elif kw.arg is not None and name not in ("add_argument",):
                    key = (ANY, kw.arg)
                    if key_of(scope, kw.value) != key:  # dict(x=...), Config(x=...)
                        add(key, scope, kw.value)
            if name in ("to", "cuda", "device") and node.args:
                used("device", scope, node.args[0], node.lineno)
            if name in _SPAWNS:  # spawn(fn, args, nprocs): how many processes start
                counts = [k.value for k in node.keywords if k.arg == "nprocs"]
                for value in [*counts, *node.args[2:3]]:
                    used("nprocs", scope, value, node.lineno)
            if name == "add_argument":
                opts = [o for a in node.args if (o := _str(a)) is not None]
                dest_kw = next((_str(k.value) for k in node.keywords if k.arg == "dest"), None)
                dest = argparse_dest(opts, dest_kw)
                default = next((k.value for k in node.keywords if k.arg == "default"), None)
                if dest is not None:
                    add((ANY, dest), scope, default or ast.Name(_UNKNOWN))
    for key, held in external.values.items():
        for h in held:
            add(key, (), _Held(h))
            if h.cuda:
                cuda.add(key)
            if h.indexed:
                indexed.add(key)
    elsewhere: dict[tuple[str, Key], str] = {}
    for (kind, key), where in external.uses.items():
        if key not in uses[kind]:
            uses[kind].add(key)
            elsewhere[kind, key] = where
    index = frozenset(_every(values, _is_index, key_of))
    lists = frozenset(_every(values, lambda n, s, k, f: _is_index_list(n, s, k, f, index), key_of))
    if lists:  # `gpu = device_ids[0]`: items of the lists are integers too
        index = frozenset(_every(values, lambda n, s, k, f: _is_index(n, s, k, f, lists), key_of))
    types = _every(values, _is_device_type, key_of)
    return FlowFacts(
        backend=frozenset(uses["backend"]),
        device=frozenset(uses["device"]),
        map_location=frozenset(uses["map_location"]),
        index=index,
        index_list=lists,
        device_type=frozenset(types),
        cuda_string=frozenset(cuda),
        indexed=frozenset(indexed),
        nccl=frozenset(nccl),
        valued=frozenset(k for k, v in values.items() if v),
        use_lines=use_lines,
        elsewhere=elsewhere,
        modules=modules,
    )


def _int_display(node: ast.expr) -> bool:
    """A list, tuple or ``range(...)`` of integer literals (``for rank in [0, 1]``)."""
    if isinstance(node, ast.List | ast.Tuple) and node.elts:
        return all(isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts)
    return False


_Callable = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
#: One call of a function: its positional arguments, keywords, and how many leading
#: parameters the call does not pass (``self`` of ``__init__``).
_CallSite = tuple[list[ast.expr], list[ast.keyword], int, Scope]
#: ``rpc_sync(to, fn, args=(...))`` and its kin call ``fn(*args)`` (on another worker).
_RPCS = ("rpc_sync", "rpc_async", "remote")


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


def _bind(args: ast.arguments, site: _CallSite, def_scope: Scope) -> dict[str, _Value] | None:
    """The argument each parameter gets at one call site (its default where not passed),
    or ``None`` where the call cannot be read (``*xs``, ``**kw``, a bad arity)."""
    pos, keywords, skip, scope = site
    if any(isinstance(a, ast.Starred) for a in pos) or any(k.arg is None for k in keywords):
        return None
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([a.arg for a in positional[::-1]], args.defaults[::-1], strict=False))
    defaults.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d)
    positional = positional[skip:]
    if len(pos) > len(positional) and args.vararg is None:
        return None
    bound = {p.arg: (scope, a) for p, a in zip(positional, pos, strict=False)}
    for keyword in keywords:
        if keyword.arg is not None:
            bound[keyword.arg] = (scope, keyword.value)
    for param in [*positional, *args.kwonlyargs]:
        if param.arg not in bound:
            if param.arg not in defaults:
                return None
            bound[param.arg] = (def_scope, defaults[param.arg])
    return bound


def _spawn_site(call: ast.Call, scope: Scope) -> _CallSite:
    """``spawn(fn, args=(a, b))`` as a call ``fn(<index>, a, b)``."""
    return [ast.Constant(0), *_packed(call, 1)], [], 0, scope


def _rpc_site(call: ast.Call, scope: Scope) -> _CallSite:
    """``rpc_async(to, fn, args=(a, b))`` as a call ``fn(a, b)``; ``kwargs=`` makes it
    unreadable."""
    rest = _packed(call, 2)
    if len(call.args) > 3 or any(k.arg in ("kwargs", None) for k in call.keywords):
        rest = [ast.Starred(ast.Name(_UNKNOWN))]
    return rest, [], 0, scope


def _packed(call: ast.Call, at: int) -> list[ast.expr]:
    """The ``args=`` tuple of a launcher call (or its positional argument ``at``)."""
    extra: ast.expr | None = call.args[at] if len(call.args) > at else None
    extra = next((k.value for k in call.keywords if k.arg == "args"), extra)
    if extra is None:
        return []
    if isinstance(extra, ast.Tuple | ast.List):
        return list(extra.elts)
    return [ast.Starred(extra)]  # unreadable: the call is not followed


def _is_spawn(call: ast.Call) -> bool:
    return _callee(call) in _SPAWNS and bool(call.args) and isinstance(call.args[0], ast.Name)


def _call_site_values(
    tree: ast.Module, nodes: list[tuple[Scope, ast.AST]]
) -> dict[int, dict[str, list[_Value]]]:
    """The values the parameters of a script's own functions get at their call sites.

    Keyed by ``id`` of the function's ``ast.arguments``. Only in a script (a module with an
    ``if __name__ == "__main__":`` block, so its functions are not called from elsewhere),
    only for functions of :func:`_own_functions` whose every use in the module is a call
    that can be read, a ``torch.multiprocessing.spawn`` target (its first parameter the
    process index), or an argument to a parameter of such a function that is only used as
    a spawn target (``run_demo(demo_basic, 8)``), or the function of an RPC
    (``rpc_async(to, fn, args=(...))``). A function used any other way, or never called,
    is not followed: its parameters stay unknown. Each value comes with the scope it is
    evaluated in (the caller's; the function's own for a default).
    """
    if not _is_script(tree):
        return {}
    functions = _own_functions(tree)
    scope_of = {
        id(n): s for s, n in nodes if isinstance(n, ast.Call | ast.FunctionDef | ast.ClassDef)
    }
    scope_of.update((id(n), s) for s, n in nodes if isinstance(n, ast.AsyncFunctionDef))
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
            sites[func.id].append((node.args, node.keywords, skip, scope_of[id(node)]))
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
                sites[first.id].append(_spawn_site(node, scope_of[id(node)]))
                handled.add(id(first))
            elif isinstance(func, ast.Name) and func.id == "super":
                handled.add(id(first))  # super(Net, self).__init__()
        second = node.args[1] if len(node.args) > 1 else None
        if isinstance(second, ast.Name) and second.id in functions and _callee(node) in _RPCS:
            sites[second.id].append(_rpc_site(node, scope_of[id(node)]))
            handled.add(id(second))
    escaped = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id in functions and id(node) not in handled
    }
    for name, callee, where in passed:
        spawned = _spawned_by(functions[callee], where, scope_of)
        if spawned is None:
            escaped.add(name)
        else:
            sites[name].extend(spawned)
    out: dict[int, dict[str, list[_Value]]] = {}
    for name, node in functions.items():
        target_def = _init(node) if isinstance(node, ast.ClassDef) else node
        if name in escaped or not sites[name] or target_def is None:
            continue
        own = (*scope_of[id(node)], node.name)  # defaults: the class or function scope
        if isinstance(node, ast.ClassDef):
            own = (*own, "__init__")
        def_scope = own[:-1]
        binds = [_bind(target_def.args, site, def_scope) for site in sites[name]]
        readable = [b for b in binds if b is not None]
        if len(readable) != len(binds):
            continue
        params: dict[str, list[_Value]] = {}
        for b in readable:
            for param, value in b.items():
                params.setdefault(param, []).append(value)
        out[id(target_def.args)] = params
    return out


def _spawned_by(
    node: _Callable, where: int | str, scope_of: dict[int, Scope]
) -> list[_CallSite] | None:
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
                spawns.append(_spawn_site(inner, scope_of[id(inner)]))
    return spawns if spawns and uses == len(spawns) else None
