"""PyTorch against TensorFlow's debugger dumps: pairing by value (compare/crossmatch.py).

The TensorFlow side is the stored fixtures of ``tests/dumpformat/data/tensorflow``, written
by real TensorFlow 2.21 (``make_tensorflow_dump.py``; TensorFlow is not needed to read
them); the PyTorch side is the same step of the same models, built here from the script's
:func:`weights`: forward, MSE loss, backward, SGD with learning rate 0.1. A live test runs
the TensorFlow side too where ``tensorflow`` is importable.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensorsight  # noqa: E402

DATA = Path(__file__).parents[1] / "dumpformat" / "data"
TF = DATA / "tensorflow"
sys.path.insert(0, str(DATA))
import make_tensorflow_dump as M  # noqa: E402

sys.path.remove(str(DATA))


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.ln = torch.nn.LayerNorm(8, eps=1e-5)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.ln(self.fc1(x))))


class CNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(144, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class Attention(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.q, self.k, self.v, self.out = (torch.nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.reshape(b, t, 2, d // 2).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // 2) ** 0.5, dim=-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, t, d))


class Block(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = Attention(d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class Transformer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(M.D) for _ in range(2)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return x


def torch_step(model_name: str, out: Path) -> Path:
    """The fixture's training step in PyTorch, dumped at level op with tensors."""
    torch.manual_seed(0)
    model = {"mlp": MLP, "cnn": CNN, "transformer": Transformer}[model_name]()
    params, x, y = M.weights(model_name)
    with torch.no_grad():
        named = dict(model.named_parameters())
        assert sorted(named) == sorted(params)
        for name, value in params.items():
            named[name].copy_(torch.from_numpy(value))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    with tensorsight.dump(out, mode="tensor", level="op"):
        loss = torch.mean((model(xt) - yt) ** 2)
        loss.backward()
        opt.step()
    return out


@pytest.fixture(scope="module")
def pt(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("pt")
    return {m: torch_step(m, work / m) for m in ("mlp", "cnn", "transformer")}


def _paired(result: tensorsight.Comparison, direction: str) -> tuple[int, int]:
    """(paired, all) PyTorch outputs and parameter gradients of one direction."""
    rows = [
        r
        for r in result.rows
        if r.shape_bench is not None
        and r.direction == direction
        and r.tensor.startswith(("output", "grad."))
    ]
    return sum(r.match != "unmatched" for r in rows), len(rows)


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_healthy_runs_pair_and_agree(pt, name: str) -> None:
    """>= 90 % of PyTorch's outputs and parameter gradients pair with TensorFlow's tensors
    by value, forward and backward, and no row is an error."""
    result = tensorsight.compare(pt[name], TF / name)
    assert [r.key for r in result.rows if r.verdict == "error"] == []
    for direction in ("forward", "backward"):
        paired, total = _paired(result, direction)
        assert total > 0
        assert paired >= 0.9 * total, (direction, paired, total)


def test_every_unmatched_tensor_says_why(pt) -> None:
    result = tensorsight.compare(pt["mlp"], TF / "mlp")
    left = [r for r in result.rows if r.match == "unmatched"]
    assert left
    assert all(r.reason for r in left)


def test_layouts_pair_transposed_kernels_and_nhwc(pt) -> None:
    """Keras kernels are [in, out], convolutions NHWC/HWIO: they pair through a layout."""
    result = tensorsight.compare(pt["cnn"], TF / "cnn")
    conv = [
        r
        for r in result.rows
        if r.module_path == "CNN.conv1"
        and r.direction == "forward"
        and r.tensor == "output.0"
        and r.op.startswith("aten.convolution")
    ]
    assert conv
    assert conv[0].match == "value"
    assert conv[0].verdict == "pass"
    grads = [r for r in result.rows if r.tensor == "grad.weight" and r.module_path == "CNN.fc"]
    assert grads
    assert (grads[0].match, grads[0].verdict) == ("value", "pass")


@pytest.mark.parametrize(
    ("run", "module"),
    [("mlp_eps", "MLP.ln"), ("mlp_transposed", "MLP.fc2"), ("mlp_tanh", "MLP.act")],
)
def test_planted_bug_is_found_in_its_module(pt, run: str, module: str) -> None:
    result = tensorsight.compare(pt["mlp"], TF / run)
    first = result.first_divergence
    assert first is not None
    assert first.module_path == module, (first.module_path, first.op, first.tensor)
    assert first.direction == "forward"


def test_manifest_names_the_fusions_the_debugger_turned_off() -> None:
    import json

    info = json.loads((TF / "mlp" / "tensorsight-tf.json").read_text())
    assert info["tensorflow_version"] == "2.21.0"
    ops = {(f["op"], tuple(f["fused_ops"])) for f in info["fusions_disabled"]}
    assert ("_FusedMatMul", ("BiasAdd",)) in ops


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="tensorflow is not installed"
)
def test_live_tensorflow_dump_pairs(pt, tmp_path: Path) -> None:
    """The fixture script's MLP run anew in this TensorFlow, read and compared."""
    code = (
        f"import sys; sys.path.insert(0, {str(DATA)!r}); import make_tensorflow_dump as m; "
        f"m.run_one('mlp', m.Path({str(tmp_path / 'tf')!r}))"
    )
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=600)
    result = tensorsight.compare(pt["mlp"], tmp_path / "tf")
    assert [r.key for r in result.rows if r.verdict == "error"] == []
    paired, total = _paired(result, "backward")
    assert paired >= 0.9 * total


def test_fixture_weights_are_fixed() -> None:
    params, x, _ = M.weights("mlp")
    assert params["fc1.weight"].shape == (8, 4)
    assert x.dtype == np.float32
