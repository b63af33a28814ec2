"""``npu/float64``: warn that many NPU kernels do not support float64."""

from __future__ import annotations

from tensorsight.migrate.rules._vendor import Float64Rule

RULE_ID = "npu/float64"
DESCRIPTION = "Drift: float64 runs on few NPU kernels (often on the AI CPU, slowly)."


class WarnFloat64NpuRule(Float64Rule):
    """Reports float64 use."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    MESSAGE = (
        "Drift: most Ascend NPU kernels have no float64 version (some fall back to the AI CPU, "
        "slowly); use float32 unless the precision is needed."
    )
