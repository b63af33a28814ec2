"""``accelerator/tf-horovod``: ``hvd.local_rank()`` in a GPU pin, reported with advice.

``gpus[hvd.local_rank()]`` is guarded by ``accelerator/tf-gpu-config``;
``config.gpu_options.visible_device_list = str(hvd.local_rank())`` is a no-op on the CPU.
What stays is the collective: Horovod's TensorFlow ops use NCCL on GPUs and Gloo or MPI on
the CPU, so a CPU run needs a Horovod build with Gloo or MPI (``horovodrun --gloo``).
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator._tf import TF_TOKENS, tf_api

RULE_ID = "accelerator/tf-horovod"
DESCRIPTION = "hvd.local_rank() device pinning: reported with what a CPU or NPU run needs."


class ReportTfHorovodRule(MigrationRule):
    """Reports ``hvd.local_rank()``."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("local_rank",)
    TOKENS = TF_TOKENS

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if tf_api(ctx, original.func) != "hvd.local_rank":
            return None
        ctx.report(
            self,
            original,
            status="manual",
            api="hvd.local_rank()",
            message=(
                "One process per GPU: on the CPU every process shares the CPU (the GPU pin "
                "is skipped or guarded); run with a Horovod built with Gloo or MPI "
                "(horovodrun --gloo), and on an NPU pin with the vendor's device API."
            ),
        )
        return None
