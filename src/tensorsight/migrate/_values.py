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
    torch call (``torch.randn``, ``torch.cat``, ``nn.Linear``, ``nn.Parameter``,
    ``torch.load``), a ``torchvision.models`` model builder (``models.resnet50()``), or a
    chain of tensor/module methods on one (``Net().to(d).eval()``, ``x.float().view(1, -1)``,
    :data:`CHAINS`);
  - an element of a batch from a ``torch.utils.data.DataLoader`` built without
    ``collate_fn`` (``for x, y in loader``, ``for i, (x, y) in enumerate(loader)``, also
    through ``tqdm(...)``, ``for (x, y), (u, v) in zip(loader_a, loader_b)``,
    ``x, y = batch``, ``x, y = batch[0], batch[1]``); a loader passed as a parameter counts
    when the module builds every loader of that name itself;
  - a parameter or buffer (``for p in model.parameters()``,
    ``for name, p in model.named_parameters()``);
  - a parameter or name annotated ``torch.Tensor``, ``nn.Parameter``, ``nn.Module`` or one
    of the project's module classes (also as a string, ``"torch.Tensor"``, or optional,
    ``Tensor | None``: ``None.cuda()`` and ``None.to()`` fail alike);
  - a parameter of a module class's ``forward`` that the method passes, as the first
    argument, to one of its torch layers (``self.encoder(input)``, ``self.encoder =
    nn.Embedding(...)``) or to a ``torch.nn.functional`` function: those take tensors only,
    so a caller passing anything else fails there whatever the migration does;
  - the output of a torchvision transform that makes tensors: ``ToTensor()``,
    ``PILToTensor()``, ``Normalize(...)``, ``ConvertImageDtype(...)``, a ``Compose([...])``
    ending in one, through a name (``to_tensor = ToTensor()``, then ``to_tensor(img)``) or
    directly, and ``transforms.functional.to_tensor``/``pil_to_tensor``/``normalize``.

The analysis is flow-insensitive, like :mod:`._resolve`: a name counts when one of its
assignments makes it a tensor or module. Receivers it cannot place stay unsafe fixes, which
the report lists.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import replace

from tensorsight.migrate._resolve import ModuleFacts, _ast_dotted

__all__ = ["CHAINS", "REMOTE_CALLS", "is_remote_result", "known_values", "scan_module_classes"]

