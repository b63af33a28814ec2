"""Small models run in PyTorch and, exported, in ONNX Runtime with identical weights.

Used by ``test_crossmatch.py``: each builder returns the model and its input; ``dump_pair``
records the PyTorch forward (``level="op"``, tensors) and the ONNX Runtime run of the
exported model; ``plant`` edits the ONNX graph to plant a bug on the target side.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

import tensorsight
from tensorsight.capture.backends.onnx import DumpFromOnnxModel


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.ln = torch.nn.LayerNorm(32)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(32, 32)
        self.head = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.fc2(self.act(self.ln(self.fc1(x)))))


class CNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class Attention(torch.nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.reshape(b, t, h, d // h).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // h) ** 0.5, dim=-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, t, d))


class Block(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = Attention(d, 2)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class Transformer(torch.nn.Module):
    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(d), Block(d)])
        self.ln = torch.nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.ln(x)


def build(name: str) -> tuple[torch.nn.Module, torch.Tensor]:
    """The model (random, seeded weights; BatchNorm with non-trivial running stats), input."""
    torch.manual_seed(0)
    if name == "mlp":
        return MLP().eval(), torch.randn(4, 16)
    if name == "cnn":
        model = CNN()
        with torch.no_grad():
            for bn in (model.bn1, model.bn2):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.2, 0.2)
        return model.eval(), torch.randn(2, 3, 8, 8)
    return Transformer().eval(), torch.randn(2, 5, 16)


OPSETS = {"mlp": 20, "cnn": 18, "transformer": 18}  # mlp: a Gelu node; transformer: a chain


def export(
    model: torch.nn.Module, x: torch.Tensor, path: Path, *, opset: int = 18, fold: bool = False
) -> onnx.ModelProto:
    """The TorchScript exporter's graph (opset 18 decomposes GELU into Div, Erf, Add, Mul,
    Mul; opset 20 has a Gelu node); ``fold`` lets it fold BatchNorm into the Conv."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            model, (x,), str(path), dynamo=False, input_names=["x"], opset_version=opset,
            do_constant_folding=fold,
        )  # fmt: skip
    return onnx.load(str(path))


def dump_torch(model: torch.nn.Module, x: torch.Tensor, out: Path) -> Path:
    with torch.no_grad(), tensorsight.dump(out, mode="tensor", level="op"):
        model(x)
    return out


def dump_onnx(proto: onnx.ModelProto, x: torch.Tensor, work: Path, name: str) -> Path:
    path = work / f"{name}.onnx"
    onnx.save(proto, str(path))
    out = work / name
    DumpFromOnnxModel(path, {"x": x.numpy()}, out).run()
    return out


def _initializer(proto: onnx.ModelProto, name: str) -> onnx.TensorProto:
    return next(i for i in proto.graph.initializer if i.name == name)


def plant(proto: onnx.ModelProto, bug: str, where: str) -> onnx.ModelProto:
    """A copy of ``proto`` with one bug in the first node whose name contains ``where``:
    ``eps`` (a LayerNormalization's epsilon 1e-1), ``transpose`` (its square weight, input
    1, transposed) or ``gelu-tanh`` (a Gelu node approximates)."""
    bad = onnx.ModelProto()
    bad.CopyFrom(proto)
    nodes = [n for n in bad.graph.node if where in n.name]
    if bug == "eps":
        node = next(n for n in nodes if n.op_type == "LayerNormalization")
        for a in node.attribute:
            if a.name == "epsilon":
                a.f = 1e-1
        if not any(a.name == "epsilon" for a in node.attribute):
            node.attribute.append(helper.make_attribute("epsilon", 1e-1))
    elif bug == "transpose":
        node = next(n for n in nodes if n.op_type in ("Gemm", "MatMul"))
        weight = node.input[1]
        made = {o: n for n in bad.graph.node for o in n.output}
        while weight in made:  # unfolded exports transpose the weight in the graph
            weight = made[weight].input[0]
        init = _initializer(bad, weight)
        arr = numpy_helper.to_array(init)
        init.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(arr.T), init.name))
    elif bug == "gelu-tanh":
        node = next(n for n in nodes if n.op_type == "Gelu")
        kept = [a for a in node.attribute if a.name != "approximate"]
        del node.attribute[:]
        node.attribute.extend([*kept, helper.make_attribute("approximate", "tanh")])
    else:
        raise ValueError(bug)
    return bad
