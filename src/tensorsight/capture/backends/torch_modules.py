"""TorchModuleCapture: nn.Module forward and backward, through global module hooks.

Forward rows are the module's inputs and outputs. Backward is tracked like
``torch.utils.module_tracker``: a multi-grad hook on the module's outputs fires when the
gradients flowing in are ready (``input.*``), one on its inputs when the gradients flowing
out are ready (``output.*``, msprobe's convention); the op is recorded then. A module whose
inputs need no gradient is recorded as soon as its incoming gradients are known. Hook
handles are removed on stop.

The module's own share of its inputs' gradients: a tensor used by the module and by other
code (``h + ln(h)``) gets the sum of every consumer's gradient, and autograd accumulates it
in place into one buffer. So each input that needs a gradient is handed to the module as an
alias (``x.view_as(x)``, a free view the module alone uses), and the hook sits on the alias:
it sees only what the module's graph sends back. A module that writes into its input in
place (``ReLU(inplace=True)``) rebases the alias's history onto a ``CopySlices`` node, which
the alias's hook never reaches; the gradient is then taken from that node's post-hook.
Every gradient is measured or copied at hook time, bypassing the caches (autograd may add
into the same buffer afterwards without bumping its version).
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
        # forward: (position in the argument list, original, alias, its version, its grad_fn)
        self.aliases: list[tuple[str, torch.Tensor, torch.Tensor, int, Any]] = []
        # backward: gradients of inputs written in place, taken from CopySlices post-hooks
        self.outgoing: dict[str, list[Snapshot]] = {}
        self.waiting = 0  # hooks still to fire before the op is committed
        self.multi: Any = None  # the multi-grad hook on the aliases


def _alias_args(args: Any, call: _Call) -> Any:
    """``args`` with each tensor that needs a gradient (also one level into lists) replaced
    by an alias the module alone uses; the aliases are remembered on ``call``."""

    def alias(t: torch.Tensor, name: str) -> torch.Tensor:
        if not t.requires_grad or t.is_nested:
            return t
        a = t.view_as(t)
        call.aliases.append((name, t, a, a._version, t.grad_fn))
        return a

    if isinstance(args, torch.Tensor):
        return alias(args, "output.0")
    if not isinstance(args, tuple):
        return args
    out: list[Any] = []
    for i, v in enumerate(args):
        if isinstance(v, torch.Tensor):
            out.append(alias(v, f"output.{i}"))
        elif isinstance(v, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in v):
            items = [
                alias(x, f"output.{i}.{j}") if isinstance(x, torch.Tensor) else x
                for j, x in enumerate(v)
            ]
            out.append(type(v)(items) if isinstance(v, list) else tuple(items))
        else:
            out.append(v)
    return tuple(out)


def _copy_slices(orig: torch.Tensor, alias: torch.Tensor, before: Any) -> Any:
    """The ``CopySlices`` node that an in-place write into ``alias`` put right above
    ``orig``'s earlier history ``before``; ``None`` when there is none to hook."""
    if alias._base is not orig or before is None:
        return None  # orig is itself a view: the node would see its whole base
    node = orig.grad_fn
    for _ in range(64):
        if node is None or not node.name().endswith("CopySlices"):
            return None
        nxt = node.next_functions[0][0] if node.next_functions else None
        if nxt is before:
            return node
        node = nxt
    return None


class TorchModuleCapture(CaptureBackend):
    """Level ``module``: one op per module call, named by the module's class."""

    level = "module"
    param_grads = True

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

    def _pre(self, module: torch.nn.Module, args: Any) -> Any:
        rec = self.recorder
        path = self.tracker.name_of(module)
        op = type(module).__name__
        if not rec.wants(op, path):
            self._pending.append(None)
            return None
        snaps = rec.snapshot(iter_tensors(args, "input"))
        call = None
        if torch.is_grad_enabled() and _grad_tensors(args):
            call = _Call(op, path, waits_for_inputs=True)
            args = _alias_args(args, call)
            aliases = [a for _, _, a, _, _ in call.aliases]
            call.waiting = 1
            call.multi = register_multi_grad_hook(
                aliases, lambda grads: self._outgoing(call, grads)
            )
            self._grad_handles.append(call.multi)
        elif torch.is_grad_enabled():
            call = _Call(op, path, waits_for_inputs=False)
        self._pending.append((op, path, snaps, call))
        return args

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
        if call is not None and call.aliases:
            self._watch_inplace(call)
        outputs = _grad_tensors(output)
        if call is not None and outputs:
            self._grad_handles.append(
                register_multi_grad_hook(outputs, lambda grads: self._incoming(call, grads))
            )

    def _watch_inplace(self, call: _Call) -> None:
        """Inputs the module wrote into in place: hook the ``CopySlices`` node instead."""
        written = [e for e in call.aliases if e[2]._version != e[3]]
        if not written:
            return
        kept = [e for e in call.aliases if e[2]._version == e[3]]
        call.multi.remove()
        call.multi = None
        call.waiting = 0
        for name, orig, alias, _, before in written:
            node = _copy_slices(orig, alias, before)
            if node is None:
                continue  # no node holds the module's share alone: leave this gradient out
            call.waiting += 1
            self._grad_handles.append(node.register_hook(self._slices_hook(call, name)))
        if kept:
            call.waiting += 1
            names = [name for name, *_ in kept]
            call.multi = register_multi_grad_hook(
                [a for _, _, a, _, _ in kept],
                lambda grads: self._outgoing(call, grads, names),
            )
            self._grad_handles.append(call.multi)
        if call.waiting == 0:
            call.waits_for_inputs = False

    def _slices_hook(self, call: _Call, name: str) -> Any:
        def hook(grad_inputs: Any, grad_outputs: Any) -> None:
            del grad_outputs
            g = grad_inputs[0] if grad_inputs else None
            if not self.is_active or call.done:
                return
            if isinstance(g, torch.Tensor):
                call.outgoing[name] = self.recorder.snapshot([(name, g)], fresh=True)
            self._arrived(call)

        return hook

    def _named_grads(self, grads: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
        return [(f"{prefix}.{i}", g) for i, g in enumerate(grads) if isinstance(g, torch.Tensor)]

    def _incoming(self, call: _Call, grads: Any) -> None:
        if not self.is_active or call.done:
            return
        named = self._named_grads(grads, "input")
        call.incoming = self.recorder.snapshot(named, fresh=True)
        if not call.waits_for_inputs:
            call.done = True
            self.recorder.commit(call.op, "backward", call.path, call.incoming)

    def _outgoing(self, call: _Call, grads: Any, names: list[str] | None = None) -> None:
        if not self.is_active or call.done:
            return
        if names is None:
            names = [name for name, *_ in call.aliases]
        for name, g in zip(names, grads, strict=True):
            if isinstance(g, torch.Tensor):
                call.outgoing[name] = self.recorder.snapshot([(name, g)], fresh=True)
        self._arrived(call)

    def _arrived(self, call: _Call) -> None:
        call.waiting -= 1
        if call.waiting > 0:
            return
        call.done = True
        snaps = list(call.incoming or [])
        for name, *_ in call.aliases:  # argument order
            snaps += call.outgoing.get(name, [])
        self.recorder.commit(call.op, "backward", call.path, snaps)
