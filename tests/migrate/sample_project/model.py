"""A small classifier with a custom autograd function (CUDA AMP decorators)."""

import torch
from torch import nn
from torch.cuda.amp import custom_bwd, custom_fwd


class ScaledGelu(torch.autograd.Function):
    """gelu(x) * 2 with a hand-written backward, as custom CUDA-era code often has."""

    @staticmethod
    @custom_fwd
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return nn.functional.gelu(x) * 2

    @staticmethod
    @custom_bwd
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            y = nn.functional.gelu(x) * 2
            (gx,) = torch.autograd.grad(y, x, grad)
        return gx


class Net(nn.Module):
    def __init__(self, features: int = 16, classes: int = 4) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, 32)
        self.fc2 = nn.Linear(32, classes)

    def forward(self, x):
        return self.fc2(ScaledGelu.apply(self.fc1(x)))
