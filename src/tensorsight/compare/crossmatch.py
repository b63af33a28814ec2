"""Pair the tensors of two dumps from different frameworks by value, with names as hints.

Op names never map one to one across frameworks (``aten.addmm`` is ONNX's ``Gemm`` or a
``MatMul`` + ``Add``, ``aten.gelu`` an ONNX ``Gelu`` or five kernels), so a dump of PyTorch
and a dump of ONNX Runtime pair on what survives every framework:

1. **Segment** by direction and module path. Each side's path is normalised (PyTorch's
   ``MLP.blocks.0.attn``: the root class dropped; an exported ONNX node ``/blocks.0/attn/
   MatMul``: the scope), and each op goes to the longest path both sides know (an ancestor
   of it), so a module one side splits finer still meets its counterpart.
2. **Align by value** inside a segment: a bench tensor's candidates are the target tensors
   with as many elements (shape modulo layout: equal, a permutation such as a transposed
   ``[out, in]`` weight or NCHW/NHWC, or a reshape such as ``addmm``'s ``[B*T, n]`` vs
   ``MatMul``'s ``[B, T, n]``); the fingerprint is the recorded statistics (min, max, mean,
   root mean square: invariant under layout, read from the op table) plus up to
   :data:`SAMPLES` sampled elements read at the coordinates each layout maps them to. The
   closest candidate within :data:`VALUE_TOLERANCE` wins (the same role first: output with
   output); sampling picks the layout.
3. **Group N:M**: the target ops whose tensors a bench op matched form its group, and the
   target ops of the segment that lie between two groups' ops and matched nothing (``MatMul``
   before ``Add``, the ``Div``/``Erf``/``Mul`` chain of a GELU, ``Shape``/``Reshape`` nodes)
   join the group that follows: a chain's last output is the comparable one.
4. **Fall back on structure** where values differ (a bug on one side): a bench output that
   matched nothing pairs with the segment's last unclaimed target output of as many elements
   between the neighbouring groups, an input with its group's first unclaimed input in order,
   so a divergence shows as an error row at the op that makes it rather than as a gap.

Every tensor left over is returned unmatched with the reason (a saved statistic an inference
graph does not expose, a backward pass the target did not record, no tensor of those values
in the module). Cost: statistics are compared within a segment's bucket of equal element
count, and each candidate reads :data:`SAMPLES` elements, so a run of a few thousand tensors
per side pairs in well under a second; nothing compares every tensor with every other.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from tensorsight.compare.flow import data_flow, tensor_identity
from tensorsight.compare.match import OpPair
from tensorsight.dumpformat.schema import OpRecord, TensorRecord

__all__ = [
    "SAMPLES",
    "VALUE_TOLERANCE",
    "convert",
    "framework_family",
    "is_cross_framework",
    "match_across",
    "segment_of",
]

Loader = Callable[[TensorRecord], np.ndarray]

# a target tensor whose statistics and samples differ by at most this, relative to the
# bench tensor's largest magnitude, holds "the same values" (float32 kernels of two
# frameworks agree to ~1e-6; a GELU approximation differs by ~1e-4)
VALUE_TOLERANCE = 1e-3
SAMPLES = 64  # sampled elements per candidate (evenly spread over the bench tensor)
_EQUAL = 1e-5  # below this, two candidates' distances are rounding and order decides
_MAX_PERMUTED_NDIM = 5  # permutations tried up to this rank (5! = 120)

# framework (the manifest's) -> family: runs of one family share op names
_FAMILIES = {
    "torch": "torch",
    "onnxruntime": "onnx",
    "onnx.reference": "onnx",
    "mindspore": "mindspore",  # MindSpore's own Dump (no manifest: the format's name)
    "tfdbg": "tensorflow",  # TensorFlow's debugger v2 dump (no manifest either)
}

# bench outputs that an inference graph computes inside one node and never exposes:
# the statistics PyTorch saves for backward (known conversions, see docs/guide)
_SAVED_FOR_BACKWARD = {
    "native_layer_norm": ("output.1", "output.2"),
    "native_batch_norm": ("output.1", "output.2"),
    "_native_batch_norm_legit": ("output.1", "output.2"),
    "_native_batch_norm_legit_no_training": ("output.1", "output.2"),
    "native_group_norm": ("output.1", "output.2"),
    "_scaled_dot_product_flash_attention_for_cpu": ("output.1",),
}


# known conversions: (bench op base name, tensor) -> the target form it may be kept in
# (MindSpore's LayerNorm outputs the variance where PyTorch saves 1/std)
_CONVERSIONS = {("native_layer_norm", "output.2"): "rstd_from_var"}


def convert(values: np.ndarray, conversion: tuple[str, float]) -> np.ndarray:
    """A target tensor in the bench's form: ``("rstd_from_var", eps)`` -> ``1/sqrt(v + eps)``.

    Example:
        >>> convert(np.array([3.0]), ("rstd_from_var", 1.0)).tolist()
        [0.5]
    """
    kind, eps = conversion
    if kind != "rstd_from_var":
        msg = f"Conversion {kind!r}: unknown. Expected one of {sorted(set(_CONVERSIONS.values()))}."
        raise ValueError(msg)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / np.sqrt(np.asarray(values, dtype=np.float64) + eps)


def _eps(op: OpRecord) -> float:
    """The ``eps`` argument of a norm op (its ``args``), PyTorch's default 1e-5 without it."""
    try:
        value = json.loads(op.args or "{}").get("eps", 1e-5)
    except (ValueError, AttributeError):
        return 1e-5
    return float(value) if isinstance(value, (int, float)) else 1e-5


