"""Target ``accelerator`` (the default): device-neutral PyTorch that runs on whatever
accelerator PyTorch finds, and on the CPU when there is none.

The rules, in application order, are ``RULES``; vendor targets (npu, xpu, mps) extend them.
"""

from __future__ import annotations

from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator.autocast import ReplaceAutocastRule
from tensorsight.migrate.rules.accelerator.availability import ReplaceAvailabilityRule
from tensorsight.migrate.rules.accelerator.backend_flow import FollowBackendRule
from tensorsight.migrate.rules.accelerator.backend_knobs import ReplaceBackendKnobsRule
from tensorsight.migrate.rules.accelerator.cuda_method import ReplaceCudaMethodRule
from tensorsight.migrate.rules.accelerator.current_device import ReplaceCurrentDeviceRule
from tensorsight.migrate.rules.accelerator.custom_fwd import ReplaceCustomFwdRule
from tensorsight.migrate.rules.accelerator.ddp_device_ids import GuardDdpDeviceIdsRule
from tensorsight.migrate.rules.accelerator.device_flow import FollowDeviceStringsRule
from tensorsight.migrate.rules.accelerator.device_strings import ReplaceDeviceStringsRule
from tensorsight.migrate.rules.accelerator.device_tests import ReplaceDeviceTypeTestsRule
from tensorsight.migrate.rules.accelerator.distributed_backend import (
    ReplaceDistributedBackendRule,
)
from tensorsight.migrate.rules.accelerator.fused_optimizers import ReportFusedOptimizersRule
from tensorsight.migrate.rules.accelerator.grad_scaler import ReplaceGradScalerRule
from tensorsight.migrate.rules.accelerator.is_cuda import ReplaceIsCudaRule
from tensorsight.migrate.rules.accelerator.map_location import ReplaceMapLocationRule
from tensorsight.migrate.rules.accelerator.memory import ReplaceMemoryQueriesRule
from tensorsight.migrate.rules.accelerator.nvtx import ReplaceNvtxRule
from tensorsight.migrate.rules.accelerator.pin_memory import ReplacePinMemoryRule
from tensorsight.migrate.rules.accelerator.seeding import ReplaceSeedingRule
from tensorsight.migrate.rules.accelerator.synchronize import ReplaceSynchronizeRule
from tensorsight.migrate.rules.accelerator.tf_availability import ReplaceTfAvailabilityRule
from tensorsight.migrate.rules.accelerator.tf_device import ReplaceTfDeviceRule
from tensorsight.migrate.rules.accelerator.tf_gpu_config import GuardTfGpuConfigRule
from tensorsight.migrate.rules.accelerator.tf_horovod import ReportTfHorovodRule
from tensorsight.migrate.rules.accelerator.tf_mixed_precision import ReplaceTfMixedPrecisionRule
from tensorsight.migrate.rules.accelerator.tf_xla_cudnn import ReportTfXlaCudnnRule
from tensorsight.migrate.rules.accelerator.to_index import ReplaceDeviceIndexRule
from tensorsight.migrate.rules.accelerator.triton import ReportTritonKernelsRule
from tensorsight.migrate.rules.accelerator.typed_tensors import ReplaceTypedTensorsRule
from tensorsight.migrate.rules.accelerator.unmapped import ReportUnmappedCudaRule
from tensorsight.migrate.rules.accelerator.unsupported import ReportUnsupportedRule
from tensorsight.migrate.rulesets import RuleSet

__all__ = ["RULES", "RULESET", "TF_RULES"]

RULES: tuple[type[MigrationRule], ...] = (
    ReplaceAvailabilityRule,
    ReplaceCurrentDeviceRule,
    ReplaceSynchronizeRule,
    ReplaceMemoryQueriesRule,
    ReplaceSeedingRule,
    ReplaceDeviceStringsRule,
    ReplaceDeviceIndexRule,
    ReplaceCudaMethodRule,
    ReplaceAutocastRule,
    ReplaceGradScalerRule,
    ReplaceCustomFwdRule,
    ReplaceDistributedBackendRule,
    ReplaceMapLocationRule,
    GuardDdpDeviceIdsRule,
    FollowBackendRule,
    FollowDeviceStringsRule,
    ReplaceDeviceTypeTestsRule,
    ReplacePinMemoryRule,
    ReplaceTypedTensorsRule,
    ReplaceBackendKnobsRule,
    ReplaceNvtxRule,
    ReplaceIsCudaRule,
    ReportFusedOptimizersRule,
    ReportUnsupportedRule,
    ReportTritonKernelsRule,
    ReportUnmappedCudaRule,
)

#: TensorFlow 2 and ``tf.compat.v1`` scripts (``tf_*.py``); only this target has them,
#: the vendor targets extend ``RULES``.
TF_RULES: tuple[type[MigrationRule], ...] = (
    ReplaceTfDeviceRule,
    ReplaceTfAvailabilityRule,
    GuardTfGpuConfigRule,
    ReplaceTfMixedPrecisionRule,
    ReportTfXlaCudnnRule,
    ReportTfHorovodRule,
)

RULESET = RuleSet(
    name="accelerator",
    version="4",
    description="Device-neutral PyTorch and TensorFlow: any accelerator found, else the CPU.",
    rules=(*RULES, *TF_RULES),
)
