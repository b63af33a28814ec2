"""tensorsight: find out fast whether two deep-learning runs agree, and where they diverge.

Importing this package is cheap: it loads no torch, onnxruntime, libcst or starlette.
The public names below are resolved on first use (PEP 562), each from the part that
owns it; a part whose optional dependencies are missing raises
:class:`tensorsight.errors.MissingDependencyError` naming the pip extra to install.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tensorsight._version import __version__

# public name -> "module:attribute". A name is listed here once its part has landed.
_LAZY: dict[str, str] = {
    "SummaryWriter": "tensorsight.summary:SummaryWriter",
    "read_logdir": "tensorsight.summary:read_logdir",
    "Logdir": "tensorsight.summary:Logdir",
    "migrate": "tensorsight.migrate:migrate",
    "MigrationReport": "tensorsight.migrate:MigrationReport",
    "dump": "tensorsight.capture:dump",
    "read_dump": "tensorsight.capture:read_dump",
    "compare": "tensorsight.compare:compare",
    "Comparison": "tensorsight.compare:Comparison",
    "OpComparison": "tensorsight.compare:OpComparison",
}

__all__ = ["__version__", *sorted(_LAZY)]

if TYPE_CHECKING:  # pragma: no cover - static typing only
    pass


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        msg = f"module 'tensorsight' has no attribute {name!r}"
        raise AttributeError(msg)
    module_name, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
