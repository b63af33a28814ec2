"""`accelerator/availability`: torch.cuda.is_available/device_count -> torch.accelerator.*."""

from __future__ import annotations

from tensorsight.migrate.rules._base import RenameCallRule
from tensorsight.migrate.rules.accelerator import tables

RULE_ID = "accelerator/availability"
DESCRIPTION = "torch.cuda.is_available/device_count -> torch.accelerator.*."


class ReplaceAvailabilityRule(RenameCallRule):
    """torch.cuda.is_available/device_count -> torch.accelerator.*."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TABLE = tables.AVAILABILITY
