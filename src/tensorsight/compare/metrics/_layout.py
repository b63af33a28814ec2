"""The fused kernel's accumulators: one table for the C loops and the Python merge.

Every loop of ``_kernel.c`` fills one chunk's accumulators into an array of doubles, and
:func:`~tensorsight.compare.metrics.kernel._merge_native` folds each chunk into the
running totals by name. Both take the slot of each accumulator from :data:`ACCUMULATORS`:
the C file is compiled with :func:`c_defines` (``-DTS_SXY=4``, ...; it refuses to compile
without them) and the merge reads the same indices, so a new accumulator is one line here
plus its C code and its field of ``kernel._Acc`` (same name). The merge rules:

* ``moment``: one side's shifted sums, merged by that side's ``_Moments.merge``;
* ``sum``: added over chunks;
* ``max``: the largest over chunks (also over the C loops' blocks: ``TS_IS_MAX(i)``).

A row of ``ts_chunks_*`` is :data:`ROW`: the accumulators, then the chunk's shifts ``kx``
and ``ky`` (its first element on each side).
"""

from __future__ import annotations

__all__ = ["ACCUMULATORS", "INDEX", "ROW", "SLOTS", "c_defines"]

#: (name, merge rule), in slot order. x is target, y is bench (MindStudio's convention).
ACCUMULATORS: tuple[tuple[str, str], ...] = (
    ("sx", "moment"),  # sum of (x - kx)
    ("sy", "moment"),  # sum of (y - ky)
    ("sxx", "moment"),  # sum of (x - kx)^2
    ("syy", "moment"),  # sum of (y - ky)^2
    ("sxy", "sum"),  # sum of x * y
    ("sdd", "sum"),  # sum of (x - y)^2
    ("sad", "sum"),  # sum of |x - y|
    ("acc_rel", "sum"),  # sum of |x - y| / |y| where |y| > eps
    ("max_abs", "max"),  # max |x - y|
    ("max_rel", "max"),  # max |x - y| / |y| where |y| > eps
    ("within1", "sum"),  # count of |x - y| < 1e-3 |y| (or x == y)
    ("within5", "sum"),  # count of |x - y| < 5e-3 |y| (or x == y)
    ("max_ulp_q", "max"),  # max |x - y| / (2 * spacing of y's binade)
    ("kl_u", "sum"),  # KL: sum of u
    ("kl_d", "sum"),  # KL: sum of v - u
    ("kl_s", "sum"),  # KL: sum of u log(u / v)
    ("sxx_raw", "moment"),  # sum of x^2
    ("syy_raw", "moment"),  # sum of y^2
)

#: Accumulator names in slot order.
SLOTS: tuple[str, ...] = tuple(name for name, _ in ACCUMULATORS)
#: One row of ``ts_chunks_*``: the accumulators, then the chunk's shifts.
ROW: tuple[str, ...] = (*SLOTS, "kx", "ky")
#: Name -> index in :data:`ROW`.
INDEX: dict[str, int] = {name: i for i, name in enumerate(ROW)}


def c_defines() -> list[str]:
    """The compiler flags that give ``_kernel.c`` its layout.

    ``TS_<NAME>`` is each slot's index, ``TS_NACC`` the accumulator count, ``TS_NROW`` a
    chunk row's length and ``TS_IS_MAX(i)`` whether slot ``i`` merges by maximum.

    Example:
        >>> c_defines()[:2]
        ['-DTS_SX=0', '-DTS_SY=1']
    """
    maxes = " || ".join(f"(i) == {i}" for i, (_, rule) in enumerate(ACCUMULATORS) if rule == "max")
    return [
        *(f"-DTS_{name.upper()}={i}" for i, name in enumerate(ROW)),
        f"-DTS_NACC={len(SLOTS)}",
        f"-DTS_NROW={len(ROW)}",
        f"-DTS_IS_MAX(i)=({maxes})",
    ]
