"""Verdicts: how much error an op may show, and whether it shows more.

Two profiles judge the rows of one op at a time (its input rows and output rows):

``budget`` (default)
    The *error* of a tensor is ``e = ||target - bench|| / max(||bench||, ||target||)``
    (tensor rows; a lower bound from statistics for statistics-mode rows). An op's output may
    show ``budget = SAFETY * (u * (1 + sqrt(K) * u_acc / u) + sum_i amp_i * e_i)`` where

    * ``u`` is the unit roundoff of the lowest-precision float dtype the op touches on either
      side (bf16 ``2**-8``, fp16 ``2**-11``, fp32 ``2**-24``),
    * ``K`` is the op's reduction length (inner dimension of a matmul, reduced elements of a
      reduction) and ``u_acc`` the unit roundoff of float32 accumulation,
    * ``e_i`` are the errors of the op's inputs (error it inherits; for a backward op also
      the largest error of the forward op it differentiates, whose saved tensors it reads,
      linked by module path or msprobe's ``.forward``/``.backward`` names) and ``amp_i`` their
      conditioning: 1 by default, ``rms(input) / std(input)`` for centring ops (norms),
      ``rms(input_i) / rms(output)`` for additive ops (cancellation), ``max|input|`` for
      exponential-like ops (a relative input error becomes an absolute one).

    An output above its budget *adds* error: verdict ``error`` (a ``warning`` for the backward
    of a piecewise op such as relu or max whose forward already differs: branch flips; a
    ``warning`` for a statistics row of a division, ``div`` or ``addcdiv``, within the bound
    that holds whatever its elements are, ``max|d| / min|d|`` of the denominator (one sign,
    never 0) times the inherited error: Adam's ``m / (sqrt(v) + eps)`` on entries whose
    gradient is zero turns bf16-level gradient error into large output error, and statistics
    cannot replay it),
    unless the op, evaluated in float64 on each side's own inputs
    (:mod:`~tensorsight.compare.reproduce`, tensor dumps), reproduces that side's output
    within ``SAFETY * (u + sqrt(K) * u_acc)``: the op added nothing, the difference is
    inherited and ill-conditioned element by element (``pass``; ``warning`` when the inputs
    differ by more than 0.1). An output within budget whose inherited error is large
    (``e > 0.1``) is a ``warning``. An input whose error exceeds rounding plus every error
    seen so far is judged by its origin (:mod:`~tensorsight.compare.flow`): inherited when
    its producer's error explains it; an ``error`` when it is a parameter or model input, or
    when its target producer is not the counterpart of its bench producer (the reason says
    where the data flows part, and names the first op that ran on one side only before it,
    if any: dtype casts are not counted, autocast adds them by design); a ``warning`` of
    unknown origin when no recorded op produced it (a gradient reaching the optimizer, an
    input of a partial dump). Discrete outputs (integers, bools)
    that differ while their inputs differ are ``warning``.

``classic``
    msprobe-style fixed thresholds: ``error`` when cosine < 0.99, rel. Euclidean > 0.05 or
    KL > 0.005; ``warning`` when cosine < 0.999 or rel. Euclidean > 0.01.

Both profiles: NaN/Inf at different positions is an ``error``; a shape mismatch is an
``error``; equal fingerprints (md5 dumps) ``pass``; different fingerprints are judged on the
statistics the dump also holds, and without statistics are an ``error`` unless the dtypes
differ (``warning``: fingerprints cannot agree across dtypes).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tensorsight.compare.flow import Origin, is_cast, op_base
from tensorsight.compare.metrics.kernel import dtype_precision
from tensorsight.compare.reproduce import Reproduction
from tensorsight.compare.result import OpComparison, Verdict
from tensorsight.errors import UsageError

__all__ = [
    "PROFILES",
    "SAFETY",
    "BudgetProfile",
    "ClassicProfile",
    "JudgeState",
    "Profile",
    "error_name",
    "get_profile",
    "row_error",
    "unit_roundoff",
]

_WORD = re.compile(r"[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z0-9]+(?:[A-Z](?![a-z]))?")


@functools.lru_cache(maxsize=4096)  # a dump repeats a few hundred op names thousands of times
def _op_words(op: str) -> tuple[str, ...]:
    """The lower-case words of an op's name, split at dots, underscores and camel case.

    Example:
        >>> _op_words("aten.native_layer_norm_backward.default")
        ('aten', 'native', 'layer', 'norm', 'backward', 'default')
        >>> _op_words("LayerNormGrad")
        ('layer', 'norm', 'grad')
    """
    return tuple(w.lower() for w in _WORD.findall(op))


class _Family:
    """Op-name keys (runs of whole words) with the answer remembered per op name."""

    __slots__ = ("_keys", "_seen")

    def __init__(self, *keys: str) -> None:
        self._keys = tuple(tuple(k.split()) for k in keys)
        self._seen: dict[str, bool] = {}  # a dump repeats a few hundred names thousands of times

    def __contains__(self, op: object) -> bool:
        if not isinstance(op, str):
            return False
        hit = self._seen.get(op)
        if hit is None:
            words = _op_words(op)
            hit = any(
                words[i : i + len(key)] == key
                for key in self._keys
                for i in range(len(words) - len(key) + 1)
            )
            if len(self._seen) < 4096:
                self._seen[op] = hit
        return hit


def _in_family(op: str, family: _Family) -> bool:
    """Whether one of the family's keys (runs of whole words) occurs in the op's name.

    Example:
        >>> _in_family("aten.relu.default", _EXPLIKE), _in_family("aten.gelu.default", _EXPLIKE)
        (False, True)
    """
    return op in family


SAFETY = 4.0
INHERITED_WARNING = 0.1
U_ACC = 2.0**-24  # float32 accumulation
AMP_CAP = 1e4

# Op families are matched by whole words of the op's name (``aten.native_layer_norm_backward``
# -> native, layer, norm, backward; MindSpore's ``LayerNormGrad`` -> layer, norm, grad), never by
# substring: "elu" is not relu, "exp" not expand, "max" not softmax, "conv" not convert.
_MATMUL = _Family(
    "mm", "matmul", "mat mul", "linear", "addmm", "bmm", "baddbmm", "addbmm", "einsum", "conv",
    "conv1d", "conv2d", "conv3d", "convolution", "dot", "mv", "addmv", "gemm", "tensordot",
)  # fmt: skip
_CENTRING = _Family(
    "layer norm", "batch norm", "group norm", "instance norm", "rms norm", "layernorm",
    "batchnorm", "groupnorm", "rmsnorm", "layer normalization", "batch normalization",
    "group normalization", "instance normalization",
)  # fmt: skip
_ADDITIVE = _Family(
    "add", "sub", "subtract", "sum", "nansum", "mean", "nanmean", "cumsum", "var", "std", "norm",
    "reduce sum", "reduce mean", "reducesum", "reducemean",
)  # fmt: skip
# base names of sums and their relatives: what cancellation can make ill-conditioned
_ADDITIVE_BASES = frozenset(
    {"add", "sub", "sum", "nansum", "mean", "nanmean", "cumsum", "var", "std", "var_mean",
     "std_mean", "norm", "linalg_vector_norm", "frobenius_norm"}
)  # fmt: skip
_PIECEWISE = _Family(
    "relu", "relu6", "threshold", "max", "min", "amax", "amin", "maximum", "minimum", "hardtanh",
    "clamp", "where", "dropout", "sign", "abs",
)  # fmt: skip
_EXPLIKE = _Family(
    "exp", "softmax", "sigmoid", "tanh", "silu", "gelu", "elu", "celu", "selu", "erf", "pow",
    "log", "logsumexp", "softplus", "mish", "exp2", "expm1", "log1p", "log2", "log10",
)  # fmt: skip


def unit_roundoff(dtype: str | None) -> float:
    """Unit roundoff ``2**-(p+1)`` of a float dtype name; 0 for integers, bools and ``None``.

    Example:
        >>> unit_roundoff("bfloat16") == 2**-8
        True
    """
    if not dtype:
        return 0.0
    precision = dtype_precision(dtype)
    return 0.0 if precision is None else 2.0 ** -(precision[0] + 1)


def _is_float(dtype: str | None) -> bool:
    return bool(dtype) and dtype_precision(dtype or "") is not None


def _rms(mean: float | None, std: float | None) -> float | None:
    if mean is None or std is None or math.isnan(mean) or math.isnan(std):
        return None
    return math.hypot(mean, std)


def row_error(row: OpComparison) -> float | None:
    """The error measure of one row (see the module docstring); ``None`` when unknown.

    Tensor rows: ``rmse / max(rms_bench, rms_target)`` (0 when both are 0). Statistics rows:
    the larger of ``norm_rel_diff`` and ``stat_abs_diff / max(|min|, |max|)`` of the bench.
    """
    if row.rmse is not None:
        if math.isnan(row.rmse):
            return math.nan
        rb = _rms(row.mean_bench, row.std_bench) or 0.0
        rt = _rms(row.mean_target, row.std_target) or 0.0
        scale = max(rb, rt)
        if scale == 0.0:
            return 0.0 if row.rmse == 0.0 else math.inf
        return row.rmse / scale
    bounds = []
    if row.norm_rel_diff is not None and not math.isnan(row.norm_rel_diff):
        bounds.append(row.norm_rel_diff)
    if row.stat_abs_diff is not None and not math.isnan(row.stat_abs_diff):
        mags = [abs(v) for v in (row.min_bench, row.max_bench) if v is not None]
        mag = max((m for m in mags if math.isfinite(m)), default=0.0)
        if mag > 0:
            bounds.append(row.stat_abs_diff / mag)
        elif row.stat_abs_diff > 0:
            bounds.append(math.inf)
    return max(bounds) if bounds else None


def _numel(shape: tuple[int, ...] | None) -> int:
    n = 1
    for d in shape or ():
        n *= d
    return n


def reduction_length(op: str, inputs: Sequence[OpComparison], out: OpComparison) -> int:
    """Elements summed into one output element (1 for elementwise ops)."""
    first = inputs[0].shape_bench if inputs else None
    if _in_family(op, _MATMUL) and first:
        return max(1, first[-1])
    if inputs:
        n_in = max(_numel(r.shape_bench) for r in inputs)
        n_out = max(1, _numel(out.shape_bench))
        return max(1, n_in // n_out)
    return 1


def _magnitude_range(row: OpComparison) -> float:
    """``max|x| / min|x|`` of the bench tensor from its statistics: how far apart the
    magnitudes of its elements can be (``inf`` when it may hold 0 or changes sign)."""
    lo, hi = row.min_bench, row.max_bench
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return math.inf
    if lo * hi <= 0:
        return math.inf
    a, b = sorted((abs(lo), abs(hi)))
    return b / a


def _division_amplification(
    base: str, inp: OpComparison, out: OpComparison, inputs: Sequence[OpComparison]
) -> float | None:
    """Normwise conditioning of ``div`` (``input.0 / input.1``) and ``addcdiv``
    (``input.0 + value * input.1 / input.2``), ``None`` for other ops.

    Dividing by ``d`` turns a numerator's relative error ``e`` into at most
    ``e * max|d| / min|d|`` normwise (``||dm / d|| <= ||dm|| / min|d|`` while
    ``||m / d|| >= ||m|| / max|d||``), and the same holds for the denominator's own error to
    first order. Adam's update divides by ``sqrt(v) + eps``, which is ``eps`` where a gradient
    is zero, so bf16-level gradient error legitimately becomes large output error there. For
    ``addcdiv`` the quotient is added to ``input.0``, so its share of the output,
    ``(||out|| + ||input.0||) / ||out||`` at most, multiplies in.
    """
    if base not in ("div", "divide", "true_divide", "addcdiv"):
        return None
    rows = {r.tensor: r for r in inputs}
    if base == "addcdiv":
        quotient = ("input.1", "input.2")
        denominator = rows.get("input.2")
    else:
        quotient = ("input.0", "input.1")
        denominator = rows.get("input.1")
    if inp.tensor not in quotient or denominator is None:
        return 1.0 if base == "addcdiv" else None
    amp = _magnitude_range(denominator)
    if base == "addcdiv":
        r_out = _row_rms(out)
        base_row = rows.get("input.0")
        r_in = _row_rms(base_row) if base_row is not None else 0.0
        if r_out:
            amp *= max(1.0, (r_out + (r_in or 0.0)) / r_out)
    return amp


def _rsqrt(x: float) -> float:
    return 1.0 / math.sqrt(x)


def _reciprocal(x: float) -> float:
    return 1.0 / x


def _sigmoid(x: float) -> float:
    return 0.5 * (1.0 + math.tanh(0.5 * x))


# monotone elementwise ops: base name -> (the function in float64, increasing?)
_MONOTONE: dict[str, tuple[Callable[[float], float], bool]] = {
    "sqrt": (math.sqrt, True),
    "rsqrt": (_rsqrt, False),
    "exp": (math.exp, True),
    "log": (math.log, True),
    "reciprocal": (_reciprocal, False),
    "tanh": (math.tanh, True),
    "sigmoid": (_sigmoid, True),
    "neg": (float.__neg__, False),
}


def _extremes_reproduce(
    op: str, inputs: Sequence[OpComparison], row: OpComparison, tol: float
) -> bool:
    """Whether a monotone elementwise op's output min and max are, on each side, the op
    evaluated in float64 on that side's input min and max (to ``tol`` of the output's
    magnitude): the statistics analogue of a replay. Statistics measure error relative to
    the largest element, so a small element's error grows through sqrt (by
    ``sqrt(max / min) / 2``) although every element was computed faithfully."""
    spec = _MONOTONE.get(op_base(op.lower()).rstrip("_"))
    if spec is None or len(inputs) != 1 or row.tensor != "output.0":
        return False
    fn, increasing = spec
    inp = inputs[0]
    for side in ("bench", "target"):
        lo, hi = getattr(inp, f"min_{side}"), getattr(inp, f"max_{side}")
        olo, ohi = getattr(row, f"min_{side}"), getattr(row, f"max_{side}")
        if None in (lo, hi, olo, ohi):
            return False
        if fn is _reciprocal and lo * hi <= 0:
            return False  # not monotone across 0
        try:
            a, b = fn(lo), fn(hi)
        except (ValueError, ZeroDivisionError, OverflowError):
            return False
        if not increasing:
            a, b = b, a
        scale = max(abs(olo), abs(ohi))
        if not (math.isfinite(scale) and scale > 0):
            return False
        if abs(a - olo) > tol * scale or abs(b - ohi) > tol * scale:
            return False
    return True


def _error_without_extremes(row: OpComparison) -> float | None:
    """The statistics error from the L2 norm and the mean alone."""
    parts = []
    if row.norm_rel_diff is not None and not math.isnan(row.norm_rel_diff):
        parts.append(row.norm_rel_diff)
    if row.mean_bench is not None and row.mean_target is not None:
        mags = [abs(v) for v in (row.min_bench, row.max_bench) if v is not None]
        mag = max((m for m in mags if math.isfinite(m)), default=0.0)
        if mag > 0:
            parts.append(abs(row.mean_bench - row.mean_target) / mag)
    return max(parts) if parts else None


def _division_span(op: str, inputs: Sequence[OpComparison]) -> float:
    rows = {r.tensor: r for r in inputs}
    d = rows.get("input.2" if "addcdiv" in op.lower() else "input.1")
    return math.inf if d is None else _magnitude_range(d)


def _ill_conditioned(
    op: str,
    row: OpComparison,
    inputs: Sequence[OpComparison],
    known: Sequence[tuple[OpComparison, float]],
    k: int = 1,
) -> tuple[float, float, str] | None:
    """``(inherited bound, amplification of rounding, why)`` with the conditioning uncapped,
    sums of ``k`` terms counted as such and a division's denominator range included;
    ``None`` when it says no more than the capped budget or cannot be bounded (a
    denominator that may hold 0 or change sign)."""
    if not known or all(x == 0 for _, x in known):
        return None  # inputs that agree excuse nothing: the difference starts here
    base = op_base(op.lower()).rstrip("_")
    amps = []
    rounding = 1.0  # what the op's own rounding is amplified by: cancellation, not division
    for r, x in known:
        amp = _amplification(op, r, row, cap=False)
        if base in _ADDITIVE_BASES:
            ri, ro = _row_rms(r), _row_rms(row)
            if ri is not None and ro:
                # a sum of k terms: sum|x| / |sum x|, up to k * rms(x) / rms(sum) (about
                # 1 without cancellation, sqrt(k) for terms of random sign)
                amp = max(1.0, k * ri / ro)
        rounding = max(rounding, amp)
        division = _division_amplification(base, r, row, inputs)
        if division is not None:
            amp = max(amp, division)
        if not (math.isfinite(amp) and math.isfinite(rounding)):
            return None
        amps.append((amp, x))
    top = max(a for a, _ in amps)
    if top <= AMP_CAP and _division_amplification(base, known[0][0], row, inputs) is None:
        return None
    bound = math.prod(1.0 + a * x for a, x in amps) - 1.0
    if _division_amplification(base, known[0][0], row, inputs) is not None:
        why = f"a division whose denominator's magnitudes span {_fmt(_division_span(op, inputs))}"
    else:
        why = f"its inputs' error may be amplified x{_fmt(top)}, e.g. by cancellation"
    return bound, rounding, why


def _row_rms(row: OpComparison) -> float | None:
    """RMS of the bench tensor: from mean and std, or (statistics rows) norm / sqrt(numel)."""
    rms = _rms(row.mean_bench, row.std_bench)
    if rms is not None:
        return rms
    if row.norm_bench is None or row.shape_bench is None or not math.isfinite(row.norm_bench):
        return None
    n = math.prod(row.shape_bench)
    return row.norm_bench / math.sqrt(n) if n else None


def _row_std(row: OpComparison) -> float | None:
    """Standard deviation of the bench tensor (statistics rows: from rms and mean)."""
    if row.std_bench is not None:
        return row.std_bench
    rms = _row_rms(row)
    if rms is None or row.mean_bench is None or not math.isfinite(row.mean_bench):
        return None
    return math.sqrt(max(rms * rms - row.mean_bench * row.mean_bench, 0.0))


def _amplification(op: str, inp: OpComparison, out: OpComparison, *, cap: bool = True) -> float:
    name = op.lower()
    amp = 1.0
    if _in_family(op, _CENTRING) and out.tensor == "output.1" and "native" in name:
        # native_layer_norm's (and batch/group norm's) saved mean: a sum, so cancellation
        ri = _row_rms(inp)
        ro = _row_rms(out)
        if ri is not None and ro:
            amp = max(1.0, ri / ro)
    elif _in_family(op, _CENTRING):
        rms = _row_rms(inp)
        std = _row_std(inp)
        if rms and std:
            amp = rms / std
    elif _in_family(op, _EXPLIKE):
        mags = [abs(v) for v in (inp.min_bench, inp.max_bench) if v is not None]
        mags = [m for m in mags if math.isfinite(m)]
        if mags:
            amp = max(1.0, max(mags))
        elif inp.mean_bench is not None and inp.std_bench is not None:
            amp = max(1.0, abs(inp.mean_bench) + 4 * inp.std_bench)
    elif _in_family(op, _ADDITIVE):
        ri = _row_rms(inp)
        ro = _row_rms(out)
        if ri is not None and ro:
            amp = max(1.0, ri / ro)
    if not cap:
        return amp
    return min(amp, AMP_CAP) if math.isfinite(amp) else AMP_CAP


@dataclass
class JudgeState:
    """What a profile remembers while it walks the ops in execution order.

    ``origin`` and ``reproduce`` come from the engine (they read the dumps):
    ``origin(index, index_target, tensor)`` says where an input came from (data flow,
    :class:`~tensorsight.compare.flow.Origins`), ``reproduce(index, index_target, tensor)``
    evaluates an output from its own side's inputs in float64
    (:class:`~tensorsight.compare.reproduce.Reproducer`). Without them inputs are judged
    against every error seen so far and outputs by the normwise budget alone.
    """

    max_error_seen: float = 0.0
    forward_error: dict[str, float] = field(default_factory=dict)
    # "op in module" of every op (dtype casts excepted) that ran on one side only so far
    one_sided: list[str] = field(default_factory=list)
    # error of every judged row, by (bench index, tensor): what an input inherits from its producer
    errors: dict[tuple[int, str], float] = field(default_factory=dict)
    origin: Callable[[int, int | None, str], Origin] | None = None
    reproduce: Callable[[int, int | None, str], Reproduction | None] | None = None
    # which non-tensor arguments the two calls of a paired op were given differently
    arguments: Callable[[int, int | None], str | None] | None = None

    def argument_note(self, row: OpComparison) -> str:
        """``"; its arguments differ: eps=..."`` for an error reason, or ``""``."""
        if self.arguments is None or row.index is None or row.index_target is None:
            return ""
        diff = self.arguments(row.index, row.index_target)
        return f"; its arguments differ: {diff}" if diff else ""

    def note_one_sided(self, op: str, rows: Sequence[OpComparison]) -> None:
        """Remember ``op`` when every row of it exists on one side only (and it is no cast)."""
        if not rows or any(r.match != "unmatched" for r in rows):
            return
        if not (
            all(r.shape_bench is None for r in rows) or all(r.shape_target is None for r in rows)
        ):
            return  # a tensor of each side, unmatched for another reason (e.g. mapping)
        if is_cast(op):
            return
        where = rows[0].module_path
        self.one_sided.append(f"{op} in {where}" if where else op)

    def forward_keys(self, row: OpComparison) -> list[str]:
        """Keys linking a backward row to the forward op it differentiates."""
        keys = [f"module:{row.module_path}"] if row.module_path else []
        if ".backward" in row.op:  # msprobe names: Functional.relu.3.backward
            keys.append("op:" + row.op.replace(".backward", ".forward"))
        elif row.direction == "forward" and ".forward" in row.op:
            keys.append("op:" + row.op)
        return keys

    def saved_error(self, row: OpComparison) -> float:
        """Largest error seen in the forward op(s) a backward row differentiates."""
        return max((self.forward_error.get(k, 0.0) for k in self.forward_keys(row)), default=0.0)


class Profile(Protocol):
    """Judges the rows of one op; ``name`` is its registry key."""

    name: str

    def judge_op(
        self,
        op: str,
        inputs: Sequence[OpComparison],
        outputs: Sequence[OpComparison],
        state: JudgeState,
    ) -> tuple[list[OpComparison], list[OpComparison]]:
        """Return the input and output rows with verdicts set."""
        ...


# ``match`` values of pairs made across frameworks by value or position (crossmatch.py)
CROSS_MATCHES = ("value", "structure")


def _structural(row: OpComparison) -> Verdict | None:
    """Verdicts that need no budget: unmatched, shapes, NaN/Inf, empty, fingerprints."""
    if row.match == "unmatched":
        return Verdict("warning", row.reason or "No matching tensor on the other side.")
    if row.shape_bench is not None and row.shape_target is not None:
        # across frameworks the pairing chose a layout (a transposed weight, a reshape) and
        # the engine measured the target in the bench's shape (compare/crossmatch.py)
        relaid = row.match in CROSS_MATCHES and _numel(row.shape_bench) == _numel(row.shape_target)
        if row.shape_bench != row.shape_target and not relaid:
            return Verdict(
                "error", f"Shapes differ: bench {row.shape_bench}, target {row.shape_target}."
            )
        if _numel(row.shape_bench) == 0:
            return Verdict("pass", "Both tensors are empty.")
    nb, nt = row.nonfinite_bench or 0.0, row.nonfinite_target or 0.0
    if row.mode == "tensor" and row.rmse is not None and math.isnan(row.rmse) and (nb or nt):
        return Verdict(
            "error",
            f"NaN/Inf at different positions: {nb:.0f} non-finite in bench, {nt:.0f} in target.",
        )
    if row.mode in ("statistics", "md5") and nb != nt:
        return Verdict(
            "error", f"NaN/Inf counts differ: {nb:.0f} non-finite in bench, {nt:.0f} in target."
        )
    if row.mode == "md5":
        if row.fingerprint_equal is None:
            return Verdict("warning", "A fingerprint is missing on one side.")
        if row.fingerprint_equal:
            return Verdict("pass", "Fingerprints are equal (bitwise identical).")
        if row.stat_abs_diff is not None:
            return None  # not bitwise equal: judge the size of the difference by statistics
        if row.dtype_bench != row.dtype_target:
            return Verdict(
                "warning",
                f"Fingerprints differ, as they must across dtypes "
                f"({row.dtype_bench} vs {row.dtype_target}); use a tensor or statistics dump.",
            )
        return Verdict("error", "Fingerprints differ: the tensors are not bitwise identical.")
    return None


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def error_name(row: OpComparison) -> str:
    """The metric :func:`row_error` measures for ``row``, for reason sentences."""
    return "relative L2 error" if row.rmse is not None else "statistics error"


class BudgetProfile:
    """Expected error from dtypes, reduction length and conditioning (module docstring)."""

    name = "budget"

    def __init__(self, safety: float = SAFETY) -> None:
        self.safety = safety

    def judge_op(
        self,
        op: str,
        inputs: Sequence[OpComparison],
        outputs: Sequence[OpComparison],
        state: JudgeState,
    ) -> tuple[list[OpComparison], list[OpComparison]]:
        """Judge one op's rows; updates ``state.max_error_seen``."""
        state.note_one_sided(op, [*inputs, *outputs])
        dtypes = [d for r in (*inputs, *outputs) for d in (r.dtype_bench, r.dtype_target)]
        u_low = max((unit_roundoff(d) for d in dtypes), default=0.0)
        judged_in = [self._judge_input(r, state) for r in inputs]
        in_errors = [(r, row_error(r)) for r in inputs]
        judged_out = [self._judge_output(op, r, u_low, inputs, in_errors, state) for r in outputs]
        for r in (*judged_in, *judged_out):
            if r.error is not None and r.index is not None and r.index_target is not None:
                state.errors[(r.index, r.tensor)] = r.error
            if r.error is not None and math.isfinite(r.error):
                state.max_error_seen = max(state.max_error_seen, r.error)
                if r.direction == "forward":
                    for key in state.forward_keys(r):
                        state.forward_error[key] = max(state.forward_error.get(key, 0.0), r.error)
        return judged_in, judged_out

    def _judge_input(
        self, row: OpComparison, state: JudgeState, *, produced: bool = False
    ) -> OpComparison:
        verdict = _structural(row)
        if verdict is not None:
            return row.with_verdict(verdict)
        e = row_error(row)
        if e is None:
            return row.with_verdict(Verdict("pass", "No error measure for this input."))
        u = max(unit_roundoff(row.dtype_bench), unit_roundoff(row.dtype_target))
        budget = self.safety * (u + state.max_error_seen)
        if e > budget and e > 0:
            origin = None
            if not produced and state.origin is not None and row.index is not None:
                origin = state.origin(row.index, row.index_target, row.tensor)
            verdict = None
            if origin is not None:
                verdict = _by_origin(origin, e, budget, self.safety * u, self.safety, state)
            if verdict is not None:
                return row.with_verdict(verdict)
            what = "Output of an op without inputs" if produced else "Input"
            hints = []
            if not produced and origin is not None and origin.diverted is not None:
                d = origin.diverted
                hints.append(
                    f"on the target side it is the output of target op #{d.index} ({d.op}), "
                    "not of the counterpart of its bench producer, so the data flows part there"
                )
            if produced:
                hints.append("the op itself differs" + state.argument_note(row))
            elif state.one_sided:
                n = len(state.one_sided)
                hints.append(
                    f"{n} op{'s' if n > 1 else ''} ran on one side only before it (first: "
                    f"{state.one_sided[0]}), so the runs' structures differ"
                )
            elif hints:
                pass
            elif origin is not None and origin.kind == "parameter":
                hints.append("it is a parameter, and the parameters differ")
            else:
                hints.append("a parameter or model input differs")
            hint = "; ".join(hints)
            reason = (
                f"{what} differs: {error_name(row)} {_fmt(e)} exceeds its budget {_fmt(budget)} "
                f"(rounding and every earlier op): {hint}."
            )
            return row.with_verdict(Verdict("error", reason, budget, e))
        return row.with_verdict(
            Verdict(
                "pass", f"Input {error_name(row)} {_fmt(e)} is inherited or rounding.", budget, e
            )
        )

    def _judge_output(
        self,
        op: str,
        row: OpComparison,
        u_low: float,
        inputs: Sequence[OpComparison],
        in_errors: Sequence[tuple[OpComparison, float | None]],
        state: JudgeState,
    ) -> OpComparison:
        verdict = _structural(row)
        if verdict is not None:
            return row.with_verdict(verdict)
        e = row_error(row)
        if e is None:
            return row.with_verdict(Verdict("pass", "No error measure for this tensor."))
        known = [(r, x) for r, x in in_errors if x is not None and not math.isnan(x)]
        if not inputs or row.tensor.startswith("grad."):
            # a source (factory op) or an accumulated parameter gradient: judged like an input
            return self._judge_input(row, state, produced=True)
        # (1 + e_1)(1 + e_2)... - 1: first order, the sum; a product of inputs that differ
        # by more than themselves (a gradient that is 0 in exact arithmetic, squared) more
        inherited = math.prod(1.0 + _amplification(op, r, row) * x for r, x in known) - 1.0
        e_in = max((x for _, x in known), default=0.0)
        saved = 0.0
        if row.direction == "backward":  # saved forward tensors are inputs too
            saved = state.saved_error(row)
            inherited += saved
            e_in = max(e_in, saved)
        k = reduction_length(op, inputs, row)
        local = u_low + math.sqrt(k) * U_ACC if u_low else 0.0
        budget = self.safety * (local + inherited)
        # statistics rows: the bound that holds whatever the elements are (uncapped
        # conditioning, divisions included), for a warning when nothing can be replayed
        ill = _ill_conditioned(op, row, inputs, known, k) if row.rmse is None else None
        gain = e / e_in if e_in > 0 else (math.inf if e > 0 else 1.0)
        row = row.evolve(input_error=e_in, error_gain=gain)
        if not _is_float(row.dtype_bench) or not _is_float(row.dtype_target):
            if e == 0:
                return row.with_verdict(Verdict("pass", "Discrete values are equal.", budget, e))
            if e_in > 0:
                reason = f"Discrete values differ ({error_name(row)} {_fmt(e)}): the inputs differ."
                return row.with_verdict(Verdict("warning", reason, budget, e))
        if e <= budget or e == 0:
            if e_in > INHERITED_WARNING:
                reason = (
                    f"{_cap(error_name(row))} {_fmt(e)} is within its budget {_fmt(budget)} "
                    "but inherited: the inputs "
                    f"already differ by {_fmt(e_in)}."
                )
                return row.with_verdict(Verdict("warning", reason, budget, e))
            reason = (
                f"{_cap(error_name(row))} {_fmt(e)} is within its budget {_fmt(budget)} "
                "(dtype rounding"
            )
            reason += f", K={k}" if k > 1 else ""
            reason += f", inherited {_fmt(e_in)})." if e_in else ")."
            return row.with_verdict(Verdict("pass", reason, budget, e))
        if row.rmse is None and _extremes_reproduce(op, inputs, row, self.safety * local):
            rest = _error_without_extremes(row)
            if rest is not None and rest <= budget:
                reason = (
                    f"{_cap(error_name(row))} {_fmt(e)} exceeds its budget {_fmt(budget)} only "
                    "at its min and max, which the op reproduces in float64 from its input's "
                    f"min and max on each side (inherited); the rest, {_fmt(rest)}, is within."
                )
                return row.with_verdict(Verdict("pass", reason, budget, e))
        # the op's own rounding (bf16 inputs, a bf16 sum) is amplified the same way
        bound = self.safety * (local * ill[1] + ill[0] + saved) if ill is not None else 0.0
        if ill is not None and e <= bound:
            reason = (
                f"{_cap(error_name(row))} {_fmt(e)} exceeds its budget {_fmt(budget)}, but this "
                f"op is ill-conditioned here ({ill[2]}: inherited error and rounding may grow "
                f"up to {_fmt(bound)}); a statistics dump cannot tell that from an error: dump "
                "tensors (mode='tensor') to replay the op."
            )
            return row.with_verdict(Verdict("warning", reason, budget, e))
        tol = self.safety * local
        rep = None
        if state.reproduce is not None and row.index is not None and _is_float(row.dtype_target):
            rep = state.reproduce(row.index, row.index_target, row.tensor)
        if rep is not None and rep.bench <= tol and rep.target <= tol:
            return row.with_verdict(_reproduced(row, rep, e, budget, e_in, gain))
        if saved > 0 and _in_family(op, _PIECEWISE):
            reason = (
                f"{_cap(error_name(row))} {_fmt(e)} exceeds its budget {_fmt(budget)}, "
                "but this is the backward of a "
                f"piecewise op whose forward already differs by {_fmt(saved)}: branch flips."
            )
            return row.with_verdict(Verdict("warning", reason, budget, e))
        if e_in > 0:
            why = f"inputs differ by {_fmt(e_in)}, gain x{_fmt(gain)}"
        else:
            why = "its inputs agree, so the difference starts here"
        reason = (
            f"{_cap(error_name(row))} {_fmt(e)} exceeds its budget {_fmt(budget)}: "
            f"this op adds error ({why}){state.argument_note(row)}."
        )
        return row.with_verdict(Verdict("error", reason, budget, e))


