"""Migrate one source text: :func:`migrate_source`.

Fast path (the usual one): Python's ``ast`` gives the line span of every top-level
statement (:mod:`._scan`); only statements whose lines hold a trigger word of the rule set
are parsed with LibCST and rewritten, each as its own small module, and their new text is
spliced back between the untouched lines. The device prologue and added imports are
inserted after the import block; imports that the rewrite left unused are removed from
their statements. Positions are computed inside the rewritten statements only.

Fallback (when this Python's ``ast`` cannot parse code that LibCST accepts): the whole
module goes through one :class:`~.transform.ApplyRules` pass.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from tensorsight.migrate._flow import External
from tensorsight.migrate._positions import starts
from tensorsight.migrate._resolve import ModuleFacts, collect_facts, collect_facts_ast
from tensorsight.migrate._scan import hot_statements
from tensorsight.migrate._values import known_values
from tensorsight.migrate.context import Finding, RuleContext
from tensorsight.migrate.model import Site
from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.transform import PROLOGUE_COMMENT, ApplyRules, prologue_line

__all__ = ["SourceResult", "migrate_source"]

ROOTS = ("torch", "triton", "tensorflow", "keras", "horovod")
#: Aliases of these APIs make a statement worth visiting even without a trigger word.
ALIAS_PREFIXES = (
    "torch.cuda",
    "torch.amp",
    "torch.distributed",
    "torch.backends",
    "torch.jit",
    "torch.load",
    "torch.device",
    "torch.autocast",
    "torch.float64",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.double",
    "triton",
)


@dataclass(frozen=True)
class SourceResult:
    """What :func:`migrate_source` returns.

    Attributes:
        new_code: The migrated text.
        sites: Every finding, in source order.
        touched: Names the rewrite removed or introduced (for the self-check).
    """

    new_code: str
    sites: tuple[Site, ...]
    touched: frozenset[str] = frozenset()


def migrate_source(
    code: str,
    rules: Sequence[MigrationRule],
    *,
    path: str = "<string>",
    unsafe_fixes: bool = False,
    target: str = "accelerator",
    module_classes: frozenset[str] = frozenset(),
    external: External | None = None,
) -> SourceResult:
    """Run ``rules`` over ``code``; raises ``libcst.ParserSyntaxError`` on bad syntax.

    ``external``: the CUDA values that reach this module through the project's imports
    (:mod:`._project`).

    ``module_classes`` names the ``nn.Module`` subclasses of the whole project
    (:func:`._values.scan_module_classes`): their instances' ``.cuda()`` is a safe fix.

    Example:
        >>> from tensorsight.migrate.rulesets import load_ruleset
        >>> out = migrate_source("import torch\\nok = torch.cuda.is_available()\\n",
        ...                      load_ruleset("accelerator").instantiate())
        >>> print(out.new_code, end="")
        import torch
        ok = torch.accelerator.is_available()
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return _whole_module(code, rules, path, unsafe_fixes, target)
    facts = known_values(tree, collect_facts_ast(tree, code, ROOTS), module_classes)
    ctx = RuleContext(facts, unsafe_fixes=unsafe_fixes, target=target, tree=tree, external=external)
    lines = code.splitlines(keepends=True)
    groups = _groups(tree)
    words = [*(w for rule in rules for w in rule.TRIGGERS), *_alias_words(facts)]
    hot = hot_statements(code, [(a, b) for a, b, _ in groups], words)
    edits: dict[int, str] = {}  # group index -> new text
    modules: dict[int, cst.Module] = {}  # group index -> rewritten segment
    originals: dict[int, cst.Module] = {}
    for gi, (start, end, _) in enumerate(groups):
        if not hot[gi]:
            continue
        segment = cst.parse_module("".join(lines[start - 1 : end]))
        ctx.current_top = gi
        originals[gi] = segment
        modules[gi] = segment.visit(ApplyRules(rules, ctx, finalize=False))
    ApplyRules(rules, ctx, finalize=False).finish(cst.Module(body=[]))
    unused = _unused_after(ctx.releases, ctx.added, facts) if ctx.releases else set()
    if unused:
        for gi, (start, end, stmts) in enumerate(groups):
            if gi not in modules and _imports_any(stmts, unused):
                modules[gi] = cst.parse_module("".join(lines[start - 1 : end]))
        for gi in modules:
            modules[gi] = modules[gi].visit(_DropImports(unused))
    for gi, module in modules.items():
        edits[gi] = module.code if module.body else ""  # every import of the line removed
    new_lines = list(lines)
    for gi in sorted(edits, reverse=True):
        start, end, _ = groups[gi]
        new_lines[start - 1 : end] = [edits[gi]]
    insert = _header_lines(ctx, "\r\n" if "\r\n" in code else "\n")
    if insert:
        at = _insert_line(tree, ctx)
        # `at` is a line number in the original; count the lines of edited groups before it.
        index = _new_index(groups, edits, at)
        new_lines[index:index] = insert
    sites = _sites(ctx.all_findings(), originals, groups, path)
    return SourceResult("".join(new_lines), sites, _touched(ctx))


