"""Byte-level helpers shared by the file encoders (protobuf event records, Parquet's thrift)."""

from __future__ import annotations

__all__ = ["varint"]


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
