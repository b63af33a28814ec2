"""``accelerator/backend-flow``: an NCCL backend name that reaches the process group through a name.

``accelerator/distributed-backend`` rewrites ``init_process_group("nccl")``; this rule
follows the value when it is stored first (:mod:`tensorsight.migrate._flow`): an
assignment ``backend = "nccl"``, a dataclass field ``backend: str = "nccl"``, a config
dict ``{"backend": "nccl"}`` or keyword ``Config(backend="nccl")``, or an argparse option
``add_argument("--dist-backend", default="nccl", choices=["nccl", "gloo"])`` whose
``dest`` is later passed as ``init_process_group(backend=...)``.

- The name is passed as a backend in the same file: safe fix (the stored value becomes
  ``torch.distributed.get_default_backend_for_device(_device)``; a ``choices`` list gains
  it too, so the option still accepts its own default).
- The name says ``backend`` but this file does not pass it on (a config module): unsafe
  fix, reported with the line to write.
- Any other stored ``"nccl"``: reported (``manual``).

Example::

    backend = "nccl"                                          # before
    backend = torch.distributed.get_default_backend_for_device(_device)   # after
    dist.init_process_group(backend=backend)
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate._flow import argparse_dest, cst_slot
from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.model import Safety
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules.accelerator.distributed_backend import default_backend

RULE_ID = "accelerator/backend-flow"
DESCRIPTION = "'nccl' stored in a name passed to init_process_group -> the device's backend."

_NEW = "torch.distributed.get_default_backend_for_device(_device)"


def multiple(slot: str | None, lines: tuple[int, ...], use: str = "") -> str:
    """Why a rewrite through a name assigned on ``lines`` (two or more) is not proved;
    ``use`` says where it is used, when that is another file."""
    at = ", ".join(str(n) for n in lines)
    used = f" ({use})" if " in " in use and "this file" not in use else ""
    return (
        f"`{slot}` is assigned {len(lines)} times (lines {at}), so this may not be the value "
        f"it holds where it is used{used}"
    )


def _is_nccl(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "nccl"


def option_dest(call: cst.Call) -> str | None:
    """The argparse ``dest`` of an ``add_argument(...)`` call, else ``None``."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"):
        return None
    opts = [
        str(a.value.evaluated_value)
        for a in call.args
        if a.keyword is None and isinstance(a.value, cst.SimpleString)
    ]
    dest = next(
        (
            str(a.value.evaluated_value)
            for a in call.args
            if a.keyword is not None
            and a.keyword.value == "dest"
            and isinstance(a.value, cst.SimpleString)
        ),
        None,
    )
    return argparse_dest(opts, dest)


def has_choice(node: cst.BaseExpression, literal: str) -> bool:
    """Whether ``node`` is a list/tuple display holding the string ``literal``."""
    return isinstance(node, cst.List | cst.Tuple) and any(
        isinstance(e.value, cst.SimpleString) and e.value.evaluated_value == literal
        for e in node.elements
    )