def framework_family(framework: str | None) -> str | None:
    """The family of a manifest's ``framework`` (``onnxruntime`` -> ``onnx``); ``None``
    for frameworks this matcher does not know."""
    return _FAMILIES.get(framework or "")


def is_cross_framework(bench: str | None, target: str | None) -> bool:
    """Whether two dumps' frameworks differ in family and both are known to the matcher.

    Example:
        >>> is_cross_framework("torch", "onnxruntime"), is_cross_framework("torch", "torch")
        (True, False)
        >>> is_cross_framework("onnxruntime", "onnx.reference")
        False
    """
    fb, ft = framework_family(bench), framework_family(target)
    return fb is not None and ft is not None and fb != ft


def segment_of(op: OpRecord, family: str) -> str:
    """An op's module path in the form both sides share (``""``: the root).

    Example:
        >>> from tensorsight.dumpformat.schema import OpRecord
        >>> segment_of(OpRecord(0, "aten.mm.default", "forward", "MLP.blocks.0.fc", ()), "torch")
        'blocks.0.fc'
        >>> segment_of(OpRecord(0, "MatMul", "forward", "/blocks.0/fc/MatMul", ()), "onnx")
        'blocks.0.fc'
    """
    path = op.module_path
    if family == "onnx":
        if not path.startswith("/"):
            return ""
        return ".".join(p for p in path.split("/")[1:-1] if p)
    _, _, rest = path.partition(".")
    return rest


def _ancestors(path: str) -> Iterable[str]:
    """``a.b.c`` -> ``a.b.c``, ``a.b``, ``a``, ``""``."""
    parts = path.split(".") if path else []
    for k in range(len(parts), 0, -1):
        yield ".".join(parts[:k])
    yield ""


def _resolver(bench_paths: set[str], target_paths: set[str]) -> Callable[[str], str]:
    """Maps a path to the longest ancestor-or-self known (as such) to both sides."""
    ab = {a for p in bench_paths for a in _ancestors(p)}
    at = {a for p in target_paths for a in _ancestors(p)}
    common = ab & at
    cache: dict[str, str] = {}

    def resolve(path: str) -> str:
        hit = cache.get(path)
        if hit is None:
            hit = next((a for a in _ancestors(path) if a in common), "")
            cache[path] = hit
        return hit

    return resolve


@dataclass
class _Row:
    """One tensor row of one side, with what pairing needs."""

    op: OpRecord
    rec: TensorRecord
    seq: int  # position of the op among its side's ops (execution order)

    @property
    def is_output(self) -> bool:
        return self.rec.tensor.startswith("output")

    @property
    def numel(self) -> int:
        return math.prod(self.rec.shape)


