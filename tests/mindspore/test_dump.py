"""``tensorsight.mindspore.dump`` against a real MindSpore (graph mode, CPU).

MindSpore reads its Dump configuration once per process, so every case runs its training
in a child process (``_child``). ``make mindspore-tests`` runs this file in the venv that
has MindSpore (requirements/mindspore.txt)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mindspore", reason="needs mindspore: make mindspore-tests")

import tensorsight
from tensorsight.errors import UsageError
from tensorsight.mindspore import dump

ROOT = Path(__file__).resolve().parents[2]

_TRAIN = textwrap.dedent(
    """
    import sys, json
    import numpy as np
    import mindspore as ms
    from mindspore import Tensor, nn
    import tensorsight.mindspore
    from tensorsight.errors import TensorsightError

    out, eps, steps, mode = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
    ms.set_context(mode=ms.PYNATIVE_MODE if mode == "pynative" else ms.GRAPH_MODE)
    ms.set_device("CPU")

    class MLP(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Dense(4, 8)
            self.norm = nn.LayerNorm((8,), epsilon=eps)
            self.fc2 = nn.Dense(8, 3)

        def construct(self, x):
            return self.fc2(self.norm(self.fc1(x)))

    net = MLP()
    rng = np.random.RandomState(3)
    for p in net.trainable_params():
        p.set_data(Tensor(rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)))
    opt = nn.SGD(net.trainable_params(), 0.1)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    x = Tensor(rng.randn(2, 4).astype(np.float32))
    y = Tensor(rng.randn(2, 3).astype(np.float32))
    if mode == "compiled-first":
        step(x, y)
    try:
        with tensorsight.mindspore.dump(out, steps=steps, force=True):
            for _ in range(3):
                step(x, y)
    except TensorsightError as exc:
        print("ERROR", exc)
        sys.exit(3)
    print("OK")
    """
)


def _child(out: Path, eps: float = 1e-5, steps: str = "[0]", mode: str = "graph"):
    """Run ``_TRAIN`` from a file (graph mode parses ``construct``'s source) in its folder,
    where MindSpore may leave its ``rank_0/`` compile logs."""
    work = out.parent / f"{out.name}_work"
    work.mkdir(parents=True)
    script = work / "train.py"
    script.write_text(_TRAIN, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.run(
        [sys.executable, str(script), str(out), repr(eps), steps, mode],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=work,
        env=env,
    )


def test_the_chosen_steps_are_recorded_and_read_forward_backward_and_optimizer(tmp_path):
    out = tmp_path / "run.1" / "ms"  # a dot: MindSpore's Dump refuses it, so it is moved
    result = _child(out, steps="[0, 2]")
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert sorted(p.name for p in (out / "rank_0" / "Net" / "0").iterdir()) == ["0", "2"]
    assert not (out / "rank_0" / "graphs").exists()
    loaded = tensorsight.read_dump(out)
    assert loaded.steps() == [0, 2]
    ops = list(loaded.step(0).ops)
    directions = {op.direction for op in ops}
    assert directions == {"forward", "backward"}
    modules = {op.module_path for op in ops}
    assert {"MLP.fc1", "MLP.norm", "MLP.fc2"} <= modules
    assert any("SGD" in op.op for op in ops)
    for f in out.rglob("*.npy"):  # writable again: the user can delete the folder
        assert f.stat().st_mode & 0o200


def test_a_planted_layer_norm_eps_is_the_first_divergence(tmp_path):
    for name, eps in (("good", 1e-5), ("bad", 1e-1)):
        result = _child(tmp_path / name, eps=eps)
        assert result.returncode == 0, result.stderr[-2000:]
    healthy = tensorsight.compare(tmp_path / "good", tmp_path / "good")
    assert healthy.first_divergence is None
    found = tensorsight.compare(tmp_path / "good", tmp_path / "bad")
    first = found.first_divergence
    assert first is not None
    assert first.module_path == "MLP.norm"
    assert "LayerNorm" in first.op


def test_a_graph_compiled_before_the_block_is_named_as_the_cause(tmp_path):
    result = _child(tmp_path / "late", mode="compiled-first")
    assert result.returncode == 3
    assert "Enter the block before the process's first jitted step" in result.stdout
    assert not (tmp_path / "late").exists()


def test_steps_that_never_ran_write_nothing_and_say_so(tmp_path):
    result = _child(tmp_path / "none", steps="[10]")  # three steps run: 0, 1, 2
    assert result.returncode == 3
    assert "MindSpore wrote no tensors" in result.stdout
    assert "check that steps '10' ran" in result.stdout


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": [-1]}, "steps must be iterations >= 0"),
        ({"steps": []}, "steps must be iterations >= 0"),
        ({"net_name": "my.net"}, "net_name 'my.net' must be"),
    ],
)
def test_bad_options_are_named(tmp_path, kwargs, message):
    with pytest.raises(UsageError, match=message), dump(tmp_path / "x", **kwargs):
        pass


def test_a_folder_with_files_is_not_replaced_without_force(tmp_path, monkeypatch):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="already holds files"), dump(tmp_path / "x"):
        pass
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine"
    monkeypatch.setenv("MINDSPORE_DUMP_CONFIG", "/elsewhere.json")
    with (
        pytest.raises(UsageError, match="MINDSPORE_DUMP_CONFIG is already set"),
        dump(tmp_path / "y"),
    ):
        pass
