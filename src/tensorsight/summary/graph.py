"""Record a torch model's graph as a TensorBoard ``GraphDef`` with dtypes and module paths.

The model runs once on the example input under ``torch.no_grad()``, inside a
``TorchDispatchMode`` that sees every ATen op that really runs (after autocast, so ops that
run in bfloat16 say so) and forward hooks that tell which module each op runs in. Each op
becomes one ``NodeDef`` (docs/formats/summaries.md, "Model graphs", is the spec):
``name`` = ``<module scopes>/<op type>_<n>``, ``op`` = ``aten::addmm``, ``input`` = producer
names, and the attrs ``_output_shapes``, ``tensorsight.output_dtypes``,
``tensorsight.module_path``, ``tensorsight.op`` and ``tensorsight.attr.<name>``.

What is lost: one concrete run is recorded, so data-dependent branches show only the branch
taken, loops are unrolled, and Python-side work that runs no ATen op is invisible.
"""

from __future__ import annotations

import logging
import weakref
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from tensorsight._lazy import lazy_import
from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb

__all__ = ["build_graph_def", "scope_of"]

_log = logging.getLogger(__name__)
_PRODUCER_VERSION = 22  # GraphDef producer version torch's writer declares
_MODULE_PATH = "tensorsight.module_path"


def scope_of(module_path: str) -> str:
    """``"encoder.layer.0.attn"`` -> ``"encoder/layer.0/attn"``: a numeric name joins its parent."""
    parts: list[str] = []
    for part in module_path.split(".") if module_path else []:
        if part.isdigit() and parts:
            parts[-1] = f"{parts[-1]}.{part}"
        else:
            parts.append(part)
    return "/".join(parts)


def _shape(dims: Sequence[int]) -> Any:
    return tb.TensorShapeProto(dim=[tb.TensorShapeProto.Dim(size=int(d)) for d in dims])


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _attr(value: object) -> Any | None:
    """An ``AttrValue`` for a scalar op argument, or None when it is not a simple value."""
    if isinstance(value, bool):
        return tb.AttrValue(b=value)
    if isinstance(value, int):
        return tb.AttrValue(i=value)
    if isinstance(value, float):
        return tb.AttrValue(f=value)
    if isinstance(value, str):
        return tb.AttrValue(s=value.encode())
    if isinstance(value, list | tuple) and value:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return tb.AttrValue(list=tb.AttrValue.ListValue(i=list(value)))
        if all(isinstance(v, float | int) and not isinstance(v, bool) for v in value):
            return tb.AttrValue(list=tb.AttrValue.ListValue(f=[float(v) for v in value]))
        return None
    type_name = type(value).__name__
    if type_name in {"dtype", "device", "layout", "memory_format"}:
        return tb.AttrValue(s=_dtype_name(value).encode())
    return None


class _Recorder:
    """Builds NodeDefs while the model runs; keeps producers by tensor identity."""

    def __init__(self, torch: Any, model: Any) -> None:
        self.torch = torch
        self.nodes: list[Any] = []
        self.counts: dict[str, int] = defaultdict(int)
        self.producers: dict[int, tuple[Any, str]] = {}  # id -> (weakref, node name)
        self.stack: list[str] = [""]
        self.names = {id(m): name for name, m in model.named_modules(remove_duplicate=False)}
        self.params: dict[int, tuple[str, str]] = {}
        for name, p in model.named_parameters(remove_duplicate=False):
            self.params.setdefault(id(p), (name, "Parameter"))
        for name, b in model.named_buffers(remove_duplicate=False):
            self.params.setdefault(id(b), (name, "Buffer"))

    def node(self, name: str, op: str, inputs: list[str], outputs: list[Any], **attrs: Any) -> Any:
        node = tb.NodeDef(name=name, op=op, input=inputs)
        tensors = [t for t in outputs if isinstance(t, self.torch.Tensor)]
        node.attr["_output_shapes"].list.shape.extend(_shape(t.shape) for t in tensors)
        node.attr["tensorsight.output_dtypes"].list.s.extend(
            _dtype_name(t.dtype).encode() for t in tensors
        )
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        self.nodes.append(node)
        for t in tensors:
            self.producers[id(t)] = (weakref.ref(t), name)
        return node

    def producer(self, tensor: Any) -> str:
        known = self.producers.get(id(tensor))
        if known is not None and known[0]() is tensor:
            return str(known[1])
        param = self.params.get(id(tensor))
        if param is not None:
            path, kind = param
            name = scope_of(path)
            self.node(name, kind, [], [tensor], **{"tensorsight.module_path": _s(path)})
            return name
        scope = scope_of(self.stack[-1])
        index = self.counts["Constant"]
        self.counts["Constant"] += 1
        name = f"{scope}/constant_{index}" if scope else f"constant_{index}"
        self.node(name, "Constant", [], [tensor], **{"tensorsight.module_path": _s(self.stack[-1])})
        return name

    def record_op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        pytree = self.torch.utils._pytree
        flat_in, _ = pytree.tree_flatten((args, kwargs))
        inputs = [self.producer(t) for t in flat_in if isinstance(t, self.torch.Tensor)]
        op_type = func._schema.name  # "aten::addmm"
        index = self.counts[op_type]
        self.counts[op_type] += 1
        module_path = self.stack[-1]
        scope = scope_of(module_path)
        name = f"{scope}/{op_type}_{index}" if scope else f"{op_type}_{index}"
        attrs = {"tensorsight.module_path": _s(module_path), "tensorsight.op": _s(str(func))}
        bound = list(zip(func._schema.arguments, args, strict=False))
        bound += [(a, kwargs[a.name]) for a in func._schema.arguments if a.name in kwargs]
        for argument, value in bound:
            attr = _attr(value)
            if attr is not None:
                attrs[f"tensorsight.attr.{argument.name}"] = attr
        flat_out, _ = pytree.tree_flatten(out)
        self.node(name, op_type, inputs, flat_out, **attrs)