def _whole_module(
    code: str, rules: Sequence[MigrationRule], path: str, unsafe_fixes: bool, target: str
) -> SourceResult:
    module = cst.parse_module(code)
    ctx = RuleContext(collect_facts(module, code, ROOTS), unsafe_fixes=unsafe_fixes, target=target)
    ctx.current_top = 0
    new = module.visit(ApplyRules(rules, ctx))
    if ctx.releases:
        unused = _unused_after(ctx.releases, ctx.added, ctx.facts)
        if unused:
            new = new.visit(_DropImports(unused))
    sites = _sites(ctx.all_findings(), {0: module}, [(1, 0, [])], path)
    return SourceResult(new.code, sites, _touched(ctx))


Group = tuple[int, int, list[ast.stmt]]


def _groups(tree: ast.Module) -> list[Group]:
    """Top-level statements as (first line, last line, statements); statements that share a
    line (``a = 1; b = 2``) form one group. Decorators belong to their definition."""
    groups: list[Group] = []
    for stmt in tree.body:
        start = _first_line(stmt)
        end = stmt.end_lineno or start
        if groups and start <= groups[-1][1]:
            prev = groups[-1]
            groups[-1] = (prev[0], max(prev[1], end), [*prev[2], stmt])
        else:
            groups.append((start, end, [stmt]))
    return groups


