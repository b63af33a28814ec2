"""TensorFlow scripts: a report of GPU-specific APIs.

A regular-expression scan of files that import TensorFlow or Horovod, for ``tf.config``
GPU calls, distribution strategies with NCCL, Horovod and device strings, each with
advice. The rewrites are rules of the ``accelerator`` target
(``rules/accelerator/tf_*.py``); lines those rules handled are not listed again here.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tensorsight.migrate.model import Site, Status

if TYPE_CHECKING:
    from tensorsight.migrate.runner import Job

__all__ = ["PATTERNS", "RULE_ID", "scan_tensorflow"]

RULE_ID = "tensorflow/gpu-api"
DOC_URL = "https://github.com/tensorsight/tensorsight/blob/main/docs/migrate.md#tensorflowgpu-api"
_IMPORTS = re.compile(r"^\s*(?:import|from)\s+(?:tensorflow|horovod)\b", re.MULTILINE)

_RAW: tuple[tuple[str, str, Status, str], ...] = (
    (
        r"\bconfig\.(?:experimental\.)?list_physical_devices\(\s*['\"]GPU['\"]",
        "tf.config.list_physical_devices('GPU')",
        "manual",
        "Ask for the target's device type (e.g. 'NPU' with the vendor plug-in) or list all "
        "devices.",
    ),
    (
        r"\bconfig\.(?:experimental\.)?set_memory_growth\(",
        "tf.config.experimental.set_memory_growth",
        "manual",
        "GPU memory growth is CUDA-specific; check the target plug-in's memory options.",
    ),
    (
        r"\bconfig\.(?:experimental\.)?set_visible_devices\(",
        "tf.config.set_visible_devices",
        "manual",
        "Pass the target device type instead of 'GPU'.",
    ),
    (
        r"\bMirroredStrategy\(",
        "tf.distribute.MirroredStrategy",
        "manual",
        "MirroredStrategy defaults to NCCL all-reduce on GPUs; set cross_device_ops for the "
        "target (e.g. HierarchicalCopyAllReduce) or use its vendor strategy.",
    ),
    (
        r"\bNcclAllReduce\(",
        "tf.distribute.NcclAllReduce",
        "unsupported",
        "NCCL exists only on NVIDIA GPUs; use tf.distribute.HierarchicalCopyAllReduce or "
        "the target's collective.",
    ),
    (
        r"\bimport\s+horovod|\bhvd\.init\(",
        "horovod",
        "manual",
        "Horovod needs a build with the target's collectives (NCCL is CUDA-only); check "
        "the vendor's Horovod support.",
    ),
    (
        r"['\"]/?(?:device:)?GPU:\d+['\"]",
        "tf.device('/GPU:N')",
        "manual",
        "Hard-coded GPU device string: use the target's device type or let TF place ops.",
    ),
    (
        r"\btest\.is_gpu_available\(|\btest\.is_built_with_cuda\(",
        "tf.test.is_gpu_available",
        "manual",
        "Use tf.config.list_physical_devices() with the target's device type.",
    ),
)

#: compiled regex -> (API, status, advice)
PATTERNS: tuple[tuple[re.Pattern[str], str, Status, str], ...] = tuple(
    (re.compile(p), api, status, advice) for p, api, status, advice in _RAW
)


def scan_tensorflow(
    jobs: Sequence[Job], handled: Collection[tuple[str, int]] = ()
) -> tuple[Site, ...]:
    """Report GPU-specific TensorFlow/Horovod APIs in the files of ``jobs``.

    ``handled``: (file, line) pairs where a TensorFlow rule of the rule set (``tf_*``,
    target ``accelerator``) already reported or rewrote something; matches there are left
    out, so each site has one row.
    """
    sites: list[Site] = []
    for job in jobs:
        try:
            text = Path(job.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # the runner reports unreadable files
        if not _IMPORTS.search(text):
            continue
        starts = [0] + [m.end() for m in re.finditer("\n", text)]
        for pattern, api, status, advice in PATTERNS:
            for m in pattern.finditer(text):
                line = _line_of(starts, m.start())
                if (job.rel, line) in handled:
                    continue
                column = m.start() - starts[line - 1] + 1
                sites.append(
                    Site(job.rel, line, column, api, RULE_ID, status, "none", advice, DOC_URL)
                )
    sites.sort(key=lambda s: (s.file, s.line, s.column))
    return tuple(sites)


def _line_of(starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset)