def _by_origin(
    origin: Origin, e: float, budget: float, rounding: float, safety: float, state: JudgeState
) -> Verdict | None:
    """An input above what rounding and earlier errors explain, judged by where it came from:
    inherited from a judged producer whose error explains it (``rounding + safety * error``:
    a cast in between rounds once more), or of unknown origin (a warning, never "a parameter
    differs"); ``None`` leaves it to the structural and parameter checks (an input that its
    bench producer's error does not explain passed through ops of one side only)."""
    p = origin.producer
    if origin.kind == "unknown":
        reason = (
            f"Input differs by {_fmt(e)}, more than rounding and every earlier op explain "
            f"({_fmt(budget)}), and no recorded op produced it: unknown origin (a tensor made "
            "outside the recorded ops, such as a gradient reaching the optimizer or an input "
            "of a partial dump)."
        )
        return Verdict("warning", reason, budget, e)
    if p is None or origin.side != "bench":
        return None
    known = state.errors.get((p.index, p.tensor))
    if known is None or e > rounding + safety * known:
        return None
    reason = (
        f"Input error {_fmt(e)} is inherited from op #{p.index} ({p.op} {p.tensor}, "
        f"error {_fmt(known)}), judged there."
    )
    return Verdict("pass" if e <= INHERITED_WARNING else "warning", reason, budget, e)


