"""Alias resolution: which local names stand for which fully qualified torch APIs.

One cheap pass over the module collects every binding that points into a watched
package (``torch`` by default)::

    import torch as T                          T     -> torch
    import torch.distributed as dist           dist  -> torch.distributed
    from torch.cuda import synchronize as sync sync  -> torch.cuda.synchronize
    cuda = torch.cuda                          cuda  -> torch.cuda (an assignment alias)

The map is flow-insensitive (a later local variable that shadows ``torch`` is not seen);
LibCST's full scope analysis costs more than the whole rewrite, and shadowing a module
alias is rare in training code. Import bindings are remembered with their import, so a
rule that rewrites the last use of ``sync`` can schedule ``from torch.cuda import
synchronize as sync`` for removal.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst
from libcst.helpers import get_full_name_for_node

__all__ = [
    "Binding",
    "ModuleFacts",
    "collect_facts",
    "collect_facts_ast",
    "dotted_name",
]


@dataclass(frozen=True)
class Binding:
    """A local name bound to a qualified name.

    Attributes:
        qualified: What the name stands for, e.g. ``torch.cuda.synchronize``.
        module: For import bindings, the imported module (``torch.cuda``), else ``None``.
        obj: For ``from`` imports, the imported object (``synchronize``).
        asname: The ``as`` name, when there is one.
    """

    qualified: str
    module: str | None = None
    obj: str | None = None
    asname: str | None = None


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a chain of Names and Attributes, else ``None``."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


class _Collector(cst.CSTVisitor):
    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = roots
        self.bindings: dict[str, Binding] = {}
        self.module_classes: set[str] = set()
        self.module_level: set[str] = set()
        self.torch_values: set[str] = set()
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def qualify(self, node: cst.CSTNode) -> str | None:
        name = dotted_name(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        bound = self.bindings.get(root)
        if bound is None:
            return None
        return bound.qualified + ("." + rest if rest else "")

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            qualified = self.qualify(base.value)
            is_module = qualified is not None and qualified.startswith("torch.nn.")
            local = isinstance(base.value, cst.Name) and base.value.value in self.module_classes
            if is_module or local:
                self.module_classes.add(node.name.value)

    def _is_torch_value(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        if isinstance(func, cst.Name) and func.value in self.module_classes:
            return True
        qualified = self.qualify(func)
        return qualified is not None and not qualified.startswith("torch.cuda.")

    def _watched(self, qualified: str) -> bool:
        return any(qualified == r or qualified.startswith(r + ".") for r in self.roots)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = get_full_name_for_node(alias.name)
            if name is None or not self._watched(name):
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
                self.bindings[local] = Binding(name, module=name, asname=local)
            else:
                local = name.split(".")[0]
                self.bindings.setdefault(local, Binding(local, module=local))
            if self._depth == 0:
                self.module_level.add(local)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return False
        module = get_full_name_for_node(node.module)
        if module is None or not self._watched(module):
            return False
        for alias in node.names:
            obj = get_full_name_for_node(alias.name)
            if obj is None:
                continue
            asname = None
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                asname = alias.asname.name.value
            self.bindings[asname or obj] = Binding(
                f"{module}.{obj}", module=module, obj=obj, asname=asname
            )
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        target = node.targets[0].target.value
        if self._is_torch_value(node.value):
            self.torch_values.add(target)
            return
        qualified = self.qualify(node.value)
        if qualified is not None:
            self.bindings.setdefault(target, Binding(qualified))

    def visit_Param(self, node: cst.Param) -> None:
        if node.annotation is not None:
            qualified = self.qualify(node.annotation.annotation)
            if qualified in ("torch.Tensor", "torch.nn.Module"):
                self.torch_values.add(node.name.value)


@dataclass(frozen=True)
class ModuleFacts:
    """What the prepass learned about one module.

    Attributes:
        bindings: Local name -> :class:`Binding` for names under the watched roots.
        torch_values: Names assigned from a torch call or an ``nn.Module`` subclass defined
            in the module, or parameters annotated ``torch.Tensor``/``nn.Module``: their
            ``.cuda()`` is known to be the tensor/module method (a safe fix).
        names: Every identifier used in the module (to pick names that do not clash).
        module_level_imports: Names bound by plain ``import`` statements at module level.
        name_counts: How often each name is read or bound (``ast.Name`` nodes), when the
            module was analysed with :func:`collect_facts_ast`; empty otherwise.
        module_classes: Classes of the module deriving from ``nn.Module`` (with
            :func:`._values.known_values`, also those of the rest of the project).
        builders: Callees, as written (``models.resnet50``, ``to_tensor``), that return a
            module or tensor: the model builders of ``torchvision.models`` and tensor-making
            transforms (set by :func:`._values.known_values`).
        remote: Names (and ``self.<attr>``) assigned what a remote call returns
            (``rref.rpc_sync().get_model()``, ``rpc.rpc_sync(...)``, ``fut.wait()`` of an
            ``rpc_async``, ``remote_module.forward(...)`` of a ``RemoteModule``): their type
            is that of a function this module does not show (set by
            :func:`._values.known_values`).
    """

    bindings: dict[str, Binding]
    torch_values: frozenset[str]
    names: frozenset[str]
    module_level_imports: frozenset[str]
    name_counts: dict[str, int] = field(default_factory=dict)
    module_classes: frozenset[str] = frozenset()
    builders: frozenset[str] = frozenset()
    remote: frozenset[str] = frozenset()


def collect_facts(
    module: cst.Module, code: str, roots: tuple[str, ...] = ("torch",)
) -> ModuleFacts:
    """Run the prepass over ``module`` (whose source text is ``code``).

    Example:
        >>> import libcst as cst
        >>> src = "import torch as T\\ncuda = T.cuda\\n"
        >>> facts = collect_facts(cst.parse_module(src), src)
        >>> sorted((k, b.qualified) for k, b in facts.bindings.items())
        [('T', 'torch'), ('cuda', 'torch.cuda')]
    """
    collector = _Collector(roots)
    module.visit(collector)
    names = frozenset(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code))
    return ModuleFacts(
        collector.bindings,
        frozenset(collector.torch_values),
        names,
        frozenset(collector.module_level),
        module_classes=frozenset(collector.module_classes),
    )


def _ast_dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def collect_facts_ast(
    tree: ast.Module, code: str, roots: tuple[str, ...] = ("torch",)
) -> ModuleFacts:
    """:func:`collect_facts` from Python's ``ast`` (several times faster than a LibCST visit).

    Gives the same answer as :func:`collect_facts` for code that both parsers accept.
    """
    c = _Collector(roots)
    module_level = {id(s) for s in tree.body}

    def qualify(node: ast.expr) -> str | None:
        name = _ast_dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        bound = c.bindings.get(root)
        return None if bound is None else bound.qualified + ("." + rest if rest else "")

    def is_torch_value(value: ast.expr) -> bool:
        if not isinstance(value, ast.Call):
            return False
        if isinstance(value.func, ast.Name) and value.func.id in c.module_classes:
            return True
        qualified = qualify(value.func)
        return qualified is not None and not qualified.startswith("torch.cuda.")

    counts: dict[str, int] = {}
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            counts[node.id] = counts.get(node.id, 0) + 1
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not c._watched(alias.name):
                    continue
                if alias.asname:
                    local = alias.asname
                    c.bindings[local] = Binding(alias.name, module=alias.name, asname=local)
                else:
                    local = alias.name.split(".")[0]
                    c.bindings.setdefault(local, Binding(local, module=local))
                if id(node) in module_level:
                    c.module_level.add(local)
        elif isinstance(node, ast.ImportFrom):
            if node.level or not node.module or not c._watched(node.module):
                continue
            for alias in node.names:
                if alias.name == "*":
                    continue
                c.bindings[alias.asname or alias.name] = Binding(
                    f"{node.module}.{alias.name}",
                    module=node.module,
                    obj=alias.name,
                    asname=alias.asname,
                )
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                q = qualify(base)
                if (q is not None and q.startswith("torch.nn.")) or (
                    isinstance(base, ast.Name) and base.id in c.module_classes
                ):
                    c.module_classes.add(node.name)
        elif isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                continue
            target = node.targets[0].id
            if is_torch_value(node.value):
                c.torch_values.add(target)
                continue
            q = qualify(node.value)
            if q is not None:
                c.bindings.setdefault(target, Binding(q))
        elif (
            isinstance(node, ast.arg)
            and node.annotation is not None
            and qualify(node.annotation) in ("torch.Tensor", "torch.nn.Module")
        ):
            c.torch_values.add(node.arg)
    names = frozenset(counts).union(c.bindings, defined)
    return ModuleFacts(
        c.bindings,
        frozenset(c.torch_values),
        names,
        frozenset(c.module_level),
        counts,
        frozenset(c.module_classes),
    )
