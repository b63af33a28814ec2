"""``accelerator/unsupported``: CUDA-only APIs with no device-neutral form (CUDA graphs,
device properties, CUDA RNG state), each reported with concrete advice.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules.accelerator.tables import UNSUPPORTED

RULE_ID = "accelerator/unsupported"
DESCRIPTION = "CUDA graphs, device properties, CUDA RNG state: reported with advice."


class ReportUnsupportedRule(MigrationRule):
    """Reports calls listed in ``tables.UNSUPPORTED``."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = tuple(Need.api(api) for api in UNSUPPORTED)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        if api in UNSUPPORTED:
            status, message = UNSUPPORTED[api]
            ctx.report(self, original, status=status, message=message, api=api)
        return None
