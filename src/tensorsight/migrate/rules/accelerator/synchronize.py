"""``accelerator/synchronize``: see DESCRIPTION."""

from __future__ import annotations

from tensorsight.migrate.rules._base import RenameCallRule
from tensorsight.migrate.rules.accelerator import tables

RULE_ID = "accelerator/synchronize"
DESCRIPTION = "synchronize/streams/events -> torch.get_device_module(_device), torch.Stream/Event."


class ReplaceSynchronizeRule(RenameCallRule):
    """synchronize/streams/events -> torch.get_device_module(_device), torch.Stream/Event."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TABLE = tables.SYNCHRONIZE
