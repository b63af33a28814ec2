"""The single LibCST traversal that applies a rule set.

:class:`ApplyRules` calls every rule's hooks in rule-set order (children before parents)
with one :class:`~tensorsight.migrate.context.RuleContext` (what a rule sees; re-exported
here) and inserts the device prologue; :mod:`.source` drives it over a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import libcst as cst

from tensorsight.migrate.context import RuleContext, attr_chain, code_of
from tensorsight.migrate.rule import HOOKS, MigrationRule, overrides

__all__ = [
    "PROLOGUE_COMMENT",
    "ApplyRules",
    "RuleContext",
    "attr_chain",
    "code_of",
    "prologue_line",
]

PROLOGUE_COMMENT = (
    "# tensorsight migrate: the accelerator PyTorch finds (CUDA, NPU, XPU, MPS, ...), else the CPU."
)
_SCOPES = (cst.FunctionDef, cst.ClassDef)


class ApplyRules(cst.CSTTransformer):
    """The single traversal that runs every rule's hooks (children before parents)."""

    def __init__(
        self,
        rules: Sequence[MigrationRule],
        ctx: RuleContext,
        *,
        tops: dict[int, int] | None = None,
        skip: set[int] | None = None,
        finalize: bool = True,
    ) -> None:
        super().__init__()
        self._finalize = finalize
        self.ctx = ctx
        self.rules = rules
        self._tops = tops or {}
        self._skip = skip or set()
        self._hooks = {h: [r for r in rules if overrides(r, h)] for h in HOOKS}
        self._callee: set[int] = set()
        self._scopes: list[int] = []  # ids of the def/class nodes pushed on ctx's scope
        self._if_bodies: dict[int, str] = {}  # id of the body of `if name:` -> name

    def _chain(self, hook: str, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        kind = type(updated)
        for rule in self._hooks[hook]:
            result = getattr(rule, hook)(original, updated, self.ctx)
            if result is not None:
                updated = result
                if type(updated) is not kind:
                    break
        return updated

    def on_visit(self, node: cst.CSTNode) -> bool:
        top = self._tops.get(id(node))
        if top is not None:
            if id(node) in self._skip:
                return False  # no trigger word in this statement: not visited, not rebuilt
            self.ctx.current_top = top
        if isinstance(node, cst.If) and isinstance(node.test, cst.Name):
            self._if_bodies[id(node.body)] = node.test.value
        elif id(node) in self._if_bodies:  # the body of `if name:` (not its else)
            self.ctx.true_names.append(self._if_bodies[id(node)])
        visit = super().on_visit(node)
        if visit and isinstance(node, _SCOPES):
            self.ctx._scope.append(node.name.value)
            self._scopes.append(id(node))
        return visit

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        result = super().on_leave(original_node, updated_node)
        if self._if_bodies.pop(id(original_node), None) is not None:
            self.ctx.true_names.pop()
        if self._scopes and self._scopes[-1] == id(original_node):
            self._scopes.pop()
            self.ctx._scope.pop()
        return result

    def visit_Import(self, node: cst.Import) -> bool:
        return False  # module names are not API uses; import clean-up handles them

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self._callee.add(id(node.func))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._callee.add(id(node.value))  # an inner part of a longer chain

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        return self._chain("leave_Call", original_node, updated_node)  # type: ignore[return-value]

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if id(original_node) in self._callee:
            return updated_node
        return self._chain("leave_Attribute", original_node, updated_node)  # type: ignore[return-value]

    def leave_Assign(
        self, original_node: cst.Assign, updated_node: cst.Assign
    ) -> cst.BaseSmallStatement:
        if id(updated_node.value) in self.ctx.guards:  # `x = a if c else 0` needs no parens
            updated_node = updated_node.with_changes(value=_bare(updated_node.value))
        return self._chain("leave_Assign", original_node, updated_node)  # type: ignore[return-value]

    def leave_AnnAssign(
        self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign
    ) -> cst.BaseSmallStatement:
        return self._chain("leave_AnnAssign", original_node, updated_node)  # type: ignore[return-value]

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.BaseExpression:
        return self._chain("leave_Dict", original_node, updated_node)  # type: ignore[return-value]

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        return self._chain("leave_IfExp", original_node, updated_node)  # type: ignore[return-value]

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        if updated_node.value is not None and id(updated_node.value) in self.ctx.guards:
            return updated_node.with_changes(value=_bare(updated_node.value))
        return updated_node

    def leave_Comparison(
        self, original_node: cst.Comparison, updated_node: cst.Comparison
    ) -> cst.BaseExpression:
        return self._chain("leave_Comparison", original_node, updated_node)  # type: ignore[return-value]

    def leave_Subscript(
        self, original_node: cst.Subscript, updated_node: cst.Subscript
    ) -> cst.BaseExpression:
        return self._chain("leave_Subscript", original_node, updated_node)  # type: ignore[return-value]

    def leave_BinaryOperation(
        self, original_node: cst.BinaryOperation, updated_node: cst.BinaryOperation
    ) -> cst.BaseExpression:
        return self._chain("leave_BinaryOperation", original_node, updated_node)  # type: ignore[return-value]

    def leave_Decorator(
        self, original_node: cst.Decorator, updated_node: cst.Decorator
    ) -> cst.Decorator:
        return self._chain("leave_Decorator", original_node, updated_node)  # type: ignore[return-value]

    def leave_SimpleString(
        self, original_node: cst.SimpleString, updated_node: cst.SimpleString
    ) -> cst.BaseExpression:
        if not self._hooks["leave_SimpleString"]:
            return updated_node
        return self._chain("leave_SimpleString", original_node, updated_node)  # type: ignore[return-value]

    def leave_FormattedString(
        self, original_node: cst.FormattedString, updated_node: cst.FormattedString
    ) -> cst.BaseExpression:
        if not self._hooks["leave_FormattedString"]:
            return updated_node
        return self._chain("leave_FormattedString", original_node, updated_node)  # type: ignore[return-value]

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement:
        body = updated_node.body
        if len(body) != 1 or not isinstance(body[0], cst.Expr):
            return updated_node
        value = body[0].value
        if (
            id(value) not in self.ctx.guards
            or not isinstance(value, cst.IfExp)
            or not (isinstance(value.orelse, cst.Name) and value.orelse.value == "None")
        ):
            return updated_node
        inner = cst.SimpleStatementLine(
            body=[cst.Expr(value.body)], trailing_whitespace=updated_node.trailing_whitespace
        )
        return cst.If(
            test=value.test,
            body=cst.IndentedBlock(body=[inner]),
            leading_lines=updated_node.leading_lines,
        )

    def finish(self, original_node: cst.Module) -> None:
        """Run the rules' ``leave_Module`` hooks and decide on the prologue and imports."""
        for rule in self._hooks["leave_Module"]:
            rule.leave_Module(original_node, self.ctx)
        ctx = self.ctx
        ctx.need_device = ctx._device_refs > 0
        ctx.need_torch = ctx._torch_refs > 0 and ctx._torch is None

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self._finalize:
            return updated_node
        self.finish(original_node)
        ctx = self.ctx
        if not (ctx.need_device or ctx.need_torch or ctx.imports_to_add):
            return updated_node
        body: list[cst.BaseStatement] = list(updated_node.body)
        new: list[cst.BaseStatement] = []
        if ctx.need_torch or (ctx.need_device and not ctx.torch_at_module_level):
            new.append(_import_line("torch"))
            ctx._torch = ctx._torch or "torch"
        for module, _ in ctx.imports_to_add:
            if module not in ctx.facts.names:
                new.append(_import_line(module))
        if ctx.need_device:
            stmt = cst.parse_statement(prologue_line(ctx) + "\n")
            comment = cst.EmptyLine(comment=cst.Comment(PROLOGUE_COMMENT))
            new.append(stmt.with_changes(leading_lines=[cst.EmptyLine(), comment]))
        if not new:
            return updated_node
        at = _prologue_index(body, ctx)
        return updated_node.with_changes(body=[*body[:at], *new, *body[at:]])


def prologue_line(ctx: RuleContext) -> str:
    """``_device = torch.accelerator.current_accelerator(...) or torch.device("cpu")``."""
    t = ctx._torch or "torch"
    return (
        f"{ctx.device_name} = {t}.accelerator.current_accelerator(check_available=True)"
        f' or {t}.device("cpu")'
    )


def _import_line(module: str) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(attr_chain(module))])])


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[], rpar=[])


def _is_import_block(stmt: cst.BaseStatement) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(
            isinstance(s, cst.Import | cst.ImportFrom)
            or (isinstance(s, cst.Expr) and isinstance(s.value, cst.SimpleString))
            for s in stmt.body
        )
    if isinstance(stmt, cst.Try):
        return all(isinstance(s, cst.BaseStatement) and _is_import_block(s) for s in stmt.body.body)
    return False


def _prologue_index(body: Sequence[cst.BaseStatement], ctx: RuleContext) -> int:
    at = 0
    for i, stmt in enumerate(body):
        if not _is_import_block(stmt):
            break
        at = i + 1
    # The prologue needs the torch alias: go below the statement that binds it.
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine):
            for s in stmt.body:
                if isinstance(s, cst.Import) and any(
                    (a.evaluated_alias or a.evaluated_name.split(".")[0]) == ctx._torch
                    for a in s.names
                ):
                    at = max(at, i + 1)
    return at
