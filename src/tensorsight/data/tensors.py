"""Result type for the board's tensors view: one tensor at one step (SCHEMA_VERSION 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["REDUCED_FLOAT_DTYPES", "TensorValue"]

#: dtype names whose values are stored widened to float32 in :attr:`TensorValue.values`.
REDUCED_FLOAT_DTYPES = frozenset(
    {"bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"}
)


@dataclass(frozen=True, eq=False)
class TensorValue:
    """One tensor of a tag at one step.

    Attributes:
        step: Step.
        wall_time: Seconds since the epoch.
        dtype: The dtype it was written with (``"bfloat16"``, ``"float32"``, ``"int64"``...).
        values: The values as a numpy array of the tensor's shape. bfloat16, float16 and
            float8 come widened to float32, exactly; other numeric dtypes as they are;
            string tensors as an ``object`` array of ``bytes``.
    """

    step: int
    wall_time: float
    dtype: str
    values: NDArray[Any]

    SCHEMA_VERSION = 1

    @property
    def shape(self) -> tuple[int, ...]:
        """The tensor's shape."""
        return tuple(int(d) for d in self.values.shape)

    @staticmethod
    def from_array(
        step: int, wall_time: float, array: Any, dtype: str | None = None
    ) -> TensorValue:
        """Build from an array-like; ``dtype`` names the written dtype (default: the array's).

        Example:
            >>> TensorValue.from_array(0, 0.0, [[1, 2]], dtype="bfloat16").values.dtype
            dtype('float32')
        """
        arr = np.asarray(array)
        name = dtype or str(arr.dtype)
        if name in REDUCED_FLOAT_DTYPES:
            arr = arr.astype(np.float32)
        arr.setflags(write=False)
        return TensorValue(int(step), float(wall_time), name, arr)