def _s(text: str) -> Any:
    return tb.AttrValue(s=text.encode())


def build_graph_def(model: Any, input_to_model: object = None) -> Any:
    """Run ``model`` once on ``input_to_model`` and return the recorded ``GraphDef``.

    Args:
        model: A ``torch.nn.Module``.
        input_to_model: A tensor, or a tuple/list of positional arguments, or None (no input).
            Run it inside ``torch.autocast(...)`` to record reduced-precision dtypes.

    Raises:
        UsageError: ``model`` is not an ``nn.Module``, or running it failed.
    """
    torch = lazy_import("torch", extra="torch", needed_by="SummaryWriter.add_graph")
    from torch.utils._python_dispatch import TorchDispatchMode

    if not isinstance(model, torch.nn.Module):
        msg = f"Graph model: got {type(model).__name__}. Expected a torch.nn.Module."
        raise UsageError(msg)
    if input_to_model is None:
        args: tuple[Any, ...] = ()
    elif isinstance(input_to_model, list | tuple):
        args = tuple(input_to_model)
    else:
        args = (input_to_model,)
    recorder = _Recorder(torch, model)
    for k, tensor in enumerate(t for t in args if isinstance(t, torch.Tensor)):
        recorder.node(f"input/input.{k}", "IO Node", [], [tensor], **{_MODULE_PATH: _s("")})

    class _Mode(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            recorder.record_op(func, args, kwargs, out)
            return out

    def pre_hook(module: Any, _args: Any) -> None:
        recorder.stack.append(recorder.names.get(id(module), type(module).__name__))

    def post_hook(_module: Any, _args: Any, _out: Any) -> None:
        if len(recorder.stack) > 1:
            recorder.stack.pop()

    handles = []
    for module in model.modules():
        if module is not model:
            handles.append(module.register_forward_pre_hook(pre_hook))
            handles.append(module.register_forward_hook(post_hook, always_call=True))
    try:
        with torch.no_grad(), _Mode():  # type: ignore[no-untyped-call]
            output = model(*args)
    except Exception as exc:
        msg = (
            f"Graph model {type(model).__name__!r}: running it on input_to_model failed "
            f"({type(exc).__name__}: {exc}). Expected input_to_model to be valid arguments "
            "of its forward()."
        )
        raise UsageError(msg) from exc
    finally:
        for handle in handles:
            handle.remove()
    flat_out, _ = torch.utils._pytree.tree_flatten(output)
    for k, tensor in enumerate(t for t in flat_out if isinstance(t, torch.Tensor)):
        producer = recorder.producer(tensor)
        recorder.node(
            f"output/output.{k}", "IO Node", [producer], [tensor], **{_MODULE_PATH: _s("")}
        )
    _log.debug("add_graph recorded %d nodes", len(recorder.nodes))
    return tb.GraphDef(node=recorder.nodes, versions=tb.VersionDef(producer=_PRODUCER_VERSION))
