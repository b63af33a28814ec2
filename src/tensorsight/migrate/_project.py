"""CUDA values across a project's imports: what each module learns from the others.

:mod:`._flow` follows values inside one file. A project often defines a value in one
module and uses it in another: ``config.py: backend = "nccl"`` and ``train.py:
init_process_group(backend=config.backend)``; ``args.py`` builds the argparse parser and
``train.py`` reads ``args.gpu``; ``utils.py: local_rank = int(os.environ["LOCAL_RANK"])``
and ``train.py: from utils import local_rank; x.to(local_rank)``. :func:`project_externals`
builds the project's import graph once, runs the flow prepass of each module in it alone,
and gives every module an :class:`~._flow.External`:

- the values the names it imports hold (``from config import gpu``, ``config.gpu``
  through ``import config``), and the attribute slots (``args.gpu``, ``cfg["device"]``,
  dataclass fields) of the modules it imports or is imported by;
- the uses elsewhere of its own module-level names and attribute slots (a backend, a
  device, a ``map_location``), with the ``file:line`` of the use, so that the value is
  rewritten where it is stored and the report names the use.

Re-exports are followed: ``pkg/__init__.py: from .config import DEVICE`` then
``train.py: from pkg import DEVICE`` (or ``import pkg; pkg.DEVICE``) reads the value stored
in ``pkg/config.py``, through chains of such imports up to :data:`MAX_HOPS` modules long;
a cycle of re-exports (``a`` imports ``x`` from ``b`` and ``b`` from ``a``) ends the chain,
and the name is then unknown (reported, as in a single file).

Cheap by construction: only modules holding the text ``cuda`` or ``nccl`` (every followed
CUDA value starts as one), the modules that import them or re-export their names (found
by a regular expression over the import lines, a round per hop) and the modules they
import are parsed (with ``ast``). Modules are named by their path from the root
(``pkg/mod.py`` is ``pkg.mod``, also ``mod`` for a script's sibling import); an import
that names no module of the project is ignored.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from tensorsight.migrate._bindings import ANY, Bindings, Key, Scope, collect_bindings
from tensorsight.migrate._flow import USE_KINDS, External, FlowFacts, Held, collect_flow

__all__ = ["project_externals"]

_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))",
    re.MULTILINE,
)
_WORD = re.compile(r"\w+")
_SEEDS = ("cuda", "nccl")
#: The longest chain of re-exports followed (``from .a import x`` in ``pkg/__init__.py``
#: is one hop); a longer one leaves the name unknown.
MAX_HOPS = 8


def module_id(rel: str) -> str:
    """``pkg/mod.py`` -> ``pkg.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = rel[: -len(".py")].split("/") if rel.endswith(".py") else rel.split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@dataclass
class _Module:
    rel: str
    id: str
    tree: ast.Module
    bindings: Bindings
    #: local key bound by `from X import n` -> (module X, n)
    names: dict[Key, tuple[str, str]] = field(default_factory=dict)
    #: local name bound to a project module (`import X`, `from pkg import mod`)
    modules: dict[str, str] = field(default_factory=dict)
    flow: FlowFacts | None = None


class _Index:
    """Module ids of the project, and how an import in one file names one."""

    def __init__(self, rels: Iterable[str]) -> None:
        self.by_id: dict[str, str] = {}
        for rel in rels:
            self.by_id.setdefault(module_id(rel), rel)

    def resolve(self, rel: str, name: str, level: int) -> str | None:
        """The id of the module ``name`` (``level`` dots) imported from file ``rel``."""
        here = module_id(rel).split(".")
        package = here if rel.endswith("__init__.py") else here[:-1]
        if level:
            base = package[: len(package) - (level - 1)] if level - 1 <= len(package) else None
            if base is None:
                return None
            full = ".".join([*base, *([name] if name else [])])
            return full if full in self.by_id else None
        for prefix in (package, []):  # a script's sibling first, then from the root
            full = ".".join([*prefix, name])
            if full in self.by_id:
                return full
        return None


