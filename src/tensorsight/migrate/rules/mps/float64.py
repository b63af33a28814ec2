"""``mps/float64``: MPS has no float64 at all."""

from __future__ import annotations

from tensorsight.migrate.rules._vendor import Float64Rule

RULE_ID = "mps/float64"
DESCRIPTION = "float64 is not supported on MPS: tensors must be float32 there."


class WarnFloat64MpsRule(Float64Rule):
    """Reports float64 use as unsupported."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    STATUS = "unsupported"
    MESSAGE = (
        "MPS has no float64: moving a float64 tensor to 'mps' raises. Use float32 on MPS "
        '(e.g. `dtype=torch.float32 if _device.type == "mps" else torch.float64`).'
    )
