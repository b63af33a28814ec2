"""Name the mechanism behind a divergence, with the numbers that point to it.

Each check reads finished rows (nothing is recomputed) and returns an
:class:`~tensorsight.compare.result.Advice` when its pattern is present:

* ``first-nan``: the first row where NaN/Inf appear on one side only;
* ``fp16-overflow`` / ``bf16-overflow``: bench magnitudes beyond the target dtype's maximum;
* ``underflow``: the target flushed to zero a tensor whose bench values are below the target
  dtype's smallest normal;
* ``layout-transpose``: the diverging tensor holds the bench's values in another order
  (sorted values agree; the engine checks this for tensors with a large error);
* ``scale-error`` / ``shift-error``: cosine ~ 1 but relative distance large (a scale shows in
  the std ratio, a shift in the means);
* ``inputs-differ``: the first op's inputs already differ (the runs did not start equal);
* ``catastrophic-cancellation``: the diverging op's output is much smaller than its inputs;
* ``nondeterminism``: an op with the same dtypes on both sides gave outputs that differ by no
  more than rounding explains (within its budget) from bit-identical inputs, although both
  dumps were written by the same build with the same numerics settings (framework and
  version, device, intra-op threads, deterministic algorithms, float32 matmul precision,
  cuDNN flags; read from the manifests);
* ``accumulation-order``: the same evidence when those settings differ (the sentence names
  the difference, e.g. ``num_threads 1 vs 2``) or are unknown (msprobe dumps have no
  manifest), or, with no first divergence, same-dtype errors of order ``sqrt(K) * u``
  (summation order differs: harmless);
* ``framework-default``: the first divergence is an op whose defaults differ between
  frameworks (a norm's epsilon, BatchNorm's momentum, GELU's approximation, float32 matmul
  precision) and the manifests name different frameworks: the sentence lists the defaults to
  check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tensorsight.compare import layout
from tensorsight.compare.budget import reduction_length, unit_roundoff
from tensorsight.compare.result import Advice, OpComparison
from tensorsight.dumpformat.schema import DumpManifest

__all__ = ["advise", "settings_differences"]

# manifest facts that change results bit for bit on the same inputs (``extra`` keys of the
# torch capture; ONNX dumps hold their own and are compared the same way)
_SETTINGS = (
    "num_threads", "deterministic_algorithms", "float32_matmul_precision", "cudnn_version",
    "cudnn_deterministic", "cudnn_benchmark", "graph_opt",
)  # fmt: skip

_MAX = {"float16": 65504.0, "bfloat16": 3.3895e38, "float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}
_TINY = {"float16": 6.1035e-05, "bfloat16": 1.1755e-38}


def _where(r: OpComparison) -> str:
    return f"{r.op} [{r.direction}] {r.tensor} in {r.module_path or '<root>'} (index {r.index})"


def settings_differences(
    bench: DumpManifest | None, target: DumpManifest | None
) -> tuple[str, ...] | None:
    """How the two runs' builds and numerics settings differ (``None``: a side is unknown)."""
    if bench is None or target is None:
        return None
    out = []
    for label, b, t in (
        ("framework", bench.framework, target.framework),
        (bench.framework, bench.framework_version, target.framework_version),
        ("device", bench.device, target.device),
        *((k, bench.extra.get(k), target.extra.get(k)) for k in _SETTINGS),
    ):
        if b != t:
            out.append(f"{label} {b} vs {t}")
    return tuple(out)


# op-name fragments (either side's, lower case) -> the defaults that differ between frameworks
_DEFAULTS = (
    (("layer_norm", "layernorm"), "the epsilon (PyTorch and ONNX 1e-5, Keras 1e-3)"),
    (
        ("batch_norm", "batchnorm"),
        "the epsilon (PyTorch and ONNX 1e-5, Keras 1e-3) and the momentum convention (PyTorch "
        "weighs the new batch by 0.1, ONNX, Keras and MindSpore keep 0.9 or 0.99 of the old "
        "running value)",
    ),
    (
        ("gelu",),
        "the approximation (exact erf or tanh: PyTorch's approximate='none' or 'tanh', "
        "ONNX Gelu's approximate attribute)",
    ),
    (
        ("mm.", "addmm", "matmul", "gemm", "linear", "conv"),
        "the float32 matmul precision (TF32 or bfloat16 passes, torch."
        "get_float32_matmul_precision, TensorFlow's TF32 default on Ampere and later GPUs)",
    ),
)


