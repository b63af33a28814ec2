"""Does an op, run in float64 on one side's own inputs, reproduce that side's output?

The budget (:mod:`~tensorsight.compare.budget`) is normwise: it bounds an output's error by
rounding plus its inputs' errors times a conditioning factor. Some ops turn a small normwise
input error into a large output error on their own, element by element: a division by
near-zero entries, Adam's ``m / (sqrt(v) + eps)`` when a gradient is ~0 (the update becomes
sign-like), the mean of a row that cancels. For such an op the question that settles it is
whether the op computed, from the inputs it was given, what it should have: the difference
between the runs is then inherited from the inputs (ill-conditioning), not added by the op.

:func:`reproduce` answers it for a tensor dump. The op is evaluated in float64 (numpy, no
torch needed) on the bench's recorded inputs, which checks the evaluation model (the op's
non-tensor arguments come from the dump's ``args`` column when it holds them: ``addcdiv``'s
``value``, ``add``'s ``alpha``, a softmax's ``dim``, a norm's ``normalized_shape`` and
``eps``; from dumps without it, scalars are fitted to the bench by least squares and
discrete ones such as a softmax dim or a norm's axes chosen by which reproduces the bench), and
then, with the same arguments, on the target's recorded inputs. Its answer is the relative
L2 distance of each side's recorded output from the evaluation, measured against the
magnitude of the op's terms (``|a| + |c * b|`` for a sum: the rounding of a cancelling sum
is relative to its terms). Ops it does not know, and anything it cannot evaluate, give
``None``: the caller keeps its normwise verdict.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from tensorsight.compare._argdiff import parse_args
from tensorsight.dumpformat.reader import DumpStep
from tensorsight.dumpformat.schema import OpRecord, TensorRecord
from tensorsight.errors import DumpFormatError

__all__ = ["KNOWN_OPS", "Reproducer", "Reproduction", "reproduce"]

Arrays = Mapping[str, np.ndarray]
# evaluates one output: inputs -> (value, magnitude of its terms)
Model = Callable[[Arrays], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Reproduction:
    """How well one output follows from its own side's inputs.

    Attributes:
        bench: ``||bench_out - f(bench_in)|| / ||terms||`` (checks the evaluation model).
        target: The same on the target side, with the same arguments.
        how: What was evaluated, for the reason sentence (``"value=-0.001 fitted"``).
    """

    bench: float
    target: float
    how: str


def _family(op: str) -> tuple[str, str]:
    """``aten.addcdiv_.default`` -> ``("addcdiv", "default")``."""
    _, _, rest = op.partition(".")
    name, _, overload = rest.partition(".")
    return _out_of_place(name), overload


def _out_of_place(name: str) -> str:
    """``add_`` -> ``add`` (an in-place form evaluates like its function; dunders stay)."""
    if len(name) > 1 and name.endswith("_") and not name.endswith("__"):
        return name[:-1]
    return name


# msprobe's API-level names (``Tensor.__truediv__.1.forward``): the operators whose
# evaluation model is one of the aten ones (reflected forms that swap operands excluded)
_DUNDERS = {
    "__add__": "add", "__iadd__": "add", "__radd__": "add", "__sub__": "sub",
    "__isub__": "sub", "__mul__": "mul", "__imul__": "mul", "__rmul__": "mul",
    "__truediv__": "div", "__itruediv__": "div", "__div__": "div", "__matmul__": "matmul",
}  # fmt: skip
_API_PREFIXES = ("Tensor", "Torch", "Functional", "Aten", "NPU")
# the backward of an op with a bias: the bias gradient sums grad_output (``input.0``)
_BIAS_GRAD = frozenset(
    {"convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
     "conv_transpose3d", "linear", "addmm"}
)  # fmt: skip


def _spec_name(op: str) -> str | None:
    """The evaluation model's name for an aten op, an msprobe API call or one of our API-level
    calls, ``None`` for any other name: ``aten.add_.Tensor``, ``Tensor.add_.3.forward`` and
    ``torch.Tensor.add`` -> ``add``; ``aten.convolution_backward.default`` and
    ``Functional.conv2d.0.backward`` -> ``bias_grad``."""
    if op.startswith("aten."):
        name = _family(op)[0]
        if name.endswith("_backward") and name.removesuffix("_backward") in _BIAS_GRAD:
            return "bias_grad"
        return name
    parts = op.split(".")
    if len(parts) >= 2 and parts[0] == "torch":  # level="api": torch.Tensor.add, torch.matmul
        api = parts[-1]
    elif len(parts) == 4 and parts[0] in _API_PREFIXES and parts[2].isdigit():
        api, direction = parts[1], parts[3]
        if direction == "backward":
            return "bias_grad" if api in _BIAS_GRAD else None
        if direction != "forward":
            return None
    else:
        return None
    if api in _DUNDERS:
        return _DUNDERS[api]
    if api.startswith("__"):
        return None  # __rsub__, __rtruediv__: operands swapped
    return _out_of_place(api)


def _fit(y: np.ndarray, base: np.ndarray, term: np.ndarray) -> float:
    """Least-squares ``c`` in ``y ~ base + c * term``."""
    tt = float(np.vdot(term.ravel(), term.ravel()))
    if tt == 0.0 or not math.isfinite(tt):
        return 0.0
    return float(np.vdot((y - base).ravel(), term.ravel())) / tt


def _affine(
    base: Callable[[Arrays], np.ndarray], term: Callable[[Arrays], np.ndarray], label: str
) -> Callable[[Arrays, np.ndarray], Iterator[tuple[Model, str]]]:
    """``out = base + c * term``, ``c`` fitted to the bench output."""

    def candidates(b: Arrays, y: np.ndarray) -> Iterator[tuple[Model, str]]:
        c = _fit(y, base(b), term(b))

        def model(x: Arrays) -> tuple[np.ndarray, np.ndarray]:
            u, v = base(x), c * term(x)
            return u + v, np.abs(u) + np.abs(v)

        yield model, f"{label}={c:.4g} fitted to the bench"

    return candidates


def _exact(
    f: Callable[[Arrays], np.ndarray],
) -> Callable[[Arrays, np.ndarray], Iterator[tuple[Model, str]]]:
    def candidates(b: Arrays, y: np.ndarray) -> Iterator[tuple[Model, str]]:
        del b, y

        def model(x: Arrays) -> tuple[np.ndarray, np.ndarray]:
            v = f(x)
            return v, np.abs(v)

        yield model, "float64 evaluation"

    return candidates


def _zero(x: Arrays) -> np.ndarray:
    return np.zeros_like(x["input.0"])


def _one(x: Arrays) -> np.ndarray:
    return np.ones_like(x["input.0"])


def _i(k: int) -> Callable[[Arrays], np.ndarray]:
    name = f"input.{k}"
    return lambda x: x[name]


def _binary(
    op: Callable[[np.ndarray, np.ndarray], np.ndarray], label: str, scale_other: bool
) -> Callable[[Arrays, np.ndarray, str], Iterator[tuple[Model, str]]]:
    """``a op b`` (both tensors) or ``a op c`` with the scalar ``c`` fitted (one tensor)."""

    def candidates(b: Arrays, y: np.ndarray, out: str) -> Iterator[tuple[Model, str]]:
        del out
        if "input.1" in b:
            if scale_other:  # add/sub: out = a + alpha * b
                yield from _affine(_i(0), _i(1), "alpha")(b, y)
            else:
                yield from _exact(lambda x: op(x["input.0"], x["input.1"]))(b, y)
        elif scale_other:  # a + c
            yield from _affine(_i(0), _one, label)(b, y)
        else:  # a * c, a / c
            yield from _affine(_zero, _i(0), label)(b, y)

    return candidates


def _reduced_dims(shape_in: tuple[int, ...], shape_out: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Dim sets whose reduction (keepdim or not) turns ``shape_in`` into ``shape_out``."""
    n = len(shape_in)
    out: list[tuple[int, ...]] = []
    if len(shape_out) == n:
        dims = tuple(i for i in range(n) if shape_out[i] == 1 and shape_in[i] != 1)
        if all(shape_out[i] in (1, shape_in[i]) for i in range(n)) and dims:
            out.append(dims)
        return out
    drop = n - len(shape_out)
    for dims in itertools.combinations(range(n), drop):
        kept = tuple(s for i, s in enumerate(shape_in) if i not in dims)
        if kept == tuple(shape_out):
            out.append(dims)
    return out