def _reproduced(
    row: OpComparison, rep: Reproduction, e: float, budget: float, e_in: float, gain: float
) -> Verdict:
    """An output above its normwise budget that the op computed faithfully from its inputs."""
    reason = (
        f"Error {_fmt(e)} exceeds the normwise budget {_fmt(budget)}, but the op evaluated in "
        f"float64 on the target's own inputs reproduces the target's output (relative L2 "
        f"error {_fmt(rep.target)}; {rep.how}): it adds no error of its own, the difference "
        f"is inherited from its inputs (differ by {_fmt(e_in)}) and ill-conditioned "
        f"(gain x{_fmt(gain)}, element by element)."
    )
    return Verdict("pass" if e_in <= INHERITED_WARNING else "warning", reason, budget, e)


class ClassicProfile:
    """msprobe-style fixed thresholds (module docstring)."""

    name = "classic"
    cosine_error = 0.99
    cosine_warning = 0.999
    rel_euclidean_error = 0.05
    rel_euclidean_warning = 0.01
    kl_error = 0.005

    def judge_op(
        self,
        op: str,
        inputs: Sequence[OpComparison],
        outputs: Sequence[OpComparison],
        state: JudgeState,
    ) -> tuple[list[OpComparison], list[OpComparison]]:
        """Judge every row of the op on its own metrics."""
        del op, state
        return [self._judge(r) for r in inputs], [self._judge(r) for r in outputs]

    def _judge(self, row: OpComparison) -> OpComparison:
        verdict = _structural(row)
        if verdict is not None:
            return row.with_verdict(verdict)
        cos, rel, kl = row.cosine, row.rel_euclidean, row.kl_div
        if cos is None or rel is None:
            e = row_error(row)
            if e is not None and e > self.rel_euclidean_error:
                reason = f"Statistics error {_fmt(e)} exceeds 0.05."
                return row.with_verdict(Verdict("error", reason))
            return row.with_verdict(Verdict("pass", "Statistics error within 0.05."))
        if cos < self.cosine_error:
            return row.with_verdict(Verdict("error", f"Cosine {cos:.6f} is below 0.99."))
        if rel > self.rel_euclidean_error:
            reason = f"Relative Euclidean distance {_fmt(rel)} exceeds 0.05."
            return row.with_verdict(Verdict("error", reason))
        if kl is not None and kl > self.kl_error:
            return row.with_verdict(Verdict("error", f"KL divergence {_fmt(kl)} exceeds 0.005."))
        if cos < self.cosine_warning or rel > self.rel_euclidean_warning:
            reason = (
                f"Cosine {cos:.6f} / relative Euclidean distance {_fmt(rel)} near the error "
                "thresholds."
            )
            return row.with_verdict(Verdict("warning", reason))
        return row.with_verdict(
            Verdict("pass", "Cosine, relative Euclidean distance and KL divergence within limits.")
        )


PROFILES: dict[str, type[BudgetProfile] | type[ClassicProfile]] = {
    "budget": BudgetProfile,
    "classic": ClassicProfile,
}


def get_profile(name: str | Profile | None) -> Profile:
    """A profile by name (``None`` -> ``budget``), or the profile object itself.

    Raises:
        UsageError: Unknown profile name.
    """
    if name is None:
        return BudgetProfile()
    if not isinstance(name, str):
        return name
    cls = PROFILES.get(name)
    if cls is None:
        msg = f"Profile {name!r}: unknown. Expected one of {', '.join(PROFILES)}."
        raise UsageError(msg)
    return cls()
