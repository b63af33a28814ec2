"""``accelerator/typed-tensors``: legacy ``torch.cuda.FloatTensor`` and friends.

Example::

    torch.cuda.FloatTensor([1, 2])     torch.tensor([1, 2], dtype=torch.float32, device=_device)
    torch.cuda.LongTensor(4, 5)        torch.empty(4, 5, dtype=torch.int64, device=_device)
    x.type(torch.cuda.FloatTensor)     x.to(device=_device, dtype=torch.float32)   # unsafe

Other uses (``isinstance(x, torch.cuda.FloatTensor)``) are reported as manual.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules._base import keyword
from tensorsight.migrate.rules.accelerator.tables import TYPED_TENSORS

RULE_ID = "accelerator/typed-tensors"
DESCRIPTION = "torch.cuda.<T>Tensor -> torch.tensor/torch.empty(dtype=..., device=_device)."


def _dtype_of(ctx: RuleContext, node: cst.BaseExpression) -> str | None:
    api = ctx.qname(node)
    if api is None or not api.startswith("torch.cuda."):
        return None
    return TYPED_TENSORS.get(api.rsplit(".", 1)[1])


class ReplaceTypedTensorsRule(MigrationRule):
    """Rewrites CUDA legacy tensor types into dtype + device."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("Tensor",)
    TOKENS = tuple(Need.api(f"torch.cuda.{name}") for name in TYPED_TENSORS)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        dtype = _dtype_of(ctx, original.func)
        if dtype is not None:
            return self._constructor(original, updated, ctx, dtype)
        func = original.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "type"
            and len(original.args) == 1
            and isinstance(updated.func, cst.Attribute)
        ):
            dtype = _dtype_of(ctx, original.args[0].value)
            if dtype is None:
                return None
            ctx.claim(original.args[0].value)
            new = updated.with_changes(
                func=updated.func.with_changes(attr=cst.Name("to")),
                args=[
                    _comma(keyword("device", ctx.device())),
                    keyword("dtype", ctx.torch_attr(dtype)),
                ],
            )
            return ctx.fix(
                self,
                original,
                new,
                updated=updated,
                api="torch.Tensor.type",
                message="Convert with dtype and device instead of a CUDA tensor type.",
                safety="unsafe",
                why_unsafe="the receiver may not be a tensor",
            )
        return None

    def _constructor(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext, dtype: str
    ) -> cst.BaseExpression | None:
        positional = [a for a in original.args if a.keyword is None]
        data = len(positional) == 1 and isinstance(
            positional[0].value, cst.List | cst.Tuple | cst.ListComp
        )
        sizes = all(isinstance(a.value, cst.Integer | cst.Name) for a in positional) and not data
        if not (data or sizes) or len(positional) != len(original.args):
            ctx.report(
                self,
                original,
                status="manual",
                message=f"Use `torch.tensor(data, dtype=torch.{dtype}, device=_device)` or "
                f"`torch.empty(*size, dtype=torch.{dtype}, device=_device)`.",
            )
            return None
        args = [_comma(a) for a in updated.args]
        args += [_comma(keyword("dtype", ctx.torch_attr(dtype))), keyword("device", ctx.device())]
        func = ctx.torch_attr("tensor" if data else "empty")
        return ctx.fix(
            self,
            original,
            updated.with_changes(func=func, args=args),
            message="Legacy CUDA tensor types exist only on CUDA.",
        )

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        dtype = _dtype_of(ctx, original)
        if dtype is not None:
            ctx.report(
                self,
                original,
                weak=True,
                status="manual",
                message=f"Test `x.dtype == torch.{dtype} and x.device.type == _device.type` "
                "instead of the CUDA tensor type.",
            )
        return None


def _comma(arg: cst.Arg) -> cst.Arg:
    return arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