def _reduction(mean: bool) -> Callable[[Arrays, np.ndarray, str], Iterator[tuple[Model, str]]]:
    def candidates(b: Arrays, y: np.ndarray, out: str) -> Iterator[tuple[Model, str]]:
        del out
        x0 = b["input.0"]
        keep = y.ndim == x0.ndim
        for dims in _reduced_dims(x0.shape, y.shape):

            def model(x: Arrays, dims: tuple[int, ...] = dims) -> tuple[np.ndarray, np.ndarray]:
                v = x["input.0"]
                f = np.mean if mean else np.sum
                return f(v, axis=dims, keepdims=keep), f(np.abs(v), axis=dims, keepdims=keep)

            yield model, f"over dims {list(dims)}"

    return candidates


def _softmax(log: bool) -> Callable[[Arrays, np.ndarray, str], Iterator[tuple[Model, str]]]:
    def candidates(b: Arrays, y: np.ndarray, out: str) -> Iterator[tuple[Model, str]]:
        del out, y
        for dim in range(b["input.0"].ndim):

            def model(x: Arrays, dim: int = dim) -> tuple[np.ndarray, np.ndarray]:
                v = x["input.0"]
                s = v - np.max(v, axis=dim, keepdims=True)
                lse = np.log(np.sum(np.exp(s), axis=dim, keepdims=True))
                r = s - lse if log else np.exp(s - lse)
                return r, (np.abs(v) + np.abs(lse) if log else np.abs(r))

            yield model, f"over dim {dim}"

    return candidates


