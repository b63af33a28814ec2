"""``accelerator/tf-xla-cudnn``: XLA switches and cuDNN/GPU environment flags, reported.

Nothing is rewritten: ``tf.config.optimizer.set_jit(True)``, ``jit_compile=True`` and
``TF_XLA_FLAGS`` work on the CPU (XLA has a CPU back end), and ``TF_CUDNN_*`` /
``TF_GPU_*`` variables are read only by GPU kernels; each gets a ``kept`` row saying what
differs and, for determinism, the device-neutral switch.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate._resolve import dotted_name
from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator._tf import TF_TOKENS, tf_api

RULE_ID = "accelerator/tf-xla-cudnn"
DESCRIPTION = "XLA switches and TF_CUDNN_*/TF_GPU_* variables: kept, with what differs."

_JIT = (
    "Kept: XLA auto-clustering also runs on the CPU, but its fusions and rounding differ from "
    "the GPU's; a plug-in device may not support XLA (turn it off there)."
)
_CUDNN = (
    "Kept: read only by cuDNN/GPU kernels, a no-op on the CPU. For deterministic results on "
    "any device call tf.config.experimental.enable_op_determinism() after importing "
    "TensorFlow."
)
_XLA_ENV = "Kept: XLA flags apply to the CPU back end too; GPU-only flags are ignored there."


def _env_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        value = node.evaluated_value
        if value.startswith(("TF_CUDNN_", "TF_GPU_", "TF_FORCE_GPU_", "TF_XLA_FLAGS")):
            return value
        if value in ("TF_DETERMINISTIC_OPS", "TF_ENABLE_AUTO_MIXED_PRECISION"):
            return value
    return None


class ReportTfXlaCudnnRule(MigrationRule):
    """Reports XLA switches and GPU environment flags."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("set_jit", "TF_CUDNN", "TF_GPU", "TF_FORCE_GPU", "TF_XLA", "TF_DETERMINISTIC")
    TOKENS = TF_TOKENS

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = tf_api(ctx, original.func)
        if api == "tf.config.optimizer.set_jit":
            ctx.report(self, original, status="kept", api=api, message=_JIT)
            return None
        name = dotted_name(original.func)
        if name in ("os.environ.setdefault", "os.putenv") and original.args:
            self._env(original.args[0].value, original, ctx)
        return None

    def leave_Subscript(
        self, original: cst.Subscript, updated: cst.Subscript, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if dotted_name(original.value) != "os.environ" or len(original.slice) != 1:
            return None
        index = original.slice[0].slice
        if isinstance(index, cst.Index):
            self._env(index.value, original, ctx)
        return None

    def _env(self, key: cst.BaseExpression, node: cst.CSTNode, ctx: RuleContext) -> None:
        name = _env_name(key)
        if name is None:
            return
        message = _XLA_ENV if name == "TF_XLA_FLAGS" else _CUDNN
        if name == "TF_ENABLE_AUTO_MIXED_PRECISION":
            message = "Kept: the graph rewrite to float16 runs only on GPUs; use a Keras policy."
        ctx.report(self, node, status="kept", api=f"os.environ[{name!r}]", message=message)
