"""``npu/visible-devices``: ``CUDA_VISIBLE_DEVICES`` -> ``ASCEND_RT_VISIBLE_DEVICES``."""

from __future__ import annotations

from tensorsight.migrate.rules._vendor import EnvVarRule
from tensorsight.migrate.rules.npu import tables

RULE_ID = "npu/visible-devices"
DESCRIPTION = "os.environ['CUDA_VISIBLE_DEVICES'] -> os.environ['ASCEND_RT_VISIBLE_DEVICES']."


class RenameVisibleDevicesRule(EnvVarRule):
    """Renames the visible-devices variable."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("CUDA_VISIBLE_DEVICES",)
    TABLE = tables.ENV_VARS
