"""tensorsight: find out fast whether two deep-learning runs agree, and where they diverge.

Importing this package is cheap: it loads no torch, onnxruntime, libcst or starlette.
The public names below are resolved on first use (PEP 562), each from the part that
owns it; a part whose optional dependencies are missing raises
:class:`tensorsight.errors.MissingDependencyError` naming the pip extra to install.
"""

from __future__ import annotations

import importlib
import sys
import types
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
    "watch": "tensorsight.monitor:watch",
}

__all__ = ["__version__", *sorted(_LAZY)]

if TYPE_CHECKING:  # pragma: no cover - static typing only
    pass


# public functions that share their name with a subpackage (``tensorsight.compare``) or may
_FUNCTIONS = ("compare", "dump", "migrate")


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        msg = f"module 'tensorsight' has no attribute {name!r}"
        raise AttributeError(msg)
    module_name, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value  # later lookups skip __getattr__
    if name in _FUNCTIONS and isinstance(package := sys.modules.get(f"{__name__}.{name}"), _Part):
        package.mirror_onto(value)
    return value


class _Part(types.ModuleType):
    """A subpackage named like a public function (``tensorsight.compare``).

    Its submodules are mirrored onto the function as attributes, so
    ``tensorsight.compare.replay``, ``import tensorsight.compare.replay as r`` and
    ``monkeypatch.setattr("tensorsight.compare.engine.x", ...)`` keep resolving while
    ``tensorsight.compare`` is the function; calling the package module calls the function.
    """

    def mirror_onto(self, func: Any) -> None:
        for key, value in list(vars(self).items()):
            if isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{key}":
                setattr(func, key, value)

    def __setattr__(self, key: str, value: Any) -> None:
        super().__setattr__(key, value)
        if isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{key}":
            func = vars(sys.modules[__name__]).get(self.__name__.rpartition(".")[2])
            if func is not None and not isinstance(func, types.ModuleType):
                setattr(func, key, value)  # a submodule imported after the function resolved

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(sys.modules[__name__], self.__name__.rpartition(".")[2])(*args, **kwargs)


class _Package(types.ModuleType):
    """``tensorsight`` itself: the functions of :data:`_FUNCTIONS` win over their packages.

    Importing ``tensorsight.compare`` (directly or through ``tensorsight.compare.replay``)
    makes Python bind the subpackage to this module's attribute ``compare``; that binding is
    refused here, so the name keeps resolving (lazily, in :func:`__getattr__`) to the
    function ``tensorsight.compare(bench, target)``.
    """

    def __setattr__(self, key: str, value: Any) -> None:
        if key in _FUNCTIONS and isinstance(value, types.ModuleType):
            if type(value) is types.ModuleType or isinstance(value, _Part):
                value.__class__ = _Part
            func = vars(self).get(key)
            if func is not None and isinstance(value, _Part):
                value.mirror_onto(func)
            return
        super().__setattr__(key, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
