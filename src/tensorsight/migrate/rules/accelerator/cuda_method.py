"""``accelerator/cuda-method``: ``x.cuda()`` -> ``x.to(_device)``.

Safe when the receiver is known to be a tensor or module (:mod:`tensorsight.migrate._values`:
built by a torch call or by a ``nn.Module`` subclass of the project, annotated as one, a
``forward`` input passed to a torch layer, a torchvision ``ToTensor`` output...) and the
argument, if any, is a device index (a literal, a name that reads as one, or one the flow
prepass proves an integer: ``rank`` of an ``mp.spawn`` or RPC target); unsafe otherwise,
since another object's ``.cuda()`` may not have a ``.to()`` and ``torch.device(type, d)``
needs an integer ``d``. A receiver holding an RPC result (``rref.rpc_sync().get_model()``,
a ``RemoteModule``'s ``forward`` output) stays unsafe, since its type is that of a function
run on another worker, and the row says so.

Example::

    model = Net().cuda()                        model = Net().to(_device)
    x = x.cuda(non_blocking=True)               x = x.to(_device, non_blocking=True)   # unsafe
    y = y.cuda(1)                               y = y.to(torch.device(_device.type, 1))
"""

from __future__ import annotations

import ast

import libcst as cst

from tensorsight.migrate._flow import cst_is_index
from tensorsight.migrate._values import is_remote_result
from tensorsight.migrate.context import RuleContext, code_of
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules._base import append_arg, keyword
from tensorsight.migrate.rules.accelerator.tables import INDEX_NAME_HINTS

RULE_ID = "accelerator/cuda-method"
DESCRIPTION = "x.cuda(...) -> x.to(_device, ...); unsafe when x's type is unknown."


class ReplaceCudaMethodRule(MigrationRule):
    """Rewrites the tensor/module ``.cuda()`` method."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = (Need(names=("cuda",)),)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        func = original.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "cuda":
            return None
        if ctx.qname(func) is not None:  # torch.cuda(...) or an alias of a module: not a method
            return None
        if not isinstance(updated.func, cst.Attribute):
            return None
        if any(a.star for a in updated.args):
            ctx.report(
                self,
                original,
                status="manual",
                api=".cuda",
                message="Move to the prologue device: `.to(_device, ...)`, passing the unpacked "
                "arguments by keyword (`.cuda()` takes device, non_blocking, memory_format).",
            )
            return None
        index: cst.BaseExpression | None = None
        rest: list[cst.Arg] = []
        for i, arg in enumerate(updated.args):
            name = arg.keyword.value if arg.keyword is not None else _POSITIONAL[min(i, 2)]
            if name == "device":
                index = arg.value
            elif arg.keyword is not None:
                rest.append(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))
            else:  # `.to()` has other arguments at these positions: pass them by keyword
                rest.append(keyword(name, arg.value))
        plain_index = (
            index is None
            or _is_index(index)
            or cst_is_index(index, lambda n: ctx.flow_holds("index", n))
        )
        if index is None or (isinstance(index, cst.Name) and index.value == "None"):
            device: cst.BaseExpression = ctx.device()
        else:
            device = ctx.indexed_device(index)
        args = [cst.Arg(device)]
        for arg in rest:
            args = append_arg(args, arg)
        new = updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to")), args=args)
        known = ctx.is_torch_value(func.value)
        why = "the receiver may not be a tensor or module"
        if not known and _is_remote(func.value, ctx):
            verb = "holds" if isinstance(func.value, cst.Name | cst.Attribute) else "is"
            why = (
                f"`{code_of(func.value)}` {verb} what a remote call returns, whose type is "
                "that of a function run on another worker (and an RPC result arrives on the "
                "CPU unless the backend maps devices): the fix is right when that function "
                "returns a tensor or module"
            )
        if known and not plain_index:
            why = "the argument may be a torch.device rather than an index"
        return ctx.fix(
            self,
            original,
            new,
            updated=updated,
            api="torch.Tensor.cuda" if known else ".cuda",
            message="Move to the prologue device instead of CUDA.",
            safety="safe" if known and plain_index else "unsafe",
            why_unsafe=why,
        )


_POSITIONAL = ("device", "non_blocking", "memory_format")


def _is_remote(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A receiver holding an RPC result (:func:`~tensorsight.migrate._values.is_remote_result`):
    a name or ``self`` attribute assigned one in this module, or such a call chain itself."""
    if isinstance(node, cst.Name | cst.Attribute) and code_of(node) in ctx.facts.remote:
        return True
    if not isinstance(node, cst.Call | cst.Attribute | cst.Subscript):
        return False
    try:
        expr = ast.parse(code_of(node).strip(), mode="eval").body
    except SyntaxError:  # a multi-line chain: no advice beyond the plain one
        return False
    return is_remote_result(expr, lambda key: key in ctx.facts.remote)


def _is_index(node: cst.BaseExpression) -> bool:
    """An integer literal, ``None``, or a name that reads as a device index (``local_rank``)."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Name) and node.value == "None":
        return True
    if isinstance(node, cst.Subscript):  # device_ids[0]
        node = node.value
    if isinstance(node, cst.Name | cst.Attribute):
        name = (node.value if isinstance(node, cst.Name) else node.attr.value).lower()
        return any(hint in name for hint in INDEX_NAME_HINTS)
    return False