def _layer_norm(b: Arrays, y: np.ndarray, out: str) -> Iterator[tuple[Model, str]]:
    """``native_layer_norm(x, normalized_shape, w, b, eps)``: axes chosen, eps fitted."""
    del y
    x0 = b["input.0"]
    rstd = b.get("output.2")
    for axis in range(1, x0.ndim) if x0.ndim > 1 else (0,):
        dims = tuple(range(axis, x0.ndim))
        eps = 0.0
        if rstd is not None:
            var = np.var(x0, axis=dims, keepdims=True)
            if rstd.shape == var.shape:
                est = 1.0 / np.square(rstd) - var
                eps = max(0.0, float(np.median(est))) if est.size else 0.0

        def model(
            x: Arrays, dims: tuple[int, ...] = dims, eps: float = eps
        ) -> tuple[np.ndarray, np.ndarray]:
            v = x["input.0"]
            mu = np.mean(v, axis=dims, keepdims=True)
            r = 1.0 / np.sqrt(np.var(v, axis=dims, keepdims=True) + eps)
            if out == "output.1":
                return mu, np.mean(np.abs(v), axis=dims, keepdims=True)
            if out == "output.2":
                return r, np.abs(r)
            w = x.get("input.2")
            bias = x.get("input.3")
            val = (v - mu) * r
            mag = (np.abs(v) + np.abs(mu)) * r
            if w is not None:
                val, mag = val * w, mag * np.abs(w)
            if bias is not None:
                val, mag = val + bias, mag + np.abs(bias)
            return val, mag

        yield model, f"over the last {x0.ndim - axis} dims, eps={eps:.3g} fitted to the bench"


def _pow(b: Arrays, y: np.ndarray, out: str) -> Iterator[tuple[Model, str]]:
    del b, y, out
    for p in (2.0, 0.5, -0.5, -1.0, 3.0, -2.0, 1.5):

        def model(x: Arrays, p: float = p) -> tuple[np.ndarray, np.ndarray]:
            with np.errstate(all="ignore"):
                v = np.power(x["input.0"], p)
            return v, np.abs(v)

        yield model, f"exponent {p:g}"


