"""TFRecord framing: the only module that knows the byte layout of an event file.

Each record is::

    uint64 length            little-endian
    uint32 masked_crc32c(length bytes)
    byte   payload[length]   a serialized Event protobuf
    uint32 masked_crc32c(payload)

``masked_crc32c(x) = ((crc >> 15) | (crc << 17)) + 0xA282EAD8 (mod 2**32)`` where ``crc`` is
CRC-32C (Castagnoli). CRCs are computed by ``google-crc32c``'s C implementation.
"""

from __future__ import annotations

import struct

import google_crc32c

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "encode_record",
    "masked_crc32c",
]

HEADER_SIZE = 12  # length + its CRC
FOOTER_SIZE = 4  # payload CRC
_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """The masked CRC-32C that TFRecord stores after the length and after the payload."""
    crc: int = google_crc32c.value(bytes(data) if isinstance(data, memoryview) else data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def encode_record(payload: bytes) -> bytes:
    """Frame one payload as a TFRecord (header, payload, footer)."""
    length = _HEADER.pack(len(payload), 0)[:8]
    header = length + _FOOTER.pack(masked_crc32c(length))
    return header + payload + _FOOTER.pack(masked_crc32c(payload))
