"""Self-check of migrated code and the TensorFlow report."""

from pathlib import Path

from tensorsight.migrate import migrate
from tensorsight.migrate.selfcheck import check_introduced


def test_self_check_reports_only_new_problems():
    assert check_introduced("import os\nx = y\n", "import os\nx = y\n") == ()
    assert check_introduced("x = 1\n", "import torch\nx = _device\n") == (
        "introduces undefined name '_device'",
        "introduces unused import 'torch'",
    )
    assert (
        check_introduced("x = 1\n", "import torch_npu\nx = 1\n", allowed_imports=("torch_npu",))
        == ()
    )
    assert check_introduced("x = 1\n", "x = (\n")[0].startswith("migrated code does not compile")
    # ast.parse accepts a repeated keyword; compile() rejects it, and so does the check
    assert check_introduced("f(a=1)\n", "f(a=1, a=2)\n") == (
        "migrated code does not compile: keyword argument repeated: a (line 1)",
    )


TF = """\
import tensorflow as tf
import horovod.tensorflow as hvd

hvd.init()
gpus = tf.config.list_physical_devices("GPU")
tf.config.experimental.set_memory_growth(gpus[0], True)
strategy = tf.distribute.MirroredStrategy(cross_device_ops=tf.distribute.NcclAllReduce())
with tf.device("/GPU:0"):
    pass
"""


def test_tensorflow_script_is_reported_for_a_vendor_target(tmp_path: Path):
    (tmp_path / "tf_train.py").write_text(TF)
    report = migrate(tmp_path, target="npu")
    assert report.changed == ()
    apis = [(s.line, s.api, s.status) for s in report.sites]
    assert apis == [
        (2, "horovod", "manual"),
        (4, "horovod", "manual"),
        (5, "tf.config.list_physical_devices('GPU')", "manual"),
        (6, "tf.config.experimental.set_memory_growth", "manual"),
        (7, "tf.distribute.MirroredStrategy", "manual"),
        (7, "tf.distribute.NcclAllReduce", "unsupported"),
        (8, "tf.device('/GPU:N')", "manual"),
    ]
    assert all(s.rule_id == "tensorflow/gpu-api" and s.message for s in report.sites)


def test_tensorflow_script_is_rewritten_for_accelerator_and_the_rest_reported(tmp_path: Path):
    (tmp_path / "tf_train.py").write_text(TF)
    report = migrate(tmp_path)
    (changed,) = report.changed
    assert changed.check_problems == ()
    rows = sorted((s.line, s.rule_id, s.status) for s in report.sites)
    assert rows == [
        (2, "tensorflow/gpu-api", "manual"),
        (4, "tensorflow/gpu-api", "manual"),
        (5, "tensorflow/gpu-api", "manual"),
        (6, "accelerator/tf-gpu-config", "rewritten"),  # one row per line: no regex row
        (7, "tensorflow/gpu-api", "manual"),
        (7, "tensorflow/gpu-api", "unsupported"),
        (8, "accelerator/tf-device", "kept"),
        (8, "accelerator/tf-device", "rewritten"),
    ]
