"""``accelerator/tf-availability``: ``tf.test.is_gpu_available()`` -> a device-neutral test.

::

    if tf.test.is_gpu_available():
    if len(tf.config.list_physical_devices()) > len(tf.config.list_physical_devices("CPU")):

The new test is true when TensorFlow sees any device besides the CPU (a GPU, a TPU, a
plug-in device such as an NPU). ``is_gpu_available`` also created a session and is
deprecated; with arguments (``cuda_only=``, ``min_cuda_compute_capability=``) the call is
reported instead. ``tf.test.is_built_with_cuda()`` is kept (it is ``False`` on a CPU or
plug-in build, which is what a script that branches on it should see) with a row.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator._tf import TF_TOKENS, base_of, tf_api

RULE_ID = "accelerator/tf-availability"
DESCRIPTION = "tf.test.is_gpu_available() -> any non-CPU device listed by tf.config."


def _count(base: cst.BaseExpression, kind: str | None) -> cst.Call:
    listing = cst.Call(
        func=cst.Attribute(
            value=cst.Attribute(value=base, attr=cst.Name("config")),
            attr=cst.Name("list_physical_devices"),
        ),
        args=[cst.Arg(cst.SimpleString(f'"{kind}"'))] if kind else [],
    )
    return cst.Call(func=cst.Name("len"), args=[cst.Arg(listing)])


class ReplaceTfAvailabilityRule(MigrationRule):
    """Rewrites ``tf.test.is_gpu_available()``; reports ``is_built_with_cuda``."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("is_gpu_available", "is_built_with_cuda")
    TOKENS = TF_TOKENS

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = tf_api(ctx, original.func)
        if api in ("tf.test.is_built_with_cuda", "tf.test.is_built_with_gpu_support"):
            ctx.report(
                self,
                original,
                status="kept",
                api=api,
                message=(
                    "Kept: False on a CPU or plug-in build, so a branch on it takes the "
                    "non-CUDA path there; to ask for any accelerator, test "
                    "tf.config.list_physical_devices() for a non-CPU device instead."
                ),
            )
            return None
        if api != "tf.test.is_gpu_available":
            return None
        base = base_of(updated.func, 2)
        if original.args or base is None:
            ctx.report(
                self,
                original,
                status="manual",
                api=api,
                message=(
                    "Asks for a CUDA GPU (with arguments, or imported by name): test "
                    "len(tf.config.list_physical_devices()) > "
                    "len(tf.config.list_physical_devices('CPU')) for any accelerator."
                ),
            )
            return None
        new = cst.Comparison(
            left=_count(base, None),
            comparisons=[cst.ComparisonTarget(cst.GreaterThan(), _count(base, "CPU"))],
            lpar=[cst.LeftParen()] if original.lpar else [],
            rpar=[cst.RightParen()] if original.rpar else [],
        )
        done = ctx.fix(
            self,
            original,
            new,
            message="Deprecated and CUDA-only; ask whether TensorFlow sees any non-CPU device.",
            api=api,
        )
        ctx.drift(
            self,
            original,
            "Drift: true for any accelerator TensorFlow lists (GPU, TPU, plug-in devices), "
            "not only a CUDA GPU, and no session is created.",
            api=api,
        )
        return done