def _framework_default(
    row: OpComparison, pos: int, settings: tuple[str, ...] | None
) -> list[Advice]:
    frameworks = next((s for s in settings or () if s.startswith("framework ")), None)
    if frameworks is None or row.verdict != "error" or not row.tensor.startswith("output"):
        return []
    names = f"{row.op} {row.op_target or ''}".lower()
    hint = next((h for keys, h in _DEFAULTS if any(k in names for k in keys)), None)
    if hint is None:
        return []
    ev = (
        f"{_where(row)} is the first op to add error and the runs come from different "
        f"frameworks ({frameworks.removeprefix('framework ')}): check {hint} on both sides."
    )
    return [Advice("framework-default", ev, pos)]


def advise(
    rows: Sequence[OpComparison],
    first: int | None,
    *,
    settings: tuple[str, ...] | None = None,
) -> list[Advice]:
    """Mechanisms supported by the rows (see the module docstring), most specific first.

    Args:
        rows: The judged rows, in execution order.
        first: Position of the first divergence in ``rows``, or ``None``.
        settings: :func:`settings_differences` of the two dumps (``None``: unknown).
    """
    out: list[Advice] = []
    out.extend(_first_nan(rows))
    out.extend(_overflow(rows))
    if first is not None:
        row = rows[first]
        out.extend(_layout(row, first))
        out.extend(_scale_shift(row, first))
        out.extend(_cancellation(row, first))
        out.extend(_framework_default(row, first, settings))
    out.extend(_inputs_differ(rows))
    same_inputs = _same_inputs(rows, settings)
    out.extend(same_inputs)
    if first is None and not same_inputs:
        out.extend(_accumulation(rows))
    return out


def _first_nan(rows: Sequence[OpComparison]) -> list[Advice]:
    for i, r in enumerate(rows):
        nb, nt = r.nonfinite_bench or 0.0, r.nonfinite_target or 0.0
        if r.match != "unmatched" and nb != nt:
            side = "target" if nt > nb else "bench"
            ev = f"NaN/Inf first appear on the {side} side at {_where(r)} ({nb:.0f} vs {nt:.0f})."
            return [Advice("first-nan", ev, i)]
    return []


def _overflow(rows: Sequence[OpComparison]) -> list[Advice]:
    for i, r in enumerate(rows):
        dt = r.dtype_target or ""
        limit = _MAX.get(dt)
        if limit is None or r.dtype_bench == dt:
            continue
        mags = [abs(v) for v in (r.min_bench, r.max_bench) if v is not None and math.isfinite(v)]
        if mags and max(mags) > limit:
            ev = (
                f"Bench values reach {max(mags):.4g} at {_where(r)}, beyond {dt}'s maximum "
                f"{limit:.4g}."
            )
            return [Advice(f"{dt.replace('float', 'fp')}-overflow", ev, i)]
        tiny = _TINY.get(dt)
        if (
            tiny is not None
            and r.std_target == 0.0
            and r.std_bench
            and mags
            and 0 < max(mags) < tiny
        ):
            ev = f"Bench values below {dt}'s smallest normal {tiny:.3g} became 0 at {_where(r)}."
            return [Advice("underflow", ev, i)]
    return []


def _layout(r: OpComparison, pos: int) -> list[Advice]:
    if r.mechanism != layout.MECHANISM:
        return []
    ev = (
        f"At {_where(r)} the target holds the bench's values in another order (sorted values "
        f"agree, rel. Euclidean {r.rel_euclidean or 0:.3g} unsorted): a layout, transpose or "
        "reshape mismatch."
    )
    return [Advice(layout.MECHANISM, ev, pos)]


