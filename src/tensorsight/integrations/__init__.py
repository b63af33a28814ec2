"""Adapters that collect summaries from training frameworks without logging code.

Each adapter sits on its framework's public extension point and writes through
:class:`tensorsight.SummaryWriter`; each framework is a pip extra, imported only by its module:

- :mod:`tensorsight.integrations.lightning`: ``TensorsightLogger``, a Lightning ``Logger``
  (``pip install 'tensorsight[lightning]'``).
- :mod:`tensorsight.integrations.transformers`: ``TensorsightCallback``, a Hugging Face
  ``TrainerCallback`` (``pip install 'tensorsight[transformers]'``).
- :mod:`tensorsight.integrations.accelerate`: ``TensorsightTracker``, an accelerate
  ``GeneralTracker`` registered as ``log_with="tensorsight"``
  (``pip install 'tensorsight[accelerate]'``).

Importing this package imports none of them. Every adapter writes rank 0 only by default;
``all_ranks=True`` writes each rank to its own run ``<run>/rank<r>``.
"""

from __future__ import annotations

__all__: list[str] = []
