"""Track the innermost running nn.Module and record parameter gradients (torch only).

Global forward hooks (``module_tracker`` style) keep a stack of running modules. A module
first seen with no running parent is a root, named by its class (``MLP``); its descendants
get dotted paths below it (``MLP.layers.0``). Names live in a weak dictionary and every hook
handle is removed on :meth:`ModuleTracker.close`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules import module as nn_module

__all__ = ["ModuleTracker"]


class ModuleTracker:
    """Knows the dotted path of the innermost running module.

    Args:
        on_param_grad: Called as ``f(module_path, param_name, param)`` once a parameter's
            gradient is accumulated (``None``: do not watch gradients).
    """

    def __init__(
        self, on_param_grad: Callable[[str, str, torch.nn.Parameter], None] | None = None
    ) -> None:
        self._names: weakref.WeakKeyDictionary[torch.nn.Module, str] = weakref.WeakKeyDictionary()
        self.stack: list[str] = []
        # called with the innermost path after each push and pop (the native capture's hook)
        self.on_change: Callable[[str], None] | None = None
        self._on_param_grad = on_param_grad
        self._param_handles: list[Any] = []
        self._watched: weakref.WeakKeyDictionary[torch.nn.Module, bool] = (
            weakref.WeakKeyDictionary()
        )
        self._handles = [
            nn_module.register_module_forward_pre_hook(self._pre),
            nn_module.register_module_forward_hook(self._post, always_call=True),
        ]

    @property
    def current(self) -> str:
        """Path of the innermost running module, ``""`` outside any."""
        return self.stack[-1] if self.stack else ""

    def name_of(self, module: torch.nn.Module) -> str:
        """The module's dotted path, naming it (and its subtree) on first sight."""
        name = self._names.get(module)
        if name is None:
            parent = self.current
            name = type(module).__name__ if not parent else f"{parent}.{type(module).__name__}"
            self._name_tree(module, name)
        return name

    def _name_tree(self, root: torch.nn.Module, root_name: str) -> None:
        for sub_name, sub in root.named_modules():
            if sub not in self._names:
                self._names[sub] = f"{root_name}.{sub_name}" if sub_name else root_name

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        name = self.name_of(module)
        self.stack.append(name)
        if self.on_change is not None:
            self.on_change(name)
        if self._on_param_grad is not None and module not in self._watched:
            self._watched[module] = True
            for pname, p in module.named_parameters(recurse=False):
                if p.requires_grad:
                    hook = self._grad_hook(name, pname)
                    handle = p.register_post_accumulate_grad_hook(hook)  # type: ignore[no-untyped-call]
                    self._param_handles.append(handle)

    def _grad_hook(self, path: str, pname: str) -> Callable[[torch.Tensor], None]:
        callback = self._on_param_grad
        assert callback is not None

        def hook(param: torch.Tensor) -> None:
            callback(path, pname, param)  # type: ignore[arg-type]

        return hook

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        stack = self.stack
        if stack:
            stack.pop()
        if self.on_change is not None:
            self.on_change(stack[-1] if stack else "")

    def close(self) -> None:
        """Remove every hook."""
        for h in (*self._handles, *self._param_handles):
            h.remove()
        self._handles, self._param_handles = [], []
        self.stack.clear()