def with_choice(node: cst.List | cst.Tuple, extra: cst.BaseExpression) -> cst.BaseExpression:
    """A ``choices`` display with ``extra`` appended."""
    elements = list(node.elements)
    last = elements[-1]
    elements[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    elements.append(cst.Element(extra))
    return node.with_changes(elements=elements)


class FollowBackendRule(MigrationRule):
    """Rewrites (or reports) ``"nccl"`` stored in names, fields, dicts and options."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("nccl",)
    TOKENS = (Need(strings=("nccl",)),)

    def _site(
        self,
        ctx: RuleContext,
        value: cst.BaseExpression,
        slot: str | None,
        ref: cst.BaseExpression | None = None,
    ) -> cst.BaseExpression | None:
        """Fix or report one stored ``"nccl"`` (assigned to ``ref``, else stored under the
        attribute slot ``slot``); the replacement, or ``None`` when reported."""
        if ctx.is_claimed(value):
            return None
        safety: Safety
        key: cst.BaseExpression | str | None = ref if ref is not None else slot
        lines = ctx.assigned(ref) if ref is not None else ()
        why_unsafe = f"this file does not pass `{slot}` to init_process_group"
        if slot is not None and ctx.flow_holds("backend", key):
            assert key is not None
            where = f"`{slot}` is passed to init_process_group {ctx.used_where('backend', key)}"
            safety = "safe"
            if len(lines) > 1:
                safety, why_unsafe = "unsafe", multiple(slot, lines, where)
        elif slot is not None and "backend" in slot.lower():
            safety, where = "unsafe", f"`{slot}` names a backend"
        else:
            ctx.report(
                self,
                value,
                status="manual",
                api="'nccl' value",
                message=f"The NCCL backend name is stored{f' in `{slot}`' if slot else ''}: "
                f"where it selects the process-group backend, use `{_NEW}`.",
            )
            return None
        return ctx.fix(
            self,
            value,
            default_backend(ctx),
            message=f"Store the default collective backend of the device found ({where}; "
            "nccl on CUDA, hccl on NPU, xccl on XPU, gloo on the CPU).",
            api="'nccl' value",
            safety=safety,
            why_unsafe=why_unsafe,
        )

    def _assign(
        self, ctx: RuleContext, target: cst.BaseExpression, original: cst.BaseExpression | None
    ) -> cst.BaseExpression | None:
        if not _is_nccl(original):
            return None
        assert original is not None
        return self._site(ctx, original, cst_slot(target), target)

    def leave_Assign(
        self, original: cst.Assign, updated: cst.Assign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        if len(original.targets) != 1:
            return None
        new = self._assign(ctx, original.targets[0].target, original.value)
        return None if new is None or new is original.value else updated.with_changes(value=new)

    def leave_AnnAssign(
        self, original: cst.AnnAssign, updated: cst.AnnAssign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        new = self._assign(ctx, original.target, original.value)
        return None if new is None or new is original.value else updated.with_changes(value=new)

    def leave_Dict(
        self, original: cst.Dict, updated: cst.Dict, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        elements = list(updated.elements)
        changed = False
        for i, element in enumerate(original.elements):
            if not isinstance(element, cst.DictElement) or not _is_nccl(element.value):
                continue
            key = element.key
            slot = key.evaluated_value if isinstance(key, cst.SimpleString) else None
            new = self._site(ctx, element.value, slot if isinstance(slot, str) else None)
            if new is not None and new is not element.value:
                elements[i] = elements[i].with_changes(value=new)
                changed = True
        return updated.with_changes(elements=elements) if changed else None

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if len(original.args) != len(updated.args):
            return None  # an earlier rule changed the arguments
        dest = option_dest(original)
        args = list(updated.args)
        changed = False
        for i, arg in enumerate(original.args):
            if arg.keyword is None or not _is_nccl(arg.value):
                continue
            keyword = arg.keyword.value
            if dest is not None and keyword != "default":
                continue
            new = self._site(ctx, arg.value, dest if dest is not None else keyword)
            if new is None or new is arg.value:
                continue
            args[i] = args[i].with_changes(value=new)
            changed = True
            if dest is not None:
                self._choices(original, args, ctx)
        return updated.with_changes(args=args) if changed else None

    def _choices(self, original: cst.Call, args: list[cst.Arg], ctx: RuleContext) -> None:
        for i, arg in enumerate(original.args):
            value = args[i].value
            if arg.keyword is None or arg.keyword.value != "choices":
                continue
            if not has_choice(value, "nccl") or not isinstance(value, cst.List | cst.Tuple):
                continue
            new = with_choice(value, default_backend(ctx))
            args[i] = args[i].with_changes(
                value=ctx.fix(
                    self,
                    arg.value,
                    new,
                    message="Accept the device's default backend, the option's new default.",
                    api="add_argument(choices=[...'nccl'...])",
                )
            )
