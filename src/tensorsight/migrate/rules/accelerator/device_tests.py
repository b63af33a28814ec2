"""``accelerator/device-type-tests``: tests for "is this CUDA?" -> "is this an accelerator?".

After migration a device variable holds the accelerator's type (``"npu"``, ``"xpu"``,
``"mps"``...) where it held ``"cuda"``, so a test that still compares with ``"cuda"`` is
false on those machines and silently switches off what it guards: autocast, fused
optimizers, pinned memory. nanoGPT's ``device_type = "cuda" if "cuda" in device else
"cpu"`` is the typical case. The rule rewrites the test to ask for an accelerator, which
is what it meant in CUDA-only code (on a CUDA machine the result is the same):

==========================================  ============================================
before                                      after
==========================================  ============================================
``"cuda" if "cuda" in device else "cpu"``   ``torch.device(device).type``
``"cuda" in device``                        ``torch.device(device).type != "cpu"``
``device_type == "cuda"``                   ``device_type != "cpu"``
``x.device.type != "cuda"``                 ``x.device.type == "cpu"``
``device.type in ("cuda",)``                ``device.type != "cpu"``
``args.device == "cuda"``                   ``torch.device(args.device).type != "cpu"``
==========================================  ============================================

Which values are device types or device strings comes from :mod:`tensorsight.migrate._flow`
(every assignment of the name is a device type; the name is assigned a CUDA device string
or passed as a device) or from the name itself (``device_type``, ``*.type`` of a name that
says ``device``, a name that says ``device``). ``== "cuda"`` on a device *string* is an
unsafe fix (``"cuda:1" == "cuda"`` was false); a comparison with ``"cuda"`` of anything
else is reported. Each rewrite says what now also runs on the other devices.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate._flow import cst_slot
from tensorsight.migrate.context import RuleContext, code_of
from tensorsight.migrate.model import Safety
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "accelerator/device-type-tests"
DESCRIPTION = 'Tests for "cuda" on device values -> tests for an accelerator ("not the CPU").'

_DRIFT = (
    "Drift: what the test guards (autocast, fused optimizers, pinned memory, cuDNN knobs...) "
    "now also runs on NPU/XPU/MPS; check the target supports it."
)


def _is_cuda(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "cuda"


def _cuda_among(node: cst.BaseExpression) -> list[str] | None:
    """The strings of a literal tuple/list/set of strings holding "cuda", else ``None``."""
    if not isinstance(node, cst.Tuple | cst.List | cst.Set):
        return None
    names = []
    for element in node.elements:
        if not isinstance(element.value, cst.SimpleString):
            return None
        names.append(str(element.value.evaluated_value))
    return names if "cuda" in names else None


def _cpu(op: cst.BaseCompOp) -> cst.ComparisonTarget:
    return cst.ComparisonTarget(op, cst.SimpleString('"cpu"'))


def _says_device(slot: str | None) -> bool:
    if slot is None:
        return False
    lower = slot.lower()
    return "device" in lower and not lower.endswith(("s", "ids", "count"))


def is_device_type(ctx: RuleContext, node: cst.BaseExpression) -> bool:
    """Whether ``node`` holds a device type (``"cuda"``, ``"cpu"``...), not a device string."""
    if isinstance(node, cst.Attribute) and node.attr.value == "type":
        inner = node.value
        if isinstance(inner, cst.Call):
            return ctx.qname(inner.func) == "torch.device"
        return _says_device(cst_slot(inner))
    slot = cst_slot(node)
    if slot is None:
        return False
    return ctx.flow_holds("device_type", node) or slot.lower().endswith("device_type")


def is_device_string(ctx: RuleContext, node: cst.BaseExpression) -> bool:
    """Whether ``node`` holds a device string (``"cuda"``, ``"cuda:1"``, ``"cpu"``...)."""
    slot = cst_slot(node)
    if slot is None or is_device_type(ctx, node):
        return False
    return (
        ctx.flow_holds("cuda_string", node) or ctx.flow_holds("device", node) or _says_device(slot)
    )


class ReplaceDeviceTypeTestsRule(MigrationRule):
    """Rewrites comparisons of device values with ``"cuda"``."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("cuda",)
    TOKENS = (Need(strings=("cuda",)),)

    def __init__(self) -> None:
        self._tests: dict[int, cst.BaseExpression] = {}  # original comparison -> its fix

    def _type_of(self, ctx: RuleContext, value: cst.BaseExpression) -> cst.Attribute:
        call = cst.Call(func=ctx.torch_attr("device"), args=[cst.Arg(value)])
        return cst.Attribute(value=call, attr=cst.Name("type"))

    def leave_Comparison(
        self, original: cst.Comparison, updated: cst.Comparison, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if len(original.comparisons) != 1 or len(updated.comparisons) != 1:
            return None
        target = original.comparisons[0]
        op = target.operator
        left, right = original.left, target.comparator
        new_left, new_right = updated.left, updated.comparisons[0].comparator
        if isinstance(op, cst.In | cst.NotIn) and _is_cuda(left):
            subject, shown = new_right, right
            accel: cst.BaseCompOp = cst.NotEqual() if isinstance(op, cst.In) else cst.Equal()
            if not (is_device_string(ctx, right) or is_device_type(ctx, right)):
                self._unknown(ctx, original, right)
                return None
            new: cst.BaseExpression = cst.Comparison(
                left=self._type_of(ctx, subject), comparisons=[_cpu(accel)]
            )
            safety: Safety = "safe"
        elif isinstance(op, cst.Equal | cst.NotEqual) and (_is_cuda(left) or _is_cuda(right)):
            shown = right if _is_cuda(left) else left
            subject = new_right if _is_cuda(left) else new_left
            accel = cst.NotEqual() if isinstance(op, cst.Equal) else cst.Equal()
            if is_device_type(ctx, shown):
                new, safety = cst.Comparison(left=subject, comparisons=[_cpu(accel)]), "safe"
            elif is_device_string(ctx, shown):
                new = cst.Comparison(left=self._type_of(ctx, subject), comparisons=[_cpu(accel)])
                safety = "unsafe"
            else:
                self._unknown(ctx, original, shown)
                return None
        elif isinstance(op, cst.In | cst.NotIn) and (names := _cuda_among(right)) is not None:
            shown, subject = left, new_left  # `device.type in ("cuda",)`
            accel = cst.NotEqual() if isinstance(op, cst.In) else cst.Equal()
            if names != ["cuda"] or not is_device_type(ctx, left):
                ctx.report(
                    self,
                    original,
                    status="manual",
                    api="'cuda' device test",
                    message=f"`{code_of(left)}` is tested against device types that name CUDA "
                    f"({', '.join(names)}): on another accelerator the test is false; add its "
                    'type, or test `!= "cpu"` if any accelerator will do.',
                )
                return None
            new, safety = cst.Comparison(left=subject, comparisons=[_cpu(accel)]), "safe"
        else:
            return None
        new = new.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        fixed = ctx.fix(
            self,
            original,
            new,
            updated=updated,
            api="'cuda' device test",
            message=f"Test `{code_of(shown)}` for an accelerator, not for CUDA. {_DRIFT}",
            safety=safety,
            why_unsafe=f'`{code_of(shown)}` may hold an indexed device ("cuda:1"), '
            'for which `== "cuda"` was false',
        )
        if fixed is new:
            self._tests[id(original)] = new
        return fixed

    def _unknown(
        self, ctx: RuleContext, original: cst.Comparison, subject: cst.BaseExpression
    ) -> None:
        ctx.report(
            self,
            original,
            status="manual",
            api="'cuda' comparison",
            message=f'`{code_of(subject)}` is compared with "cuda": if it is a device type, '
            'test `!= "cpu"` (an accelerator) instead, else the test is false on other '
            "accelerators.",
        )

    def leave_IfExp(
        self, original: cst.IfExp, updated: cst.IfExp, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        body, other, test = original.body, original.orelse, original.test
        if not (
            _is_cuda(body)
            and isinstance(other, cst.SimpleString)
            and other.evaluated_value == "cpu"
            and id(test) in self._tests
            and isinstance(test, cst.Comparison)
            and isinstance(test.comparisons[0].operator, cst.In)
        ):
            return None
        subject = test.comparisons[0].comparator
        self._retract(ctx, test)
        new = self._type_of(ctx, subject).with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return ctx.fix(
            self,
            original,
            new,
            api="'cuda' device test",
            message=f"The device type of `{code_of(subject)}`, whatever the accelerator. {_DRIFT}",
        )

    def _retract(self, ctx: RuleContext, test: cst.Comparison) -> None:
        """Forget the fix of ``test``: the enclosing expression replaces it as a whole."""
        built = self._tests.pop(id(test))
        ctx.findings[:] = [f for f in ctx.findings if f.node is not test]
        ctx.releases[:] = [n for n in ctx.releases if n is not test]
        ctx.added[:] = [n for n in ctx.added if n is not built]
        ctx.discard(built)
