"""Helpers for the writer tests: read a folder back with TensorBoard's own loader."""

from __future__ import annotations

from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tensorsight.summary._record import FOOTER_SIZE, HEADER_SIZE, masked_crc32c

KEEP_ALL = {
    "compressedHistograms": 0,
    "images": 0,
    "audio": 0,
    "scalars": 0,
    "histograms": 0,
    "tensors": 0,
}


def load(run: Path | str) -> EventAccumulator:
    """TensorBoard's EventAccumulator over one run folder, every point kept."""
    acc = EventAccumulator(str(run), size_guidance=KEEP_ALL)
    acc.Reload()
    return acc


def event_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("events.out.tfevents.*"))


def read_records(path: Path) -> tuple[list[bytes], int]:
    """Every complete, CRC-valid record of ``path`` and the count of trailing bytes left over.

    Stops at the first record that is cut off; a CRC mismatch in a complete record fails.
    """
    data = path.read_bytes()
    records, pos = [], 0
    while pos + HEADER_SIZE <= len(data):
        length_bytes = data[pos : pos + 8]
        length = int.from_bytes(length_bytes, "little")
        assert int.from_bytes(data[pos + 8 : pos + 12], "little") == masked_crc32c(length_bytes)
        end = pos + HEADER_SIZE + length + FOOTER_SIZE
        if end > len(data):
            break
        payload = data[pos + HEADER_SIZE : pos + HEADER_SIZE + length]
        assert int.from_bytes(data[end - 4 : end], "little") == masked_crc32c(payload)
        records.append(payload)
        pos = end
    return records, len(data) - pos
