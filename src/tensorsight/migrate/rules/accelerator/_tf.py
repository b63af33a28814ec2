"""Shared helpers of the TensorFlow rules (``tf_*.py``): qualified names with the
``tf.compat.v1``/``v2`` prefix folded, the module alias a call was spelled with, and the
file-level need (the file names ``tensorflow`` or ``keras``)."""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import Need

__all__ = ["TF_TOKENS", "TF_TRIGGERS", "base_of", "tf_api"]

#: A TensorFlow rule can match only in a file that names TensorFlow, Keras or Horovod.
TF_TOKENS = (Need(names=("tensorflow",)), Need(names=("keras",)), Need(names=("horovod",)))
TF_TRIGGERS = (
    "GPU",
    "gpu",
    "mixed_float16",
    "set_jit",
    "TF_CUDNN",
    "TF_XLA",
    "allow_growth",
    "is_built_with_cuda",
    "local_rank",
)
_COMPAT = ("tensorflow.compat.v1.", "tensorflow.compat.v2.")


def tf_api(ctx: RuleContext, node: cst.CSTNode) -> str | None:
    """``tf.<name>`` for a TensorFlow API (``tf.compat.v1.X`` counts as ``tf.X``),
    ``keras.<name>`` for standalone Keras, ``hvd.<name>`` for Horovod, else ``None``."""
    name = ctx.qname(node)
    if name is None:
        return None
    for prefix in _COMPAT:
        if name.startswith(prefix):
            return "tf." + name.removeprefix(prefix)
    if name.startswith("tensorflow."):
        return "tf." + name.removeprefix("tensorflow.")
    if name.startswith("horovod."):  # horovod.tensorflow[.keras].local_rank
        return "hvd." + name.rsplit(".", 1)[1]
    if name.startswith("keras."):
        return name
    return None


def base_of(func: cst.BaseExpression, depth: int) -> cst.BaseExpression | None:
    """The expression ``depth`` attributes up from ``func`` (``tf.test.is_gpu_available``,
    depth 2 -> ``tf``), or ``None`` when the callee is not spelled as such a chain."""
    node = func
    for _ in range(depth):
        if not isinstance(node, cst.Attribute):
            return None
        node = node.value
    return node
