"""``xpu/visible-devices``: ``CUDA_VISIBLE_DEVICES`` -> ``ZE_AFFINITY_MASK`` (Level Zero)."""

from __future__ import annotations

from tensorsight.migrate.rules._vendor import EnvVarRule

RULE_ID = "xpu/visible-devices"
DESCRIPTION = "os.environ['CUDA_VISIBLE_DEVICES'] -> os.environ['ZE_AFFINITY_MASK']."


class RenameVisibleDevicesXpuRule(EnvVarRule):
    """Renames the visible-devices variable."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("CUDA_VISIBLE_DEVICES",)
    TABLE = {"CUDA_VISIBLE_DEVICES": "ZE_AFFINITY_MASK"}  # noqa: RUF012 - data, never mutated
