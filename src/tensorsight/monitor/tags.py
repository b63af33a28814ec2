"""The names a reader of the monitor's summaries needs, with no import behind them.

The board's monitor view reads these; ``watch.py`` and ``_collect.py`` write them.
"""

from __future__ import annotations

__all__ = ["FINDINGS_VERSION", "KINDS", "TAG_CHECKED", "TAG_FINDINGS", "TAG_LOSS"]

#: Finding kinds, worst first.
KINDS = ("nan", "overflow", "inf", "underflow", "dead", "spike")
#: A tensor summary per checked step with anomalies: the findings as JSON.
TAG_FINDINGS = "monitor/findings"
#: The newest version of the findings' JSON that readers understand.
FINDINGS_VERSION = 1
#: A scalar: how many anomalies each checked step found (0 on healthy steps).
TAG_CHECKED = "monitor/anomalies"
#: The mean of the losses given during a step.
TAG_LOSS = "loss/auto"
