"""``accelerator/map-location``: ``torch.load(..., map_location="cuda")`` -> the prologue device.

Example::

    torch.load(path, map_location="cuda")       torch.load(path, map_location=_device)
    torch.load(path, map_location=f"cuda:{i}")
        torch.load(path, map_location=f"{_device.type}:{i}" if _device.type != "cpu" else _device)
    torch.load(path, map_location=lambda s, l: s.cuda())   # manual: use map_location=_device

A dict of locations or a ``%``-formatted location that names CUDA is reported, also where
it is assigned to a name that a load then passes as ``map_location=``.
Checkpoints saved on CUDA and loaded without ``map_location`` fail on a machine without
CUDA; such calls get ``map_location=_device`` added.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules._base import append_arg, cuda_string, device_expr, keyword
from tensorsight.migrate.rules.accelerator.ddp_device_ids import off_cpu

RULE_ID = "accelerator/map-location"
DESCRIPTION = (
    "torch.load map_location='cuda' (or none) -> map_location=_device; 'cuda:N' keeps N "
    "off the CPU."
)


class ReplaceMapLocationRule(MigrationRule):
    """Makes checkpoint loading land on the prologue device."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("torch.load", "load(")
    TOKENS = (Need.api("torch.load"),)

    def leave_Assign(
        self, original: cst.Assign, updated: cst.Assign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        # `loc = {"cuda:%d" % 0: "cuda:%d" % rank}` ... `torch.load(p, map_location=loc)`
        if len(original.targets) != 1 or not _cuda_inside(original.value):
            return None
        if ctx.flow_holds("map_location", original.targets[0].target):
            _report_cuda_locations(self, ctx, original.value)
        return None

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if ctx.qname(original.func) != "torch.load":
            return None
        if len(original.args) != len(updated.args):
            return None  # an earlier rule changed the arguments
        for i, arg in enumerate(original.args):
            if arg.keyword is None or arg.keyword.value != "map_location":
                continue
            if isinstance(arg.value, cst.Lambda):
                ctx.report(
                    self,
                    arg.value,
                    status="manual",
                    api="torch.load(map_location=lambda)",
                    message="Replace the lambda with `map_location=_device` (the prologue device).",
                )
                return None
            if _cuda_inside(arg.value):  # {"cuda:0": "cuda:%d" % rank}, "cuda:%d" % i
                _report_cuda_locations(self, ctx, arg.value)
                return None
            index = _index(arg.value)
            want = "device" if index is None else "str"
            value = device_expr(ctx, arg.value, updated.args[i].value, want=want)
            if value is None:
                return None
            message = "Load onto the prologue device."
            if index is not None:
                # torch.load cannot restore to "cpu:1": keep the index off the CPU only.
                value = off_cpu(ctx, value, ctx.device()).with_changes(lpar=[], rpar=[])
                message = (
                    f"Load onto device {index} of the accelerator found, onto the CPU device "
                    'on the CPU (torch.load cannot restore to "cpu:1").'
                )
            fixed = ctx.fix(self, arg.value, value, message=message, api="torch.load(map_location)")
            args = list(updated.args)
            args[i] = args[i].with_changes(value=fixed)
            return updated.with_changes(args=args)
        if any(a.star for a in original.args):  # `*args`/`**kwargs` may pass map_location
            ctx.report(
                self,
                original,
                status="manual",
                api="torch.load",
                message="Checkpoints saved on CUDA fail to load without CUDA: pass "
                "`map_location=_device` (the prologue device) unless the unpacked arguments "
                "already do.",
            )
            return None
        if len(original.args) >= 2 and original.args[1].keyword is None:
            return None  # map_location given positionally and not a CUDA string we know
        added = keyword("map_location", ctx.device())
        new = updated.with_changes(args=append_arg(updated.args, added))
        fixed = ctx.fix(
            self,
            original,
            new,
            message="Checkpoints saved on CUDA load onto the prologue device.",
            api="torch.load",
        )
        if fixed is new:
            ctx.drift(self, original, _DRIFT, api="torch.load")
        return fixed


_DRIFT = (
    "Drift: with map_location=_device, tensors saved on the CPU also land on the accelerator "
    '(before, they stayed on the CPU); load with map_location="cpu" and move what you need '
    "if the code relies on CPU tensors."
)


def _report_cuda_locations(rule: MigrationRule, ctx: RuleContext, node: cst.CSTNode) -> None:
    ctx.report(
        rule,
        node,
        status="manual",
        api="torch.load(map_location)",
        message="This location names CUDA devices: map onto the prologue device "
        '(`f"{_device.type}:{i}" if _device.type != "cpu" else _device`).',
    )


def _index(node: cst.BaseExpression) -> str | None:
    value = cuda_string(node)
    if value is not None and ":" in value:
        return value.partition(":")[2]
    if isinstance(node, cst.FormattedString):
        return "{...}"
    return None


def _cuda_inside(node: cst.BaseExpression) -> bool:
    """A dict or ``%``-formatting of locations that holds a CUDA device string."""
    if not isinstance(node, cst.Dict | cst.BinaryOperation):
        return False
    if isinstance(node, cst.BinaryOperation) and not isinstance(node.operator, cst.Modulo):
        return False
    strings = [n for n in _walk(node) if isinstance(n, cst.SimpleString)]
    return any(str(s.evaluated_value).startswith("cuda") for s in strings)


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    out = [node]
    for child in node.children:
        out.extend(_walk(child))
    return out