#: Bytes of loaded copies (bfloat16 and float8 tensors widened to float32, a reader that
#: does not map its files) one side keeps for sampling; past it a copy is loaded again
#: when asked for. Memory-mapped tensors cost nothing to keep and are always kept.
_MAX_KEPT_BYTES = 256 << 20


def _owned_bytes(arr: np.ndarray) -> int:
    """Bytes of process memory ``arr`` holds (0 for a view of a memory-mapped file)."""
    base: object = arr
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return int(base.nbytes) if isinstance(base, np.ndarray) else 0


class _Prints:
    """Value fingerprints of one side: statistics from the op table, samples on demand."""

    def __init__(self, load: Loader | None) -> None:
        self.load = load
        self._arrays: dict[str, np.ndarray | None] = {}
        self._kept = 0  # bytes of the copies in _arrays

    def array(self, rec: TensorRecord) -> np.ndarray | None:
        if self.load is None or rec.data is None:
            return None
        key = f"{rec.data}|{rec.dtype}"
        if key in self._arrays:
            return self._arrays[key]
        try:
            arr: np.ndarray | None = self.load(rec)
        except Exception:  # an unreadable tensor only costs this row its samples
            arr = None
        if arr is not None and tuple(arr.shape) != tuple(rec.shape):
            arr = None  # a shard whose header disagrees with the op table: no samples
        owned = 0 if arr is None else _owned_bytes(arr)
        if self._kept + owned <= _MAX_KEPT_BYTES:  # not every tensor of a bf16 dump at once
            self._arrays[key] = arr
            self._kept += owned
        return arr

    def stats(self, rec: TensorRecord) -> tuple[float, float, float, float] | None:
        """(min, max, mean, rms), from the record or the stored tensor."""
        s = rec.stats
        n = math.prod(rec.shape)
        if n == 0:
            return None
        if s is not None and None not in (s.min, s.max, s.mean, s.norm):
            return (float(s.min), float(s.max), float(s.mean), float(s.norm) / math.sqrt(n))  # type: ignore[arg-type]
        arr = self.array(rec)
        if arr is None or arr.dtype.kind not in "biuf":
            return None
        a = np.asarray(arr, dtype=np.float64)
        return (float(a.min()), float(a.max()), float(a.mean()), float(np.sqrt(np.mean(a * a))))


def _same(rec: TensorRecord) -> tuple[object, ...]:
    """Keys shared by the rows that hold one tensor (an output and the inputs it feeds)."""
    ident = tensor_identity(rec)
    keys: list[object] = [("row", id(rec))]
    if rec.data is not None:
        keys.append(("data", rec.data))
    if ident is not None:
        keys.append(ident)
    return tuple(keys)


def _claim(claimed: set[object], rec: TensorRecord) -> None:
    claimed.update(_same(rec))


def _is_claimed(claimed: set[object], rec: TensorRecord) -> bool:
    return any(k in claimed for k in _same(rec))