def _matmul(b: Arrays, y: np.ndarray, out: str) -> Iterator[tuple[Model, str]]:
    del b, y, out

    def model(x: Arrays) -> tuple[np.ndarray, np.ndarray]:
        if "input.2" in x:  # addmm(bias, a, b)
            a, m, c = x["input.1"], x["input.2"], x["input.0"]
            return c + a @ m, np.abs(c) + np.abs(a) @ np.abs(m)
        a, m = x["input.0"], x["input.1"]
        return a @ m, np.abs(a) @ np.abs(m)

    yield model, "float64 evaluation"


def _ignore_out(
    f: Callable[[Arrays, np.ndarray], Iterator[tuple[Model, str]]],
) -> Callable[[Arrays, np.ndarray, str], Iterator[tuple[Model, str]]]:
    return lambda b, y, out: f(b, y)


def _unary(f: Callable[[np.ndarray], np.ndarray]) -> Callable[[Arrays], np.ndarray]:
    return lambda x: f(x["input.0"])


_SPECS: dict[str, Callable[[Arrays, np.ndarray, str], Iterator[tuple[Model, str]]]] = {
    "add": _binary(np.add, "other", True),
    "sub": _binary(np.subtract, "other", True),
    "mul": _binary(np.multiply, "other", False),
    "div": _binary(np.divide, "1/other", False),
    "addcdiv": _ignore_out(
        _affine(_i(0), lambda x: x["input.1"] / x["input.2"], "value"),
    ),
    "addcmul": _ignore_out(_affine(_i(0), lambda x: x["input.1"] * x["input.2"], "value")),
    "lerp": _ignore_out(_affine(_i(0), lambda x: x["input.1"] - x["input.0"], "weight")),
    "sqrt": _ignore_out(_exact(_unary(np.sqrt))),
    "rsqrt": _ignore_out(_exact(_unary(lambda v: 1.0 / np.sqrt(v)))),
    "reciprocal": _ignore_out(_exact(_unary(lambda v: 1.0 / v))),
    "neg": _ignore_out(_exact(_unary(np.negative))),
    "exp": _ignore_out(_exact(_unary(np.exp))),
    "pow": _pow,
    "mean": _reduction(True),
    "sum": _reduction(False),
    "_softmax": _softmax(False),
    "_log_softmax": _softmax(True),
    "native_layer_norm": _layer_norm,
    "mm": _matmul,
    "bmm": _matmul,
    "addmm": _matmul,
    "matmul": _matmul,
    # any output of the backward that is grad_output reduced (the bias gradient; the other
    # gradients are not reductions of it, so no candidate fits them)
    "bias_grad": _reduction(False),
}
KNOWN_OPS = frozenset(_SPECS)


