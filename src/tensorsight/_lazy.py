"""Import optional dependencies on first use, with an error that names the pip extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from tensorsight.errors import MissingDependencyError

__all__ = ["TORCH_HINT", "lazy_import"]

# How to get torch, for every message that needs it: the build for the user's device, first.
TORCH_HINT = (
    "install the torch build for your device first (CPU, CUDA, ROCm, NPU, XPU, MPS; see "
    "https://pytorch.org/get-started/locally/, CPU only: pip install torch --index-url "
    "https://download.pytorch.org/whl/cpu), then pip install 'tensorsight[torch]'"
)


def lazy_import(module: str, *, extra: str, needed_by: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra.

    Args:
        module: Dotted module name, e.g. ``"torch"``.
        extra: The tensorsight pip extra that installs it, e.g. ``"torch"``.
        needed_by: What needs it, for the message (defaults to "tensorsight").

    Returns:
        The imported module.

    Raises:
        MissingDependencyError: The module (or one of its own imports) is missing.

    Example:
        >>> np = lazy_import("numpy", extra="all")
        >>> np.__name__
        'numpy'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        who = needed_by or "tensorsight"
        top = module.split(".")[0]
        if top == "torch":  # never `pip install torch` blindly: PyPI's Linux build is CUDA's
            msg = f"{who} needs torch: {TORCH_HINT} ({exc})"
        else:
            msg = f"{who} needs {top}: pip install 'tensorsight[{extra}]' ({exc})"
        raise MissingDependencyError(msg) from exc
