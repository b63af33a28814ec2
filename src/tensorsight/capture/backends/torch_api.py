"""TorchApiCapture: torch functions and tensor methods, through a TorchFunctionMode.

Only the outermost call is recorded (``F.linear``, not the ATen ops it becomes); autograd
does not run through torch functions, so this level records the forward pass only.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode, resolve_name

from tensorsight.capture._recorder import iter_tensors, user_stack
from tensorsight.capture.backends.base import CaptureBackend

__all__ = ["TorchApiCapture"]

# attribute access and bookkeeping methods that are not computations
_SKIP = frozenset(
    {
        "__get__", "__set__", "__delete__", "__repr__", "__format__", "__len__", "__bool__",
        "__hash__", "__iter__", "__contains__", "__reduce_ex__", "__setstate__", "__array__",
        "dim", "size", "numel", "stride", "data_ptr", "element_size", "is_floating_point",
        "is_complex", "is_contiguous", "storage_offset", "untyped_storage", "tolist", "item",
        "requires_grad_", "register_hook", "backward", "has_names", "_is_view",
    }
)  # fmt: skip


class _Mode(TorchFunctionMode):
    def __init__(self, owner: TorchApiCapture) -> None:
        super().__init__()
        self.owner = owner
        self.names: dict[Any, str | None] = {}

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = self.names.get(func, "")
        if name == "":
            resolved = resolve_name(func)
            short = (resolved or "").rsplit(".", 1)[-1]
            name = None if resolved is None or short in _SKIP else resolved
            self.names[func] = name
        owner = self.owner
        rec = owner.recorder
        path = owner.tracker.current
        if name is None or not rec.wants(name, path):
            return func(*args, **kwargs)
        named = iter_tensors(args, "input")
        named += [(f"input.{k}", v) for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
        snaps = rec.snapshot(named)
        out = func(*args, **kwargs)
        snaps += rec.snapshot(iter_tensors(out, "output"))
        rec.commit(name, "forward", path, snaps, stack=user_stack() if rec.stack else None)
        return out


class TorchApiCapture(CaptureBackend):
    """Level ``api``: forward torch calls (``torch.nn.functional.linear``, ``torch.Tensor.add``)."""

    level = "api"

    def __init__(self, recorder: Any, tracker: Any = None) -> None:
        super().__init__(recorder, tracker)
        self._mode: _Mode | None = None

    def _start(self) -> None:
        self._mode = _Mode(self)
        self._mode.__enter__()  # type: ignore[no-untyped-call]

    def _stop(self) -> None:
        mode, self._mode = self._mode, None
        if mode is not None:
            mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
