"""Helpers with the aliases real projects use."""

import torch
from torch.cuda import synchronize as sync

cuda = torch.cuda


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    cuda.manual_seed_all(seed)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True


def memory_report() -> str:
    sync()
    used = cuda.memory_allocated() / 2**20
    peak = torch.cuda.max_memory_allocated() / 2**20
    return f"memory {used:.1f} MiB (peak {peak:.1f} MiB) on {cuda.device_count()} device(s)"
