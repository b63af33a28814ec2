"""Task functions for tests/compare/test_executors.py, importable in a spawn worker (no torch)."""

from __future__ import annotations

import os
from typing import Any


def exit_on_rank(rank: int, fn: Any, task: Any) -> Any:
    """Run ``fn(task)``, except that the worker process dies on ``rank``'s task."""
    if task.rank == rank:
        os._exit(1)
    return fn(task)


def exit_once_on_rank(rank: int, marker: str, fn: Any, task: Any) -> Any:
    """Like :func:`exit_on_rank`, but only while the file ``marker`` exists (it is removed)."""
    if task.rank == rank and os.path.exists(marker):
        os.remove(marker)
        os._exit(1)
    return fn(task)


def environ(names: tuple[str, ...]) -> list[str | None]:
    """The worker's values of the environment variables ``names``."""
    return [os.environ.get(n) for n in names]
