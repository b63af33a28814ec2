"""DumpFromOnnxModel: every intermediate tensor of one ONNX run, in the dump format.

``onnxruntime``: every node output is added as a graph output. That edit disables the
fusions whose inner tensors become visible, so the model is also optimized once as is, and
the node kinds present only in that plain optimization (``FusedGemm``, a Conv with a fused
activation, ...) are recorded in ``manifest.extra["lost_fusions"]``: those fused kernels are
what the dump did *not* measure. ``onnx.reference`` returns intermediates without editing
the graph (and optimizes nothing).

Each node is one op: ``op`` is ``<domain>::<op_type>`` (``::Gemm`` for the default domain is
written ``Gemm``), ``module_path`` is the node name, rows ``input.i`` / ``output.i`` name the
node's inputs and outputs in order; initializers (weights) are rows too.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tensorsight._lazy import lazy_import
from tensorsight.dumpformat import _fs, _np_stats
from tensorsight.dumpformat.writer import DumpWriter, base_manifest
from tensorsight.errors import CaptureError, InputFileError, UsageError

__all__ = ["GRAPH_OPT_LEVELS", "RUNTIMES", "DumpFromOnnxModel", "OnnxDumpResult"]

RUNTIMES = ("onnxruntime", "reference")
GRAPH_OPT_LEVELS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}


@dataclass(frozen=True)
class OnnxDumpResult:
    """What :meth:`DumpFromOnnxModel.run` recorded.

    Attributes:
        path: The dump folder.
        op_count: Nodes recorded.
        tensor_count: Rows recorded.
        lost_fusions: Fused node kinds of the plain optimized model that the instrumented
            run did not have, with counts (empty for ``reference``).
    """

    path: str
    op_count: int
    tensor_count: int
    lost_fusions: dict[str, int]


def _node_kind(node: Any) -> str:
    kind = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
    for attr in node.attribute:
        if attr.name == "activation":
            kind += f"[activation={attr.s.decode()}]"
    return kind


class DumpFromOnnxModel:
    """Run an ONNX model once and dump every node's inputs and outputs.

    Args:
        model: Path of the ``.onnx`` file.
        inputs: Graph input name -> array.
        out_dir: Dump folder (``out_dir/rank0/step0``).
        runtime: ``"onnxruntime"`` (default) or ``"reference"``.
        graph_opt: ``disable``, ``basic``, ``extended`` or ``all`` (onnxruntime only).
        mode: ``"tensor"`` (default), ``"statistics"`` or ``"md5"``.
        overwrite: Replace an existing dump in ``out_dir``.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        inputs: Mapping[str, np.ndarray],
        out_dir: str | os.PathLike[str],
        *,
        runtime: str | None = None,
        graph_opt: str | None = None,
        mode: str | None = None,
        overwrite: bool = False,
    ) -> None:
        self.model_path = _fs.to_path(model)
        if not _fs.exists(self.model_path):
            msg = f"ONNX model {str(self.model_path)!r}: does not exist. Expected an .onnx file."
            raise InputFileError(msg)
        self.runtime = runtime or "onnxruntime"
        if self.runtime not in RUNTIMES:
            msg = f"ONNX runtime {self.runtime!r}: unknown. Expected one of {', '.join(RUNTIMES)}."
            raise UsageError(msg)
        self.graph_opt = graph_opt or "all"
        if self.graph_opt not in GRAPH_OPT_LEVELS:
            msg = (
                f"Graph optimization level {self.graph_opt!r}: unknown. "
                f"Expected one of {', '.join(GRAPH_OPT_LEVELS)}."
            )
            raise UsageError(msg)
        self.mode = mode or "tensor"
        if self.mode not in ("statistics", "tensor", "md5"):
            msg = f"Dump mode {self.mode!r}: unknown. Expected one of statistics, tensor, md5."
            raise UsageError(msg)
        self.inputs = dict(inputs)
        self.out_dir = _fs.to_path(out_dir)
        self.overwrite = overwrite

    def _load(self) -> Any:
        onnx = lazy_import("onnx", extra="onnx", needed_by="tensorsight dump-onnx")
        try:
            return onnx.load(str(self.model_path))
        except Exception as exc:  # protobuf raises DecodeError and friends
            msg = (
                f"ONNX model {str(self.model_path)!r}: unreadable ({type(exc).__name__}: "
                f"{exc}). Expected a valid .onnx file."
            )
            raise InputFileError(msg) from exc

    def _check_inputs(self, model: Any) -> None:
        init = {i.name for i in model.graph.initializer}
        wanted = [i.name for i in model.graph.input if i.name not in init]
        missing = [n for n in wanted if n not in self.inputs]
        extra = [n for n in self.inputs if n not in wanted]
        if missing or extra:
            bad = missing[0] if missing else extra[0]
            msg = (
                f"ONNX input {bad!r}: {'missing' if missing else 'not an input of the model'}. "
                f"Expected exactly {wanted}, got {sorted(self.inputs)}. "
                "Pass --input NAME=FILE.npy for each."
            )
            raise UsageError(msg)

    def run(self, progress: Callable[[int], None] | None = None) -> OnnxDumpResult:
        """Run the model, write the dump and return what was recorded."""
        model = self._load()
        self._check_inputs(model)
        if self.runtime == "reference":
            values, lost, plain, framework, version = self._run_reference(model)
        else:
            values, lost, plain, framework, version = self._run_ort(model)
        for init in model.graph.initializer:
            if init.name not in values:
                numpy_helper = lazy_import("onnx.numpy_helper", extra="onnx")
                values[init.name] = numpy_helper.to_array(init)
        rank_dir = self._prepare()
        manifest = base_manifest(
            mode=self.mode,
            level="onnx",
            framework=framework,
            framework_version=version,
            device="CPUExecutionProvider" if self.runtime == "onnxruntime" else "cpu",
            rank=0,
            world_size=1,
            extra={
                "model": str(self.model_path),
                "graph_opt": self.graph_opt if self.runtime == "onnxruntime" else None,
                "lost_fusions": lost,
                "plain_optimized_nodes": plain,
            },
        )
        writer = DumpWriter(rank_dir, manifest, to_bytes=_np_stats.array_bytes)
        rows = 0
        try:
            writer.begin_step(0)
            for index, node in enumerate(model.graph.node):
                named = [(f"input.{i}", n) for i, n in enumerate(node.input) if n]
                named += [(f"output.{i}", n) for i, n in enumerate(node.output) if n]
                for tname, vname in named:
                    arr = values.get(vname)
                    if arr is None or not isinstance(arr, np.ndarray):
                        continue
                    rows += 1
                    self._add(writer, index, node, tname, arr)
                if progress is not None:
                    progress(1)
            writer.end_step()
        except BaseException as exc:
            writer.close(complete=False, reason=f"{type(exc).__name__}: {exc}")
            raise
        writer.close()
        return OnnxDumpResult(str(self.out_dir), len(model.graph.node), rows, lost)

    def _add(self, writer: DumpWriter, index: int, node: Any, tname: str, arr: np.ndarray) -> None:
        op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
        row = {
            "index": index,
            "op": op,
            "direction": "forward",
            "module_path": node.name,
            "tensor": tname,
            "shape": list(arr.shape),
            "dtype": str(arr.dtype),
            "device": "cpu",
            "fingerprint": _np_stats.fingerprint(arr) if self.mode == "md5" else None,
            "data": None,
            "grad_fn": None,
            "stack": None,
        }
        store = self.mode == "tensor" and arr.dtype.kind in "biuf"
        writer.add(row, _np_stats.array_stats(arr), arr if store else None)

    def _prepare(self) -> Path:
        out = self.out_dir
        if _fs.exists(out) and not _fs.is_dir(out):
            msg = f"Dump path {str(out)!r}: is a file. Expected a folder (new or empty)."
            raise UsageError(msg)
        if _fs.exists(out) and _fs.list_dir(out):
            if not self.overwrite:
                msg = (
                    f"Dump path {str(out)!r}: not empty. "
                    "Expected a new or empty folder. Pass --overwrite to replace it."
                )
                raise UsageError(msg)
            _fs.remove_tree(out)
        return out / "rank0"

    def _run_reference(
        self, model: Any
    ) -> tuple[dict[str, Any], dict[str, int], list[str], str, str]:
        onnx = lazy_import("onnx", extra="onnx")
        ref = lazy_import("onnx.reference", extra="onnx")
        try:
            evaluator = ref.ReferenceEvaluator(model)
            results = evaluator.run(None, self.inputs, intermediate=True)
        except Exception as exc:  # the evaluator raises whatever its kernels raise
            msg = (
                f"ONNX model {str(self.model_path)!r}: "
                f"onnx.reference failed ({type(exc).__name__}: {exc})."
            )
            raise CaptureError(msg) from exc
        return dict(results), {}, [], "onnx.reference", onnx.__version__

    def _session(self, ort: Any, model_bytes: bytes, level: str, optimized: str) -> Any:
        so = ort.SessionOptions()
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        so.optimized_model_filepath = optimized
        so.log_severity_level = 3
        return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])

    def _run_ort(self, model: Any) -> tuple[dict[str, Any], dict[str, int], list[str], str, str]:
        onnx = lazy_import("onnx", extra="onnx")
        ort = lazy_import("onnxruntime", extra="onnx", needed_by="tensorsight dump-onnx")
        level = GRAPH_OPT_LEVELS[self.graph_opt]
        outputs = {o.name for o in model.graph.output}
        instrumented = onnx.ModelProto()
        instrumented.CopyFrom(model)
        for node in model.graph.node:
            for name in node.output:
                if name and name not in outputs:
                    instrumented.graph.output.append(onnx.ValueInfoProto(name=name))
                    outputs.add(name)
        with tempfile.TemporaryDirectory(prefix="tensorsight-onnx-") as tmp:
            plain_path, instr_path = (
                os.path.join(tmp, "plain.onnx"),
                os.path.join(tmp, "instr.onnx"),
            )
            try:
                self._session(ort, model.SerializeToString(), level, plain_path)
                sess = self._session(ort, instrumented.SerializeToString(), level, instr_path)
                names = [o.name for o in sess.get_outputs()]
                arrays = sess.run(names, self.inputs)
            except Exception as exc:  # onnxruntime raises its own exception types
                msg = (
                    f"ONNX model {str(self.model_path)!r}: "
                    f"onnxruntime failed ({type(exc).__name__}: {exc})."
                )
                raise CaptureError(msg) from exc
            plain = [_node_kind(n) for n in onnx.load(plain_path).graph.node]
            instr = [_node_kind(n) for n in onnx.load(instr_path).graph.node]
        lost = dict(sorted((Counter(plain) - Counter(instr)).items()))
        values = dict(zip(names, arrays, strict=True))
        values.update(self.inputs)
        return values, lost, plain, "onnxruntime", ort.__version__
