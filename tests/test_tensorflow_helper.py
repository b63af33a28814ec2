"""``tensorsight.tensorflow``: importing it never imports TensorFlow; dumping needs it.

The dump itself runs where TensorFlow is installed: ``tests/dumpformat/data/
make_tensorflow_dump.py`` writes the stored fixtures through it, and
``tests/compare/test_tensorflow_cross.py`` has a live test.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tensorsight.errors import MissingDependencyError


def test_import_does_not_import_tensorflow() -> None:
    code = "import sys, tensorsight.tensorflow; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is not None, reason="has tensorflow")
def test_dump_without_tensorflow_names_the_extra(tmp_path: Path) -> None:
    import tensorsight.tensorflow

    with pytest.raises(MissingDependencyError, match=r"tensorsight\[tensorflow\]"):
        tensorsight.tensorflow.dump(lambda: None, tmp_path / "d")
    assert not (tmp_path / "d").exists()


_AFTER_DUMP = """
import sys
sys.path.insert(0, {data!r})
import keras, tensorflow as tf
import make_tensorflow_dump as m
import tensorsight.tensorflow
net, x, y = m._build("mlp")
opt = keras.optimizers.SGD(0.1)

@tf.function
def step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(net(x, training=True) - y))
    grads = tape.gradient(loss, net.trainable_variables)
    opt.apply_gradients(zip(grads, net.trainable_variables, strict=True))
    return loss

step(x, y)  # traced and run before the dump, uninstrumented
info = tensorsight.tensorflow.dump(step, {out!r}, args=(x, y))
step(x, y)  # an instrumented function called here would crash the process
print("variables", info["variables_read"])
"""


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow")
def test_the_users_function_stays_callable_after_the_dump(tmp_path: Path) -> None:
    """Calling an instrumented tf.function after disable_dump_debug_info crashes TF 2.21
    (SIGSEGV); dump() instruments a fresh function, so the user's own keeps working."""
    import os

    from tensorsight.dumpformat import read_dump

    data = str(Path(__file__).parent / "dumpformat" / "data")
    code = _AFTER_DUMP.format(data=data, out=str(tmp_path / "d"))
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "variables 7" in out.stdout  # six weights and the learning rate
    ops = read_dump(tmp_path / "d").step().ops
    assert any(op.direction == "backward" for op in ops)
    assert any(op.op == "MLP_1/fc1_1/MatMul" for op in ops)
