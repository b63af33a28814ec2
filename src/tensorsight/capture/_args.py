"""An op's non-tensor arguments as the op table's ``args`` column (level op, every mode).

The text is one compact JSON object: schema argument name -> value, in schema order, every
argument of the op's schema (defaults filled in, as the dispatcher passes them), so that the
call can be rebuilt from the dump (``compare/replay.py``). Values:

=====================================  ===============================================
argument                               JSON
=====================================  ===============================================
tensor                                 ``{"tensor": "input.0"}`` (the row's name;
                                       ``input.<i>.<j>`` inside a list, ``input.<name>``
                                       for a keyword-only argument)
a Python number passed for a tensor    the number
``None``, bool, int, str               ``null``, ``true``/``false``, ``3``, ``"tanh"``
float                                  the shortest ``%.<p>g`` text that reads back
                                       exactly, with ``.0`` added when it would read as
                                       an int; ``{"float": "inf"}`` / ``"-inf"`` / ``"nan"``
dtype, layout, memory format, device   ``{"dtype": "float32"}``, ``{"layout": "strided"}``,
                                       ``{"memory_format": "contiguous_format"}``,
                                       ``{"device": "cpu"}``
list, tuple                            a JSON list
anything else (a Generator, ...)       ``{"unsupported": "<type name>"}``
=====================================  ===============================================

Text longer than :data:`ARGS_LIMIT` characters is replaced by ``{"__omitted__": <length>}``.
The native capture (``_native_capture.cpp``) writes the same text byte for byte; both
paths are tested to agree.
"""

from __future__ import annotations

import json
import math
from typing import Any

import torch

from tensorsight.capture._torch_stats import dtype_name

__all__ = ["ARGS_LIMIT", "OMITTED", "encode_call", "format_float"]

ARGS_LIMIT = 4096
OMITTED = "__omitted__"

_FLOATS: dict[float, str] = {}


def format_float(x: float) -> str:
    """The JSON text of a float (see the module docstring)."""
    out = _FLOATS.get(x)
    if out is not None:
        return out
    if math.isnan(x):
        out = '{"float":"nan"}'
    elif math.isinf(x):
        out = '{"float":"inf"}' if x > 0 else '{"float":"-inf"}'
    else:
        for p in range(1, 18):
            out = "%.*g" % (p, x)  # noqa: UP031 (the C++ side prints the same)
            if float(out) == x:
                break
        assert out is not None
        if not any(c in out for c in ".en"):
            out += ".0"
    if len(_FLOATS) < 10_000:
        _FLOATS[x] = out
    return out


_LAYOUTS = {torch.strided: "strided", torch.sparse_coo: "sparse_coo"}
_FORMATS = {
    torch.contiguous_format: "contiguous_format",
    torch.preserve_format: "preserve_format",
    torch.channels_last: "channels_last",
    torch.channels_last_3d: "channels_last_3d",
}


def _value(v: Any, name: str) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    t = type(v)
    if t is int:
        return str(v)
    if t is float:
        return format_float(v)
    if isinstance(v, torch.Tensor):
        return '{"tensor":"%s"}' % name  # noqa: UP031
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_value(x, f"{name}.{j}") for j, x in enumerate(v)) + "]"
    if t is str:
        return json.dumps(v)
    if isinstance(v, torch.dtype):
        return '{"dtype":"%s"}' % dtype_name(v)  # noqa: UP031
    if isinstance(v, torch.device):
        return '{"device":"%s"}' % v  # noqa: UP031
    if isinstance(v, torch.layout):
        return '{"layout":"%s"}' % _LAYOUTS.get(v, str(v).removeprefix("torch."))  # noqa: UP031
    if isinstance(v, torch.memory_format):
        return '{"memory_format":"%s"}' % _FORMATS.get(v, str(v))  # noqa: UP031
    if isinstance(v, (torch.SymInt, int)):
        return str(int(v))
    if isinstance(v, (torch.SymFloat, float)):
        return format_float(float(v))
    if isinstance(v, torch.SymBool):
        return "true" if bool(v) else "false"
    return '{"unsupported":"%s"}' % type(v).__name__  # noqa: UP031


_NO_DEFAULT = object()


def _schema_args(func: Any) -> list[tuple[str, bool, Any]]:
    """(name, keyword-only, default or _NO_DEFAULT) per schema argument."""
    out = []
    for a in func._schema.arguments:
        default = a.default_value if a.has_default_value() else _NO_DEFAULT
        out.append((a.name, bool(a.kwarg_only), default))
    return out


_SCHEMAS: dict[Any, list[tuple[str, bool, Any]]] = {}


def encode_call(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> str | None:
    """The ``args`` text of one call of an OpOverload (``None``: the op has no schema)."""
    spec = _SCHEMAS.get(func)
    if spec is None:
        try:
            spec = _SCHEMAS[func] = _schema_args(func)
        except (AttributeError, RuntimeError):
            return None
    parts = []
    positional = 0
    for name, kwarg_only, default in spec:
        if kwarg_only:
            label = f"input.{name}"
            v = kwargs.get(name, default) if kwargs else default
        else:
            label = f"input.{positional}"
            if positional < len(args):
                v = args[positional]
            elif kwargs and name in kwargs:
                v = kwargs[name]
            else:
                v = default
            positional += 1
        if v is _NO_DEFAULT:
            v = None
        parts.append(f'"{name}":{_value(v, label)}')
    text = "{" + ",".join(parts) + "}"
    if len(text) > ARGS_LIMIT:
        return '{"%s":%d}' % (OMITTED, len(text))  # noqa: UP031
    return text
