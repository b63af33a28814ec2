"""The rule base class and the context every rule works through.

A rule is one file holding one :class:`MigrationRule` subclass: ``RULE_ID``
(``"<ruleset>/<kebab-name>"``), ``DESCRIPTION`` and one or more ``leave_<Node>`` hooks.
All rules of a rule set run in **one** LibCST traversal (the way ruff runs its rules over
one AST): the :class:`~tensorsight.migrate.transform.ApplyRules` codemod calls each rule's
hook in rule-set order, children before parents, with the original node (for positions
and qualified names) and the node updated so far (to build on).

A hook returns the replacement node, or ``None`` to leave the node alone. It reports what
it found through ``ctx`` (:class:`RuleContext`): :meth:`RuleContext.fix` applies a safe fix
(or an unsafe one when ``--unsafe-fixes`` is on, else records it as ``manual``);
:meth:`RuleContext.report` records a site without changing code.

A rule declares in ``TOKENS`` what a file must contain for the rule to match anything in
it (:class:`~tensorsight.migrate._prescan.Need`); files that meet no rule's need are never
parsed (:mod:`._prescan`). A rule without ``TOKENS`` makes every file be parsed.

Example:
    A rule that rewrites ``torch.cuda.is_available()``::

        class ReplaceAvailabilityRule(MigrationRule):
            RULE_ID = "accelerator/availability"
            DESCRIPTION = "torch.cuda.is_available() -> torch.accelerator.is_available()"
            TOKENS = (Need.api("torch.cuda.is_available"),)

            def leave_Call(self, original, updated, ctx):
                if ctx.qname(original.func) != "torch.cuda.is_available":
                    return None
                new = updated.with_changes(func=ctx.torch_attr("accelerator.is_available"))
                return ctx.fix(self, original, new, message="Use torch.accelerator.")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from tensorsight.migrate._prescan import Need

if TYPE_CHECKING:
    from tensorsight.migrate.context import RuleContext

__all__ = ["DOCS_BASE", "HOOKS", "MigrationRule", "Need", "overrides"]

DOCS_BASE = "https://github.com/tensorsight/tensorsight/blob/main/docs/migrate.md"


class MigrationRule:
    """Base of every migration rule.

    Class attributes:
        RULE_ID: Stable public id, ``"<ruleset>/<kebab-name>"``; appears in reports.
        DESCRIPTION: One line for the rule reference and ``--help``.
        TRIGGERS: Substrings of which at least one must occur in a top-level statement's
            lines (or a local alias of a watched API) for the rule to visit it.
        TOKENS: The file pre-scan: the rule can match something in a file only if the file
            meets one of these :class:`Need` values. ``None`` (the default): unknown, every
            file is parsed. ``()``: the rule never acts alone (it only adds to what other
            rules found).
    """

    RULE_ID: ClassVar[str] = ""
    DESCRIPTION: ClassVar[str] = ""
    TRIGGERS: ClassVar[tuple[str, ...]] = ("cuda",)
    TOKENS: ClassVar[tuple[Need, ...] | None] = None

    @classmethod
    def needs(cls) -> tuple[Need, ...] | None:
        """What the file pre-scan looks for: ``TOKENS``; table-driven rules derive it."""
        return cls.TOKENS

    @classmethod
    def doc_url(cls) -> str:
        """Link to this rule's section of ``docs/migrate.md``."""
        return f"{DOCS_BASE}#{cls.RULE_ID.replace('/', '').replace('_', '-')}"

    # Hooks: return a replacement node or None. Only the ones a rule defines are called.
    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        """Visit a call (after its children)."""
        return None

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        """Visit an attribute access that is not the callee of a call."""
        return None

    def leave_Assign(
        self, original: cst.Assign, updated: cst.Assign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        """Visit an assignment statement (may return another small statement)."""
        return None

    def leave_Comparison(
        self, original: cst.Comparison, updated: cst.Comparison, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        """Visit a comparison."""
        return None

    def leave_Subscript(
        self, original: cst.Subscript, updated: cst.Subscript, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        """Visit a subscript such as ``os.environ["CUDA_VISIBLE_DEVICES"]``."""
        return None

    def leave_BinaryOperation(
        self, original: cst.BinaryOperation, updated: cst.BinaryOperation, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        """Visit a binary operation (``torch.cuda.device_count() // local_world_size``)."""
        return None

    def leave_AnnAssign(
        self, original: cst.AnnAssign, updated: cst.AnnAssign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        """Visit an annotated assignment (a dataclass field default, ``x: str = ...``)."""
        return None

    def leave_Dict(
        self, original: cst.Dict, updated: cst.Dict, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        """Visit a dict display (a config dict such as ``{"backend": "nccl"}``)."""
        return None

    def leave_IfExp(
        self, original: cst.IfExp, updated: cst.IfExp, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        """Visit a conditional expression (``"cuda" if "cuda" in d else "cpu"``)."""
        return None

    def leave_Decorator(
        self, original: cst.Decorator, updated: cst.Decorator, ctx: RuleContext
    ) -> cst.Decorator | None:
        """Visit a decorator."""
        return None

    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        """Visit a string literal (``"cuda:0"`` that no other rule handled)."""
        return None

    def leave_FormattedString(
        self, original: cst.FormattedString, updated: cst.FormattedString, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        """Visit an f-string (``f"cuda:{rank}"`` that no other rule handled)."""
        return None

    def leave_Module(self, original: cst.Module, ctx: RuleContext) -> None:
        """Called once at the end, e.g. to add a side-effect import."""


HOOKS: tuple[str, ...] = (
    "leave_Call",
    "leave_Attribute",
    "leave_Assign",
    "leave_AnnAssign",
    "leave_Dict",
    "leave_IfExp",
    "leave_Comparison",
    "leave_Subscript",
    "leave_BinaryOperation",
    "leave_Decorator",
    "leave_SimpleString",
    "leave_FormattedString",
    "leave_Module",
)


def overrides(rule: MigrationRule, hook: str) -> bool:
    """Whether ``rule`` defines ``hook`` itself (so the dispatcher may skip the others)."""
    return getattr(type(rule), hook) is not getattr(MigrationRule, hook)
