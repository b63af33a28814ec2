"""Shared building blocks for table-driven rules (no rule lives here).

:class:`RenameCallRule` rewrites calls listed in a table of :class:`CallRename` entries;
most accelerator rules are a subclass with a ``TABLE`` from their ``tables.py``.
:func:`device_expr` converts a CUDA device string in a device slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

__all__ = [
    "CallRename",
    "RenameCallRule",
    "append_arg",
    "cuda_string",
    "device_expr",
    "find_keyword",
    "has_star_kwargs",
    "keyword",
]


@dataclass(frozen=True)
class CallRename:
    """How to rewrite one call.

    Attributes:
        new: Name under ``torch`` of the replacement, e.g. ``accelerator.synchronize``.
        form: ``plain`` (call ``torch.<new>`` with the same arguments), ``module`` (call
            ``torch.get_device_module(_device).<new>``, which exists on the CPU too),
            ``guarded`` (``torch.<new>(...) if torch.accelerator.is_available() else
            <default>``; a whole statement becomes an ``if`` block) or ``ctor`` (pass
            ``device=_device`` first, for ``torch.Stream``/``torch.Event``).
        default: For ``guarded``: the value on a machine without an accelerator.
        note: The semantic drift of the rewrite ("Drift: ..."), reported as its own
            ``kept`` row when the rewrite is applied.
    """

    new: str
    form: Literal["plain", "module", "guarded", "ctor"] = "plain"
    default: str = "None"
    note: str = ""


class RenameCallRule(MigrationRule):
    """Rewrites every call whose qualified callee is a key of ``TABLE``."""

    TABLE: ClassVar[dict[str, CallRename]] = {}

    @classmethod
    def needs(cls) -> tuple[Need, ...] | None:
        """``TOKENS`` if given, else one :meth:`Need.api` per ``TABLE`` key."""
        if cls.TOKENS is not None:
            return cls.TOKENS
        return tuple(Need.api(api) for api in cls.TABLE)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        if api is None or api not in self.TABLE:
            return None
        spec = self.TABLE[api]
        new: cst.BaseExpression
        shown = f"torch.{spec.new}"
        if spec.form == "module":
            shown = f"torch.get_device_module(_device).{spec.new}"
            dev_mod = cst.Call(
                func=ctx.torch_attr("get_device_module"), args=[cst.Arg(ctx.device())]
            )
            new = updated.with_changes(func=cst.Attribute(value=dev_mod, attr=cst.Name(spec.new)))
        elif spec.form == "ctor":
            shown = f"torch.{spec.new}(device=_device)"
            if any(a.keyword is None for a in updated.args) or has_star_kwargs(updated.args):
                ctx.report(
                    self,
                    original,
                    status="manual",
                    api=api,
                    message=f"Use `{shown}` with the other arguments passed by keyword.",
                )
                return None
            args = list(updated.args)
            if find_keyword(original.args, "device") is None:
                args = append_arg(args, keyword("device", ctx.device()))
            else:  # the caller's device stays; the device rules convert a CUDA one
                shown = f"torch.{spec.new}(device=...)"
            new = updated.with_changes(func=ctx.torch_attr(spec.new), args=args)
        elif spec.form == "guarded":
            call = updated.with_changes(func=ctx.torch_attr(spec.new))
            new = ctx.guarded(call, cst.parse_expression(spec.default))
            shown += f" (or {spec.default} without an accelerator)"
        else:
            new = updated.with_changes(func=ctx.torch_attr(spec.new))
        message = f"Use the device-neutral `torch.{spec.new}`."
        fixed = ctx.fix(self, original, new, message=message, api=api)
        if spec.note and fixed is new:
            ctx.drift(self, original, spec.note, api=api)
        return fixed


_EQ = cst.AssignEqual(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
)


def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    """A ``name=value`` argument in PEP 8 spacing."""
    return cst.Arg(value, keyword=cst.Name(name), equal=_EQ)


def find_keyword(args: Sequence[cst.Arg], name: str) -> int | None:
    """Index of the ``name=`` argument in ``args``, else ``None``."""
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            return i
    return None


def has_star_kwargs(args: Sequence[cst.Arg]) -> bool:
    """Whether ``args`` has a ``**mapping``, which may hold any keyword."""
    return any(arg.star == "**" for arg in args)


def append_arg(args: Sequence[cst.Arg], arg: cst.Arg) -> list[cst.Arg]:
    """``args`` with ``arg`` last; a trailing comma stays last, one argument per line stays.

    Callers that add a keyword must first check it is not passed already
    (:func:`find_keyword`, :func:`has_star_kwargs`): Python rejects a repeated keyword
    only when compiling, so a rewrite that repeats one still parses.
    """
    out = list(args)
    if not out:
        return [arg]
    last = out[-1]
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if isinstance(last.comma, cst.Comma):  # a trailing comma: the new argument takes it
        between = out[-2].comma if len(out) > 1 else space
        out[-1] = last.with_changes(comma=between if isinstance(between, cst.Comma) else space)
        return [*out, arg.with_changes(comma=last.comma)]
    out[-1] = last.with_changes(comma=space)
    return [*out, arg]


def cuda_string(node: cst.BaseExpression) -> str | None:
    """The value of a plain string literal that names a CUDA device, else ``None``."""
    if isinstance(node, cst.SimpleString) and node.prefix.lower() in ("", "u"):
        value = node.evaluated_value
        if isinstance(value, str) and (value == "cuda" or value.startswith("cuda:")):
            return value
    return None


def _index_of(value: str) -> cst.BaseExpression | None:
    _, _, index = value.partition(":")
    return cst.Integer(index) if index.isdigit() else None


def device_expr(
    ctx: RuleContext, original: cst.BaseExpression, updated: cst.BaseExpression, *, want: str
) -> cst.BaseExpression | None:
    """Convert a CUDA device expression in a device slot, or return ``None``.

    Args:
        ctx: The rule context.
        original: The slot's original expression.
        updated: The slot's expression as updated so far.
        want: ``"str"`` to keep a string (``"cuda"`` -> ``_device.type``), ``"device"``
            for a ``torch.device`` (``"cuda:1"`` -> ``torch.device(_device.type, 1)``).

    Handles ``"cuda"``, ``"cuda:N"``, ``f"cuda:{i}"`` and ``"cuda" if <cond> else "cpu"``
    (either order; simplified to the prologue device when ``<cond>`` is
    ``torch.cuda.is_available()``). The result has the type the slot had: with
    ``want="device"`` always a ``torch.device`` (``torch.device("cuda" if c else "cpu")``
    -> ``torch.device(_device.type if c else "cpu")``), with ``want="str"`` a string.
    """
    value = cuda_string(original)
    if value is not None:
        index = _index_of(value)
        if index is None:
            return ctx.device() if want == "device" else ctx.device_type()
        if want == "device":
            return ctx.indexed_device(index)
        return _fstring(ctx, [cst.FormattedStringText(value[4:])])
    if isinstance(original, cst.FormattedString) and isinstance(updated, cst.FormattedString):
        parts = list(updated.parts)
        first = parts[0] if parts else None
        if isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda:"):
            rest = [cst.FormattedStringText(first.value[4:]), *parts[1:]]
            if (
                want == "device"
                and len(parts) == 2
                and first.value == "cuda:"
                and isinstance(parts[1], cst.FormattedStringExpression)
                and parts[1].conversion is None
                and parts[1].format_spec is None
            ):
                return ctx.indexed_device(parts[1].expression)
            text = _fstring(ctx, rest, start=updated.start, end=updated.end)
            return _as_device(ctx, text) if want == "device" else text
        return None
    if isinstance(original, cst.IfExp) and isinstance(updated, cst.IfExp):
        body, other = original.body, original.orelse
        if cuda_string(body) is not None and _is_cpu(other):
            if cuda_string(body) == "cuda" and ctx.qname(
                original.test.func if isinstance(original.test, cst.Call) else original.test
            ) in ("torch.cuda.is_available",):
                return ctx.device() if want == "device" else ctx.device_type()
            branch = device_expr(ctx, body, updated.body, want="str")
            choice = updated.with_changes(body=branch)
        elif cuda_string(other) is not None and _is_cpu(body):  # "cpu" if no_cuda else "cuda"
            branch = device_expr(ctx, other, updated.orelse, want="str")
            choice = updated.with_changes(orelse=branch)
        else:
            return None
        # A torch.device stays a torch.device, a string stays a string.
        return _as_device(ctx, choice) if want == "device" else choice
    return None


def _is_cpu(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "cpu"


def _as_device(ctx: RuleContext, text: cst.BaseExpression) -> cst.Call:
    """``torch.device(<text>)``: where the original built a device from a string."""
    if isinstance(text, cst.IfExp):
        text = text.with_changes(lpar=[], rpar=[])
    return cst.Call(func=ctx.torch_attr("device"), args=[cst.Arg(text)])


def _fstring(
    ctx: RuleContext,
    rest: list[cst.BaseFormattedStringContent],
    start: str = 'f"',
    end: Literal['"', "'", '"""', "'''"] = '"',
) -> cst.FormattedString:
    head = cst.FormattedStringExpression(expression=ctx.device_type())
    return cst.FormattedString(parts=[head, *rest], start=start, end=end)
