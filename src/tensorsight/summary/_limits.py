"""Bounds on what a file may make the reader allocate (hostile or damaged files).

A size read from a file is checked against these limits before anything is allocated;
over a limit the record is skipped with a problem that names the limit. The defaults can be
raised with environment variables (read when each value is checked):

* ``TENSORSIGHT_MAX_TENSOR_MIB`` (default 256): most MiB one decoded tensor value may
  take when it holds fewer values than its shape (TensorFlow's "fill with the single
  value" rule), since the record itself does not bound it.
* ``TENSORSIGHT_MAX_RECORD_MIB`` (default 2048): most MiB of one record's payload; a
  record header claiming more is corrupt (protobuf cannot parse a larger message anyway).
"""

from __future__ import annotations

import os

__all__ = ["SizeLimitError", "max_record_bytes", "max_tensor_bytes"]

_MIB = 1 << 20


class SizeLimitError(ValueError):
    """A size read from a file is over a limit; the message names the limit."""


def _mib(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        value = int(raw) if raw else default
    except ValueError:
        value = default
    return max(1, value) * _MIB


def max_tensor_bytes() -> int:
    """Most bytes a filled tensor may take (``TENSORSIGHT_MAX_TENSOR_MIB``, 256)."""
    return _mib("TENSORSIGHT_MAX_TENSOR_MIB", 256)


def max_record_bytes() -> int:
    """Most payload bytes of one record (``TENSORSIGHT_MAX_RECORD_MIB``, 2048)."""
    return min(_mib("TENSORSIGHT_MAX_RECORD_MIB", 2048), (1 << 62))
