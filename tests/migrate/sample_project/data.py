"""Synthetic data, loaded the way GPU training scripts do (pinned memory)."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader(n: int = 64, features: int = 16, classes: int = 4, batch_size: int = 16):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, features, generator=generator)
    y = torch.randint(0, classes, (n,), generator=generator)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, pin_memory=True)
