"""TorchModuleCapture: nn.Module forward and backward, through global module hooks.

Forward rows are the module's inputs and outputs. Backward is tracked like
``torch.utils.module_tracker``: a multi-grad hook on the module's outputs fires when the
gradients flowing in are ready (``input.*``), one on its inputs when the gradients flowing
out are ready (``output.*``, msprobe's convention); the op is recorded then. A module whose
inputs need no gradient is recorded as soon as its incoming gradients are known. Hook
handles are removed on stop.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.graph import register_multi_grad_hook
from torch.nn.modules import module as nn_module

from tensorsight.capture._recorder import Snapshot, iter_tensors, user_stack
from tensorsight.capture.backends.base import CaptureBackend

__all__ = ["TorchModuleCapture"]


def _grad_tensors(value: Any) -> list[torch.Tensor]:
    return [t for _, t in iter_tensors(value, "x") if t.requires_grad]


class _Call:
    """Backward state of one module call."""

    def __init__(self, op: str, path: str, waits_for_inputs: bool) -> None:
        self.op = op
        self.path = path
        self.waits_for_inputs = waits_for_inputs
        self.incoming: list[Snapshot] | None = None
        self.done = False


class TorchModuleCapture(CaptureBackend):
    """Level ``module``: one op per module call, named by the module's class."""

    level = "module"

    def __init__(self, recorder: Any, tracker: Any = None) -> None:
        super().__init__(recorder, tracker)
        self._handles: list[Any] = []
        self._grad_handles: list[Any] = []
        self._pending: list[tuple[str, str, list[Snapshot], _Call | None] | None] = []

    def new_step(self) -> None:
        for h in self._grad_handles:
            h.remove()
        self._grad_handles = []

    def _start(self) -> None:
        self._handles = [
            nn_module.register_module_forward_pre_hook(self._pre),
            nn_module.register_module_forward_hook(self._post),
        ]

    def _stop(self) -> None:
        for h in (*self._handles, *self._grad_handles):
            h.remove()
        self._handles, self._grad_handles = [], []
        self._pending.clear()

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        rec = self.recorder
        path = self.tracker.name_of(module)
        op = type(module).__name__
        if not rec.wants(op, path):
            self._pending.append(None)
            return
        snaps = rec.snapshot(iter_tensors(args, "input"))
        inputs = _grad_tensors(args)
        call = _Call(op, path, waits_for_inputs=bool(inputs)) if torch.is_grad_enabled() else None
        if call is not None and inputs:
            self._grad_handles.append(
                register_multi_grad_hook(inputs, lambda grads: self._outgoing(call, grads))
            )
        self._pending.append((op, path, snaps, call))

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if not self._pending:
            return
        entry = self._pending.pop()
        if entry is None:
            return
        op, path, snaps, call = entry
        rec = self.recorder
        snaps += rec.snapshot(iter_tensors(output, "output"))
        rec.commit(op, "forward", path, snaps, stack=user_stack() if rec.stack else None)
        outputs = _grad_tensors(output)
        if call is not None and outputs:
            self._grad_handles.append(
                register_multi_grad_hook(outputs, lambda grads: self._incoming(call, grads))
            )

    def _named_grads(self, grads: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
        return [(f"{prefix}.{i}", g) for i, g in enumerate(grads) if isinstance(g, torch.Tensor)]

    def _incoming(self, call: _Call, grads: Any) -> None:
        if not self.is_active or call.done:
            return
        call.incoming = self.recorder.snapshot(self._named_grads(grads, "input"))
        if not call.waits_for_inputs:
            call.done = True
            self.recorder.commit(call.op, "backward", call.path, call.incoming)

    def _outgoing(self, call: _Call, grads: Any) -> None:
        if not self.is_active or call.done:
            return
        call.done = True
        snaps = list(call.incoming or [])
        snaps += self.recorder.snapshot(self._named_grads(grads, "output"))
        self.recorder.commit(call.op, "backward", call.path, snaps)
