"""Logs for the model views' browser tests, written with ``tensorsight.SummaryWriter``.

``model_board``, run ``bf16``: a small transformer's graph recorded under bf16 autocast, bf16
tensors over three steps (with NaN/+Inf at the last one) and a DataLoader pipeline.
``training_board``, run ``train``: one whole training step (forward, backward, SGD with
momentum) recorded with ``add_graph``; run ``onnx``: the transformer exported by
``torch.onnx.export`` and a corrupt ``.onnx`` file. Each is served once per session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import board_server
from tests.fixtures.train_step import write_train_step_graph


def write_model_logs(logdir: Path) -> None:
    import torch

    from tensorsight import SummaryWriter

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    with SummaryWriter(str(logdir / "bf16")) as w:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            w.add_graph(model, torch.randn(2, 8, 32))
        for step in range(3):
            t = torch.arange(4 * 6 * 8, dtype=torch.float32).reshape(4, 6, 8) / 10 + step
            if step == 2:
                t[0, 0, 0] = float("nan")
                t[0, 0, 1] = float("inf")
            w.add_tensor("activations/layer0", t.to(torch.bfloat16), step)
        ds = torch.utils.data.TensorDataset(torch.zeros(10, 2), torch.ones(10))
        loader = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True)
        w.add_data_graph("train_pipeline", loader)


def write_model_files(logdir: Path) -> None:
    """The transformer exported to ONNX, and a corrupt ``.onnx`` file beside it."""
    import warnings

    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    logdir.mkdir(parents=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(model, (torch.randn(2, 8, 32),), str(logdir / "encoder.onnx"),
                          dynamo=False)  # fmt: skip
    (logdir / "broken.onnx").write_bytes(b"\x08\x07\x12\xff\xff not a model")


@pytest.fixture(scope="session")
def model_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tensorsight.data import LogdirProvider

    logdir = tmp_path_factory.mktemp("model-logs")
    write_model_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


@pytest.fixture(scope="session")
def training_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Runs ``train`` (a recorded training step) and ``onnx`` (model files, one corrupt)."""
    from tensorsight.data import LogdirProvider

    logdir = tmp_path_factory.mktemp("training-logs")
    write_train_step_graph(logdir / "train")
    write_model_files(logdir / "onnx")
    with pytest.warns(UserWarning, match="broken.onnx"):
        provider = LogdirProvider(logdir)
    with board_server(provider) as url:
        yield url
