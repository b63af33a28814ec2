"""Pure encoders of each data kind (no files): exact bytes, bins, dtypes, limits."""

from __future__ import annotations

import importlib
import io
import json
import math

import numpy as np
import pytest
from PIL import Image

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds import (
    audio,
    data_graph,
    histogram,
    image,
    landscape,
    pr_curve,
    scalar,
)
from tensorsight.summary.kinds import tensor as tensor_kind

KIND_MODULES = [
    "audio",
    "custom_scalars",
    "data_graph",
    "embedding",
    "histogram",
    "hparams",
    "image",
    "landscape",
    "pr_curve",
    "scalar",
    "tensor",
    "text",
]


@pytest.mark.parametrize("name", KIND_MODULES)
def test_every_kind_declares_kind_and_schema_version(name):
    module = importlib.import_module(f"tensorsight.summary.kinds.{name}")
    assert isinstance(module.KIND, str)
    assert isinstance(module.SCHEMA_VERSION, int)


@pytest.mark.parametrize(
    ("tag", "value", "step", "wall"),
    [
        ("loss", 0.25, 0, 1.5),
        ("損失/train ✓", -1.0, 7, 1.7e9),
        ("x" * 300, math.nan, -3, 12.0),
        ("inf", math.inf, 2**40, 0.0),
        ("big", 1e39, 1, -0.0),  # beyond float32: stored as +Inf, as protobuf does
        ("neg", -1e39, 0, 3.0),
        ("", 0.0, 1, 1.0),
    ],
)
def test_fast_scalar_event_is_byte_identical_to_protobuf(tag, value, step, wall):
    expected = tb.Event(
        wall_time=wall, step=step, summary=tb.Summary(value=[scalar.encode(tag, value)])
    )
    assert scalar.encode_event(tag, value, step, wall) == expected.SerializeToString()


def test_default_bins_are_tensorflows():
    edges = histogram.default_bins()
    assert edges.size == 1549
    assert edges[774] == 0.0
    assert np.array_equal(edges[:774], -edges[775:][::-1])
    assert edges[775] == pytest.approx(1e-12)
    assert edges[-1] < 1e20 < edges[-1] * 1.1


@pytest.mark.parametrize("bins", ["tensorflow", "auto", "fd", "sturges", "doane", "sqrt", 7])
def test_histogram_counts_every_finite_value(bins):
    values = np.random.default_rng(3).normal(size=500)
    histo = histogram.encode("h", values, bins).histo
    assert sum(histo.bucket) == 500
    assert len(histo.bucket) == len(histo.bucket_limit)
    assert histo.bucket[0] == 0  # one empty bucket before the first full one
    assert list(histo.bucket_limit) == sorted(histo.bucket_limit)


def test_histogram_explicit_edges_and_max_bins():
    values = np.arange(100, dtype=np.float64)
    histo = histogram.encode("h", values, bins=np.linspace(0, 100, 101), max_bins=10).histo
    assert len(histo.bucket) <= 11
    assert sum(histo.bucket) == 100


def test_histogram_of_only_nan_keeps_statistics():
    histo = histogram.encode("h", [math.nan, math.inf]).histo
    assert histo.num == 2
    assert math.isnan(histo.min)
    assert sum(histo.bucket) == 0


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("dtype_name", "dt"),
    [
        ("bfloat16", "DT_BFLOAT16"),
        ("float16", "DT_HALF"),
        ("float32", "DT_FLOAT"),
        ("float64", "DT_DOUBLE"),
        ("int64", "DT_INT64"),
        ("uint8", "DT_UINT8"),
        ("bool", "DT_BOOL"),
        ("complex64", "DT_COMPLEX64"),
        ("float8_e4m3fn", "DT_UINT8"),
    ],
)
def test_torch_tensor_bytes_are_exact(dtype_name, dt):
    torch = _torch()
    dtype = getattr(torch, dtype_name)
    source = torch.tensor([[1.0, -2.5, 3.140625], [65504.0, 0.0, -0.0]])
    t = source.to(dtype) if dtype is not torch.complex64 else torch.complex(source, source)
    t = t.t()  # not contiguous
    value = tensor_kind.encode("t", t)
    proto = value.tensor
    assert proto.dtype == tb.DataType[dt]
    assert [d.size for d in proto.tensor_shape.dim] == [3, 2]
    width = t.element_size()
    raw = t.contiguous().view(torch.uint8).numpy().tobytes() if width else b""
    assert proto.tensor_content == raw
    assert json.loads(value.metadata.plugin_data.content) == {"version": 1, "dtype": dtype_name}
    assert value.metadata.plugin_data.plugin_name == "tensorsight.tensor"
    assert value.metadata.data_class == tb.DataClass["DATA_CLASS_TENSOR"]


