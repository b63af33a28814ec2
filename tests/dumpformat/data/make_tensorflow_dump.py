"""Write the TensorFlow debugger fixtures in ``tensorflow/``: one training step per model.

Run it with a Python that has TensorFlow (tensorflow-cpu 2.21.0 made the stored fixtures;
the tests only read them, TensorFlow is not needed for that)::

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu==2.21.0
    /tmp/tfvenv/bin/python tests/dumpformat/data/make_tensorflow_dump.py [RUN ...]

(no RUN: all of :data:`RUNS`. Each run rewrites its folder, in a fresh process.)

Three models, each with weights drawn from a fixed seed by :func:`weights` in PyTorch's
layout (the tests build the same PyTorch models from the same function), and one step
(forward, MSE loss, ``tf.GradientTape``, Keras SGD with learning rate 0.1) in a
``tf.function`` with TensorFlow's debugger on (``FULL_TENSOR``, no circular buffer):

- ``mlp``: Dense(4, 8) -> LayerNormalization(eps 1e-5) -> GELU (erf) -> Dense(8, 8);
- ``cnn``: Conv(3, 8, 3, same) -> BatchNorm -> ReLU -> pad 1 + Conv(8, 16, 3, stride 2) ->
  BatchNorm -> ReLU -> NCHW flatten -> Dense(144, 10), inputs NHWC ``[2, 6, 6, 3]``, kernels
  HWIO, convolutions without bias (a bias before BatchNorm has a zero gradient: rounding
  noise on both sides, which no budget can judge);
- ``transformer``: two pre-norm blocks (LayerNorm, 2-head attention, LayerNorm, Dense(8, 32),
  GELU, Dense(32, 8), residuals), ``[1, 4, 8]`` tokens;

and three runs of the MLP with one planted bug each: ``mlp_eps`` (LayerNorm epsilon 1e-1),
``mlp_transposed`` (fc2's kernel loaded without the transpose) and ``mlp_tanh`` (GELU's tanh
approximation). Keras kernels are ``[in, out]``: PyTorch's weight transposed; the
convolutions' ``[O, I, kh, kw]`` become ``[kh, kw, I, O]``. oneDNN is off
(``TF_ENABLE_ONEDNN_OPTS=0``) so the fixtures do not depend on the CPU's instruction set.
Kept: the ``.metadata``, ``.graphs``, ``.execution`` and ``.graph_execution_traces`` files
and ``tensorsight-tf.json``; dropped: ``.source_files`` and ``.stack_frames`` (stack traces
of this machine, not read), and the ``code_location`` of each op creation in ``.graphs``
(the file is written again by TensorFlow's ``TFRecordWriter``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "tensorflow"
RUNS = ("mlp", "mlp_eps", "mlp_transposed", "mlp_tanh", "cnn", "transformer")
KEEP = (".metadata", ".graphs", ".execution", ".graph_execution_traces")
D = 8  # the transformer's width


def _params(model: str) -> list[tuple[str, tuple[int, ...]]]:
    """PyTorch's ``named_parameters()`` of each model: names and shapes, in order."""
    if model == "mlp":
        return [("fc1.weight", (8, 4)), ("fc1.bias", (8,)), ("ln.weight", (8,)),
                ("ln.bias", (8,)), ("fc2.weight", (8, 8)), ("fc2.bias", (8,))]  # fmt: skip
    if model == "cnn":
        return [("conv1.weight", (8, 3, 3, 3)), ("bn1.weight", (8,)), ("bn1.bias", (8,)),
                ("conv2.weight", (16, 8, 3, 3)), ("bn2.weight", (16,)), ("bn2.bias", (16,)),
                ("fc.weight", (10, 144)), ("fc.bias", (10,))]  # fmt: skip
    out: list[tuple[str, tuple[int, ...]]] = []
    for b in range(2):
        p = f"blocks.{b}."
        out += [(p + "ln1.weight", (D,)), (p + "ln1.bias", (D,))]
        for n in ("q", "k", "v", "out"):
            out += [(p + f"attn.{n}.weight", (D, D)), (p + f"attn.{n}.bias", (D,))]
        out += [(p + "ln2.weight", (D,)), (p + "ln2.bias", (D,))]
        out += [(p + "fc1.weight", (4 * D, D)), (p + "fc1.bias", (4 * D,))]
        out += [(p + "fc2.weight", (D, 4 * D)), (p + "fc2.bias", (D,))]
    return out


