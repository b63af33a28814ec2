"""``npu/hccl-env``: NCCL environment variables -> their HCCL counterparts."""

from __future__ import annotations

from tensorsight.migrate.rules._vendor import EnvVarRule
from tensorsight.migrate.rules.npu import tables

RULE_ID = "npu/hccl-env"
DESCRIPTION = "NCCL_* environment variables -> HCCL_* (HCCL is the NPU collective library)."


class RenameNcclEnvRule(EnvVarRule):
    """Renames NCCL tuning variables."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("NCCL_",)
    TABLE = tables.HCCL_ENV_VARS
