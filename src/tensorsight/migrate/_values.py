"""Which receivers are tensors or modules by construction, so that their ``.cuda()`` (and
``.is_cuda``) is the torch method and rewriting it is a safe fix.

Two passes, both cheap:

- :func:`scan_module_classes`, over the text of every file of the project (a regular
  expression, no parsing): the classes deriving from ``nn.Module`` directly
  (``nn.Module``, ``torch.nn.Module``, ``Module``, any ``nn.<Layer>``) or through other such
  classes of the project, in any file. A name that some file also defines as a class that
  is not a module is left out, so a clash of names cannot make a fix "safe".
- :func:`known_values`, over one module's ``ast``: names (and ``self.<attr>`` attributes)
  that hold, anywhere in the module, one of

  - an instance of such a class (``model = Net()``, ``self.net = Net(...)``), a value of a
    torch call (``torch.randn``, ``nn.Linear``, ``torch.load``), or a chain of tensor/module
    methods on one (``Net().to(d).eval()``);
  - an element of a batch from a ``torch.utils.data.DataLoader`` built without
    ``collate_fn`` (``for x, y in loader``, ``for i, (x, y) in enumerate(loader)``,
    ``x, y = batch``); a loader passed as a parameter counts when the module builds every
    loader of that name itself;
  - a parameter or buffer (``for p in model.parameters()``,
    ``for name, p in model.named_parameters()``).

The analysis is flow-insensitive, like :mod:`._resolve`: a name counts when one of its
assignments makes it a tensor or module. Receivers it cannot place stay unsafe fixes, which
the report lists.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import replace

from tensorsight.migrate._resolve import ModuleFacts, _ast_dotted

__all__ = ["known_values", "scan_module_classes"]

_CLASS = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:", re.MULTILINE)
_NN_BASE = re.compile(r"^(?:torch\.)?nn\.[A-Za-z_]\w*$|^Module$")
#: Tensor/module methods that return a tensor or module again.
_CHAINS = frozenset(
    {
        "to",
        "cuda",
        "cpu",
        "float",
        "half",
        "double",
        "bfloat16",
        "train",
        "eval",
        "requires_grad_",
        "contiguous",
        "detach",
        "clone",
        "share_memory",
    }
)
_PARTS = frozenset({"data", "grad", "module", "weight", "bias"})
_PARAMS = frozenset({"parameters", "buffers", "children", "modules"})
_NAMED_PARAMS = frozenset({"named_parameters", "named_buffers", "named_children", "named_modules"})
_LOADERS = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")


def scan_module_classes(texts: Iterable[bytes]) -> frozenset[str]:
    """Names of the classes that derive from ``nn.Module``, over all files of a project.

    Example:
        >>> sorted(scan_module_classes([b"class A(nn.Module): pass\\n",
        ...                             b"class B(A): pass\\nclass C: pass\\n"]))
        ['A', 'B']
    """
    bases: dict[str, list[list[str]]] = {}
    for text in texts:
        for match in _CLASS.finditer(text):
            name = match.group(1).decode("ascii", "replace")
            parts = (match.group(2) or b"").decode("utf-8", "replace").split(",")
            listed = [p.strip() for p in parts if p.strip() and "=" not in p]
            bases.setdefault(name, []).append(listed)
    modules: set[str] = set()
    grew = True
    while grew:
        grew = False
        for name, definitions in bases.items():
            if name in modules:
                continue
            if all(any(_is_module_base(b, modules) for b in d) for d in definitions):
                modules.add(name)
                grew = True
    return frozenset(modules)


def _is_module_base(base: str, modules: set[str]) -> bool:
    base = base.split("[", 1)[0].strip()  # Generic[T]
    return bool(_NN_BASE.match(base)) or base.rsplit(".", 1)[-1] in modules


def _key(node: ast.expr) -> str | None:
    """``name`` or ``self.attr`` (the keys a value is remembered under)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


