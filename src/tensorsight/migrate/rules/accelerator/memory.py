"""``accelerator/memory``: see DESCRIPTION."""

from __future__ import annotations

from tensorsight.migrate.rules._base import RenameCallRule
from tensorsight.migrate.rules.accelerator import tables

RULE_ID = "accelerator/memory"
DESCRIPTION = "Memory queries/empty_cache -> torch.accelerator.*, 0 or no-op on the CPU."


class ReplaceMemoryQueriesRule(RenameCallRule):
    """Memory queries/empty_cache -> torch.accelerator.*, 0 or no-op on the CPU."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TABLE = tables.MEMORY
