"""Wire-level helpers shared by the encoders: protobuf varints (event records, Parquet's
thrift) and the strict-JSON spelling of non-finite floats (the board's API, the monitor's
findings)."""

from __future__ import annotations

import math

__all__ = ["json_number", "varint"]


def json_number(v: float) -> float | str:
    """A float as strict JSON can carry it: finite as is, else ``"NaN"``, ``"Infinity"``,
    ``"-Infinity"`` (the board's front end decodes them with ``toNumber``).

    Example:
        >>> json_number(1.5), json_number(float("nan")), json_number(float("-inf"))
        (1.5, 'NaN', '-Infinity')
    """
    if math.isfinite(v):
        return v
    if math.isnan(v):
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def varint(n: int) -> bytes:
    """``n`` as an unsigned LEB128 varint of its low 64 bits (a negative int64 takes 10
    bytes, as protobuf writes it)."""
    n &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
