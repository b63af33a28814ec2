"""Fixtures for the dump tests: a tiny model and a training step."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

DATA = Path(__file__).parents[1] / "dumpformat" / "data"  # the msprobe dumps


class TinyMLP(torch.nn.Module):
    def __init__(self, dtype=None) -> None:
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(4, 8, dtype=dtype), torch.nn.ReLU(), torch.nn.Linear(8, 2, dtype=dtype)
        )

    def forward(self, x):
        return self.layers(x)


@pytest.fixture
def model():
    torch.manual_seed(0)
    return TinyMLP()


@pytest.fixture
def batch():
    torch.manual_seed(1)
    return torch.randn(3, 4)


def train_step(model, x):
    """Forward + backward; returns the loss."""
    model.zero_grad(set_to_none=True)
    loss = model(x).pow(2).mean()
    loss.backward()
    return loss


@pytest.fixture
def msprobe_data() -> Path:
    return DATA / "msprobe"