def weights(model: str) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """``(parameters in PyTorch's layout, input, target)`` of a model (``x`` NCHW for the
    CNN), the same on every machine."""
    rng = np.random.RandomState(25)
    params: dict[str, np.ndarray] = {}
    for name, shape in _params(model):
        value = rng.uniform(-0.5, 0.5, shape).astype(np.float32)
        if name.split(".")[-2].startswith(("ln", "bn")) and name.endswith("weight"):
            value = (1.0 + 0.1 * value).astype(np.float32)
        params[name] = value
    shapes = {"mlp": ((2, 4), (2, 8)), "cnn": ((2, 3, 6, 6), (2, 10)),
              "transformer": ((1, 4, D), (1, 4, D))}  # fmt: skip
    xs, ys = shapes[model]
    return params, rng.randn(*xs).astype(np.float32), rng.randn(*ys).astype(np.float32)


def _model_of(run: str) -> str:
    return "mlp" if run.startswith("mlp") else run


def _build(run: str):  # type: ignore[no-untyped-def]  # TensorFlow objects
    import keras
    import tensorflow as tf

    model = _model_of(run)
    params, x, y = weights(model)
    approximate = run == "mlp_tanh"

    def gelu(t):  # type: ignore[no-untyped-def]
        return keras.activations.gelu(t, approximate=approximate)

    def dense(name: str, torch_name: str, transpose: bool = True):  # type: ignore[no-untyped-def]
        w = params[torch_name + ".weight"]
        layer = keras.layers.Dense(w.shape[0], name=name)
        return layer, [w.T if transpose else w, params[torch_name + ".bias"]]

    loads = []
    if model == "mlp":
        eps = 1e-1 if run == "mlp_eps" else 1e-5
        inp = keras.Input((4,), batch_size=2)
        fc1, w1 = dense("fc1", "fc1")
        ln = keras.layers.LayerNormalization(epsilon=eps, name="ln")
        act = keras.layers.Activation(gelu, name="act")
        fc2, w2 = dense("fc2", "fc2", transpose=run != "mlp_transposed")
        out = fc2(act(ln(fc1(inp))))
        loads = [(fc1, w1), (ln, [params["ln.weight"], params["ln.bias"]]), (fc2, w2)]
        net = keras.Model(inp, out, name="MLP")
    elif model == "cnn":
        inp = keras.Input((6, 6, 3), batch_size=2)
        c1 = keras.layers.Conv2D(8, 3, padding="same", use_bias=False, name="conv1")
        b1 = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5, name="bn1")
        c2 = keras.layers.Conv2D(16, 3, strides=2, use_bias=False, name="conv2")
        b2 = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5, name="bn2")
        fc, wf = dense("fc", "fc")
        h = keras.layers.ReLU(name="relu1")(b1(c1(inp)))
        h = keras.layers.ZeroPadding2D(1, name="pad2")(h)
        h = keras.layers.ReLU(name="relu2")(b2(c2(h)))
        h = keras.layers.Permute((3, 1, 2), name="nchw")(h)  # flatten as PyTorch does
        out = fc(keras.layers.Flatten(name="flatten")(h))

        def conv(name: str) -> list[np.ndarray]:
            return [params[name + ".weight"].transpose(2, 3, 1, 0)]

        def bn(name: str, n: int) -> list[np.ndarray]:
            return [params[name + ".weight"], params[name + ".bias"],
                    np.zeros(n, np.float32), np.ones(n, np.float32)]  # fmt: skip

        loads = [(c1, conv("conv1")), (b1, bn("bn1", 8)), (c2, conv("conv2")),
                 (b2, bn("bn2", 16)), (fc, wf)]  # fmt: skip
        net = keras.Model(inp, out, name="CNN")
        x = x.transpose(0, 2, 3, 1)  # NCHW -> NHWC
    else:

        class Attention(keras.layers.Layer):
            def __init__(self, prefix: str, **kw: object) -> None:
                super().__init__(**kw)
                self.parts = {}
                for n in ("q", "k", "v", "out"):
                    layer, w = dense(n, f"{prefix}attn.{n}")
                    self.parts[n] = layer
                    loads.append((layer, w))

            def call(self, t):  # type: ignore[no-untyped-def]
                b, n, d = t.shape
                h = 2

                def split(u):  # type: ignore[no-untyped-def]
                    return tf.transpose(tf.reshape(u, (b, n, h, d // h)), (0, 2, 1, 3))

                q, k, v = (split(self.parts[p](t)) for p in "qkv")
                # k transposed as its own op, as PyTorch's q @ k.transpose(-1, -2) has it
                # (matmul's transpose_b would leave no tensor of k's transpose to pair with)
                kt = tf.transpose(k, (0, 1, 3, 2))
                att = tf.nn.softmax(tf.matmul(q, kt) / float(d // h) ** 0.5, axis=-1)
                mixed = tf.reshape(tf.transpose(tf.matmul(att, v), (0, 2, 1, 3)), (b, n, d))
                return self.parts["out"](mixed)

        class Block(keras.layers.Layer):
            def __init__(self, index: int, **kw: object) -> None:
                super().__init__(**kw)
                p = f"blocks.{index}."
                self.ln1 = keras.layers.LayerNormalization(epsilon=1e-5, name="ln1")
                self.attn = Attention(p, name="attn")
                self.ln2 = keras.layers.LayerNormalization(epsilon=1e-5, name="ln2")
                self.fc1, w1 = dense("fc1", p + "fc1")
                self.act = keras.layers.Activation(gelu, name="act")
                self.fc2, w2 = dense("fc2", p + "fc2")
                loads.extend([
                    (self.ln1, [params[p + "ln1.weight"], params[p + "ln1.bias"]]),
                    (self.ln2, [params[p + "ln2.weight"], params[p + "ln2.bias"]]),
                    (self.fc1, w1), (self.fc2, w2),
                ])  # fmt: skip

            def call(self, t):  # type: ignore[no-untyped-def]
                t = t + self.attn(self.ln1(t))
                return t + self.fc2(self.act(self.fc1(self.ln2(t))))

        inp = keras.Input((4, D), batch_size=1)
        h = inp
        for i in range(2):
            h = Block(i, name=f"blocks.{i}")(h)
        net = keras.Model(inp, h, name="Transformer")
    for layer, values in loads:
        layer.set_weights(values)
    return net, tf.constant(x), tf.constant(y)


def run_one(run: str, out: Path) -> None:
    import keras
    import tensorflow as tf

    net, x, y = _build(run)
    opt = keras.optimizers.SGD(learning_rate=0.1)

    def step(x, y):  # type: ignore[no-untyped-def]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(net(x, training=True) - y))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables, strict=True))
        return loss

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))
    import tensorsight.tensorflow

    tensorsight.tensorflow.dump(step, out, args=(x, y))
    _drop_code_locations(out)


def _drop_code_locations(out: Path) -> None:
    """Clear each op creation's ``code_location`` (this machine's stack frame ids, ~90 % of
    the ``.graphs`` file, not read) and write the file again with TensorFlow's own TFRecord
    writer."""
    import tensorflow as tf
    from tensorflow.core.protobuf import debug_event_pb2

    for path in out.glob("*.graphs"):
        events = []
        for raw in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
            ev = debug_event_pb2.DebugEvent.FromString(raw)
            if ev.HasField("graph_op_creation"):
                ev.graph_op_creation.ClearField("code_location")
            events.append(ev.SerializeToString())
        with tf.io.TFRecordWriter(str(path)) as w:
            for e in events:
                w.write(e)


def main(names: list[str]) -> None:
    for name in names or list(RUNS):
        if name not in RUNS:
            raise SystemExit(f"unknown run {name!r}; expected one of {', '.join(RUNS)}")
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0", TF_CPP_MIN_LOG_LEVEL="3",
                       CUDA_VISIBLE_DEVICES="")  # fmt: skip
            code = f"import sys; sys.path.insert(0, {str(HERE.parent)!r}); " \
                   f"import make_tensorflow_dump as m; m.run_one({name!r}, " \
                   f"m.Path({tmp!r}) / 'dump')"  # fmt: skip
            subprocess.run([sys.executable, "-c", code], check=True, env=env)
            target = HERE / name
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            src = Path(tmp) / "dump"
            for f in sorted(src.iterdir()):
                if f.name.endswith(KEEP) or f.name == "tensorsight-tf.json":
                    shutil.copy2(f, target / f.name)
        print(f"{name}: {sum(f.stat().st_size for f in target.iterdir())} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
