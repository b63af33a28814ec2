"""Fixtures for the board: an in-memory provider with every kind, and a test client."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest

from tensorsight.data import HistogramRecord, ImageRecord, InMemoryProvider, TextRecord


def png_bytes(width: int, height: int, value: int) -> bytes:
    """A real grey PNG (zlib + CRC chunks), no imaging library needed."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + bytes([value]) * width for _ in range(height))
    out = io.BytesIO()
    out.write(b"\x89PNG\r\n\x1a\n")
    out.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)))
    out.write(chunk(b"IDAT", zlib.compress(raw)))
    out.write(chunk(b"IEND", b""))
    return out.getvalue()


@pytest.fixture
def provider() -> InMemoryProvider:
    p = InMemoryProvider()
    steps = np.arange(100)
    loss = 1.0 / (1 + steps)
    loss[40] = np.nan
    loss[60] = np.inf
    p.add_scalars("train", "loss", steps=steps, values=loss, wall_times=1000.0 + steps)
    p.add_scalars(
        "eval", "loss", steps=steps[::10], values=loss[::10] * 2, wall_times=2000.0 + steps[::10]
    )
    p.add_scalars("train", "lr", steps=steps, values=np.full(100, 0.1), wall_times=1000.0 + steps)
    p.add_scalars("train", "héllo/ünïcode", steps=[0], values=[1.0], wall_times=[1000.0])
    for step in range(3):
        p.add_histogram(
            "train",
            "weights",
            HistogramRecord(
                step=step,
                wall_time=1000.0 + step,
                edges=(-1.0, 0.0, 1.0, float("inf")),
                counts=(1.0, 2.0 + step, 0.0),
                min=-1.0,
                max=1.0,
                num=3.0 + step,
                nan_count=step,
                pos_inf_count=0,
                neg_inf_count=None,
            ),
        )
        p.add_image(
            "train",
            "samples",
            ImageRecord(step * 10, 1000.0 + step, 0, 4, 3, png_bytes(4, 3, 80 * step), "image/png"),
        )
    p.add_image("train", "weird", ImageRecord(0, 1000.0, 0, 1, 1, b"<script>", "text/html"))
    p.add_text("train", "notes", TextRecord(5, 1005.0, "**bold** <script>alert(1)</script>"))
    return p


@pytest.fixture
def client(provider):
    from starlette.testclient import TestClient

    from tensorsight.board.app import create_app

    with TestClient(create_app(provider)) as c:
        yield c
