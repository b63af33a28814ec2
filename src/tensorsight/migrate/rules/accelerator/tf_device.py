"""``accelerator/tf-device``: ``with tf.device("/GPU:0")`` -> ``with tf.device(None)``.

A pin to the first GPU becomes no pin: TensorFlow then places each op itself, on the GPU
when there is one (as before on a one-GPU machine) and on the CPU otherwise. Without the
rewrite a ``tf.compat.v1`` session (whose ``allow_soft_placement`` defaults to ``False``)
or a script that turns soft placement off fails on a machine without a GPU. Pins to other
GPUs (``/GPU:1``, ``f"/GPU:{i}"``) are reported: they spread work over devices.

::

    with tf.device("/device:GPU:0"):
    with tf.device(None):
"""

from __future__ import annotations

import re

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator._tf import TF_TOKENS, tf_api

RULE_ID = "accelerator/tf-device"
DESCRIPTION = "tf.device('/GPU:0') -> tf.device(None): TensorFlow places ops on any device."

_FIRST_GPU = re.compile(r"/?(?:device:)?gpu:0", re.IGNORECASE)
_ANY_GPU = re.compile(r"(?:^|/)(?:device:)?gpu(?::|$)", re.IGNORECASE)
_DRIFT = (
    "Drift: ops are no longer pinned to GPU 0; TensorFlow puts each on its preferred device "
    "(a GPU or other accelerator when there is one, else the CPU), and the context also "
    "drops an enclosing tf.device scope."
)


class ReplaceTfDeviceRule(MigrationRule):
    """Drops pins to the first GPU; reports pins to other GPUs."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("GPU", "gpu")
    TOKENS = TF_TOKENS

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if tf_api(ctx, original.func) != "tf.device":
            return None
        if len(original.args) != 1 or original.args[0].keyword is not None:
            return None
        arg = original.args[0].value
        if isinstance(arg, cst.SimpleString) and isinstance(arg.evaluated_value, str):
            value = arg.evaluated_value
            if _FIRST_GPU.fullmatch(value):
                new = updated.with_changes(
                    args=[updated.args[0].with_changes(value=cst.Name("None"))]
                )
                done = ctx.fix(
                    self,
                    original,
                    new,
                    message="A pin to the first GPU; TensorFlow now places the ops.",
                    api=f"tf.device({value!r})",
                )
                ctx.drift(self, original, _DRIFT, api=f"tf.device({value!r})")
                return done
            if not _ANY_GPU.search(value):
                return None
        elif not (
            isinstance(arg, cst.FormattedString)
            and _ANY_GPU.search(cst.Module([]).code_for_node(arg))
        ):
            return None
        ctx.report(
            self,
            original,
            status="manual",
            api="tf.device('/GPU:N')",
            message=(
                "A pin to one of several GPUs: on another target use its device type "
                "(tf.config.list_logical_devices() lists them), or drop the pin and use a "
                "tf.distribute strategy to spread the work."
            ),
        )
        return None
