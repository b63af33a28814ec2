"""Turn user inputs (torch tensors, numpy arrays, Python numbers) into numpy arrays.

torch is never imported here: a torch tensor is recognised by its type's module, so the
writer works with numpy alone.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import UsageError

__all__ = ["is_torch_tensor", "plugin_metadata", "to_numpy"]


def is_torch_tensor(value: object) -> bool:
    """True for a ``torch.Tensor`` (without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def to_numpy(value: object, *, what: str) -> NDArray[Any]:
    """Convert ``value`` to a numpy array (a copy only when needed).

    Args:
        value: A torch tensor (any device), numpy array, numpy scalar, Python number or
            nested list of numbers.
        what: Subject for error messages, e.g. ``"Histogram 'loss'"``. bfloat16 and the
            float8 types become float32 (numpy has none of them); ``kinds/tensor.py`` reads
            their raw bits itself.

    Raises:
        UsageError: ``value`` is not numeric data.
    """
    if isinstance(value, np.ndarray):
        return value
    if is_torch_tensor(value):
        tensor: Any = value
        tensor = tensor.detach()
        if tensor.device.type != "cpu":
            tensor = tensor.cpu()
        if tensor.is_conj():
            tensor = tensor.resolve_conj()
        torch = sys.modules["torch"]
        if tensor.dtype == torch.bfloat16 or str(tensor.dtype).startswith("torch.float8"):
            tensor = tensor.float()
        return np.asarray(tensor.numpy())
    if isinstance(value, str | bytes) or value is None:
        msg = (
            f"{what}: got {type(value).__name__} {value!r:.60}. Expected a torch tensor, "
            "numpy array or number."
        )
        raise UsageError(msg)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        msg = f"{what}: cannot convert {type(value).__name__} to an array ({exc})."
        raise UsageError(msg) from exc
    if array.dtype == object or array.dtype.kind in "USV":
        msg = (
            f"{what}: got {type(value).__name__} of {array.dtype} values. Expected a torch "
            "tensor, numpy array or number."
        )
        raise UsageError(msg)
    return array


def plugin_metadata(plugin_name: str, content: bytes = b"", data_class: int = 0) -> Any:
    """A ``SummaryMetadata`` with ``plugin_data`` set (and ``data_class`` when non-zero)."""
    from tensorsight.summary._proto import tb

    metadata = tb.SummaryMetadata(
        plugin_data=tb.SummaryMetadata.PluginData(plugin_name=plugin_name, content=content)
    )
    if data_class:
        metadata.data_class = data_class
    return metadata