_CLASS = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:", re.MULTILINE)
_NN_BASE = re.compile(r"^(?:torch\.)?nn\.[A-Za-z_]\w*$|^Module$")
#: Tensor/module methods that return a tensor or module again (in-place ``x_`` ones too).
#: Not ``type`` (a string without arguments), ``max``/``sort``/``topk`` (tuples), ``item``.
CHAINS = frozenset(
    {
        # tensors and modules
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
        "share_memory",
        # tensors
        "contiguous",
        "detach",
        "clone",
        "long",
        "int",
        "short",
        "bool",
        "byte",
        "char",
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "permute",
        "transpose",
        "t",
        "squeeze",
        "unsqueeze",
        "flatten",
        "unflatten",
        "expand",
        "expand_as",
        "repeat",
        "narrow",
        "type_as",
        "pin_memory",
        "to_dense",
        "sum",
        "mean",
        "abs",
        "exp",
        "log",
        "sqrt",
        "clamp",
        "matmul",
        "softmax",
        "log_softmax",
    }
)
_PARTS = frozenset({"data", "grad", "module", "weight", "bias"})
_PARAMS = frozenset({"parameters", "buffers", "children", "modules"})
_NAMED_PARAMS = frozenset({"named_parameters", "named_buffers", "named_children", "named_modules"})
#: Roots of the third-party names this pass knows besides torch's.
_OTHER_ROOTS = frozenset({"tqdm", "torchvision"})
_PROGRESS = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.std.tqdm", "tqdm.notebook.tqdm"})
_NOT_BUILDERS = frozenset({"get_model_weights", "get_weight", "list_models", "get_model_builder"})
#: Annotations that make a parameter or annotated name a tensor or module.
_HINTS = frozenset(
    {"torch.Tensor", "torch.nn.Module", "torch.nn.Parameter", "torch.nn.parameter.Parameter"}
)
_LOOP_NODES = (ast.For, ast.AsyncFor, ast.comprehension)
_LOADERS = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
#: torchvision transforms whose output is a tensor (``torchvision.transforms[.v2].<name>``).
_TENSOR_TRANSFORMS = frozenset(
    {"ToTensor", "PILToTensor", "Normalize", "ConvertImageDtype", "ToImage", "RandomErasing"}
)
_TENSOR_FUNCTIONS = frozenset(
    f"torchvision.transforms.functional.{name}"
    for name in ("to_tensor", "pil_to_tensor", "normalize", "convert_image_dtype")
)


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
        self.transforms: set[str] = set()  # names holding a tensor-making transform
        self.imported: dict[str, str] = {}  # local name -> qualified, for _OTHER_ROOTS

    def qualify_other(self, node: ast.expr) -> str | None:
        """The qualified name of a tqdm/torchvision name imported by the module."""
        name = _ast_dotted(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        bound = self.imported.get(root)
        return None if bound is None else bound + ("." + rest if rest else "")

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
        if _key(func) in self.transforms or self.is_transform(func):  # ToTensor()(img)
            return True
        if self.qualify_other(func) in _TENSOR_FUNCTIONS:
            return True
        qualified = self.qualify(func)
        if qualified is not None:
            return not qualified.startswith("torch.cuda.") and qualified not in _LOADERS
        if _is_model_builder(self.qualify_other(func)):  # torchvision.models.resnet50()
            return True
        if isinstance(func, ast.Attribute) and (func.attr in CHAINS or func.attr.endswith("_")):
            return self.is_value(func.value)
        return False

    def is_transform(self, node: ast.expr) -> bool:
        """A call building a torchvision transform whose output is a tensor."""
        if not isinstance(node, ast.Call):
            return False
        name = self.qualify_other(node.func)
        if name is None or not name.startswith("torchvision.transforms."):
            return False
        last = name.rsplit(".", 1)[-1]
        if last in _TENSOR_TRANSFORMS:
            return True
        if last == "Compose" and node.args and isinstance(node.args[0], ast.List | ast.Tuple):
            steps = node.args[0].elts
            return bool(steps) and self.is_transform(steps[-1])
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
    imports: list[ast.Import | ast.ImportFrom] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name not in facts.module_classes:
            local_other.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(node)
    classes = (project_classes - local_other) | facts.module_classes
    v = _Values(facts, frozenset(classes))
    v.imported = _imports(imports)
    assigns: list[tuple[list[ast.expr], ast.expr]] = []
    loops: list[ast.For | ast.AsyncFor | ast.comprehension] = []
    loader_keys: dict[str, bool] = {}
    callees: list[ast.expr] = []
    hinted: list[tuple[str | None, ast.expr]] = []  # (key, annotation)
    watch_calls = bool(v.imported)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            assigns.append((node.targets, node.value))
        elif isinstance(node, ast.Call):
            if watch_calls:
                callees.append(node.func)
        elif isinstance(node, ast.arg):
            if node.annotation is not None:
                hinted.append((node.arg, node.annotation))
        elif isinstance(node, ast.AnnAssign):
            hinted.append((_key(node.target), node.annotation))
            if node.value is not None:
                assigns.append(([node.target], node.value))
        elif isinstance(node, _LOOP_NODES):
            loops.append(node)
    for key, hint in hinted:
        if key is not None and _is_torch_hint(v, hint):
            v.values.add(key)
    for targets, value in assigns:
        for target in targets:
            key = _key(target)
            if key is not None:
                ok = v.is_loader_call(value)
                loader_keys[key] = loader_keys.get(key, True) and ok
    v.loaders = {k for k, ok in loader_keys.items() if ok}
    for targets, value in assigns:
        if v.is_transform(value):
            v.transforms.update(k for t in targets if (k := _key(t)) is not None)
    v.values.update(_forward_inputs(v, tree, assigns))
    for _ in range(4):  # a fixed point; real code settles in two rounds
        before = len(v.values)
        for targets, value in assigns:
            for target in targets:
                key = _key(target)
                if key is not None and v.is_value(value):
                    v.values.add(key)
                elif isinstance(target, ast.Tuple | ast.List) and _key(value) in v.values:
                    v.values.update(k for t in _targets(target) if (k := _key(t)))
                else:  # x, y = batch[0], batch[1]
                    for t, e in _pairs(target, value):
                        if (k := _key(t)) is not None and v.is_value(e):
                            v.values.add(k)
        for loop in loops:
            _loop(v, loop)
        if len(v.values) == before:
            break
    remote_modules = {
        key
        for targets, value in assigns
        if isinstance(value, ast.Call) and (v.qualify(value.func) or "").endswith(".RemoteModule")
        for t in targets
        if (key := _key(t)) is not None
    }
    remote = frozenset(
        key
        for targets, value in assigns
        if is_remote_result(value, lambda k: k in remote_modules)
        for t in targets
        if (key := _key(t)) is not None and key not in v.values
    )
    values = frozenset(v.values - v.loaders)
    builders = frozenset(
        name
        for func in callees
        if (_is_model_builder(q := v.qualify_other(func)) or q in _TENSOR_FUNCTIONS)
        and (name := _ast_dotted(func)) is not None
    ) | frozenset(v.transforms)  # calls that return a tensor or module
    return replace(
        facts,
        torch_values=values,
        module_classes=frozenset(classes),
        builders=builders,
        remote=remote,
    )


#: Calls whose result comes from another worker (``torch.distributed.rpc``).
REMOTE_CALLS = frozenset({"rpc_sync", "rpc_async", "remote", "to_here"})


def is_remote_result(node: ast.expr, is_remote_module: Callable[[str], bool]) -> bool:
    """Whether ``node`` is (a method chain on) what a remote call returns: a call of one of
    :data:`REMOTE_CALLS` in its chain (``rref.rpc_sync().get_model()``), or the
    ``forward(...)`` of a name ``is_remote_module`` accepts or whose name says ``remote``
    (``self.remote_emb_module.forward(x)``: a ``RemoteModule`` runs it on its worker)."""
    while isinstance(node, ast.Call | ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else _ast_dotted(func)
            if name is not None and name.rsplit(".", 1)[-1] in REMOTE_CALLS:
                return True
            if isinstance(func, ast.Attribute) and func.attr == "forward":
                key = _key(func.value)
                if key is not None and (is_remote_module(key) or "remote" in key.lower()):
                    return True
            node = func
        else:
            node = node.value
    return False


def _is_model_builder(qualified: str | None) -> bool:
    """A ``torchvision.models`` function that builds a model (not ``get_weight``...)."""
    if qualified is None or not qualified.startswith("torchvision.models."):
        return False
    last = qualified.rsplit(".", 1)[-1]
    return last not in _NOT_BUILDERS and last[:1].islower() and "Weights" not in last


def _imports(nodes: Iterable[ast.AST]) -> dict[str, str]:
    """Local names the module binds by importing from ``_OTHER_ROOTS``."""
    out: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _OTHER_ROOTS:
                    local = alias.asname or alias.name.split(".")[0]
                    out[local] = alias.name if alias.asname else local
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and not node.level
            and node.module.split(".")[0] in _OTHER_ROOTS
        ):
            for alias in node.names:
                out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def _unwrap_progress(v: _Values, node: ast.expr) -> ast.expr:
    """``tqdm(loader)`` yields what ``loader`` yields."""
    if isinstance(node, ast.Call) and node.args and v.qualify_other(node.func) in _PROGRESS:
        return node.args[0]
    return node


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_optional(node: ast.expr) -> bool:
    """``Optional``, ``typing.Optional`` or ``t.Optional``."""
    name = _ast_dotted(node)
    return name is not None and name.rsplit(".", 1)[-1] == "Optional"


def _is_torch_hint(v: _Values, hint: ast.expr | None) -> bool:
    """An annotation naming a tensor, parameter or module type (also as a string)."""
    if isinstance(hint, ast.Constant) and isinstance(hint.value, str):
        try:
            hint = ast.parse(hint.value, mode="eval").body
        except SyntaxError:
            return False
    if hint is None:
        return False
    if isinstance(hint, ast.BinOp) and isinstance(hint.op, ast.BitOr):  # Tensor | None
        sides = [h for h in (hint.left, hint.right) if not _is_none(h)]
        return len(sides) == 1 and _is_torch_hint(v, sides[0])
    if isinstance(hint, ast.Subscript) and _is_optional(hint.value):
        return _is_torch_hint(v, hint.slice)  # None has no .cuda() either: same error
    if isinstance(hint, ast.Name) and hint.id in v.classes:
        return True
    return v.qualify(hint) in _HINTS


def _pairs(target: ast.expr, value: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    """``a, b = x, y``: the (target, value) pairs of two displays of one length without ``*``."""
    if not (isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List)):
        return []
    if len(target.elts) != len(value.elts):
        return []
    if any(isinstance(e, ast.Starred) for e in [*target.elts, *value.elts]):
        return []
    return list(zip(target.elts, value.elts, strict=True))


def _is_loader(v: _Values, node: ast.expr) -> bool:
    """A DataLoader without ``collate_fn``: a name every assignment of which builds one, or
    the call itself (``for x, y in DataLoader(ds)``)."""
    key = _key(node)
    return (key is not None and key in v.loaders) or v.is_loader_call(node)


def _builtin_call(node: ast.expr, name: str) -> ast.Call | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
        return node
    return None


def _loop(v: _Values, loop: ast.For | ast.AsyncFor | ast.comprehension) -> None:
    source, target = _unwrap_progress(v, loop.iter), loop.target
    numbered = _builtin_call(source, "enumerate")
    if numbered and numbered.args and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        source, target = _unwrap_progress(v, numbered.args[0]), target.elts[1]
    zipped = _builtin_call(source, "zip")
    if zipped is not None and not zipped.keywords:  # zip(loader_a, loader_b): one batch each
        if isinstance(target, ast.Tuple | ast.List) and len(target.elts) == len(zipped.args):
            for each, part in zip(zipped.args, target.elts, strict=True):
                if _is_loader(v, each):
                    v.values.update(k for t in _targets(part) if (k := _key(t)))
        return
    if _is_loader(v, source):
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


def _forward_inputs(
    v: _Values, tree: ast.Module, assigns: list[tuple[list[ast.expr], ast.expr]]
) -> set[str]:
    """Parameters of module classes' ``forward`` passed first to a torch layer of ``self``
    or to a ``torch.nn.functional`` function (see the module doc)."""
    layers: set[str] = set()  # `self.x` assigned a torch.nn layer (not a class of the project)
    for targets, value in assigns:
        if isinstance(value, ast.Call) and (q := v.qualify(value.func)) is not None:
            last = q.rsplit(".", 1)[-1]
            if q.startswith("torch.nn.") and last[:1].isupper() and last not in v.classes:
                layers.update(k for t in targets if (k := _key(t)) and k.startswith("self."))
    out: set[str] = set()
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef) or cls.name not in v.classes:
            continue
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef) or method.name != "forward":
                continue
            a = method.args
            params = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs][1:]}
            for node in ast.walk(method):
                if not (isinstance(node, ast.Call) and node.args):
                    continue
                first = node.args[0]
                if not (isinstance(first, ast.Name) and first.id in params):
                    continue
                qualified = v.qualify(node.func) or ""
                if _key(node.func) in layers or qualified.startswith("torch.nn.functional."):
                    out.add(first.id)
    return out