def _layouts(bench: tuple[int, ...], target: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Axis orders that turn a target tensor into the bench's shape (then C-order reshape).

    The identity comes first when shapes are equal; permutations (transposed weights,
    NHWC/NCHW) follow; tensors of equal size and different rank reshape (the identity).
    """
    ident = tuple(range(len(target)))
    out = [ident] if bench == target else []
    if len(bench) == len(target) and 1 < len(target) <= _MAX_PERMUTED_NDIM:
        for perm in itertools.permutations(range(len(target))):
            if perm != ident and tuple(target[p] for p in perm) == bench:
                out.append(perm)
    if not out:
        out = [ident]  # a reshape (equal element count is checked by the caller)
    return out


def _sample_coords(shape: tuple[int, ...]) -> np.ndarray:
    n = math.prod(shape)
    k = min(SAMPLES, n)
    flat = np.unique(np.linspace(0, n - 1, k).astype(np.int64))
    return np.stack(np.unravel_index(flat, shape), axis=0) if shape else flat[None, :]


def _sampled(
    arr: np.ndarray, bench_shape: tuple[int, ...], perm: tuple[int, ...], coords: np.ndarray
) -> np.ndarray:
    """The target elements at the bench coordinates ``coords`` under layout ``perm``."""
    if tuple(arr.shape[p] for p in perm) == bench_shape:
        # transposed[c] == arr[t] with t[perm[i]] = c[i]
        idx = [np.empty(0, np.int64)] * arr.ndim
        for i, p in enumerate(perm):
            idx[p] = coords[i]
        return np.asarray(arr[tuple(idx)], dtype=np.float64)
    flat = np.ravel_multi_index(tuple(coords), bench_shape) if bench_shape else coords[0]
    return np.asarray(arr.reshape(-1)[flat], dtype=np.float64)


@dataclass(frozen=True)
class _Hit:
    target: _Row
    distance: float
    layout: tuple[int, ...] | None  # None: the shapes are equal and the layout is plain
    conversion: tuple[str, float] | None = None  # a known conversion (see _CONVERSIONS)


class _Matcher:
    def __init__(self, pb: _Prints, pt: _Prints) -> None:
        self.pb, self.pt = pb, pt
        self._coords: dict[tuple[int, ...], np.ndarray] = {}
        self._bench_samples: dict[int, np.ndarray | None] = {}

    def _bench_sample(self, row: _Row) -> np.ndarray | None:
        key = id(row.rec)
        if key not in self._bench_samples:
            arr = self.pb.array(row.rec)
            val = None
            if arr is not None and arr.dtype.kind in "biuf":
                coords = self._coords_of(row.rec.shape)
                val = np.asarray(arr[tuple(coords)] if arr.ndim else arr.reshape(1), np.float64)
            self._bench_samples[key] = val
        return self._bench_samples[key]

    def _coords_of(self, shape: tuple[int, ...]) -> np.ndarray:
        c = self._coords.get(shape)
        if c is None:
            c = _sample_coords(shape)
            self._coords[shape] = c
        return c

    def distance(self, b: _Row, t: _Row) -> tuple[float, tuple[int, ...] | None]:
        """Relative distance of two tensors' values (``inf``: not the same), and the layout."""
        sb, st = self.pb.stats(b.rec), self.pt.stats(t.rec)
        if sb is None or st is None:
            return math.inf, None
        scale = max(abs(sb[0]), abs(sb[1]), 1e-30)
        d_stats = max(abs(x - y) for x, y in zip(sb, st, strict=True)) / scale
        if not d_stats <= VALUE_TOLERANCE:
            return math.inf, None
        layouts = _layouts(b.rec.shape, t.rec.shape)
        plain = b.rec.shape == t.rec.shape
        sample = self._bench_sample(b)
        arr = self.pt.array(t.rec) if sample is not None else None
        if sample is None or arr is None or arr.dtype.kind not in "biuf":
            return d_stats, None if plain else layouts[0]
        coords = self._coords_of(b.rec.shape)
        best, best_layout = math.inf, layouts[0]
        for perm in layouts:
            got = _sampled(arr, b.rec.shape, perm, coords)
            with np.errstate(invalid="ignore"):
                diff = np.abs(got - sample)
            d = float(np.max(diff, initial=0.0)) / scale if diff.size else 0.0
            if not np.isfinite(d):  # NaN at the same place on both sides is equal
                same = np.isnan(got) == np.isnan(sample)
                d = math.inf if not same.all() else float(np.nanmax(diff, initial=0.0)) / scale
            if d < best:
                best, best_layout = d, perm
        if not best <= VALUE_TOLERANCE:
            return math.inf, None
        ident = tuple(range(len(t.rec.shape)))
        layout = None if plain and best_layout == ident else best_layout
        return max(d_stats, best), layout

    def best(self, b: _Row, candidates: Sequence[_Row], cursor: int) -> _Hit | None:
        """The closest target row by value (``cursor``: where the segment's last group
        ended, to choose between equal tensors by position)."""
        out: _Hit | None = None
        key_best: tuple[int, float, int, int] | None = None
        for t in candidates:
            d, layout = self.distance(b, t)
            if not math.isfinite(d):
                continue
            # the same role first (output with output), then values (differences below
            # rounding count as equal), then the same layout, then the nearest to where the
            # last group ended
            tier = 0.0 if d <= _EQUAL else d
            key = (
                int(b.is_output != t.is_output),
                tier,
                int(layout is not None),
                abs(t.seq - cursor),
            )
            if key_best is None or key < key_best:
                key_best, out = key, _Hit(t, d, layout)
        return out


@dataclass
class _Group:
    """One bench op and what it pairs with on the target side."""

    bench: OpRecord
    hits: dict[str, _Hit]  # bench tensor name -> target row
    how: dict[str, str]  # bench tensor name -> "value" | "structure"
    ops: set[int]  # target op seqs the group covers


def match_across(
    bench: Sequence[OpRecord],
    target: Sequence[OpRecord],
    *,
    frameworks: tuple[str, str],
    load_bench: Loader | None = None,
    load_target: Loader | None = None,
) -> list[OpPair]:
    """Pair the ops of two dumps of different frameworks (module docstring).

    Args:
        bench: Ops of the reference step, in execution order.
        target: Ops of the step under test.
        frameworks: The two manifests' ``framework`` (``("torch", "onnxruntime")``).
        load_bench: Loads a bench row's tensor (``None``: statistics only).
        load_target: Likewise for the target.

    Returns:
        Every op of both sides exactly once. A paired op's target side is one op named
        after its group (``Gemm``, ``MatMul+Add``) holding the matched target rows renamed
        after the bench rows, followed by the group's target ops; ``how`` is ``value``
        (every matched row by value) or ``structure`` (some by position in the module);
        ``layouts`` names the rows whose target tensor is transposed or reshaped and
        ``notes`` why each unmatched tensor of a paired op is.
    """
    fam_b = framework_family(frameworks[0]) or frameworks[0]
    fam_t = framework_family(frameworks[1]) or frameworks[1]
    seg_b = {op.index: segment_of(op, fam_b) for op in bench}
    seg_t = {op.index: segment_of(op, fam_t) for op in target}
    resolve = _resolver(set(seg_b.values()), set(seg_t.values()))
    matcher = _Matcher(_Prints(load_bench), _Prints(load_target))
    directions_t = {op.direction for op in target}
    by_seg_t: dict[tuple[str, str], list[tuple[int, OpRecord]]] = {}
    for seq, op in enumerate(target):
        by_seg_t.setdefault((op.direction, resolve(seg_t[op.index])), []).append((seq, op))
    by_seg_b: dict[tuple[str, str], list[OpRecord]] = {}
    for op in bench:
        by_seg_b.setdefault((op.direction, resolve(seg_b[op.index])), []).append(op)
    flow = data_flow(bench)
    produced = {(op.index, t.tensor) for op in bench for t in op.inputs
                if flow.producer(op.index, t.tensor) is not None}  # fmt: skip
    pairs: list[OpPair] = []
    segments: list[tuple[tuple[str, str], list[_Group], list[_Row], list[int]]] = []
    claimed: set[object] = set()  # identities of target tensors matched by value
    for key, ops_b in by_seg_b.items():
        ops_t = by_seg_t.get(key, [])
        if key[0] not in directions_t:
            why = _absent_reason(key, directions_t, frameworks[1])
            pairs.extend(OpPair((op,), (), "unmatched", why) for op in ops_b)
            continue
        # a module the target lacks (or names in a neighbour's scope) still pairs by value
        rows_t = [_Row(op, rec, seq) for seq, op in ops_t for rec in op.tensors]
        groups = _by_value(ops_b, rows_t, matcher, claimed)
        segments.append((key, groups, rows_t, [seq for seq, _ in ops_t]))
    # tensors a module's counterpart lacks may sit in another one (BatchNorm folded into
    # the Conv before it): the whole direction, by value, bucketed by size and magnitude
    index = _Index(target)
    index.build(matcher.pt)
    for _, groups, _, _ in segments:
        for g in groups:
            for rec in g.bench.tensors:
                if rec.tensor in g.hits:
                    continue
                row = _Row(g.bench, rec, -1)
                hit = matcher.best(row, index.near(row, matcher.pb), -1)
                if hit is not None:
                    g.hits[rec.tensor] = hit
                    g.how[rec.tensor] = "value"
                    _claim(claimed, hit.target.rec)
    for _, groups, _, _ in segments:  # an output pairs with the output that made it
        for g in groups:
            for name, hit in list(g.hits.items()):
                if name.startswith("output") and not hit.target.is_output:
                    made = index.producer_row(hit.target.rec)
                    if made is not None:
                        g.hits[name] = replace(hit, target=made)
    covered: set[int] = set()  # target seqs in some group
    for key, groups, rows_t, seqs in segments:
        for g in groups:
            g.ops = {h.target.seq for h in g.hits.values() if h.target.is_output}
            if not g.ops:
                g.ops = {h.target.seq for h in g.hits.values()}
        _converted(groups, rows_t, matcher)
        # TensorFlow sums a tensor's gradient contributions in one AddN (outside any scope),
        # so a per-path gradient (a LayerNorm's input gradient before the residual's is
        # added) has no counterpart: by position, backward outputs would pair wrongly
        _fallback(groups, rows_t, claimed, produced, backward=fam_t != "tensorflow")
        _absorb(groups, seqs)
        for g in groups:
            covered |= g.ops
            pairs.append(_pair_of(g, target, key[1], produced, fam_t == "tensorflow"))
    for seq, op in enumerate(target):
        if seq not in covered:
            seg = resolve(seg_t[op.index])
            why = (
                f"No {frameworks[0]} tensor has the values of this {op.op}'s in "
                f"{seg or 'the root'} ({op.direction}), and it lies outside every paired "
                "chain there (an op the bench does not record, or one whose values differ)."
            )
            pairs.append(OpPair((), (op,), "unmatched", why))
    pairs.sort(key=lambda p: p.position)
    return pairs


class _Index:
    """Target rows by (direction, element count, magnitude bin): the global value pass
    looks at a bench row's bin and its neighbours only."""

    _BINS_PER_E = 200  # bins of 0.5 % in root mean square

    def __init__(self, target: Sequence[OpRecord]) -> None:
        self.pt: _Prints | None = None
        self._rows: dict[tuple[str, int, int], list[_Row]] = {}
        self._made: dict[object, _Row] = {}  # identity key -> the output row holding it
        self._target = target

    def _bin(self, rms: float) -> int:
        return (
            -(10**9)
            if rms <= 0 or not math.isfinite(rms)
            else math.floor(math.log(rms) * self._BINS_PER_E)
        )

    def build(self, pt: _Prints) -> None:
        self.pt = pt
        for seq, op in enumerate(self._target):
            for rec in op.outputs:
                for k in _same(rec)[1:]:
                    self._made.setdefault(k, _Row(op, rec, seq))
            for rec in op.tensors:
                st = pt.stats(rec)
                if st is None:
                    continue
                key = (op.direction, math.prod(rec.shape), self._bin(st[3]))
                self._rows.setdefault(key, []).append(_Row(op, rec, seq))

    def producer_row(self, rec: TensorRecord) -> _Row | None:
        """The target output row holding the tensor of input row ``rec`` (``None``: a graph
        input or initializer)."""
        return next((self._made[k] for k in _same(rec)[1:] if k in self._made), None)

    def near(self, row: _Row, pb: _Prints) -> list[_Row]:
        sb = pb.stats(row.rec)
        if sb is None:
            return []
        b = self._bin(sb[3])
        out: list[_Row] = []
        for k in (b - 1, b, b + 1):
            out.extend(self._rows.get((row.op.direction, row.numel, k), ()))
        return out


def _absent_reason(key: tuple[str, str], directions_t: set[str], framework: str) -> str:
    direction, _ = key
    return (
        f"The target ({framework}) recorded no {direction} ops (an inference runtime has "
        "no backward pass); only forward tensors can pair."
    )


def _by_value(
    ops_b: Sequence[OpRecord], rows_t: Sequence[_Row], m: _Matcher, claimed: set[object]
) -> list[_Group]:
    """One group per bench op of a segment, with the target rows its tensors match by value."""
    by_numel: dict[int, list[_Row]] = {}
    for r in rows_t:
        by_numel.setdefault(r.numel, []).append(r)
    groups: list[_Group] = []
    cursor = rows_t[0].seq if rows_t else 0
    for seq_b, op in enumerate(ops_b):
        hits: dict[str, _Hit] = {}
        for rec in op.tensors:
            row = _Row(op, rec, seq_b)
            hit = m.best(row, by_numel.get(row.numel, ()), cursor)
            if hit is not None:
                hits[rec.tensor] = hit
                _claim(claimed, hit.target.rec)
        cursor = max((h.target.seq for h in hits.values() if h.target.is_output), default=cursor)
        groups.append(_Group(op, hits, dict.fromkeys(hits, "value"), set()))
    return groups


def _fallback(
    groups: list[_Group],
    rows_t: Sequence[_Row],
    claimed: set[object],
    produced: set[tuple[int, str]],
    backward: bool = True,
) -> None:
    """Structural pairs for the tensors values could not pair (the runs differ there):
    outputs (of backward ops only where ``backward``), and inputs that an earlier bench op
    produced (a parameter that matched nothing has no counterpart: a weight the export
    folded into another op's)."""

    def made(g: _Group) -> int | None:  # the last target op whose output the group holds
        return max((h.target.seq for h in g.hits.values() if h.target.is_output), default=None)

    anchors = [min(g.ops) if g.ops else None for g in groups]
    ends = [made(g) for g in groups]
    for k, g in enumerate(groups):
        lo = max((e for e in ends[:k] if e is not None), default=-1)
        hi = min((a for a in anchors[k + 1 :] if a is not None), default=math.inf)
        for rec in g.bench.outputs:
            if rec.tensor in g.hits or _saved_statistic(g.bench.op, rec.tensor):
                continue
            if not backward and g.bench.direction == "backward":
                break
            n = math.prod(rec.shape)
            free = [
                r for r in rows_t
                if r.is_output and not _is_claimed(claimed, r.rec) and r.numel == n
                and lo < r.seq < hi and r.rec.dtype == rec.dtype
            ]  # fmt: skip
            if free:
                r = free[-1]  # the chain's last output
                g.hits[rec.tensor] = _Hit(r, math.inf, _plain(rec, r.rec))
                g.how[rec.tensor] = "structure"
                _claim(claimed, r.rec)
                g.ops.add(r.seq)
        if not g.ops:
            continue
        first = min(g.ops)
        # an input may hold an earlier group's output: only rows this group took are taken
        taken = {id(h.target.rec) for h in g.hits.values()}
        free_in = [
            r for r in rows_t
            if r.seq == first and not r.is_output and id(r.rec) not in taken
        ]  # fmt: skip
        for rec in g.bench.inputs:
            if rec.tensor in g.hits or (g.bench.index, rec.tensor) not in produced:
                continue
            if g.bench.direction != "forward":  # gradient kernels take other inputs
                break
            n = math.prod(rec.shape)
            spare = next((x for x in free_in if x.numel == n), None)
            if spare is not None:
                free_in.remove(spare)
                g.hits[rec.tensor] = _Hit(spare, math.inf, _plain(rec, spare.rec))
                g.how[rec.tensor] = "structure"
        ends[k] = made(g)
        anchors[k] = min(g.ops)


def _converted(groups: list[_Group], rows_t: Sequence[_Row], m: _Matcher) -> None:
    """Known conversions: a bench tensor the target keeps in another form (var for 1/std),
    looked for among the outputs of the target ops the group already holds."""
    for g in groups:
        parts = g.bench.op.split(".")
        base = parts[1] if len(parts) > 1 else g.bench.op
        for rec in g.bench.outputs:
            kind = _CONVERSIONS.get((base, rec.tensor))
            if kind is None or rec.tensor in g.hits:
                continue
            bench = m.pb.array(rec)
            if bench is None:
                continue
            conversion = (kind, _eps(g.bench))
            ref = np.asarray(bench, dtype=np.float64).reshape(-1)
            scale = max(float(np.max(np.abs(ref), initial=0.0)), 1e-30)
            for r in rows_t:
                if not r.is_output or r.seq not in g.ops or r.numel != ref.size:
                    continue
                arr = m.pt.array(r.rec)
                if arr is None or arr.dtype.kind != "f":
                    continue
                got = convert(arr, conversion).reshape(-1)
                if float(np.max(np.abs(got - ref), initial=0.0)) / scale <= VALUE_TOLERANCE:
                    g.hits[rec.tensor] = _Hit(r, 0.0, _plain(rec, r.rec), conversion)
                    g.how[rec.tensor] = "value"
                    break


def _plain(b: TensorRecord, t: TensorRecord) -> tuple[int, ...] | None:
    return None if b.shape == t.shape else _layouts(b.shape, t.shape)[0]


def _absorb(groups: list[_Group], seqs: Sequence[int]) -> None:
    """Target ops of the segment in no group join the next group (a chain's interior)."""
    owner: dict[int, int] = {}
    for k, g in enumerate(groups):
        for s in g.ops:
            owner.setdefault(s, k)
    pending: list[int] = []
    for s in sorted(seqs):
        if s in owner:
            k = owner[s]
            groups[k].ops.update(pending)
            pending = []
        else:
            pending.append(s)


def _saved_statistic(op: str, tensor: str) -> bool:
    parts = op.split(".")
    base = parts[1] if op.startswith("aten.") and len(parts) > 1 else op
    return tensor in _SAVED_FOR_BACKWARD.get(base, ())


def _pair_of(
    g: _Group,
    target: Sequence[OpRecord],
    segment: str,
    produced: set[tuple[int, str]],
    summed: bool = False,
) -> OpPair:
    b = g.bench
    if not g.hits:
        return OpPair((b,), (), "unmatched", _why_unmatched(b, None, segment, True, summed))
    members = [target[s] for s in sorted(g.ops)]
    producers = sorted({h.target.seq for h in g.hits.values() if h.target.is_output})
    anchor = target[producers[-1]] if producers else members[-1]
    chain = [op for op in members if op.index <= anchor.index] or [anchor]
    kinds = [op.op for op in chain if op.inputs]  # a Constant node computes nothing
    name = "+".join(dict.fromkeys(kinds)) if len(kinds) > 1 else anchor.op
    tensors = tuple(replace(h.target.rec, tensor=n) for n, h in g.hits.items())
    synthetic = OpRecord(anchor.index, name, anchor.direction, anchor.module_path, tensors)
    rest = tuple(op for op in members if op.index != anchor.index)
    layouts = tuple((n, h.layout) for n, h in g.hits.items() if h.layout is not None)
    conversions = tuple((n, h.conversion) for n, h in g.hits.items() if h.conversion)
    notes = tuple(
        (rec.tensor, _why_unmatched(b, rec, segment, (b.index, rec.tensor) in produced, summed))
        for rec in b.tensors
        if rec.tensor not in g.hits
    )
    how = "value" if all(v == "value" for v in g.how.values()) else "structure"
    return OpPair(
        (b,), (synthetic, *rest), how, layouts=layouts, notes=notes, conversions=conversions
    )


def _why_unmatched(
    op: OpRecord,
    rec: TensorRecord | None,
    segment: str,
    is_produced: bool,
    summed: bool = False,
) -> str:
    where = segment or "the root"
    if rec is not None and _saved_statistic(op.op, rec.tensor):
        return (
            f"{op.op} {rec.tensor} is a statistic PyTorch saves for the backward pass (mean, "
            "1/std); an inference graph computes it inside one node and does not expose it, "
            "and other frameworks may keep another form (MindSpore's LayerNorm: the variance)."
        )
    what = f"{rec.tensor} {rec.shape}" if rec is not None else f"any tensor of {op.op}"
    why = (
        f"No target tensor in {where} ({op.direction}) has the values of {what} within "
        f"{VALUE_TOLERANCE:g} (layouts tried: equal, permuted, reshaped)"
    )
    if rec is not None and rec.tensor.startswith("input") and not is_produced:
        return (
            f"{why}; a parameter or model input without counterpart (an export may fold it "
            "into another op's weights, e.g. BatchNorm into the Conv before it)."
        )
    if summed and op.direction == "backward":  # the target is TensorFlow (see _fallback)
        return (
            f"{why}; TensorFlow sums a tensor's gradient contributions in one AddN, so a "
            "gradient of one path (before a residual's is added), or one that is rounding "
            "noise around zero, may have no counterpart (not paired by position)."
        )
    return f"{why}, and no unpaired one of that size is left at its place in the module."
