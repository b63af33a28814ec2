"""``accelerator/device-flow``: CUDA device strings that reach a device slot through a name.

``accelerator/device-strings`` rewrites device strings where they are used and in names
that say ``device``; this rule follows the others (:mod:`tensorsight.migrate._flow`):

- ``loc = "cuda:{}".format(gpu)`` or ``loc = f"cuda:{rank}"`` whose name is later passed
  as a device (``map_location=loc``, ``.to(loc)``, ``device=loc``): safe fix, the string
  stays a string (``"{}:{}".format(_device.type, gpu)``); ``str.format`` templates are
  rewritten in device slots too.
- ``torch.load(..., map_location=loc)`` where ``loc`` holds an indexed device string:
  ``torch.load`` cannot restore to ``"cpu:1"``, so the location is kept on an accelerator
  and is the CPU device on the CPU (``loc if _device.type != "cpu" else _device``).
- An argparse option whose ``dest`` is used as a device (``--gpu-device``,
  ``default="cuda"``): its default becomes ``_device.type``; a ``choices`` list that holds
  ``"cuda"`` gains ``_device.type`` (also for ``--device``), so the new default is accepted.
- A CUDA device string stored anywhere else (a name, a dict entry) is reported.
- A name assigned more than once in its scope (:mod:`tensorsight.migrate._bindings`:
  ``loc = f"cuda:{rank}"`` and ``if cpu: loc = "cpu"``, a ``global``, ``+=``, a tuple,
  ``for``/``with`` target or ``:=``) does not hold the one value followed: the rewrites of
  its stored strings and option defaults are unsafe fixes, reported (``manual``) with the
  lines of the assignments. The ``torch.load`` guard stays a safe fix: it is right whatever
  the name holds (the original location on an accelerator; on the CPU, the only one).
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate._bindings import ANY
from tensorsight.migrate._flow import cst_slot, format_fields_are_positional
from tensorsight.migrate.context import RuleContext, code_of
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules._base import cuda_string, device_expr
from tensorsight.migrate.rules.accelerator.backend_flow import (
    has_choice,
    multiple,
    option_dest,
    with_choice,
)
from tensorsight.migrate.rules.accelerator.ddp_device_ids import off_cpu

RULE_ID = "accelerator/device-flow"
DESCRIPTION = "CUDA device strings stored in names passed as devices -> the prologue device type."

_MESSAGE = "Name the device the prologue found instead of CUDA"


def format_device(
    ctx: RuleContext, original: cst.BaseExpression, updated: cst.BaseExpression
) -> cst.Call | None:
    """``"cuda:{}".format(i)`` -> ``"{}:{}".format(_device.type, i)``, else ``None``."""
    if not isinstance(original, cst.Call) or not isinstance(updated, cst.Call):
        return None
    func = updated.func
    if not (
        isinstance(func, cst.Attribute)
        and func.attr.value == "format"
        and isinstance(func.value, cst.SimpleString)
    ):
        return None
    template = func.value
    value = template.evaluated_value
    if not isinstance(value, str) or not value.startswith("cuda:"):
        return None
    if not format_fields_are_positional(value) or "b" in template.prefix.lower():
        return None
    if any(a.keyword is not None or a.star for a in updated.args):
        return None
    head = len(template.prefix) + len(template.quote)
    body = template.value[head : -len(template.quote)]
    if not body.startswith("cuda:"):
        return None
    new_template = template.with_changes(
        value=template.prefix + template.quote + "{}" + body[4:] + template.quote
    )
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    args = [cst.Arg(ctx.device_type(), comma=comma), *updated.args]
    return updated.with_changes(func=func.with_changes(value=new_template), args=args)


def device_string(
    ctx: RuleContext, original: cst.BaseExpression, updated: cst.BaseExpression
) -> cst.BaseExpression | None:
    """A CUDA device string (literal, f-string or ``str.format``) as a device-neutral one."""
    return format_device(ctx, original, updated) or device_expr(ctx, original, updated, want="str")


def is_cuda_value(node: cst.BaseExpression) -> bool:
    """Whether ``node`` is one of the CUDA device string forms this rule rewrites."""
    if cuda_string(node) is not None:
        return True
    if isinstance(node, cst.FormattedString):
        first = node.parts[0] if node.parts else None
        return isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda:")
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
        and cuda_string(node.func.value) is not None
    )


class FollowDeviceStringsRule(MigrationRule):
    """Rewrites (or reports) CUDA device strings stored in names, dicts and options."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("cuda", "map_location")
    TOKENS = (Need(strings=("cuda",)),)  # every followed value starts as a CUDA string

    def _device_use(
        self, ctx: RuleContext, ref: cst.BaseExpression | str | None, slot: str | None
    ) -> str | None:
        """Why the slot is a device slot (``"used as a device in train.py:12"``), else
        ``None``."""
        if ref is None or slot is None:
            return None
        for kind in ("device", "map_location"):
            if ctx.flow_holds(kind, ref):
                return f"`{slot}` is used as a device {ctx.used_where(kind, ref)}"
        return f"`{slot}` is used as a device" if "device" in slot.lower() else None

    def _stored(
        self,
        ctx: RuleContext,
        original: cst.BaseExpression,
        updated: cst.BaseExpression,
        slot: str | None,
        target: cst.BaseExpression | None = None,
        dest: str | None = None,
    ) -> cst.BaseExpression | None:
        """Fix or report one stored CUDA string: assigned to ``target``, the default of the
        option ``dest``, else a dict entry."""
        if ctx.is_claimed(original) or not is_cuda_value(original):
            return None
        ref: cst.BaseExpression | str | None = target if target is not None else slot
        where = self._device_use(ctx, ref, slot)
        new = device_string(ctx, original, updated) if where is not None else None
        if new is None:
            ctx.report(
                self,
                original,
                status="manual",
                api="CUDA device string",
                message="A CUDA device string is stored"
                + (f" in `{slot}`" if slot else "")
                + ': where it names the device, use `_device` (or `f"{_device.type}:{index}"`).',
            )
            return None
        lines: tuple[int, ...] = ()
        shown = slot
        if target is not None:  # looked up only here: most visited assignments end above
            lines, shown = ctx.assigned(target), code_of(target)
        elif dest is not None:
            lines = ctx.bindings.lines.get((ANY, dest), ())
        return ctx.fix(
            self,
            original,
            new,
            updated=updated,
            message=f"{_MESSAGE} ({where}).",
            api="CUDA device string",
            safety="unsafe" if len(lines) > 1 else "safe",
            why_unsafe=multiple(shown, lines, where or ""),
        )

    def leave_Assign(
        self, original: cst.Assign, updated: cst.Assign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        if len(original.targets) != 1:
            return None
        target = original.targets[0].target
        new = self._stored(ctx, original.value, updated.value, cst_slot(target), target)
        return None if new is None else updated.with_changes(value=new)

    def leave_AnnAssign(
        self, original: cst.AnnAssign, updated: cst.AnnAssign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        if original.value is None or updated.value is None:
            return None
        target = original.target
        new = self._stored(ctx, original.value, updated.value, cst_slot(target), target)
        return None if new is None else updated.with_changes(value=new)

    def leave_Dict(
        self, original: cst.Dict, updated: cst.Dict, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        elements = list(updated.elements)
        changed = False
        for i, (old, new) in enumerate(zip(original.elements, updated.elements, strict=True)):
            if not isinstance(old, cst.DictElement) or not isinstance(new, cst.DictElement):
                continue
            key = old.key.evaluated_value if isinstance(old.key, cst.SimpleString) else None
            value = self._stored(ctx, old.value, new.value, key if isinstance(key, str) else None)
            if value is not None:
                elements[i] = new.with_changes(value=value)
                changed = True
        return updated.with_changes(elements=elements) if changed else None

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if len(original.args) != len(updated.args):
            return None  # an earlier rule changed the arguments
        dest = option_dest(original)
        if dest is not None:
            return self._option(original, updated, dest, ctx)
        is_load = ctx.qname(original.func) == "torch.load"
        is_to = isinstance(original.func, cst.Attribute) and original.func.attr.value == "to"
        is_device = ctx.qname(original.func) == "torch.device"
        args = list(updated.args)
        changed = False
        for i, (old, new) in enumerate(zip(original.args, updated.args, strict=True)):
            name = old.keyword.value if old.keyword is not None else None
            positional = name is None and i == 0 and (is_to or is_device)
            if not (positional or name in ("device", "map_location")):
                continue
            value: cst.BaseExpression | None = None
            if not ctx.is_claimed(old.value):
                value = format_device(ctx, old.value, new.value)
            if name == "map_location" and is_load:
                indexed = ctx.flow_holds("indexed", old.value)
                if value is not None or indexed:
                    # safe whatever else the name is assigned: on an accelerator the location
                    # is the original one, on the CPU every location can only be the CPU
                    guarded = off_cpu(ctx, value or new.value, ctx.device())
                    guarded = guarded.with_changes(lpar=[], rpar=[])
                    args[i] = new.with_changes(
                        value=ctx.fix(
                            self,
                            old.value,
                            guarded,
                            updated=new.value,
                            api="torch.load(map_location)",
                            message="torch.load cannot restore to an indexed CPU device "
                            '("cpu:1"): keep the location on an accelerator, load onto the '
                            "CPU device on the CPU.",
                        )
                    )
                    changed = True
                continue
            if value is not None:
                args[i] = new.with_changes(
                    value=ctx.fix(
                        self, old.value, value, message=f"{_MESSAGE}.", api="CUDA device string"
                    )
                )
                changed = True
        return updated.with_changes(args=args) if changed else None

    def _option(
        self, original: cst.Call, updated: cst.Call, dest: str, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        keyword = {a.keyword.value: i for i, a in enumerate(original.args) if a.keyword}
        if "default" not in keyword:
            return None
        d = keyword["default"]
        old_default = original.args[d].value
        if not is_cuda_value(old_default):
            return None
        args = list(updated.args)
        changed = False
        if not ctx.is_claimed(old_default):  # `--device` defaults belong to device-strings
            value = self._stored(ctx, old_default, updated.args[d].value, dest, dest=dest)
            if value is None or value is updated.args[d].value:
                return None  # reported, not rewritten: the choices stay as they are
            args[d] = args[d].with_changes(value=value)
            changed = True
        c = keyword.get("choices")
        choices = updated.args[c].value if c is not None else None
        listed = isinstance(choices, cst.List | cst.Tuple) and has_choice(choices, "cuda")
        if c is not None and listed and isinstance(choices, cst.List | cst.Tuple):
            new = with_choice(choices, ctx.device_type())
            args[c] = args[c].with_changes(
                value=ctx.fix(
                    self,
                    original.args[c].value,
                    new,
                    api="add_argument(choices=[...'cuda'...])",
                    message="Accept the prologue's device type, the option's new default.",
                )
            )
            changed = True
        return updated.with_changes(args=args) if changed else None
