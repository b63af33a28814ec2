"""Validation of what a dump file holds, at read time: one error naming file, place and type.

Every reader of a dump (``dump.json`` and ``construct.json`` of msprobe, the manifest, the
op table, the safetensors headers) checks each value it uses against its schema before
using it, so that a damaged or hostile file gives one :class:`DumpFormatError`::

    msprobe file '/d/step0/proc1/dump.json': data['Functional.linear.0.forward'].input_args[0]
    .shape is an int (3). Expected a list of non-negative integers.

and never a ``TypeError`` from deep inside, a ``RecursionError`` or a ``MemoryError``.
Sizes read from a file are checked before anything is allocated from them:

* a JSON file larger than ``TENSORSIGHT_MAX_JSON_MIB`` (default 4096) is refused before it
  is read;
* a shape has at most :data:`MAX_DIMS` dimensions and its element count fits an int64;
* JSON nesting deeper than Python's parser allows is a format error, not a crash.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, NoReturn

from tensorsight.dumpformat import _fs
from tensorsight.errors import DumpFormatError

__all__ = [
    "MAX_DIMS",
    "MAX_NUMEL",
    "describe",
    "fail",
    "key",
    "load_json",
    "max_json_bytes",
    "number",
    "opt_str",
    "read_json_file",
    "read_limited",
    "reason",
    "req_int",
    "req_str",
    "shape",
]

MAX_DIMS = 64  # torch's limit on a tensor's dimensions
MAX_NUMEL = (1 << 63) - 1  # the element count must fit the op table's int64
_MIB = 1 << 20


def max_json_bytes() -> int:
    """Most bytes of one JSON file of a dump (``TENSORSIGHT_MAX_JSON_MIB``, 4096)."""
    raw = os.environ.get("TENSORSIGHT_MAX_JSON_MIB", "")
    try:
        value = int(raw) if raw else 4096
    except ValueError:
        value = 4096
    return max(1, value) * _MIB


def describe(value: Any) -> str:
    """``an int (3)``, ``a string ('3,4')``, ``null``, ``a list``: a value's JSON type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int):
        text = (
            str(value)
            if abs(value) < 10**30
            else f"{str(value)[:12]}... ({len(str(value))} digits)"
        )
        return f"an int ({text})"
    if isinstance(value, float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def reason(exc: BaseException, limit: int = 200) -> str:
    """``<type>: <message>`` of a library's exception on one line, shortened.

    torch's weights-only refusal is a paragraph of advice around one line of cause; only
    the cause is kept.
    """
    text = str(exc)
    cause = text.partition("WeightsUnpickler error:")[2]
    if cause:
        text = cause.partition("Check the documentation")[0]
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def fail(source: str, where: str, value: Any, expected: str) -> NoReturn:
    """Raise ``<source>: <where> is <its type>. Expected <expected>.``"""
    place = f"{where} is" if where else "it holds"
    msg = f"{source}: {place} {describe(value)}. Expected {expected}."
    raise DumpFormatError(msg)


def load_json(data: str | bytes, source: str, expected: str) -> Any:
    """Parse JSON; malformed text and nesting too deep for the parser are format errors."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        why = "nested too deeply" if isinstance(exc, RecursionError) else reason(exc)
        msg = f"{source}: not valid JSON ({why}). Expected {expected}."
        raise DumpFormatError(msg) from None


def read_limited(path: _fs.AnyPath, source: str, expected: str) -> bytes:
    """A whole JSON file's bytes, refusing one over :func:`max_json_bytes` before reading."""
    try:
        size = _fs.size(path)
    except OSError:
        size = 0  # the read below names the problem
    limit = max_json_bytes()
    if size > limit:
        msg = (
            f"{source}: {size} bytes, over the limit of {limit >> 20} MiB. Expected "
            f"{expected}; raise TENSORSIGHT_MAX_JSON_MIB if the file is genuine."
        )
        raise DumpFormatError(msg)
    try:
        return _fs.read_bytes(path)
    except MemoryError:
        msg = f"{source}: {size} bytes do not fit in memory. Expected {expected}."
        raise DumpFormatError(msg) from None


def read_json_file(path: _fs.AnyPath, source: str, expected: str) -> Any:
    """Read (see :func:`read_limited`) and parse a JSON file."""
    return load_json(read_limited(path, source, expected), source, expected)


def req_str(source: str, where: str, value: Any) -> str:
    """A string, or a format error."""
    if not isinstance(value, str):
        fail(source, where, value, "a string")
    return value


def opt_str(source: str, where: str, value: Any) -> str | None:
    """A string or null, or a format error."""
    if value is not None and not isinstance(value, str):
        fail(source, where, value, "a string or null")
    return value


def req_int(source: str, where: str, value: Any, *, lo: int = 0, hi: int = MAX_NUMEL) -> int:
    """An integer (not a boolean; an integral float is taken) in ``[lo, hi]``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        fail(source, where, value, f"an integer in [{lo}, {hi}]")
    return value


def number(source: str, where: str, value: Any, *, strings: bool = False) -> float | None:
    """A JSON number (or null) as a float; too large for a float is a format error.

    ``strings``: a string is parsed too (msprobe writes ``"inf"``, ``"nan"``) and one that is
    not a number reads as ``None``.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        if strings:
            return None
        fail(source, where, value, "a number or null")
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            fail(source, where, value, "a number within float64 range")
    if isinstance(value, str) and strings:
        try:
            return float(value[:64])
        except ValueError:
            return None
    fail(source, where, value, "a number or null")


def shape(source: str, where: str, value: Any) -> tuple[int, ...]:
    """A list of at most :data:`MAX_DIMS` non-negative ints whose product fits an int64."""
    expected = f"a list of at most {MAX_DIMS} non-negative integers"
    if not isinstance(value, list) or len(value) > MAX_DIMS:
        fail(source, where, value, expected)
    dims = []
    for i, d in enumerate(value):
        if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= MAX_NUMEL:
            fail(source, f"{where}[{i}]", d, expected)
        dims.append(d)
    if math.prod(dims) > MAX_NUMEL:
        msg = (
            f"{source}: {where} {dims} holds more than 2**63 elements. "
            "Expected a shape whose element count fits an int64."
        )
        raise DumpFormatError(msg)
    return tuple(dims)


def key(name: str) -> str:
    """A JSON key as a path element (``['Functional.linear.0.forward']``), shortened."""
    return f"[{name[:80]!r}]"