def test_bf16_nan_inf_bits_survive():
    torch = _torch()
    t = torch.tensor([math.nan, math.inf, -math.inf, 1e-40], dtype=torch.bfloat16)
    raw = tensor_kind.encode("t", t).tensor.tensor_content
    assert raw == t.view(torch.int16).numpy().tobytes()


def test_numpy_tensor_big_endian_is_stored_little_endian():
    array = np.arange(4, dtype=">i4")
    raw = tensor_kind.encode("t", array).tensor.tensor_content
    assert raw == np.arange(4, dtype="<i4").tobytes()


def test_tensor_size_limit_is_a_clear_error():
    with pytest.raises(UsageError, match="exceed the limit of 64 bytes"):
        tensor_kind.encode("big", np.zeros(9), max_bytes=64)
    assert tensor_kind.MAX_TENSOR_BYTES == 512 * 1024 * 1024


def test_unsupported_dtype_is_a_clear_error():
    with pytest.raises(UsageError, match="cannot be stored"):
        tensor_kind.encode("t", np.array(["2020-01-01"], dtype="datetime64[D]"))


def test_png_encoder_round_trips_through_pillow():
    rng = np.random.default_rng(4)
    for channels in (3, 4):
        pixels = rng.integers(0, 256, size=(5, 7, channels), dtype=np.uint8)
        decoded = np.asarray(Image.open(io.BytesIO(image.encode_png(pixels))))
        assert np.array_equal(decoded, pixels)


def test_image_scaling_clipping_and_nan():
    img = np.array([[[-1.0, 0.5, 2.0, math.nan]]] * 3)  # CHW, 1 x 4
    value = image.encode("i", img)
    decoded = np.asarray(Image.open(io.BytesIO(value.image.encoded_image_string)))
    assert decoded[0, :, 0].tolist() == [0, 127, 255, 0]
    assert (value.image.height, value.image.width, value.image.colorspace) == (1, 4, 3)


def test_grid_layout_of_a_batch():
    batch = np.zeros((9, 3, 2, 2), np.uint8)
    batch[8] = 255
    hwc = image.to_hwc(batch, "NCHW", tag="b")
    assert hwc.shape == (4, 16, 3)
    assert hwc[2:, :2].min() == 255  # ninth image: second row, first column
    assert image.to_hwc(np.zeros((2, 3, 4)), "NHW", tag="g").shape == (3, 8, 3)


def test_audio_clips_and_zeroes_nan():
    value = audio.encode("a", np.array([2.0, -2.0, math.nan, 0.5]), 100)
    pcm = np.frombuffer(value.audio.encoded_audio_string[44:], "<i2")
    assert pcm.tolist() == [32767, -32767, 0, 16383]


def test_pr_curve_matches_a_direct_count():
    labels = np.array([1, 1, 0, 0, 1])
    predictions = np.array([0.9, 0.4, 0.6, 0.1, 0.95])
    value = pr_curve.encode("pr", labels, predictions, num_thresholds=3)
    data = np.array(value.tensor.float_val).reshape(6, 3)
    # thresholds 0, 0.5, 1: at 0.5 the positives predicted are 0.9, 0.6, 0.95
    assert data[:4, 1].tolist() == [2, 1, 1, 1]
    assert data[4, 1] == pytest.approx(2 / 3)
    assert data[5, 1] == pytest.approx(2 / 3)
    with pytest.raises(UsageError, match="at least 2"):
        pr_curve.encode("pr", labels, predictions, num_thresholds=1)


def test_landscape_nulls_non_finite_and_checks_metadata():
    value = landscape.encode(
        "l", [[1.0, math.nan]], [0, 1], [0], path=[(0, 0, math.inf)], metadata={"k": "v"}
    )
    payload = json.loads(value.tensor.string_val[0])
    assert payload["values"] == [[1.0, None]]
    assert payload["path"] == [[0.0, 0.0, None]]
    assert payload["metadata"] == {"k": "v"}
    assert value.tensor.dtype == tb.DataType["DT_STRING"]
    assert not value.tensor.tensor_shape.dim  # a scalar
    with pytest.raises(UsageError, match="JSON"):
        landscape.encode("l", [[1.0]], [0], [0], metadata={"f": object()})


