"""``accelerator/autocast``: AMP autocast on the prologue device, with a dtype warning.

Example::

    with torch.cuda.amp.autocast():              with torch.autocast(_device.type):
    with torch.autocast("cuda", dtype=bf16):     with torch.autocast(_device.type, dtype=bf16):

Semantic drift: without ``dtype=``, autocast uses float16 on CUDA but bfloat16 on the CPU
(and other defaults elsewhere); the report warns so you can pin the dtype.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules._base import append_arg, cuda_string, keyword

RULE_ID = "accelerator/autocast"
DESCRIPTION = "torch.cuda.amp.autocast / autocast('cuda') -> torch.autocast(_device.type)."

_OPS = (
    "Each device type also has its own list of ops that autocast runs in low precision "
    "(the CPU casts fewer ops than CUDA), so compare losses, not bits, across devices."
)
_DRIFT = (
    "Drift: without dtype=, autocast uses float16 on CUDA but bfloat16 on the CPU (and the "
    "backend's default elsewhere); pass dtype=torch.float16 or dtype=torch.bfloat16 to get "
    "the same precision everywhere. " + _OPS
)
_OPS_DRIFT = "Drift: " + _OPS

_CUDA_AUTOCAST_ARGS = ("enabled", "dtype", "cache_enabled")


class ReplaceAutocastRule(MigrationRule):
    """Rewrites autocast context managers and decorators."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = (
        Need.api("torch.cuda.amp.autocast"),
        Need(names=("torch", "autocast"), strings=("cuda",)),
    )

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        new: cst.Call | None
        if api == "torch.cuda.amp.autocast":
            if any(a.star == "*" for a in updated.args):
                ctx.report(
                    self,
                    original,
                    status="manual",
                    api=api,
                    message="Use `torch.autocast(_device.type, ...)` with the other arguments "
                    "by keyword (its positional order is device_type, dtype, enabled).",
                )
                return None
            # torch.cuda.amp.autocast(enabled, dtype, cache_enabled): torch.autocast takes
            # (device_type, dtype, enabled, ...), so positional arguments become keywords.
            args = [cst.Arg(ctx.device_type())]
            for i, arg in enumerate(updated.args):
                if arg.keyword is None and not arg.star:
                    arg = keyword(_CUDA_AUTOCAST_ARGS[min(i, 2)], arg.value)
                args = append_arg(args, arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))
            new = updated.with_changes(func=ctx.torch_attr("autocast"), args=args)
        elif api in ("torch.autocast", "torch.amp.autocast"):
            new = _replace_device_arg(original, updated, ctx, "device_type")
            if new is None:
                return None
        else:
            return None
        dtype_at = 1  # positional dtype: (enabled, dtype) before, (device_type, dtype) now
        has_dtype = any(
            (a.keyword is not None and a.keyword.value == "dtype")
            or (a.keyword is None and not a.star and i == dtype_at)
            for i, a in enumerate(original.args)
        )
        fixed = ctx.fix(self, original, new, message="Autocast on the prologue device.", api=api)
        if fixed is new:
            ctx.drift(self, original.func, _OPS_DRIFT if has_dtype else _DRIFT, api=api)
        return fixed


def _replace_device_arg(
    original: cst.Call, updated: cst.Call, ctx: RuleContext, name: str
) -> cst.Call | None:
    """Replace a ``"cuda"`` first/``name=`` argument with ``_device.type``."""
    if len(original.args) != len(updated.args):
        return None
    for i, arg in enumerate(original.args):
        first = i == 0 and arg.keyword is None
        if (first or (arg.keyword is not None and arg.keyword.value == name)) and cuda_string(
            arg.value
        ) == "cuda":
            args = list(updated.args)
            args[i] = args[i].with_changes(value=ctx.device_type())
            return updated.with_changes(args=args)
    return None