def _first_line(stmt: ast.stmt) -> int:
    """The statement's first line, decorators included."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
    return stmt.lineno


def _alias_words(facts: ModuleFacts) -> list[str]:
    """Local names bound to an API the rules look at (``sync``, ``dist``, ``autocast``)."""
    return [
        name
        for name, b in facts.bindings.items()
        if any(b.qualified == p or b.qualified.startswith(p + ".") for p in ALIAS_PREFIXES)
    ]


def _imports_any(stmts: list[ast.stmt], names: set[str]) -> bool:
    for stmt in stmts:
        for node in ast.walk(stmt) if isinstance(stmt, ast.Try | ast.If) else [stmt]:
            if isinstance(node, ast.Import | ast.ImportFrom) and any(
                (a.asname or a.name.split(".")[0]) in names for a in node.names
            ):
                return True
    return False


def _header_lines(ctx: RuleContext, newline: str) -> list[str]:
    """The ``import torch`` / added imports / device prologue lines to insert, if any."""
    out: list[str] = []
    if ctx.need_torch or (ctx.need_device and not ctx.torch_at_module_level):
        out.append(f"import torch{newline}")
        ctx._torch = ctx._torch or "torch"
    for module, _ in ctx.imports_to_add:
        if module not in ctx.facts.names:
            out.append(f"import {module}{newline}")
    if ctx.need_device:
        out += [newline, PROLOGUE_COMMENT + newline, prologue_line(ctx) + newline]
    return out


def _is_import_block(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return isinstance(stmt.value.value, str)
    if isinstance(stmt, ast.Try):
        return all(isinstance(s, ast.Import | ast.ImportFrom) for s in stmt.body)
    return False


def _insert_line(tree: ast.Module, ctx: RuleContext) -> int:
    """The original line after which the prologue goes: after the leading import block,
    and below the import that binds the torch alias."""
    body = tree.body
    at = 0
    for i, stmt in enumerate(body):
        if not _is_import_block(stmt):
            break
        at = i + 1
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.Import) and any(
            (a.asname or a.name.split(".")[0]) == ctx._torch for a in stmt.names
        ):
            at = max(at, i + 1)
    if at == 0:
        if not body:
            return 0
        return _first_line(body[0]) - 1
    return body[at - 1].end_lineno or body[at - 1].lineno


def _new_index(groups: list[Group], edits: dict[int, str], line: int) -> int:
    """Index in the edited line list of original line ``line + 1`` (edited groups are one
    list item each)."""
    index = line
    for gi, (start, end, _) in enumerate(groups):
        if gi in edits and end <= line:
            index -= end - start  # `end - start + 1` lines became one item
    return index


def _sites(
    findings: list[Finding],
    segments: dict[int, cst.Module],
    groups: Sequence[tuple[int, int, object]],
    path: str,
) -> tuple[Site, ...]:
    if not findings:
        return ()
    where: dict[int, tuple[int, int]] = {}
    by_group: dict[int, list[cst.CSTNode]] = {}
    for f in findings:
        by_group.setdefault(f.top, []).append(f.node)
    for gi, nodes in by_group.items():
        if gi < 0 or gi not in segments:
            continue
        shift = groups[gi][0] - 1
        for key, (line, column) in starts(segments[gi], nodes).items():
            where[key] = (line + shift, column + 1)
    rows = []
    for f in findings:
        line, column = where.get(id(f.node), (1, 1))  # the module itself: line 1
        rows.append(
            Site(
                path,
                line,
                column,
                f.api,
                f.rule.RULE_ID,
                f.status,
                f.safety,
                f.message,
                f.rule.doc_url(),
            )
        )
    rows.sort(key=lambda s: (s.line, s.column))
    return tuple(rows)


def _touched(ctx: RuleContext) -> frozenset[str]:
    """Names the rewrite removed or introduced: only these can have new pyflakes problems."""
    finder = _Names()
    for node in (*ctx.releases, *ctx.added):
        node.visit(finder)
    extra = {ctx.device_name, "torch", ctx._torch or "torch", *(m for m, _ in ctx.imports_to_add)}
    return frozenset({*finder.names.values(), *extra})


def _unused_after(
    originals: list[cst.CSTNode], replacements: list[cst.CSTNode], facts: ModuleFacts
) -> set[str]:
    """Import-bound names whose every use was inside a rewritten node and that the
    replacements do not use again."""
    gone, again = _Names(), _Names()
    for node in originals:
        node.visit(gone)
    for node in replacements:
        node.visit(again)
    removed: dict[str, int] = {}
    for name in gone.names.values():
        removed[name] = removed.get(name, 0) + 1
    for name in again.names.values():
        removed[name] = removed.get(name, 0) - 1
    counts = facts.name_counts
    out = set()
    for name, n in removed.items():
        b = facts.bindings.get(name)
        if b is None or b.module is None or b.qualified == "torch":
            continue
        if b.obj is None and b.asname is None:
            continue  # `import torch.cuda`: binds `torch`, which stays
        if counts and counts.get(name, 0) <= n:
            out.add(name)
    return out


class _Names(cst.CSTVisitor):
    """Root names (not attributes or keywords) in some nodes, each Name node once."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names[id(node)] = node.value


class _DropImports(cst.CSTTransformer):
    """Remove the given local names from import statements (the statement if none is left).

    This is what LibCST's ``RemoveImportsVisitor`` does, restricted to names a rule released
    and checked against the names still used in the rewritten module; it avoids the full
    scope analysis, which costs more than the whole migration of a file.
    """

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names

    def _keep(self, aliases: Sequence[cst.ImportAlias]) -> list[cst.ImportAlias]:
        kept = [a for a in aliases if _local_name(a) not in self.names]
        if kept and len(kept) != len(aliases):
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return kept

    def leave_Import(
        self, original_node: cst.Import, updated_node: cst.Import
    ) -> cst.Import | cst.RemovalSentinel:
        kept = self._keep(updated_node.names)
        if not kept:
            return cst.RemoveFromParent()
        return updated_node.with_changes(names=kept)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        kept = self._keep(updated_node.names)
        if not kept:
            return cst.RemoveFromParent()
        return updated_node.with_changes(names=kept)


def _local_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return alias.evaluated_name.split(".")[0]
