"""``accelerator/custom-fwd``: ``torch.cuda.amp.custom_fwd/custom_bwd`` -> ``torch.amp.*``.

Example::

    @torch.cuda.amp.custom_fwd                  @torch.amp.custom_fwd(device_type=_device.type)
    @custom_fwd(cast_inputs=torch.float32)      @torch.amp.custom_fwd(device_type=_device.type,
                                                                      cast_inputs=torch.float32)
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules._base import append_arg, keyword

RULE_ID = "accelerator/custom-fwd"
DESCRIPTION = "torch.cuda.amp.custom_fwd/bwd -> torch.amp.custom_fwd/bwd(device_type=_device.type)."

_NEW = {
    "torch.cuda.amp.custom_fwd": "amp.custom_fwd",
    "torch.cuda.amp.custom_bwd": "amp.custom_bwd",
}


class ReplaceCustomFwdRule(MigrationRule):
    """Rewrites the AMP decorators of custom autograd functions."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = tuple(Need.api(api) for api in _NEW)

    def leave_Decorator(
        self, original: cst.Decorator, updated: cst.Decorator, ctx: RuleContext
    ) -> cst.Decorator | None:
        deco = original.decorator
        func = deco.func if isinstance(deco, cst.Call) else deco
        api = ctx.qname(func)
        if api not in _NEW:
            return None
        device = keyword("device_type", ctx.device_type())
        if isinstance(updated.decorator, cst.Call):
            old_args = list(updated.decorator.args)
            # A keyword may not precede a positional argument (`custom_fwd(fwd)`).
            at = next((i for i, a in enumerate(old_args) if a.keyword is not None or a.star), None)
            if at is None:
                args = append_arg(old_args, device)
            else:
                args = [*old_args[:at], _spaced(device), *old_args[at:]]
                if at > 0:
                    args[at - 1] = _spaced(args[at - 1])
            call = updated.decorator.with_changes(func=ctx.torch_attr(_NEW[api]), args=args)
        else:
            call = cst.Call(func=ctx.torch_attr(_NEW[api]), args=[device])
        return ctx.fix(
            self, original, updated.with_changes(decorator=call), message="Use torch.amp.", api=api
        )


def _spaced(arg: cst.Arg) -> cst.Arg:
    return arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
