"""``accelerator/distributed-backend``: the NCCL backend choice -> the device's default.

Example::

    dist.init_process_group("nccl")
    dist.init_process_group(torch.distributed.get_default_backend_for_device(_device))

Comparisons such as ``dist.get_backend() == "nccl"`` are unsafe fixes: the code often
means "on GPUs", which the rewrite expresses as "the default backend of this device".
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "accelerator/distributed-backend"
DESCRIPTION = "backend='nccl' -> torch.distributed.get_default_backend_for_device(_device)."

_CALLS = ("torch.distributed.init_process_group", "torch.distributed.new_group")


def default_backend(ctx: RuleContext) -> cst.Call:
    """``torch.distributed.get_default_backend_for_device(_device)``."""
    return cst.Call(
        func=ctx.torch_attr("distributed.get_default_backend_for_device"),
        args=[cst.Arg(ctx.device())],
    )


def _is_nccl(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "nccl"


class ReplaceDistributedBackendRule(MigrationRule):
    """Rewrites the process-group backend and comparisons with ``"nccl"``."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("nccl",)
    TOKENS = (Need(strings=("nccl",)),)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        if api not in _CALLS:
            return None
        if len(original.args) != len(updated.args):
            return None  # an earlier rule changed the arguments
        args = list(updated.args)
        for i, arg in enumerate(original.args):
            slot = (arg.keyword is None and i == 0 and api.endswith("init_process_group")) or (
                arg.keyword is not None and arg.keyword.value == "backend"
            )
            if slot and _is_nccl(arg.value):
                value = ctx.fix(
                    self,
                    arg.value,
                    default_backend(ctx),
                    message="Use the default collective backend of the device found "
                    "(nccl on CUDA, hccl on NPU, xccl on XPU, gloo on the CPU).",
                    api=f"{api}(backend='nccl')",
                )
                args[i] = args[i].with_changes(value=value)
                return updated.with_changes(args=args)
        return None

    def leave_Comparison(
        self, original: cst.Comparison, updated: cst.Comparison, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        targets = list(updated.comparisons)
        for i, target in enumerate(original.comparisons):
            if _is_nccl(target.comparator) and isinstance(
                target.operator, cst.Equal | cst.NotEqual
            ):
                value = ctx.fix(
                    self,
                    target.comparator,
                    default_backend(ctx),
                    updated=updated.comparisons[i].comparator,
                    message="Compare with the device's default backend instead of 'nccl'.",
                    api="'nccl' comparison",
                    safety="unsafe",
                    why_unsafe="the comparison may really mean NCCL and nothing else",
                )
                targets[i] = targets[i].with_changes(comparator=value)
                return updated.with_changes(comparisons=targets)
        return None
