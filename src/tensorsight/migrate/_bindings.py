"""How often each name is assigned, per scope: which followed values are a name's only one.

:mod:`._flow` follows values through slots flow-insensitively. That is enough to say
*what* a slot is used for, not that a stored value is the one a use sees: after
``loc = f"cuda:{rank}"`` and ``if cpu: loc = "cpu"`` the name holds either. A rewrite at
an assignment (or at a use, from what the assignments hold) is provably right only when
the name has that one assignment in its scope, so this pass counts them.

A **key** is ``(scope, name)``. A scope is the tuple of the names of the enclosing
``def``/``class`` statements (``()`` is the module), resolved as Python does: a name
bound in a function is local to it unless declared ``global``/``nonlocal``; a name a
function only reads is its enclosing function's or the module's; class bodies are not
enclosing scopes. ``self.x`` (in any method of a class) and the class-body name ``x`` are
the key ``(<class>, ".x")``; attributes of other objects and string-keyed subscripts
(``args.gpu``, ``cfg["device"]``) and argparse options (by their ``dest``) share the
key ``(ANY, slot)``, since the object they belong to is not followed.

Bindings counted: assignment targets (also each name of a tuple or list target and a
starred one), annotated assignments with a value, augmented assignments, ``for`` and
``with`` targets, ``:=``, ``import`` names, ``def``/``class`` names, ``except ... as``
names, and ``add_argument`` options. Parameters make a name local but are not counted
(a parameter re-assigned once still holds one value after that assignment). A single
assignment in a loop body counts once: each pass stores the same expression.

Example:
    >>> import ast
    >>> b = collect_bindings(ast.parse(
    ...     "loc = 'cuda:0'\\n"
    ...     "def f(c):\\n    global loc\\n    if c:\\n        loc = 'cpu'\\n"))
    >>> b.lines[((), "loc")]
    (1, 5)
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

__all__ = ["ANY", "Bindings", "Key", "Scope", "argparse_dest", "collect_bindings"]

Scope = tuple[str, ...]
Key = tuple[Scope, str]
#: The scope of attributes of objects other than ``self``, subscripts and options.
ANY: Scope = ("*",)
_Kind = Literal["module", "function", "class"]


def argparse_dest(option_strings: list[str], dest: str | None) -> str | None:
    """The ``dest`` argparse gives an option: ``dest=``, else the first long option."""
    if dest is not None:
        return dest
    longs = [s for s in option_strings if s.startswith("--")]
    chosen = longs[0] if longs else (option_strings[0] if option_strings else None)
    if chosen is None:
        return None
    return chosen.lstrip("-").replace("-", "_") or None


@dataclass(frozen=True)
class _ScopeNames:
    kind: _Kind
    bound: frozenset[str]
    globals: frozenset[str]
    nonlocals: frozenset[str]


@dataclass(frozen=True)
class Bindings:
    """The assignments of one module, by key (see the module doc).

    Attributes:
        lines: Key -> the line of each of its bindings, in source order.
        scopes: Scope -> the names bound and declared ``global``/``nonlocal`` there.
    """

    lines: Mapping[Key, tuple[int, ...]] = field(default_factory=dict)
    scopes: Mapping[Scope, _ScopeNames] = field(default_factory=dict)

    def key_of_name(self, scope: Scope, name: str) -> Key:
        """The key a bare name used in ``scope`` refers to."""
        here = self.scopes.get(scope)
        if here is not None and name in here.globals:
            return (), name
        if here is not None and here.kind == "class" and name in here.bound:
            return scope, "." + name
        at, skip_own = scope, here is not None and here.kind == "class"
        while at:
            info = self.scopes.get(at)
            if info is not None and info.kind == "function" and not skip_own:
                if name in info.globals:
                    return (), name
                if name in info.bound and name not in info.nonlocals:
                    return at, name
            skip_own = False
            at = at[:-1]
        return (), name

    def key_of_self(self, scope: Scope, attr: str) -> Key:
        """The key of ``self.<attr>`` used in ``scope`` (a method, or a function in one)."""
        for n in range(len(scope), 0, -1):
            info = self.scopes.get(scope[:n])
            if info is not None and info.kind == "class":
                return scope[:n], "." + attr
        return ANY, attr

    def key_of(self, scope: Scope, node: cst.BaseExpression) -> Key | None:
        """The key of a LibCST name, ``self`` attribute, attribute or subscript."""
        if isinstance(node, cst.Name):
            return self.key_of_name(scope, node.value)
        if isinstance(node, cst.Attribute):
            if isinstance(node.value, cst.Name) and node.value.value == "self":
                return self.key_of_self(scope, node.attr.value)
            return ANY, node.attr.value
        if isinstance(node, cst.Subscript) and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
                value = index.value.evaluated_value
                return (ANY, value) if isinstance(value, str) else None
        return None

    def assigned(self, scope: Scope, node: cst.BaseExpression) -> tuple[int, ...]:
        """The lines that assign what ``node`` (read or written in ``scope``) refers to."""
        key = self.key_of(scope, node)
        return () if key is None else self.lines.get(key, ())


EMPTY_BINDINGS = Bindings()

_Event = tuple[Scope, str, str, int]  # (scope, "name" | "self" | "any", name, line)


class _Collector(ast.NodeVisitor):
    def __init__(self) -> None:
        self.path: list[str] = []
        self.kinds: dict[Scope, _Kind] = {(): "module"}
        self.bound: dict[Scope, set[str]] = {(): set()}
        self.globals: dict[Scope, set[str]] = {}
        self.nonlocals: dict[Scope, set[str]] = {}
        self.events: list[_Event] = []

    @property
    def scope(self) -> Scope:
        return tuple(self.path)

    def bind(self, name: str, line: int) -> None:
        self.bound.setdefault(self.scope, set()).add(name)
        self.events.append((self.scope, "name", name, line))

    def target(self, node: ast.expr, line: int) -> None:
        if isinstance(node, ast.Name):
            self.bind(node.id, line)
        elif isinstance(node, ast.Tuple | ast.List):
            for element in node.elts:
                self.target(element, line)
        elif isinstance(node, ast.Starred):
            self.target(node.value, line)
        elif isinstance(node, ast.Attribute):
            kind = "self" if isinstance(node.value, ast.Name) and node.value.id == "self" else "any"
            self.events.append((self.scope, kind, node.attr, line))
        elif isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self.events.append((self.scope, "any", key.value, line))

    def _enter(self, name: str, kind: _Kind, body: list[ast.stmt], params: list[str]) -> None:
        self.path.append(name)
        scope = self.scope
        self.kinds.setdefault(scope, kind)
        self.bound.setdefault(scope, set()).update(params)
        for stmt in body:
            self.visit(stmt)
        self.path.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.bind(node.name, node.lineno)
        for part in [*node.decorator_list, *node.args.defaults]:
            self.visit(part)
        for default in node.args.kw_defaults:
            if default is not None:
                self.visit(default)
        a = node.args
        params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
        params += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
        self._enter(node.name, "function", node.body, params)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bind(node.name, node.lineno)
        for part in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(part)
        self._enter(node.name, "class", node.body, [])

    def visit_Global(self, node: ast.Global) -> None:
        self.globals.setdefault(self.scope, set()).update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.nonlocals.setdefault(self.scope, set()).update(node.names)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.target(target, node.lineno)
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.target(node.target, node.lineno)
            self.visit(node.value)
        elif isinstance(node.target, ast.Name):  # `x: int` makes `x` local, assigns nothing
            self.bound.setdefault(self.scope, set()).add(node.target.id)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.target(node.target, node.lineno)
        self.visit(node.value)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.target(node.target, node.lineno)
        for stmt in [node.iter, *node.body, *node.orelse]:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.target(item.optional_vars, node.lineno)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.target(node.target, node.lineno)
        self.visit(node.value)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                self.bind(alias.asname or alias.name.split(".")[0], node.lineno)

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name is not None:
            self.bind(node.name, node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "add_argument":
            opts = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            given = [k.value for k in node.keywords if k.arg == "dest"]
            dest_kw = (
                given[0].value
                if given and isinstance(given[0], ast.Constant) and isinstance(given[0].value, str)
                else None
            )
            dest = argparse_dest(opts, dest_kw)
            if dest is not None:
                self.events.append((self.scope, "any", dest, node.lineno))
        self.generic_visit(node)


def collect_bindings(tree: ast.Module) -> Bindings:
    """Count the bindings of every key of one module (see the module doc)."""
    collector = _Collector()
    collector.visit(tree)
    scopes = {
        scope: _ScopeNames(
            kind,
            frozenset(collector.bound.get(scope, ())),
            frozenset(collector.globals.get(scope, ())),
            frozenset(collector.nonlocals.get(scope, ())),
        )
        for scope, kind in collector.kinds.items()
    }
    bindings = Bindings(scopes=scopes)
    lines: dict[Key, list[int]] = {}
    for scope, kind, name, line in collector.events:
        if kind == "name":
            key = bindings.key_of_name(scope, name)
        elif kind == "self":
            key = bindings.key_of_self(scope, name)
        else:
            key = (ANY, name)
        lines.setdefault(key, []).append(line)
    return Bindings(lines={k: tuple(v) for k, v in lines.items()}, scopes=scopes)
