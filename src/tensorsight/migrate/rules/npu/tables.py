"""Data only: Ascend NPU specifics (torch_npu)."""

from __future__ import annotations

ENV_VARS: dict[str, str] = {"CUDA_VISIBLE_DEVICES": "ASCEND_RT_VISIBLE_DEVICES"}

HCCL_ENV_VARS: dict[str, str] = {
    "NCCL_SOCKET_IFNAME": "HCCL_SOCKET_IFNAME",
    "NCCL_TIMEOUT": "HCCL_EXEC_TIMEOUT",
    "NCCL_DEBUG": "ASCEND_GLOBAL_LOG_LEVEL",
}