def _scale_shift(r: OpComparison, pos: int) -> list[Advice]:
    if r.mechanism == layout.MECHANISM:
        return []
    if r.cosine is None or r.rel_euclidean is None or math.isnan(r.cosine):
        return []
    if r.cosine < 0.9999 or r.rel_euclidean < 1e-3:
        return []
    sb, st = r.std_bench or 0.0, r.std_target or 0.0
    mb, mt = r.mean_bench or 0.0, r.mean_target or 0.0
    if sb > 0 and abs(st / sb - 1) > 1e-3:
        ev = (
            f"Cosine {r.cosine:.6f} but rel. Euclidean {r.rel_euclidean:.3g} at {_where(r)}: "
            f"the target is the bench scaled by ~{st / sb:.4g} (std ratio)."
        )
        return [Advice("scale-error", ev, pos)]
    ev = (
        f"Cosine {r.cosine:.6f} but rel. Euclidean {r.rel_euclidean:.3g} at {_where(r)}: "
        f"the target is shifted by ~{mt - mb:.4g} (mean difference, equal std)."
    )
    return [Advice("shift-error", ev, pos)]


def _cancellation(r: OpComparison, pos: int) -> list[Advice]:
    if r.input_error is None or r.error is None:
        return []
    additive = any(k in r.op for k in ("add", "sub", "sum", "mean"))
    gain = r.error_gain
    if additive and gain is not None and math.isfinite(gain) and gain > 100:
        ev = (
            f"{_where(r)} amplifies its inputs' error {gain:.3g}x: its output is "
            "much smaller than its inputs (cancellation)."
        )
        return [Advice("catastrophic-cancellation", ev, pos)]
    return []


def _inputs_differ(rows: Sequence[OpComparison]) -> list[Advice]:
    if not rows:
        return []
    first_index = rows[0].index
    for i, r in enumerate(rows):
        if r.index != first_index:
            break
        if r.tensor.startswith("input") and r.verdict == "error":
            ev = f"The first op's {r.tensor} already differs ({r.reason})"
            return [Advice("inputs-differ", ev, i)]
    return []


def _accumulation(rows: Sequence[OpComparison]) -> list[Advice]:
    same = [r for r in rows if r.dtype_bench == r.dtype_target and r.error]
    if not same:
        return []
    worst = max(same, key=lambda r: r.error or 0.0)
    u = unit_roundoff(worst.dtype_bench)
    k = reduction_length(worst.op, [], worst)
    if u and worst.error and worst.error < 100 * u * math.sqrt(max(k, 1)) * 10:
        ev = (
            f"{len(same)} tensors differ slightly with equal dtypes (worst {worst.error:.3g} at "
            f"{_where(worst)}), of the order of float rounding: the summation order differs "
            "(different kernels or nondeterministic reductions)."
        )
        return [Advice("accumulation-order", ev, None)]
    return []


def _same_inputs(rows: Sequence[OpComparison], settings: tuple[str, ...] | None) -> list[Advice]:
    """Outputs that differ although the op's inputs are bit-identical and dtypes equal."""
    hits = [
        i
        for i, r in enumerate(rows)
        if r.tensor.startswith("output")
        and r.match != "unmatched"
        and r.dtype_bench == r.dtype_target
        and r.input_error == 0.0
        and r.error is not None
        and r.error > 0
        and math.isfinite(r.error)
        # rounding-sized: within the op's budget (a bigger difference from equal inputs is
        # the op computing something else, e.g. another eps, and the verdict says so)
        and r.budget is not None
        and r.error <= r.budget
    ]
    if not hits:
        return []
    r = rows[hits[0]]
    n = len({(rows[i].rank, rows[i].index) for i in hits})
    what = (
        f"{n} op{'s' if n > 1 else ''} gave different outputs from bit-identical inputs "
        f"(first: {_where(r)}, error {r.error:.3g})"
    )
    if settings is None:
        ev = (
            f"{what}: the summation order differs (another kernel, thread count or library), or "
            "the op is nondeterministic; dumps with manifests on both sides tell which."
        )
        return [Advice("accumulation-order", ev, hits[0])]
    if settings:
        ev = f"{what}; the runs differ in {', '.join(settings)}: the summation order follows them."
        return [Advice("accumulation-order", ev, hits[0])]
    ev = (
        f"{what} with the same build and numerics settings on both sides: the op is "
        "nondeterministic (atomic adds or unordered parallel reductions); "
        "torch.use_deterministic_algorithms(True) makes it repeatable."
    )
    return [Advice("nondeterminism", ev, hits[0])]