def test_data_graph_validation():
    ok = {"nodes": [{"id": "a"}, {"id": "b", "type": "T"}], "edges": [["a", "b"]]}
    checked = data_graph.validate("g", ok)
    assert checked["nodes"][0] == {"id": "a", "type": "", "label": "a", "params": {}}
    with pytest.raises(UsageError, match="twice"):
        data_graph.validate("g", {"nodes": [{"id": "a"}, {"id": "a"}]})
    with pytest.raises(UsageError, match="JSON"):
        data_graph.validate("g", {"nodes": [{"id": "a", "params": {"x": object()}}]})


def test_projector_config_matches_protobuf_text_format():
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig

    from tensorsight.summary.kinds import embedding

    infos = [
        embedding.EmbeddingInfo("ü \"q\" 'x'\t\x01\x7f\u2028:00001", "00001/t/tensors.tsv"),
        embedding.EmbeddingInfo(
            "b:00000", "b/tensors.tsv", "b/metadata.tsv", "b/sprite.png", (5, 6)
        ),
    ]
    config = ProjectorConfig()
    for info in infos:
        entry = config.embeddings.add(tensor_name=info.tensor_name, tensor_path=info.tensor_path)
        if info.metadata_path:
            entry.metadata_path = info.metadata_path
        if info.sprite_path:
            entry.sprite.image_path = info.sprite_path
            entry.sprite.single_image_dim.extend(info.sprite_dim)
    assert embedding.config_pbtxt(infos).decode() == text_format.MessageToString(config)
    assert embedding.subdir(7, "a/b%c\\d") == "00007/a%2fb%25c%5cd"


def test_every_registered_kind_is_declared_once_by_its_module():
    from dataclasses import fields, is_dataclass

    from tensorsight.summary import records
    from tensorsight.summary.kinds import KINDS

    assert tuple(KINDS.names()) == records.KINDS
    for name in KINDS:
        spec = KINDS.get(name)
        module = importlib.import_module(spec.record.__module__)
        assert spec.name == name == module.KIND
        assert module.SPEC is spec
        assert is_dataclass(spec.record)
        assert spec.record.__dataclass_params__.frozen  # type: ignore[attr-defined]
        first = [f.name for f in fields(spec.record)][:2]
        assert first == (["steps", "wall_times"] if name == "scalars" else ["step", "wall_time"])
        # the public name in summary.records is the kind's own type, not a copy
        assert getattr(records, spec.record.__name__) is spec.record
        if spec.plugin is not None:
            assert spec.plugin == module.PLUGIN_NAME
            assert spec.decode is not None


def test_the_plugin_table_is_built_from_the_kinds():
    from tensorsight.summary._tbdecode import decoders
    from tensorsight.summary.kinds import KINDS

    table = decoders()
    assert {k: v.name for k, v in table.items()} == {
        "scalars": "scalars",
        "histograms": "histograms",
        "images": "images",
        "audio": "audio",
        "text": "text",
        "tensorsight.tensor": "tensors",
        "pr_curves": "pr_curves",
        "hparams": "hparams",
        "tensorsight.landscape": "landscapes",
        "tensorsight.data_graph": "data_graphs",
        "mesh": "mesh",
    }
    assert all(v is KINDS.get(v.name) for v in table.values())


def test_a_plugin_tensor_decodes_through_its_kind_module():
    from tensorsight.summary._tbdecode import decode_value

    value = pr_curve.encode_raw(
        "pr", [5, 3], [2, 1], [0, 1], [0, 2], [0.7, 0.75], [1.0, 0.6], num_thresholds=2
    )
    plugins: dict[str, str] = {}
    (item,) = decode_value(value, 0, 3, 1.5, plugins)
    assert (item.kind, item.tag, item.step, item.wall_time) == ("pr_curves", "pr", 3, 1.5)
    assert item.payload.true_positives.tolist() == [5.0, 3.0]
    assert item.payload.thresholds.tolist() == [0.0, 1.0]
    assert plugins == {"pr": "pr_curves"}