class _Values:
    def __init__(self, facts: ModuleFacts, classes: frozenset[str]) -> None:
        self.facts = facts
        self.classes = classes
        self.values: set[str] = set(facts.torch_values)
        self.loaders: set[str] = set()

    def qualify(self, node: ast.expr) -> str | None:
        name = _ast_dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        bound = self.facts.bindings.get(root)
        return None if bound is None else bound.qualified + ("." + rest if rest else "")

    def is_value(self, node: ast.expr) -> bool:
        key = _key(node)
        if key is not None and key in self.values:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _PARTS:  # p.data, ddp.module
            return self.is_value(node.value)
        if key is not None:
            return False
        if isinstance(node, ast.Subscript):  # batch[0], x[:, 1], model[0]
            return self.is_value(node.value)
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.classes:
            return True
        qualified = self.qualify(func)
        if qualified is not None:
            return not qualified.startswith("torch.cuda.") and qualified not in _LOADERS
        if isinstance(func, ast.Attribute) and (func.attr in _CHAINS or func.attr.endswith("_")):
            return self.is_value(func.value)
        return False

    def is_loader_call(self, node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Call)
            and self.qualify(node.func) in _LOADERS
            and not any(k.arg in (None, "collate_fn") for k in node.keywords)
        )


def _targets(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.Tuple | ast.List):
        return [t for e in node.elts for t in _targets(e)]
    if isinstance(node, ast.Starred):
        return []
    return [node]


def known_values(
    tree: ast.Module, facts: ModuleFacts, project_classes: frozenset[str] = frozenset()
) -> ModuleFacts:
    """``facts`` with ``torch_values`` and ``module_classes`` completed (see the module doc).

    Example:
        >>> import ast
        >>> from tensorsight.migrate._resolve import collect_facts_ast
        >>> src = ("import torch\\nfrom torch.utils.data import DataLoader\\n"
        ...        "loader = DataLoader(ds)\\nfor i, (x, y) in enumerate(loader):\\n    pass\\n")
        >>> tree = ast.parse(src)
        >>> sorted(known_values(tree, collect_facts_ast(tree, src)).torch_values)
        ['x', 'y']
    """
    local_other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name not in facts.module_classes:
            local_other.add(node.name)
    classes = (project_classes - local_other) | facts.module_classes
    v = _Values(facts, frozenset(classes))
    assigns: list[tuple[list[ast.expr], ast.expr]] = []
    loops: list[ast.For | ast.AsyncFor | ast.comprehension] = []
    loader_keys: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            assigns.append((node.targets, node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            assigns.append(([node.target], node.value))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            loops.append(node)
    for targets, value in assigns:
        for target in targets:
            key = _key(target)
            if key is not None:
                ok = v.is_loader_call(value)
                loader_keys[key] = loader_keys.get(key, True) and ok
    v.loaders = {k for k, ok in loader_keys.items() if ok}
    for _ in range(4):  # a fixed point; real code settles in two rounds
        before = len(v.values)
        for targets, value in assigns:
            for target in targets:
                key = _key(target)
                if key is not None and v.is_value(value):
                    v.values.add(key)
                elif isinstance(target, ast.Tuple | ast.List) and _key(value) in v.values:
                    v.values.update(k for t in _targets(target) if (k := _key(t)))
        for loop in loops:
            _loop(v, loop)
        if len(v.values) == before:
            break
    values = frozenset(v.values - v.loaders)
    return replace(facts, torch_values=values, module_classes=frozenset(classes))


def _loop(v: _Values, loop: ast.For | ast.AsyncFor | ast.comprehension) -> None:
    source, target = loop.iter, loop.target
    if (
        isinstance(source, ast.Call)
        and isinstance(source.func, ast.Name)
        and source.func.id == "enumerate"
        and source.args
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
    ):
        source, target = source.args[0], target.elts[1]
    key = _key(source)
    if key is not None and key in v.loaders:
        v.values.update(k for t in _targets(target) if (k := _key(t)))
        return
    if not (isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute)):
        return
    method, owner = source.func.attr, source.func.value
    if not v.is_value(owner):
        return
    if method in _PARAMS:
        v.values.update(k for t in _targets(target) if (k := _key(t)))
    elif method in _NAMED_PARAMS and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        k = _key(target.elts[1])
        if k is not None:
            v.values.add(k)