# ------------------------------------------------------------------ recorded arguments
def _num(v: object) -> float | None:
    """A recorded number (``{"float": "inf"}`` included); ``None`` for anything else."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, dict) and set(v) == {"float"} and isinstance(v["float"], str):
        try:
            return float(v["float"])
        except ValueError:
            return None
    return None


def _is_tensor(v: object) -> bool:
    return isinstance(v, dict) and "tensor" in v


def _recorded_affine(
    base: Callable[[Arrays], np.ndarray], term: Callable[[Arrays], np.ndarray], c: float, how: str
) -> Iterator[tuple[Model, str]]:
    def model(x: Arrays) -> tuple[np.ndarray, np.ndarray]:
        u, v = base(x), c * term(x)
        return u + v, np.abs(u) + np.abs(v)

    yield model, how


def _recorded(
    name: str, args: Mapping[str, object], b: Arrays, y: np.ndarray, out: str
) -> Iterator[tuple[Model, str]]:
    """The model with the bench's recorded arguments (the dump's ``args`` column), exactly;
    nothing when they do not settle it (the fitted candidates are then used)."""
    rec = "recorded"
    if name in ("add", "sub", "mul", "div"):
        other, alpha = args.get("other"), _num(args.get("alpha", 1))
        sign = -1.0 if name == "sub" else 1.0
        if _is_tensor(other) and "input.1" in b and name in ("add", "sub") and alpha is not None:
            yield from _recorded_affine(_i(0), _i(1), sign * alpha, f"alpha={alpha:.6g} {rec}")
        elif (c := _num(other)) is not None and "input.1" not in b:
            if name in ("add", "sub"):
                k = sign * c * (alpha if alpha is not None else 1.0)
                yield from _recorded_affine(_i(0), _one, k, f"other={c:.6g} {rec}")
            elif name == "mul":
                yield from _recorded_affine(_zero, _i(0), c, f"other={c:.6g} {rec}")
            elif c != 0.0:
                yield from _recorded_affine(_zero, _i(0), 1.0 / c, f"other={c:.6g} {rec}")
    elif name in ("addcdiv", "addcmul") and (c := _num(args.get("value", 1))) is not None:
        if name == "addcdiv":
            yield from _recorded_affine(
                _i(0), lambda x: x["input.1"] / x["input.2"], c, f"value={c:.6g} {rec}"
            )
        else:
            yield from _recorded_affine(
                _i(0), lambda x: x["input.1"] * x["input.2"], c, f"value={c:.6g} {rec}"
            )
    elif name == "lerp" and (c := _num(args.get("weight"))) is not None:
        yield from _recorded_affine(
            _i(0), lambda x: x["input.1"] - x["input.0"], c, f"weight={c:.6g} {rec}"
        )
    elif name in ("_softmax", "_log_softmax") and isinstance(args.get("dim"), int):
        ndim = b["input.0"].ndim
        dim = int(args["dim"]) % max(ndim, 1)  # type: ignore[call-overload]
        for model, _ in _softmax(name == "_log_softmax")(b, y, out):
            if model.__defaults__ == (dim,):
                yield model, f"dim={dim} {rec}"
    elif name == "pow" and (p := _num(args.get("exponent"))) is not None:

        def power(x: Arrays, p: float = p) -> tuple[np.ndarray, np.ndarray]:
            with np.errstate(all="ignore"):
                v = np.power(x["input.0"], p)
            return v, np.abs(v)

        yield power, f"exponent={p:g} {rec}"
    elif name == "native_layer_norm":
        shape, eps = args.get("normalized_shape"), _num(args.get("eps"))
        x0 = b["input.0"]
        if isinstance(shape, list) and eps is not None and 0 < len(shape) <= x0.ndim:
            axis = x0.ndim - len(shape)
            for model, _ in _layer_norm(b, y, out):
                dims, _fitted = model.__defaults__ or ((), 0.0)
                if dims == tuple(range(axis, x0.ndim)):

                    def norm(
                        x: Arrays,
                        m: Callable[..., tuple[np.ndarray, np.ndarray]] = model,
                        d: tuple[int, ...] = dims,
                    ) -> tuple[np.ndarray, np.ndarray]:
                        return m(x, d, eps)

                    yield norm, f"normalized_shape={shape}, eps={eps:.3g} {rec}"


_ONE_OUTPUT = KNOWN_OPS - {"native_layer_norm", "bias_grad"}


def _rel(y: np.ndarray, value: np.ndarray, mag: np.ndarray) -> float:
    with np.errstate(all="ignore"):
        num = float(np.linalg.norm((y - value).ravel()))
        den = float(np.linalg.norm(mag.ravel()))
    if not math.isfinite(num) or not math.isfinite(den):
        return math.inf
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def reproduce(
    op: str,
    tensor: str,
    bench_inputs: Arrays,
    bench_outputs: Arrays,
    target_inputs: Arrays,
    target_output: np.ndarray,
    args: Mapping[str, object] | None = None,
) -> Reproduction | None:
    """Evaluate ``op`` in float64 on each side's own inputs (module docstring).

    Args:
        op: The aten op name (``aten.addcdiv_.default``) or msprobe API name
            (``Tensor.addcdiv_.0.forward``, ``Functional.conv2d.0.backward``).
        tensor: The output judged (``output.0``).
        bench_inputs: The bench op's input tensors by row name (``input.0``), float64.
        bench_outputs: The bench op's output tensors by row name, float64.
        target_inputs: The target op's input tensors, float64.
        target_output: The target's recorded ``tensor``, float64.
        args: The bench op's recorded non-tensor arguments (the dump's ``args`` column,
            parsed); used as recorded when they settle the model, else fitted.

    Returns:
        The evaluation model that best reproduces the bench, applied to both sides, or
        ``None`` when the op is not known here or the tensors do not fit it.
    """
    name = _spec_name(op)
    if name is None or name not in _SPECS:
        return None
    spec = _SPECS[name]
    y = bench_outputs.get(tensor)
    if y is None or (name in _ONE_OUTPUT and tensor != "output.0"):
        return None
    if set(bench_inputs) != set(target_inputs) or "input.0" not in bench_inputs:
        return None
    if y.shape != target_output.shape:
        return None
    b = {**bench_inputs, **bench_outputs}  # outputs fit arguments (a norm's eps from rstd)
    best: tuple[float, Model, str] | None = None
    try:
        with np.errstate(all="ignore"):
            given = list(_recorded(name, args, b, y, tensor)) if args else []
            for model, how in given or spec(b, y, tensor):
                value, mag = model(bench_inputs)
                if value.shape != y.shape:
                    continue
                r = _rel(y, value, mag)
                if best is None or r < best[0]:
                    best = (r, model, how)
            if best is None:
                return None
            value, mag = best[1](target_inputs)
    except (ValueError, KeyError, IndexError, TypeError):  # tensors that do not fit the op
        return None
    if value.shape != target_output.shape:
        return None
    return Reproduction(bench=best[0], target=_rel(target_output, value, mag), how=best[2])


class Reproducer:
    """:func:`reproduce` for the rows of one rank's comparison, loading what it needs.

    Called only for the few output rows whose error exceeds their normwise budget; each
    call loads that op's tensors on both sides (memory-mapped) and caches the answer.
    """

    def __init__(self, bench: DumpStep, target: DumpStep, ops: Mapping[int, OpRecord]) -> None:
        self.bench, self.target = bench, target
        self._bench_ops = ops
        self._target_ops = {op.index: op for op in target.ops}
        self._done: dict[tuple[int, int, str], Reproduction | None] = {}

    def __call__(self, index: int, index_target: int | None, tensor: str) -> Reproduction | None:
        """Reproduction of output ``tensor`` of bench op ``index``, target op ``index_target``."""
        if index_target is None:
            return None
        key = (index, index_target, tensor)
        if key not in self._done:
            self._done[key] = self._run(index, index_target, tensor)
        return self._done[key]

    def _run(self, index: int, index_target: int, tensor: str) -> Reproduction | None:
        b_op, t_op = self._bench_ops.get(index), self._target_ops.get(index_target)
        if b_op is None or t_op is None or _spec_name(b_op.op) not in KNOWN_OPS:
            return None
        t_out = next((t for t in t_op.outputs if t.tensor == tensor), None)
        if t_out is None:
            return None
        try:
            b_in = self._arrays(self.bench, b_op.inputs)
            b_out = self._arrays(self.bench, b_op.outputs)
            t_in = self._arrays(self.target, t_op.inputs)
            (y_t,) = self._arrays(self.target, (t_out,)).values()
        except (OSError, ValueError, LookupError, DumpFormatError):
            return None
        return reproduce(b_op.op, tensor, b_in, b_out, t_in, y_t, parse_args(b_op.args))

    @staticmethod
    def _arrays(step: DumpStep, rows: tuple[TensorRecord, ...]) -> dict[str, np.ndarray]:
        out = {}
        for rec in rows:
            if rec.data is None:
                raise LookupError(rec.tensor)  # not a tensor dump: nothing to evaluate
            out[rec.tensor] = np.asarray(step.load(rec, np.float64), dtype=np.float64)
        return out
