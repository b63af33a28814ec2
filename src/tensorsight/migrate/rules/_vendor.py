"""Building blocks for vendor rule sets (no rule lives here): environment-variable renames
and float64 warnings."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.model import Status
from tensorsight.migrate.rule import MigrationRule, Need

__all__ = ["EnvVarRule", "Float64Rule"]

_ENV_CALLS = ("os.environ.get", "os.getenv", "os.environ.setdefault", "os.environ.pop")


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


class EnvVarRule(MigrationRule):
    """Renames environment variables in ``os.environ[...]`` and ``os.environ.get(...)``.

    ``TABLE`` maps the CUDA/NCCL name to the vendor's; the quote style is kept.
    """

    TABLE: ClassVar[dict[str, str]] = {}

    @classmethod
    def needs(cls) -> tuple[Need, ...] | None:
        """``TOKENS`` if given, else a string literal starting with a ``TABLE`` key."""
        if cls.TOKENS is not None:
            return cls.TOKENS
        return tuple(Need(strings=(name,)) for name in cls.TABLE)

    def _rename(
        self, ctx: RuleContext, original: cst.BaseExpression, updated: cst.BaseExpression
    ) -> cst.BaseExpression | None:
        name = _string(original)
        if name is None or name not in self.TABLE or not isinstance(updated, cst.SimpleString):
            return None
        quote = updated.quote
        new = cst.SimpleString(f"{updated.prefix}{quote}{self.TABLE[name]}{quote}")
        return ctx.fix(
            self, original, new, message=f"The target reads {self.TABLE[name]}.", api=name
        )

    def leave_Subscript(
        self, original: cst.Subscript, updated: cst.Subscript, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if dotted(original.value) != "os.environ" or len(original.slice) != 1:
            return None
        index = original.slice[0].slice
        new_index = updated.slice[0].slice
        if not isinstance(index, cst.Index) or not isinstance(new_index, cst.Index):
            return None
        value = self._rename(ctx, index.value, new_index.value)
        if value is None:
            return None
        return updated.with_changes(slice=[updated.slice[0].with_changes(slice=cst.Index(value))])

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if dotted(original.func) not in _ENV_CALLS or not original.args:
            return None
        if len(original.args) != len(updated.args):
            return None  # an earlier rule changed the arguments
        value = self._rename(ctx, original.args[0].value, updated.args[0].value)
        if value is None:
            return None
        return updated.with_changes(
            args=[updated.args[0].with_changes(value=value), *updated.args[1:]]
        )


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for Name/Attribute chains (no alias resolution: for stdlib names)."""
    from tensorsight.migrate._resolve import dotted_name

    return dotted_name(node)


class Float64Rule(MigrationRule):
    """Warns about float64 (``torch.float64``, ``torch.double``, ``.double()``)."""

    STATUS: ClassVar[Status] = "kept"
    MESSAGE: ClassVar[str] = ""
    TRIGGERS = ("float64", "double")
    TOKENS = (Need.api("torch.float64"), Need(names=("double",)))

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if ctx.qname(original) in ("torch.float64", "torch.double"):
            ctx.report(self, original, status=self.STATUS, message=self.MESSAGE)
        return None

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        func = original.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "double"
            and not original.args
            and ctx.qname(func) is None
        ):
            ctx.report(self, original, status=self.STATUS, message=self.MESSAGE, api=".double()")
        return None
