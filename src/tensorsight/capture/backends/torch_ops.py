"""TorchOpCapture: every ATen op, forward and backward, through a TorchDispatchMode.

Backward ops run inside autograd nodes: ``torch._C._current_autograd_node()`` names the
node, and its sequence number is the one autograd gave the forward op that created it.
Collectives (``c10d.*``) are waited for before their outputs are recorded.
In forward, the number handed out last is ``_get_sequence_nr() - 1`` inside the op that
created it (the first op to see a new number), so forward ops store
``sequence number -> (module path, stack)`` and backward ops look theirs up.
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tensorsight.capture._args import encode_call
from tensorsight.capture._recorder import iter_tensors, user_stack
from tensorsight.capture.backends.base import CaptureBackend

__all__ = ["TorchOpCapture"]

_get_seq = torch._C._autograd._get_sequence_nr
_current_node: Any = torch._C._current_autograd_node


class _Mode(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __init__(self, owner: TorchOpCapture) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.owner = owner

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        owner = self.owner
        if owner.paused.on:  # tensorsight's own work on this thread (gradient hooks)
            return func(*args, **(kwargs or {}))
        plan = owner.plans.get(func)
        if plan is None:
            plan = owner.plan(func)
        op, fresh, collective, written = plan
        rec = owner.recorder
        node = _current_node()
        grad_fn = stack = None
        if node is None:
            direction = "forward"
            running = owner.tracker.stack
            module_path = running[-1] if running else ""
            seq = _get_seq() - 1
            seq_info = owner.seq_info
            known = seq_info.get(seq)
            if known is None:
                stack = user_stack() if rec.stack else None
                seq_info[seq] = (module_path, stack)
            elif rec.stack:
                stack = known[1]
        else:
            direction = "backward"
            grad_fn = node.name()
            module_path, stack = owner.seq_info.get(node._sequence_nr(), _NO_INFO)
        if rec.filtered and not rec.wants(op, module_path):
            return func(*args, **(kwargs or {}))
        named = iter_tensors(args, "input")
        call = encode_call(func, args, kwargs)
        if kwargs:
            named += [(f"input.{k}", v) for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
            snaps = rec.snapshot(named)
            out = func(*args, **kwargs)
        else:
            snaps = rec.snapshot(named)
            out = func(*args)
        if collective:
            _wait_for_collective(out)
        if written:  # what was measured in the written storages is stale, through any alias
            rec.invalidate(_written_args(written, args, kwargs))
        if out is None and written:  # returns nothing (``_foreach_add_``): what it wrote
            values = _written_args(written, args, kwargs)
            outputs = iter_tensors(values[0] if len(values) == 1 else tuple(values), "output")
        else:
            outputs = iter_tensors(out, "output")
        out_snaps = rec.snapshot(outputs, fresh=fresh)
        if fresh and not collective:
            rec.after_bump(outputs, out_snaps)
        snaps += out_snaps
        rec.commit(op, direction, module_path, snaps, grad_fn=grad_fn, stack=stack, args=call)
        return out


_NO_INFO: tuple[str, str | None] = ("", None)


def _written_args(written: tuple[int | str, ...], args: Any, kwargs: Any) -> list[Any]:
    """The arguments an op writes into: positions in ``args``, names in ``kwargs``."""
    out = []
    for w in written:
        if isinstance(w, str):
            if kwargs and w in kwargs:
                out.append(kwargs[w])
        elif w < len(args):
            out.append(args[w])
    return out


class _Paused(threading.local):
    on = False


def _wait_for_collective(out: Any) -> None:
    """Wait for an async collective so its outputs hold the reduced values when recorded.

    This makes the collective synchronous while capturing (an overlap change, not a
    numerical one); without it the recorded outputs would race with the communication.
    """
    items = out if isinstance(out, (list, tuple)) else [out]
    for item in items:
        if not isinstance(item, torch.Tensor) and callable(getattr(item, "wait", None)):
            item.wait()


class TorchOpCapture(CaptureBackend):
    """Level ``op``: ATen ops in forward and backward, with module paths for both."""

    level = "op"
    param_grads = True

    def __init__(self, recorder: Any, tracker: Any = None) -> None:
        super().__init__(recorder, tracker)
        self.seq_info: dict[int, tuple[str, str | None]] = {}
        # OpOverload -> (str(func), which costs microseconds; writes into its inputs?; is a
        # collective?; the positions of the arguments it writes into)
        self.plans: dict[Any, tuple[str, bool, bool, tuple[int | str, ...]]] = {}
        self.paused = _Paused()  # .on: let this thread's ops through unrecorded
        self._mode: _Mode | None = None

    def plan(self, func: Any) -> tuple[str, bool, bool, tuple[int | str, ...]]:
        """What the dispatch handler needs to know about an op, computed once."""
        op = str(func)
        collective = op.startswith("c10d.")
        # outputs of ops that write into their inputs are measured fresh: the version
        # counter moves only after the op returns (and never for collectives)
        fresh = bool(func._schema.is_mutable) or collective
        # positional arguments the op writes into (``Tensor(a!) self``, ``Tensor(a!)[] out``)
        written = tuple(
            arg.name if arg.kwarg_only else i  # kwarg-only ones (``out=``) come as kwargs
            for i, arg in enumerate(func._schema.arguments)
            if arg.alias_info is not None and arg.alias_info.is_write
        )
        plan = self.plans[func] = (op, fresh, collective, written)
        return plan

    def new_step(self) -> None:
        self.seq_info.clear()

    def _start(self) -> None:
        self._mode = _Mode(self)
        self._mode.__enter__()  # type: ignore[no-untyped-call]

    def _stop(self) -> None:
        mode, self._mode = self._mode, None
        if mode is not None:
            mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
