"""Dump one TensorFlow step with TensorFlow's own debugger, for ``tensorsight compare``.

TensorFlow is imported only when :func:`dump` is called (the ``tensorflow`` extra: bring
your own ``tensorflow`` or ``tensorflow-cpu``). The dump is TensorFlow's debugger v2 format,
read without TensorFlow by :mod:`tensorsight.dumpformat.tfdbg`.

Example (not run here: needs TensorFlow):
    >>> import tensorsight.tensorflow
    >>> info = tensorsight.tensorflow.dump(train_step, "tf_dump", args=(x, y))  # doctest: +SKIP
    >>> info["fusions_disabled"]  # doctest: +SKIP
    [{'node': 'MLP_1/fc1_1/MatMul', 'op': '_FusedMatMul', 'fused_ops': ['BiasAdd']}]
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tensorsight._lazy import lazy_import
from tensorsight.errors import TensorsightError

__all__ = ["MANIFEST", "dump"]

#: the file :func:`dump` writes next to the debugger's (what ran, what Grappler fuses)
MANIFEST = "tensorsight-tf.json"


def dump(
    step: Callable[..., Any],
    out: str | os.PathLike[str],
    *,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    tensor_debug_mode: str = "FULL_TENSOR",
    op_regex: str | None = None,
    read_variables: bool = True,
) -> dict[str, Any]:
    """Run ``step(*args, **kwargs)`` once with TensorFlow's debugger dumping into ``out``.

    ``step`` is a Python function or a ``tf.function`` (its Python function is used). It
    runs as a *fresh* ``tf.function``, traced while the debugger is on, so its graph is
    instrumented (a function traced before ``enable_dump_debug_info`` runs without being
    dumped). The debugger is on for exactly that one call and off again afterwards, even
    when the step raises. The instrumented function is dropped: calling an instrumented
    function again after ``disable_dump_debug_info`` crashes the process (TensorFlow
    2.21), and ``step`` itself, never traced under the debugger, stays safe to call.

    With the debugger on, every op's output is consumed by a debug op, so Grappler cannot
    fuse kernels (``MatMul`` + ``BiasAdd`` -> ``_FusedMatMul``, ``Conv2D`` + ``BiasAdd``
    + ``Relu``): the dump measures the unfused program. After the step the same Python
    function is traced once more, uninstrumented and not run, and its graph optimized by
    Grappler; the fused nodes found are the fusions the debugger turned off, in the
    returned manifest (also written to ``out/tensorsight-tf.json``). When that cannot be
    done (TensorFlow's private Grappler entry point moved), ``fusions_disabled`` is
    ``None`` and ``fusions_note`` says why.

    Args:
        step: The training or inference step.
        out: The dump folder (created; the debugger adds its ``tfdbg_events.*`` files).
        args: Positional arguments of the step (tensors).
        kwargs: Keyword arguments of the step.
        tensor_debug_mode: The debugger's mode; ``FULL_TENSOR`` (the default) stores every
            value, which ``tensorsight compare`` needs to pair by value.
        op_regex: Dump only ops whose names match (the debugger's ``op_regex``).
        read_variables: After the step, with the debugger still on, read each floating
            variable the step uses once, eagerly, so that the dump holds the parameters
            after the update (TensorFlow's variable updates, ``AssignSubVariableOp``, have
            no outputs for the debugger to dump).

    Returns:
        The manifest: ``tensorflow_version``, ``function``, ``tensor_debug_mode``,
        ``variables_read`` (how many), ``fusions_disabled`` (``[{"node", "op",
        "fused_ops"}]`` or ``None``) and ``fusions_note``.
    """
    tf = lazy_import("tensorflow", extra="tensorflow", needed_by="tensorsight.tensorflow.dump")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    fn = getattr(step, "python_function", step)
    if not callable(fn):
        msg = f"Step {step!r}: not callable. Expected a Python function or a tf.function."
        raise TensorsightError(msg)
    kw = dict(kwargs or {})
    instrumented = tf.function(fn)
    tf.debugging.experimental.enable_dump_debug_info(
        str(folder),
        tensor_debug_mode=tensor_debug_mode,
        circular_buffer_size=-1,
        op_regex=op_regex,
    )
    read = 0
    try:
        instrumented(*args, **kw)
        if read_variables:  # the values after the step, as eager reads (dumped too)
            captured = instrumented.get_concrete_function(*args, **kw).variables
            for var in captured:
                if var.dtype.is_floating:
                    tf.identity(var.read_value())
                    read += 1
    finally:
        tf.debugging.experimental.disable_dump_debug_info()
        del instrumented
    fusions, note = _fusions(tf, fn, args, kw)
    manifest = {
        "format": "tfdbg",
        "tensorflow_version": tf.__version__,
        "function": getattr(fn, "__qualname__", repr(fn)),
        "tensor_debug_mode": tensor_debug_mode,
        "variables_read": read,
        "fusions_disabled": fusions,
        "fusions_note": note,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


_FUSED_PREFIXES = ("_Fused", "_MklFused", "_MklNativeFused", "FusedBatchNorm", "FusedPadConv")


def _fusions(
    tf: Any, fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
) -> tuple[list[dict[str, Any]] | None, str]:
    """Grappler's fused nodes in the uninstrumented graph of ``fn`` (traced, never run)."""
    try:
        from tensorflow.core.protobuf import (  # type: ignore[import-untyped]
            config_pb2,
            meta_graph_pb2,
        )
        from tensorflow.python.grappler import tf_optimizer  # type: ignore[import-untyped]
    except ImportError as exc:
        return None, f"not detectable: TensorFlow's Grappler entry point is missing ({exc})"
    try:
        graph = tf.function(fn).get_concrete_function(*args, **kwargs).graph
        graph_def = graph.as_graph_def()
        for node in graph_def.node:  # the remapper fuses only nodes placed on the CPU/GPU
            if not node.device:
                node.device = "/device:CPU:0"
        meta = meta_graph_pb2.MetaGraphDef(graph_def=graph_def)
        fetch = meta.collection_def["train_op"].node_list.value
        for t in graph.outputs:
            fetch.append(t.name)
        for op in graph.get_operations():  # keep the variable updates (no outputs)
            if not op.outputs:
                fetch.append(op.name)
        config = config_pb2.ConfigProto()
        optimized = tf_optimizer.OptimizeGraph(config, meta)
    except Exception as exc:  # any failure of a private API: say so, keep the dump
        why = f"{type(exc).__name__}: {str(exc)[:200]}"
        return None, f"not detectable: Grappler could not optimize the step's graph ({why})"
    found = []
    for node in optimized.node:
        if node.op.startswith(_FUSED_PREFIXES):
            fused = [x.decode() for x in node.attr["fused_ops"].list.s]
            found.append({"node": node.name, "op": node.op, "fused_ops": fused})
    note = (
        "Grappler fuses these nodes without the debugger; the dump holds them unfused"
        if found
        else "Grappler fuses no node of this step (the dump runs the same kernels)"
    )
    return found, note
