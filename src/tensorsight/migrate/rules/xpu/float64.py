"""``xpu/float64``: warn that some Intel GPUs have no native float64."""

from __future__ import annotations

from tensorsight.migrate.rules._vendor import Float64Rule

RULE_ID = "xpu/float64"
DESCRIPTION = "Drift: Intel Arc GPUs have no native float64 (emulated or unsupported)."


class WarnFloat64XpuRule(Float64Rule):
    """Reports float64 use."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    MESSAGE = (
        "Drift: Intel Arc (client) GPUs lack native float64; it is emulated or fails. "
        "Data-center GPUs (Max series) support it."
    )
