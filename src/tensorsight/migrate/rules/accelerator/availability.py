"""`accelerator/availability`: torch.cuda.is_available/device_count -> torch.accelerator.*.

Two uses of the count mean "the devices" and are 0 on the CPU, where the migrated script is
to run on the one device there is, so they get 1 without an accelerator (and a drift row):

- a per-process share, ``torch.cuda.device_count() // local_world_size``: a script that
  gives each process ``range(rank * n, (rank + 1) * n)`` had no device for its model;
- one process per device, ``world_size = torch.cuda.device_count()`` then
  ``mp.spawn(fn, nprocs=world_size)`` (or the count passed as ``nprocs`` directly): no
  process started, so the script did nothing and exited 0.

A count compared with a number of devices the script needs (``if n_gpus < 8: print(...)
else: run(8)``) is reported: on the CPU the count is 0, so the guarded work never runs
there, though the CPU can host any number of gloo processes.

::

    n = torch.cuda.device_count() // w
    n = torch.accelerator.device_count() // w if torch.accelerator.is_available() else 1
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rules._base import RenameCallRule
from tensorsight.migrate.rules.accelerator import tables

RULE_ID = "accelerator/availability"
DESCRIPTION = "torch.cuda.is_available/device_count -> torch.accelerator.*."

_COUNT = "torch.cuda.device_count"
_SPAWNS = ("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes")
_PER_PROCESS = (
    "Drift: one process per device; on the CPU one process now starts (the count there is 0, "
    "which started none)."
)


_ORDER = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


class ReplaceAvailabilityRule(RenameCallRule):
    """torch.cuda.is_available/device_count -> torch.accelerator.*."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TABLE = tables.AVAILABILITY

    def __init__(self) -> None:
        self._counts: set[tuple[tuple[str, ...], str]] = set()  # names holding the count

    def leave_Comparison(
        self, original: cst.Comparison, updated: cst.Comparison, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if len(original.comparisons) != 1:
            return None
        target = original.comparisons[0]
        left, right = original.left, target.comparator
        sides = (left, right) if isinstance(right, cst.Integer) else (right, left)
        count, needed = sides
        if not (
            isinstance(target.operator, _ORDER)
            and isinstance(needed, cst.Integer)
            and int(needed.evaluated_value) > 1
            and (
                _is_count(count, ctx)
                or (isinstance(count, cst.Name) and (ctx.scope, count.value) in self._counts)
            )
        ):
            return None
        ctx.report(
            self,
            original,
            status="manual",
            api="torch.cuda.device_count() comparison",
            message=f"The script checks for {needed.value} devices: on the CPU the count is 0, "
            "so what the check guards never runs there, though the CPU can host any number "
            "of gloo processes; to run it there, make the check count devices only with an "
            "accelerator (`torch.accelerator.is_available() and ...`).",
        )
        return None

    def leave_BinaryOperation(
        self, original: cst.BinaryOperation, updated: cst.BinaryOperation, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        left = original.left
        if not (
            isinstance(original.operator, cst.FloorDivide)
            and isinstance(left, cst.Call)
            and ctx.qname(left.func) == _COUNT
            and updated.left is not left  # the call itself was rewritten
        ):
            return None
        share = updated.with_changes(lpar=[], rpar=[])
        new = ctx.guarded(share, cst.Integer("1"))
        if updated.lpar:
            new = new.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        ctx.drift(
            self,
            original,
            "Drift: a share of the devices per process; on the CPU each process now gets one "
            "device, the CPU (the count there is 0, which left no device to any process).",
            api="torch.cuda.device_count() // n",
        )
        return new

    def leave_Assign(
        self, original: cst.Assign, updated: cst.Assign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        value = original.value
        target = original.targets[0].target if len(original.targets) == 1 else None
        if isinstance(target, cst.Name) and _is_count(value, ctx):
            self._counts.add((ctx.scope, target.value))
        if not (
            len(original.targets) == 1
            and _is_count(value, ctx)
            and updated.value is not value
            and (key := ctx.flow_key(original.targets[0].target)) is not None
            and ("nprocs", key) in ctx.flow.use_lines
        ):
            return None
        ctx.drift(self, value, _PER_PROCESS, api="torch.cuda.device_count() as nprocs")
        guarded = ctx.guarded(updated.value, cst.Integer("1"))
        return updated.with_changes(value=guarded.with_changes(lpar=[], rpar=[]))

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if ctx.qname(original.func) not in _SPAWNS:
            return super().leave_Call(original, updated, ctx)
        args = list(updated.args)
        for i, (old, new) in enumerate(zip(original.args, updated.args, strict=False)):
            slot = old.keyword.value if old.keyword is not None else ("", "", "nprocs")[min(i, 2)]
            if slot == "nprocs" and _is_count(old.value, ctx) and new.value is not old.value:
                ctx.drift(self, old.value, _PER_PROCESS, api="torch.cuda.device_count() as nprocs")
                guarded = ctx.guarded(new.value, cst.Integer("1"))
                args[i] = new.with_changes(value=guarded.with_changes(lpar=[], rpar=[]))
        return updated.with_changes(args=args) if args != list(updated.args) else None


def _is_count(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    return isinstance(node, cst.Call) and ctx.qname(node.func) == _COUNT