def project_externals(files: Mapping[str, str]) -> dict[str, External]:
    """The :class:`~._flow.External` of every module that has one (see the module doc).

    Args:
        files: Path relative to the root -> the file's text, for every ``.py`` file.

    Returns:
        Path -> what that module learns from the others; modules that learn nothing are
        left out.
    """
    if len(files) < 2:
        return {}
    seeds = sorted(rel for rel, text in files.items() if any(s in text for s in _SEEDS))
    if not seeds:
        return {}
    index = _Index(files)
    modules: dict[str, _Module] = {}

    def load(rel: str) -> _Module | None:
        if rel not in modules:
            try:
                tree = ast.parse(files[rel])
                info = _Module(rel, module_id(rel), tree, collect_bindings(tree))
                _read_imports(info, index)
                info.flow = collect_flow(tree, info.bindings, External(modules=info.modules))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None  # the file's own migration reports it
            modules[rel] = info
        return modules[rel]

    held: dict[str, dict[Key, Held]] = {}

    def export(info: _Module) -> None:
        if info.id not in held:
            assert info.flow is not None
            held[info.id] = _exports(info, info.flow)

    def origin(source: str, name: str, read: bool = False) -> tuple[str, str]:
        """Where ``name`` of module ``source`` is defined: re-exports (``from .config
        import DEVICE`` in ``pkg/__init__.py``) followed, at most :data:`MAX_HOPS`, and
        not round a cycle (then the name is unknown: a module that holds nothing). Only
        through modules already parsed unless ``read`` (a seed's own uses: a few names)."""
        seen: set[tuple[str, str]] = set()
        at = (source, name)
        for _ in range(MAX_HOPS + 1):
            rel = index.by_id.get(at[0])
            if rel is None or (not read and rel not in modules):
                return at
            info = load(rel)
            if info is None:
                return at
            export(info)
            step = info.names.get(((), at[1]))
            if step is None or (info.flow is not None and ((), at[1]) in info.flow.valued):
                return at  # defined here (or not at all): the chain ends
            if step in seen:
                return ("", name)  # a cycle of re-exports
            seen.add(at)
            at = step
        return ("", name)  # too long a chain

    for rel in seeds:
        info = load(rel)
        if info is None:
            continue
        export(info)
        for source in _read_from(info):  # where the names it uses come from
            imported = load(index.by_id[source])
            if imported is not None:
                export(imported)
        for source, name in _read_names(info):  # and through re-exports
            origin(source, name, read=True)

    def stores(h: dict[Key, Held]) -> bool:
        return any(x.cuda or x.nccl for x in h.values())

    stored = {i for i, h in held.items() if stores(h)}
    for _ in range(MAX_HOPS):  # the modules that import (or re-export) a stored value
        for rel, text in files.items():
            if rel in modules or "import" not in text:
                continue
            if _regex_imports(rel, text, index) & stored and (info := load(rel)) is not None:
                export(info)
        again = {
            info.id
            for info in list(modules.values())  # origin() may load more
            if info.id not in stored
            and any(
                (o := origin(src, n))[0] in stored and ((), o[1]) in held.get(o[0], {})
                for src, n in info.names.values()
            )
        }
        if not again:  # no new module re-exports a stored value: no new importers to find
            break
        stored |= again
    edges: dict[str, set[str]] = {info.id: set() for info in modules.values()}
    for info in modules.values():
        for source in _sources(info):
            if source in edges and source != info.id:
                edges[info.id].add(source)
                edges[source].add(info.id)
    uses: dict[str, dict[tuple[str, Key], str]] = {}
    for info in modules.values():
        assert info.flow is not None
        for (kind, key), line in info.flow.use_lines.items():
            if kind not in USE_KINDS:
                continue
            for target, target_key in _origins(info, key, edges[info.id], origin):
                if target in stored and target_key in held.get(target, {}):
                    uses.setdefault(target, {}).setdefault((kind, target_key), f"{info.rel}:{line}")
    out: dict[str, External] = {}
    for info in modules.values():
        assert info.flow is not None
        read = {key for _, key in info.flow.use_lines}  # only what a rule looks at
        values: dict[Key, list[Held]] = {}
        for local, (source, name) in info.names.items():
            if local not in read:
                continue
            source, name = origin(source, name)
            if (h := held.get(source, {}).get(((), name))) is not None:
                values.setdefault(local, []).append(h)
        for key in read:
            if len(key[0]) == 2 and key[0][0] == "@":  # `pkg.DEVICE` through `import pkg`
                where, original = origin(key[0][1], key[1])
                if (h := held.get(where, {}).get(((), original))) is not None:
                    values.setdefault(key, []).append(h)
        for neighbour in edges[info.id]:
            for key, h in held.get(neighbour, {}).items():
                if key[0] == ANY and key in read:
                    values.setdefault(key, []).append(h)
        own = uses.get(info.id, {})
        if values or own:
            out[info.rel] = External(
                values={k: tuple(v) for k, v in values.items()}, uses=own, modules=info.modules
            )
    return out


def _read_from(info: _Module) -> set[str]:
    """The modules a seed reads followed values from: those of the imported names and
    ``module.x`` keys it uses where a rule looks; all it imports if it uses an attribute slot
    there that it never assigns (``args.gpu``: the parser is built in one of them)."""
    assert info.flow is not None
    read = {key for _, key in info.flow.use_lines}
    out = {info.names[k][0] for k in read if k in info.names}
    out.update(k[0][1] for k in read if len(k[0]) == 2 and k[0][0] == "@")
    if any(k[0] == ANY and k not in info.flow.valued for k in read):
        out.update(_sources(info))
    return out


