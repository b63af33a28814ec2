"""``accelerator/tf-gpu-config``: GPU memory and visibility settings that run on the CPU.

- ``tf.config.experimental.set_memory_growth(gpu, True)`` in a loop over
  ``tf.config.list_physical_devices("GPU")`` is kept: without a GPU the list is empty and
  the loop does nothing, which is the right device-neutral form.
- The same calls on an item of that list (``gpus[0]``, ``gpus[hvd.local_rank()]``) raise
  ``IndexError`` without a GPU; the statement gets a guard::

      tf.config.experimental.set_memory_growth(gpus[0], True)
      if gpus:
          tf.config.experimental.set_memory_growth(gpus[0], True)

- ``ConfigProto(gpu_options=GPUOptions(allow_growth=True, ...))``,
  ``config.gpu_options.allow_growth = True`` and ``visible_device_list`` are kept: the CPU
  ignores GPU options.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext, code_of
from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator._tf import TF_TOKENS, tf_api

RULE_ID = "accelerator/tf-gpu-config"
DESCRIPTION = "GPU memory/visibility settings: kept (no-ops on the CPU); item lookups guarded."

_PER_DEVICE = {
    f"tf.config.{space}{name}"
    for space in ("", "experimental.")
    for name in (
        "set_memory_growth",
        "set_visible_devices",
        "set_logical_device_configuration",
        "set_virtual_device_configuration",
    )
}
_KEPT_LOOP = (
    "Kept: on a machine without a GPU the device list is empty and nothing is set; memory "
    "growth applies only to GPUs (a plug-in device has its own memory options)."
)
_KEPT_GUARDED = "Kept: it runs only when the device list is not empty (no GPU: skipped)."
_GPU_OPTIONS = (
    "Kept: GPU options are ignored without a GPU; a plug-in device (e.g. an NPU) reads its "
    "own session options instead."
)


class GuardTfGpuConfigRule(MigrationRule):
    """Guards per-GPU settings on a list item; reports the rest as kept."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("set_memory_growth", "set_visible_devices", "device_configuration", "gpu")
    TOKENS = TF_TOKENS

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = tf_api(ctx, original.func)
        if api in ("tf.GPUOptions", "tf.ConfigProto") and any(
            a.keyword is not None and a.keyword.value in ("allow_growth", "gpu_options")
            for a in original.args
        ):
            ctx.report(self, original, status="kept", api=api, message=_GPU_OPTIONS)
            return None
        if api not in _PER_DEVICE or not original.args:
            return None
        first = original.args[0].value
        if isinstance(first, cst.Subscript) and isinstance(first.value, cst.Name):
            if first.value.value in ctx.true_names:  # already under `if gpus:`
                ctx.report(self, original, status="kept", api=api, message=_KEPT_GUARDED)
                return None
            test = cst.Name(first.value.value)
            node = cst.IfExp(
                test=test,
                body=updated,
                orelse=cst.Name("None"),
                lpar=[cst.LeftParen()],
                rpar=[cst.RightParen()],
            )
            ctx.guards.add(id(node))
            return ctx.fix(
                self,
                original,
                node,
                api=api,
                message=(
                    f"Raises IndexError when `{code_of(test)}` is empty (no GPU); "
                    "run it only when there is a device."
                ),
            )
        ctx.report(self, original, status="kept", api=api, message=_KEPT_LOOP)
        return None

    def leave_Assign(
        self, original: cst.Assign, updated: cst.Assign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        target = original.targets[0].target if len(original.targets) == 1 else None
        if (
            isinstance(target, cst.Attribute)
            and target.attr.value
            in ("allow_growth", "per_process_gpu_memory_fraction", "visible_device_list")
            and isinstance(target.value, cst.Attribute)
            and target.value.attr.value == "gpu_options"
        ):
            ctx.report(
                self,
                original,
                status="kept",
                api=f"ConfigProto.gpu_options.{target.attr.value}",
                message=_GPU_OPTIONS,
            )
        return None
