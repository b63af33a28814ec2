"""``accelerator/current-device``: see DESCRIPTION."""

from __future__ import annotations

from tensorsight.migrate.rules._base import RenameCallRule
from tensorsight.migrate.rules.accelerator import tables

RULE_ID = "accelerator/current-device"
DESCRIPTION = "current_device/set_device -> torch.accelerator.*_device_index, CPU-guarded."


class ReplaceCurrentDeviceRule(RenameCallRule):
    """current_device/set_device -> torch.accelerator.*_device_index, CPU-guarded."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TABLE = tables.CURRENT_DEVICE