def _read_names(info: _Module) -> set[tuple[str, str]]:
    """``(module, name)`` of the imported names (``from m import x``, ``m.x``) the module
    uses where a rule looks."""
    assert info.flow is not None
    out: set[tuple[str, str]] = set()
    for _, key in info.flow.use_lines:
        if key in info.names:
            out.add(info.names[key])
        elif len(key[0]) == 2 and key[0][0] == "@":
            out.add((key[0][1], key[1]))
    return out


def _sources(info: _Module) -> set[str]:
    return {*(m for m, _ in info.names.values()), *info.modules.values()}


def _regex_imports(rel: str, text: str, index: _Index) -> set[str]:
    """The project modules a file imports, read from its import lines (no parsing)."""
    out: set[str] = set()
    for m in _IMPORT.finditer(text):
        source, names, plain = m.groups()
        if plain is not None:
            for part in plain.split(","):
                name = part.split(" as ")[0].strip()
                if (found := index.resolve(rel, name, 0)) is not None:
                    out.add(found)
            continue
        level = len(source) - len(source.lstrip("."))
        module = source.lstrip(".")
        if (found := index.resolve(rel, module, level)) is not None:
            out.add(found)
        for word in _WORD.findall(names or ""):
            dotted = f"{module}.{word}" if module else word
            if (found := index.resolve(rel, dotted, level)) is not None:
                out.add(found)
    return out


def _read_imports(info: _Module, index: _Index) -> None:
    """Fill ``names`` and ``modules`` of ``info`` from its import statements."""
    for scope, node in _imports(info.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                source = index.resolve(info.rel, alias.name, 0)
                if source is None:
                    continue
                if alias.asname:
                    info.modules[alias.asname] = source
                elif "." not in alias.name:
                    info.modules[alias.name] = source
            continue
        base = index.resolve(info.rel, node.module or "", node.level)
        for alias in node.names:
            if alias.name == "*":
                continue
            local = alias.asname or alias.name
            dotted = f"{node.module}.{alias.name}" if node.module else alias.name
            sub = index.resolve(info.rel, dotted, node.level)
            if sub is not None and scope == ():
                info.modules[local] = sub  # from pkg import mod
            elif base is not None:
                info.names[info.bindings.key_of_name(scope, local)] = (base, alias.name)


def _imports(tree: ast.Module) -> list[tuple[Scope, ast.Import | ast.ImportFrom]]:
    """Import statements with the scope they bind in (module level and function bodies)."""
    out: list[tuple[Scope, ast.Import | ast.ImportFrom]] = []
    stack: list[tuple[Scope, ast.stmt]] = [((), s) for s in tree.body]
    while stack:
        scope, stmt = stack.pop()
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            out.append((scope, stmt))
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(((*scope, stmt.name), s) for s in stmt.body)
        else:
            for name in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(stmt, name, ()):
                    if isinstance(child, ast.ExceptHandler):
                        stack.extend((scope, s) for s in child.body)
                    elif isinstance(child, ast.stmt):
                        stack.append((scope, child))
    return out


def _exports(info: _Module, flow: FlowFacts) -> dict[Key, Held]:
    """What the module's own names and attribute slots hold, for the modules around it."""
    out: dict[Key, Held] = {}
    for key in flow.valued:
        scope = key[0]
        if scope not in ((), ANY) or key in info.names:
            continue
        lines = info.bindings.lines.get(key, ())
        where = f"{info.rel}:{lines[0]}" if lines else info.rel
        h = Held(
            index=key in flow.index,
            device_type=key in flow.device_type,
            cuda=key in flow.cuda_string,
            indexed=key in flow.indexed,
            nccl=key in flow.nccl,
            where=where,
        )
        if h.index or h.device_type or h.cuda or h.nccl:  # only what makes a rewrite: see the doc
            out[key] = h
    return out


def _origins(
    info: _Module,
    key: Key,
    neighbours: set[str],
    origin: Callable[[str, str], tuple[str, str]],
) -> list[tuple[str, Key]]:
    """Where the value a use of ``key`` in ``info`` reads is stored in other modules
    (``origin`` follows re-exports)."""
    scope, name = key
    if key in info.names:
        source, original = origin(*info.names[key])
        return [(source, ((), original))]
    if len(scope) == 2 and scope[0] == "@":
        source, original = origin(scope[1], name)
        return [(source, ((), original))]
    if scope == ANY:
        return [(n, key) for n in neighbours]
    return []
