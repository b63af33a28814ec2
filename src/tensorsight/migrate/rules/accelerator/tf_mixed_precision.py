"""``accelerator/tf-mixed-precision``: ``mixed_float16`` -> ``mixed_bfloat16`` without a GPU.

::

    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    tf.keras.mixed_precision.set_global_policy(
        "mixed_float16" if tf.config.list_physical_devices("GPU") else "mixed_bfloat16")

float16 mixed precision is fast only on GPUs; on CPUs (and TPUs) Keras supports
``mixed_bfloat16``. On a GPU the policy is unchanged.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator._tf import TF_TOKENS, tf_api

RULE_ID = "accelerator/tf-mixed-precision"
DESCRIPTION = "mixed_float16 policies -> mixed_bfloat16 when TensorFlow lists no GPU."

_POLICY_APIS = {
    f"{root}mixed_precision.{name}"
    for root in ("tf.keras.", "keras.", "tf.keras.experimental.", "keras.src.")
    for name in ("set_global_policy", "Policy", "experimental.set_policy", "experimental.Policy")
}
_DRIFT = (
    "Drift: without a GPU the policy is mixed_bfloat16 (8 exponent bits, 8 mantissa bits) "
    "instead of mixed_float16 (5 and 11): activations round more coarsely, overflow no "
    "longer happens, and a LossScaleOptimizer is no longer needed (it stays harmless)."
)


class ReplaceTfMixedPrecisionRule(MigrationRule):
    """Chooses ``mixed_bfloat16`` where TensorFlow finds no GPU."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("mixed_float16",)
    TOKENS = TF_TOKENS

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = tf_api(ctx, original.func)
        if api not in _POLICY_APIS or not original.args:
            return None
        arg = original.args[0]
        if not (
            arg.keyword is None
            and isinstance(arg.value, cst.SimpleString)
            and arg.value.evaluated_value == "mixed_float16"
        ):
            return None
        tf = _tf_alias(ctx)
        if tf is None:
            ctx.report(
                self,
                original,
                status="manual",
                api=api,
                message=(
                    "mixed_float16 is fast only on GPUs: on the CPU use mixed_bfloat16 "
                    "(import tensorflow to choose by tf.config.list_physical_devices('GPU'))."
                ),
            )
            return None
        quote = arg.value.quote
        gpus = cst.Call(
            func=cst.Attribute(
                value=cst.Attribute(value=tf, attr=cst.Name("config")),
                attr=cst.Name("list_physical_devices"),
            ),
            args=[cst.Arg(cst.SimpleString(f"{quote}GPU{quote}"))],
        )
        choice = cst.IfExp(
            test=gpus, body=arg.value, orelse=cst.SimpleString(f"{quote}mixed_bfloat16{quote}")
        )
        new = updated.with_changes(args=[updated.args[0].with_changes(value=choice)])
        done = ctx.fix(
            self,
            original,
            new,
            api=f"{api}('mixed_float16')",
            message="float16 mixed precision needs a GPU; choose bfloat16 without one.",
        )
        ctx.drift(self, original, _DRIFT, api=f"{api}('mixed_float16')")
        return done


def _tf_alias(ctx: RuleContext) -> cst.BaseExpression | None:
    """The module's name for TensorFlow 2 (``tf``), if it imports ``tensorflow``."""
    for name, b in ctx.facts.bindings.items():
        if b.qualified == "tensorflow" and name in ctx.facts.module_level_imports:
            return cst.Name(name)
    return None
