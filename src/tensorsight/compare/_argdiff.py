"""Which non-tensor arguments of two paired ops differ (the dump's ``args`` column).

Level ``op`` records every argument of every op (``capture/_args.py``): a norm's ``eps``, a
softmax's ``dim``, ``addcdiv``'s ``value`` (Adam's step size), a scalar ``other``. When an
op's output is an error, the arguments its two calls were given are the first thing to
check: "eps=1e-05 (bench) vs eps=1 (target)" names a planted bug outright.

Tensors (``{"tensor": ...}``) are the rows, compared by the metrics; dtypes, devices,
layouts and memory formats differ by design between an fp32 and a bf16 run (autocast) or
two devices, so they are not reported. Floats that agree to a relative ``1e-6`` are equal
(a step size recomputed in another precision), and so are an optional flag left unset
(``null``) and ``false``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["FLOAT_RTOL", "argument_difference", "parse_args"]

FLOAT_RTOL = 1e-6
_BY_DESIGN = frozenset({"dtype", "device", "layout", "memory_format"})
_LIMIT = 3  # arguments named in one sentence


def parse_args(text: str | None) -> dict[str, Any] | None:
    """The recorded arguments as a dict (``None``: not recorded, omitted or unreadable)."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or "__omitted__" in value:
        return None
    return value


def _plain(v: Any) -> Any:
    """A value with the dump's encodings resolved; ``_SKIP`` for what is not compared."""
    if isinstance(v, dict):
        if len(v) == 1:
            ((key, inner),) = v.items()
            if key == "float" and isinstance(inner, str):
                return float(inner)
            if key == "tensor" or key in _BY_DESIGN or key == "unsupported":
                return _SKIP
        return _SKIP
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


class _Skip:
    def __repr__(self) -> str:
        return "<not compared>"


_SKIP = _Skip()


def _equal(a: Any, b: Any) -> bool:
    if a is _SKIP or b is _SKIP:
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if (a is None and b is False) or (a is False and b is None):
        return True  # an optional flag left unset is off (``pin_memory`` of a cast)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return fa == fb or abs(fa - fb) <= FLOAT_RTOL * max(abs(fa), abs(fb))
    return bool(a == b)


def _text(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    return json.dumps(v) if isinstance(v, str) else str(v)


def argument_difference(
    bench: Mapping[str, Any] | None, target: Mapping[str, Any] | None
) -> str | None:
    """``"eps=1e-05 (bench) vs eps=1 (target)"`` for the arguments that differ, or ``None``
    (none differ, or either side did not record them)."""
    if bench is None or target is None:
        return None
    parts = []
    for name in dict.fromkeys([*bench, *target]):
        if name not in bench or name not in target:
            continue  # another schema version: nothing to say
        a, b = _plain(bench[name]), _plain(target[name])
        if not _equal(a, b):
            parts.append(f"{name}={_text(a)} (bench) vs {name}={_text(b)} (target)")
    if not parts:
        return None
    more = f" and {len(parts) - _LIMIT} more" if len(parts) > _LIMIT else ""
    return ", ".join(parts[:_LIMIT]) + more
