"""``accelerator/pin-memory``: pinned host memory only when an accelerator is there.

Example::

    DataLoader(ds, pin_memory=True)
    DataLoader(ds, pin_memory=torch.accelerator.is_available())
    DataLoader(ds, pin_memory_device="cuda")   DataLoader(ds, pin_memory_device=_device.type)
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules._base import cuda_string

RULE_ID = "accelerator/pin-memory"
DESCRIPTION = "pin_memory=True -> pin_memory=torch.accelerator.is_available(); pin_memory_device."


_DRIFT = (
    "Drift: host memory is now pinned for whichever accelerator is found (a backend without "
    "pinned-memory support warns and skips it) and never on the CPU, where the original "
    "warned and did not pin either. Numbers do not change; whether `non_blocking=True` "
    "copies overlap with compute does."
)


class ReplacePinMemoryRule(MigrationRule):
    """Rewrites ``pin_memory``/``pin_memory_device`` keywords (DataLoader and friends)."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("pin_memory",)
    TOKENS = (
        Need(names=("pin_memory", "True")),
        Need(names=("pin_memory_device",), strings=("cuda",)),
    )

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        args = list(updated.args)
        changed = False
        if len(original.args) != len(updated.args):
            return None  # an earlier rule changed the arguments
        for i, arg in enumerate(original.args):
            name = arg.keyword.value if arg.keyword is not None else None
            new: cst.BaseExpression | None = None
            if (
                name == "pin_memory"
                and isinstance(arg.value, cst.Name)
                and arg.value.value == "True"
            ):
                new = cst.Call(func=ctx.torch_attr("accelerator.is_available"))
                message = "Pin host memory only when an accelerator exists (no warning on the CPU)."
            elif name == "pin_memory_device" and cuda_string(arg.value) is not None:
                new = ctx.device_type()
                message = "Pin for the prologue device."
            if new is None:
                continue
            fixed = ctx.fix(self, arg.value, new, message=message, api=f"{name}=")
            if fixed is new and name == "pin_memory":
                ctx.drift(self, arg.value, _DRIFT, api="pin_memory=")
            args[i] = args[i].with_changes(value=fixed)
            changed = True
        return updated.with_changes(args=args) if changed else None
