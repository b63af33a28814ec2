"""Pairing across frameworks by value (compare/crossmatch.py): a few thousand tensors a side.

A synthetic PyTorch-like op list (per layer: a transposed weight, ``addmm``, a LayerNorm with
its two saved statistics, ``gelu``) against an ONNX-like one (``Gemm`` with the ``[out, in]``
weight, ``LayerNormalization``, a five-node GELU chain), with the same values, paired by
:func:`~tensorsight.compare.crossmatch.match_across` from the statistics alone and with
sampled elements read from in-memory arrays. Figures are this thread's CPU time.
"""

from __future__ import annotations

import math
import time

import numpy as np

from benchmarks.harness import Harness
from tensorsight.compare.crossmatch import match_across
from tensorsight.dumpformat.schema import OpRecord, TensorRecord, TensorStats


class _Side:
    def __init__(self, root: str, onnx: bool) -> None:
        self.root, self.onnx = root, onnx
        self.ops: list[OpRecord] = []
        self.arrays: dict[str, np.ndarray] = {}

    def add(self, op: str, module: str, tensors: dict[str, np.ndarray]) -> None:
        index = len(self.ops)
        path = f"/{module.replace('.', '/')}/{op}_{index}" if self.onnx else f"{self.root}.{module}"
        rows = []
        for name, a in tensors.items():
            key = f"{index}:{name}"
            self.arrays[key] = a
            stats = TensorStats(
                float(a.min()), float(a.max()), float(a.mean()), float(np.linalg.norm(a))
            )
            rows.append(
                TensorRecord(index, op, "forward", path, name, a.shape, "float32", stats=stats,
                             data=key)
            )  # fmt: skip
        self.ops.append(OpRecord(index, op, "forward", path, tuple(rows)))

    def load(self, rec: TensorRecord) -> np.ndarray:
        assert rec.data is not None
        return self.arrays[rec.data]


def _sides(layers: int, d: int = 32, rows: int = 8) -> tuple[_Side, _Side]:
    rng = np.random.default_rng(0)
    pt, ox = _Side("Net", onnx=False), _Side("Net", onnx=True)
    x = rng.standard_normal((rows, d)).astype(np.float32)
    for i in range(layers):
        w = rng.standard_normal((d, d)).astype(np.float32)
        b = rng.standard_normal(d).astype(np.float32)
        y = x @ w.T + b
        mu = y.mean(-1, keepdims=True)
        rstd = 1 / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
        z = (y - mu) * rstd
        g = (0.5 * z * (1 + np.tanh(0.79788456 * (z + 0.044715 * z**3)))).astype(np.float32)
        fc, ln, act = f"l{i}.fc", f"l{i}.ln", f"l{i}.act"
        pt.add("aten.t.default", fc, {"input.0": w, "output.0": w.T})
        pt.add(
            "aten.addmm.default", fc, {"input.0": b, "input.1": x, "input.2": w.T, "output.0": y}
        )
        pt.add("aten.native_layer_norm.default", ln,
               {"input.0": y, "output.0": z, "output.1": mu, "output.2": rstd})  # fmt: skip
        pt.add("aten.gelu.default", act, {"input.0": z, "output.0": g})
        ox.add("Gemm", fc, {"input.0": x, "input.1": w, "input.2": b, "output.0": y})
        ox.add("LayerNormalization", ln, {"input.0": y, "output.0": z})
        h = z / math.sqrt(2)
        ox.add("Div", act, {"input.0": z, "output.0": h})
        e = np.tanh(h)
        ox.add("Erf", act, {"input.0": h, "output.0": e})
        ox.add("Add", act, {"input.0": e, "output.0": e + 1})
        ox.add("Mul", act, {"input.0": z, "input.1": e + 1, "output.0": z * (e + 1)})
        ox.add("Mul", act, {"input.0": z * (e + 1), "output.0": g})
        x = g
    return pt, ox


def run(h: Harness) -> None:
    layers = 20 if h.quick else 500
    pt, ox = _sides(layers)
    n_b = sum(len(op.tensors) for op in pt.ops)
    n_t = sum(len(op.tensors) for op in ox.ops)
    frameworks = ("torch", "onnxruntime")
    pairs = []

    def stats_only() -> None:
        pairs[:] = match_across(pt.ops, ox.ops, frameworks=frameworks)

    def sampled() -> None:
        pairs[:] = match_across(
            pt.ops, ox.ops, frameworks=frameworks, load_bench=pt.load, load_target=ox.load
        )

    h.measure(f"statistics only ({n_b} vs {n_t} tensors)", stats_only, clock=time.thread_time)
    h.measure(f"with samples ({n_b} vs {n_t} tensors)", sampled, clock=time.thread_time)
    outs = [(p, r.tensor) for p in pairs if p.bench for r in p.bench[0].outputs]
    paired = sum(1 for p, name in outs if p.how != "unmatched" and name not in dict(p.notes))
    h.note(f"{layers} layers; {paired} of {len(outs)} bench outputs paired (the rest: "
           "LayerNorm's saved mean and 1/std); thread CPU time")  # fmt: skip
