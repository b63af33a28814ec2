"""`accelerator/seeding`: torch.cuda.manual_seed(_all) -> torch.manual_seed (broader seeding)."""

from __future__ import annotations

from tensorsight.migrate.rules._base import RenameCallRule
from tensorsight.migrate.rules.accelerator import tables

RULE_ID = "accelerator/seeding"
DESCRIPTION = "torch.cuda.manual_seed(_all) -> torch.manual_seed (broader seeding)."


class ReplaceSeedingRule(RenameCallRule):
    """torch.cuda.manual_seed(_all) -> torch.manual_seed (broader seeding)."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TABLE = tables.SEEDING
