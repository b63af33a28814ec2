"""TensorFlow rules of target ``accelerator`` (``rules/accelerator/tf_*.py``).

Each migrated script must compile and pass the self-check; where a Python with TensorFlow
is at hand (this one, or ``TENSORSIGHT_TF_PYTHON``), the originals that need a GPU fail
on the CPU and the migrated ones run there.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tensorsight.migrate import migrate
from tensorsight.migrate.model import Changed, MigrationReport

TF2 = """\
import os

import tensorflow as tf

os.environ["TF_CUDNN_DETERMINISTIC"] = "1"
gpus = tf.config.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
tf.config.set_visible_devices(gpus[0], "GPU")
tf.keras.mixed_precision.set_global_policy("mixed_float16")
tf.config.optimizer.set_jit(True)
tf.config.set_soft_device_placement(False)
accelerator = tf.test.is_gpu_available()
print("accelerator:", accelerator)
print("cuda build:", tf.test.is_built_with_cuda())
model = tf.keras.Sequential(
    [tf.keras.Input((4,)), tf.keras.layers.Dense(8), tf.keras.layers.Dense(1, dtype="float32")]
)
model.compile(optimizer="sgd", loss="mse")
with tf.device("/GPU:0"):
    history = model.fit(tf.ones((8, 4)), tf.zeros((8, 1)), epochs=1, verbose=0)
print("policy", tf.keras.mixed_precision.global_policy().name)
print("loss", history.history["loss"][0])
"""

V1 = """\
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()
config = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))
config.gpu_options.allow_growth = True
with tf.device("/device:GPU:0"):
    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable(tf.ones([2, 1]))
    y = tf.reduce_sum(tf.matmul(x, w))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(y)
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(step, {x: [[1.0, 2.0]]})
    print("y", sess.run(y, {x: [[1.0, 2.0]]}))
"""

HVD = """\
import horovod.tensorflow.keras as hvd
import tensorflow as tf

hvd.init()
gpus = tf.config.experimental.list_physical_devices("GPU")
tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")
with tf.device(f"/GPU:{hvd.local_rank()}"):
    pass
with tf.device("/GPU:1"), tf.device("/cpu:0"):
    pass
tf.keras.mixed_precision.set_global_policy(policy)
if gpus:
    tf.config.experimental.set_memory_growth(gpus[0], True)
else:
    tf.config.experimental.set_memory_growth(gpus[0], True)
