"""``accelerator/device-strings``: CUDA device strings and objects in device slots only.

Slots: ``torch.device(...)``, a ``device=``/``device_type=`` keyword of any call, the first
argument of ``.to(...)`` and of ``init_device_mesh(...)``/``DeviceMesh(...)``, a variable
or attribute whose name contains ``device``, and the default of an ``--device``
command-line option. Other strings that mention "cuda" are
left alone (unlike tools that rename every such string).

Example::

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")   # before
    device = _device                                                         # after
    x = torch.zeros(3, device="cuda:1")                                      # before
    x = torch.zeros(3, device=f"{_device.type}:1")                           # after
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules._base import cuda_string, device_expr

RULE_ID = "accelerator/device-strings"
DESCRIPTION = "CUDA device strings/objects in device slots -> the prologue device (_device)."

#: Their first argument is a device type: ``init_device_mesh("cuda", (2, 4))``.
_MESHES = (
    "torch.distributed.device_mesh.init_device_mesh",
    "torch.distributed.init_device_mesh",
    "torch.distributed.device_mesh.DeviceMesh",
    "torch.distributed.DeviceMesh",
)
_MESSAGE = "Use the device the prologue found (an accelerator, else the CPU)."


class ReplaceDeviceStringsRule(MigrationRule):
    """Rewrites ``"cuda"``, ``"cuda:N"``, ``f"cuda:{i}"`` and the is_available idiom."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = (Need(strings=("cuda",)),)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if len(original.args) != len(updated.args):
            return None  # an earlier rule changed the arguments; it owns this call
        api = ctx.qname(original.func)
        if api == "torch.device":
            return self._torch_device(original, updated, ctx)
        args = list(updated.args)
        changed = False
        is_to = isinstance(original.func, cst.Attribute) and original.func.attr.value == "to"
        is_option = (
            isinstance(original.func, cst.Attribute)
            and original.func.attr.value == "add_argument"
            and any(
                isinstance(a.value, cst.SimpleString)
                and str(a.value.evaluated_value).lstrip("-") == "device"
                for a in original.args
            )
        )
        is_mesh = api in _MESHES
        for i, (old, new) in enumerate(zip(original.args, updated.args, strict=True)):
            name = old.keyword.value if old.keyword is not None else None
            slot = (
                name in ("device", "device_type")
                or ((is_to or is_mesh) and i == 0 and name is None)
                or (is_option and name == "default")
            )
            if not slot:
                continue
            value = device_expr(ctx, old.value, new.value, want="str")
            if value is None:
                continue
            fixed = ctx.fix(
                self, old.value, value, message=_MESSAGE, api=f'"{_literal(old.value)}"'
            )
            args[i] = new.with_changes(value=fixed)
            changed = True
        return updated.with_changes(args=args) if changed else None

    def _torch_device(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if not original.args or original.args[0].keyword is not None:
            return None
        first_old, first_new = original.args[0], updated.args[0]
        if len(original.args) == 1:
            value = device_expr(ctx, first_old.value, first_new.value, want="device")
            if value is None:
                return None
            return ctx.fix(self, original, value, message=_MESSAGE, api="torch.device")
        if cuda_string(first_old.value) == "cuda":
            args = [first_new.with_changes(value=ctx.device_type()), *updated.args[1:]]
            return ctx.fix(self, original, updated.with_changes(args=args), message=_MESSAGE)
        return None

    def leave_Assign(
        self, original: cst.Assign, updated: cst.Assign, ctx: RuleContext
    ) -> cst.Assign | None:
        if len(original.targets) != 1:
            return None
        target = original.targets[0].target
        name = target.value if isinstance(target, cst.Name) else None
        if isinstance(target, cst.Attribute):
            name = target.attr.value
        if name is None or "device" not in name.lower():
            return None
        value = device_expr(ctx, original.value, updated.value, want="str")
        if value is None:
            return None
        fixed = ctx.fix(
            self, original.value, value, message=_MESSAGE, api=f'"{_literal(original.value)}"'
        )
        return updated.with_changes(value=fixed)


def _literal(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.SimpleString):
        return str(node.evaluated_value)
    if isinstance(node, cst.FormattedString):
        return "f-string"
    return "cuda"