"""


def _run(tmp_path: Path, name: str, code: str) -> tuple[MigrationReport, Changed]:
    root = tmp_path / "in"
    root.mkdir()
    (root / name).write_text(code)
    report = migrate(root, output=tmp_path / "out")
    (changed,) = report.changed
    assert changed.check_problems == ()
    compile(changed.new_code, name, "exec")
    return report, changed


def _rows(report: MigrationReport) -> list[tuple[int, str, str, str]]:
    return sorted((s.line, s.rule_id, s.status, s.api) for s in report.sites)


def test_tf2_script_becomes_device_neutral(tmp_path: Path) -> None:
    report, changed = _run(tmp_path, "train.py", TF2)
    new = changed.new_code
    assert 'if gpus:\n    tf.config.set_visible_devices(gpus[0], "GPU")\n' in new
    assert (
        'set_global_policy("mixed_float16" if tf.config.list_physical_devices("GPU") '
        'else "mixed_bfloat16")' in new
    )
    assert (
        "accelerator = len(tf.config.list_physical_devices()) > "
        'len(tf.config.list_physical_devices("CPU"))\n' in new
    )
    assert "with tf.device(None):\n" in new
    # kept: the loop, the cuDNN flag, XLA, the CUDA-build query
    assert "    tf.config.experimental.set_memory_growth(gpu, True)\n" in new
    assert 'os.environ["TF_CUDNN_DETERMINISTIC"] = "1"' in new
    rows = _rows(report)
    assert (5, "accelerator/tf-xla-cudnn", "kept", "os.environ['TF_CUDNN_DETERMINISTIC']") in rows
    growth = "tf.config.experimental.set_memory_growth"
    assert (8, "accelerator/tf-gpu-config", "kept", growth) in rows
    assert (9, "accelerator/tf-gpu-config", "rewritten", "tf.config.set_visible_devices") in rows
    assert (11, "accelerator/tf-xla-cudnn", "kept", "tf.config.optimizer.set_jit") in rows
    assert (15, "accelerator/tf-availability", "kept", "tf.test.is_built_with_cuda") in rows
    drifts = {s.line: s.message for s in report.sites if s.message.startswith("Drift:")}
    assert sorted(drifts) == [10, 13, 20]  # bfloat16, any accelerator, no pin
    assert "mixed_bfloat16" in drifts[10]
    assert all(s.safety == "safe" for s in report.sites if s.status == "rewritten")
    # the regex report keeps only what no rule handled: the GPU listing
    assert [(s.line, s.api) for s in report.extra_sites] == [
        (6, "tf.config.list_physical_devices('GPU')")
    ]


def test_compat_v1_session_script(tmp_path: Path) -> None:
    report, changed = _run(tmp_path, "v1.py", V1)
    assert "with tf.device(None):\n    x = tf.placeholder" in changed.new_code
    assert changed.new_code.count("allow_growth=True") == 1  # kept, as on a GPU
    rows = _rows(report)
    assert (4, "accelerator/tf-gpu-config", "kept", "tf.ConfigProto") in rows
    assert (4, "accelerator/tf-gpu-config", "kept", "tf.GPUOptions") in rows
    assert (5, "accelerator/tf-gpu-config", "kept", "ConfigProto.gpu_options.allow_growth") in rows
    assert (6, "accelerator/tf-device", "rewritten", "tf.device('/device:GPU:0')") in rows


def test_horovod_and_other_pins_are_reported(tmp_path: Path) -> None:
    report, changed = _run(tmp_path, "hvd.py", HVD)
    assert "if gpus:\n    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()]" in (
        changed.new_code
    )
    assert 'tf.device(f"/GPU:{hvd.local_rank()}")' in changed.new_code
    assert 'tf.device("/GPU:1"), tf.device("/cpu:0")' in changed.new_code
    rows = [(line, rule, status) for line, rule, status, _ in _rows(report)]
    assert rows.count((6, "accelerator/tf-horovod", "manual")) == 1
    assert (7, "accelerator/tf-device", "manual") in rows
    assert (9, "accelerator/tf-device", "manual") in rows
    assert (7, "accelerator/tf-horovod", "manual") in rows
    assert not any(line == 11 for line, *_ in rows)  # a policy held in a variable
    # already guarded: kept; in the else branch: guarded
    assert (13, "accelerator/tf-gpu-config", "kept") in rows
    assert "else:\n    if gpus:\n        tf.config.experimental.set_memory_growth" in (
        changed.new_code
    )
    assert changed.new_code.count("if gpus:") == 3
    hvd_rows = [s for s in report.sites if s.rule_id == "accelerator/tf-horovod"]
    assert all("gloo" in s.message.lower() for s in hvd_rows)


def test_non_tensorflow_code_is_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "in"
    root.mkdir()
    # a `device` and a `set_global_policy` that are not TensorFlow's
    (root / "other.py").write_text(
        "from mylib import device, set_global_policy\n"
        'with device("/GPU:0"):\n    set_global_policy("mixed_float16")\n'
    )
    (root / "cpu.py").write_text('import tensorflow as tf\nwith tf.device("/CPU:0"):\n    pass\n')
    report = migrate(root)
    assert report.changed == ()
    assert [s for s in report.sites if s.rule_id.startswith("accelerator/tf-")] == []


def _tf_python() -> str | None:
    if importlib.util.find_spec("tensorflow") is not None:
        return sys.executable
    return os.environ.get("TENSORSIGHT_TF_PYTHON") or None


@pytest.mark.slow
@pytest.mark.skipif(_tf_python() is None, reason="needs TensorFlow (or TENSORSIGHT_TF_PYTHON)")
def test_migrated_scripts_run_on_the_cpu_where_the_originals_fail(tmp_path: Path) -> None:
    python = _tf_python()
    assert python is not None
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    for name, code, failure in (
        ("train.py", TF2, "IndexError: list index out of range"),
        ("v1.py", V1, "Cannot assign a device"),
    ):
        case = tmp_path / name.removesuffix(".py")
        case.mkdir()
        _run(case, name, code)
        before = subprocess.run(
            [python, str(case / "in" / name)], capture_output=True, text=True, env=env, timeout=300
        )
        assert before.returncode != 0
        assert failure in before.stderr, before.stderr[-2000:]
        after = subprocess.run(
            [python, str(case / "out" / name)], capture_output=True, text=True, env=env, timeout=300
        )
        assert after.returncode == 0, after.stderr[-2000:]
        if name == "train.py":
            assert "accelerator: False" in after.stdout
            assert "policy mixed_bfloat16" in after.stdout
            assert "cuda build: False" in after.stdout
            assert "loss" in after.stdout
        else:
            assert after.stdout.strip() == "y 2.5"  # w = 1 - 0.1 * x = [0.9, 0.8]
