"""add_figure, add_video and add_mesh against torch's writer: same tags, kinds and contents."""

from __future__ import annotations

import io
import json
import math
import sys

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from PIL import Image
from tensorboard.plugins.mesh import plugin_data_pb2
from torch.utils.tensorboard import SummaryWriter as TorchWriter
from torch.utils.tensorboard._utils import _prepare_video

from tensorsight import SummaryWriter
from tensorsight.errors import MissingDependencyError, UsageError
from tensorsight.summary import read_logdir
from tensorsight.summary.kinds import mesh

VERTICES = torch.tensor([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], dtype=torch.float)
COLORS = torch.tensor([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]], dtype=torch.int)
FACES = torch.tensor([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], dtype=torch.int)
CONFIG = {"camera": {"cls": "PerspectiveCamera", "fov": 75}}


def figure(k: int):
    fig, ax = plt.subplots(figsize=(3, 2), dpi=50)
    ax.plot([0, k, 2 * k], color="C1")
    ax.set_title(f"fig {k}")
    return fig


def pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("media_logs")
    for name, writer in (("torch", TorchWriter), ("ours", SummaryWriter)):
        with writer(str(d / name)) as w:
            w.add_figure("fig/one", figure(1), 1)
            w.add_figure("fig/two", [figure(1), figure(2)], 2)
            w.add_mesh(
                "tetra", VERTICES, colors=COLORS, faces=FACES, config_dict=CONFIG, global_step=3
            )
            w.add_mesh("cloud", VERTICES * 2, global_step=4)
    return read_logdir(d)


def test_figures_are_images_with_the_same_pixels_as_torchs(logs):
    for tag, size in (("fig/one", (100, 150)), ("fig/two", (100, 300))):
        ours, theirs = logs.images("ours", tag)[0], logs.images("torch", tag)[0]
        assert (ours.height, ours.width) == (theirs.height, theirs.width) == size
        assert ours.format == "png"
        np.testing.assert_array_equal(pixels(ours.encoded), pixels(theirs.encoded))
    assert logs.images("ours", "fig/two")[0].step == 2
    assert plt.get_fignums() == []  # close=True closed every figure, as torch's does


def test_figure_close_false_keeps_it_open_and_bad_figures_fail(tmp_path):
    fig = figure(3)
    with SummaryWriter(tmp_path) as w:
        w.add_figure("kept", fig, 0, close=False)
        assert plt.fignum_exists(fig.number)
        with pytest.raises(UsageError, match="Expected a matplotlib Figure"):
            w.add_figure("bad", np.zeros((3, 4, 4)), 0)
        with pytest.raises(UsageError, match="empty list"):
            w.add_figure("none", [], 0)
        small = plt.figure(figsize=(1, 1), dpi=50)
        with pytest.raises(UsageError, match="different sizes"):
            w.add_figure("mixed", [fig, small], 0)
    plt.close("all")


def test_figure_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with SummaryWriter(tmp_path) as w, pytest.raises(MissingDependencyError) as info:
        w.add_figure("fig", object(), 0)
    assert "add_figure needs matplotlib: pip install 'tensorsight[media]'" in str(info.value)
    assert "\n" not in str(info.value)


def test_video_is_a_looping_gif_laid_out_as_torch_lays_it_out(tmp_path):
    rng = np.random.default_rng(0)
    # flat colours per clip and frame, so the GIF's palette keeps them exactly
    levels = np.array([0, 64, 128, 255], dtype=np.uint8)
    clips = levels[rng.integers(0, 4, (3, 5, 3, 1, 1))] * np.ones((1, 1, 1, 6, 4), np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_video("vid", torch.from_numpy(clips), 7, fps=5)
        grey = np.full((1, 3, 1, 4, 4), 0.5)
        grey[0, 2] = 1.0  # Pillow folds the two equal frames into one of twice the delay
        w.add_video("grey", grey, 8)
    logdir = read_logdir(tmp_path)
    (run,) = logdir.runs
    assert logdir.tags(run)["images"] == ["grey", "vid"]
    rec = logdir.images(run, "vid")[0]
    assert (rec.step, rec.format) == (7, "gif")
    # torch's own grid of the batch: 3 clips padded to 4, one row of 4
    expected = (_prepare_video(clips.astype(np.float32) / 255) * 255).round().astype(np.uint8)
    assert (rec.height, rec.width) == expected.shape[1:3] == (6, 16)
    gif = Image.open(io.BytesIO(rec.encoded))
    assert gif.n_frames == 5
    assert gif.info["loop"] == 0
    for t in range(5):
        gif.seek(t)
        assert gif.info["duration"] == 200
        np.testing.assert_array_equal(np.asarray(gif.convert("RGB")), expected[t])
    grey = Image.open(io.BytesIO(logdir.images(run, "grey")[0].encoded))
    assert grey.n_frames == 2
    assert grey.info["duration"] == 500
    assert np.asarray(grey.convert("L"))[0, 0] == 127  # 0.5 * 255 truncated, as torch does
    grey.seek(1)
    assert np.asarray(grey.convert("L"))[0, 0] == 255


@pytest.mark.parametrize(
    ("video", "fps", "match"),
    [
        (np.zeros((2, 3, 4, 4)), 4, "Expected 5 dimensions"),
        (np.zeros((1, 2, 2, 4, 4)), 4, "C = 1, 3 or 4"),
        (np.zeros((1, 0, 3, 4, 4)), 4, "no empty dimension"),
        (np.zeros((1, 2, 3, 4, 4)), 0, "fps 0 is not valid"),
    ],
)
def test_bad_videos_fail_with_one_line(tmp_path, video, fps, match):
    with SummaryWriter(tmp_path) as w, pytest.raises(UsageError, match=match):
        w.add_video("v", video, 0, fps=fps)


def test_video_without_pillow_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    with (
        SummaryWriter(tmp_path) as w,
        pytest.raises(MissingDependencyError, match=r"tensorsight\[media\]"),
    ):
        w.add_video("v", np.zeros((1, 2, 3, 4, 4)), 0)


def test_meshes_match_torchs_tensors_and_plugin_data(logs):
    assert (
        logs.tags("ours")["mesh"]
        == logs.tags("torch")["mesh"]
        == [
            "cloud_VERTEX",
            "tetra_COLOR",
            "tetra_FACE",
            "tetra_VERTEX",
        ]
    )
    assert logs.tags("ours")["tensors"] == logs.tags("torch")["tensors"] == []
    for tag in logs.tags("torch")["mesh"]:
        ours, theirs = logs.records("ours", "mesh", tag)[0], logs.records("torch", "mesh", tag)[0]
        assert ours.step == theirs.step
        assert (ours.name, ours.content_type) == (theirs.name, theirs.content_type)
        assert ours.json_config == theirs.json_config
        assert ours.data.dtype == theirs.data.dtype == np.float32
        np.testing.assert_array_equal(ours.data, theirs.data)


def test_mesh_records_carry_their_parts_and_config(logs):
    for run in ("ours", "torch"):
        vertex = logs.records(run, "mesh", "tetra_VERTEX")[0]
        assert (vertex.step, vertex.name, vertex.content_type) == (3, "tetra", "VERTEX")
        np.testing.assert_array_equal(vertex.data, VERTICES.numpy())
        assert not vertex.data.flags.writeable
        assert json.loads(vertex.json_config) == CONFIG
        everything = (1 << 1) | (1 << 2) | (1 << 3)
        assert vertex.components == everything
        faces = logs.records(run, "mesh", "tetra_FACE")[0]
        np.testing.assert_array_equal(faces.data, FACES.numpy().astype(np.float32))
        colors = logs.records(run, "mesh", "tetra_COLOR")[0]
        np.testing.assert_array_equal(colors.data, COLORS.numpy().astype(np.float32))
        cloud = logs.records(run, "mesh", "cloud_VERTEX")[0]
        assert (cloud.step, cloud.components) == (4, 1 << 1)  # vertices only
    assert mesh.mesh_name("tetra_FACE") == "tetra"
    assert mesh.mesh_name("a_b_COLOR") == "a_b"
    assert mesh.mesh_name("loss") is None
    assert mesh.part_of("x_2") == ("x", "FACE")  # tensorboardX names parts by number
    assert mesh.part_of("x_7") is None


def _mesh_contents(logdir_path):
    """(run, tag) -> plugin content of every mesh value, read with TensorBoard's loader."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    out = {}
    for path in sorted(logdir_path.rglob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for v in event.summary.value:
                if v.metadata.plugin_data.plugin_name == "mesh":
                    out[(path.parent.name, v.tag)] = v.metadata.plugin_data.content
    return out


def test_mesh_plugin_data_is_tensorboards_message(tmp_path):
    for name, writer in (("torch", TorchWriter), ("ours", SummaryWriter)):
        with writer(str(tmp_path / name)) as w:
            w.add_mesh(
                "tetra", VERTICES, colors=COLORS, faces=FACES, config_dict=CONFIG, global_step=3
            )
    contents = _mesh_contents(tmp_path)
    for part in ("VERTEX", "FACE", "COLOR"):
        ours = plugin_data_pb2.MeshPluginData.FromString(contents[("ours", f"tetra_{part}")])
        theirs = plugin_data_pb2.MeshPluginData.FromString(contents[("torch", f"tetra_{part}")])
        assert ours == theirs
        assert theirs.components == 0b1110
        # and our decoder reads torch's bytes
        meta = mesh.decode_meta(contents[("torch", f"tetra_{part}")])
        assert (meta.name, meta.content_type, meta.shape) == ("tetra", part, (1, 4, 3))
        assert meta.json_config == '{"camera": {"cls": "PerspectiveCamera", "fov": 75}}'


def test_mesh_meta_round_trip_and_bad_bytes():
    meta = mesh.MeshMeta("m", "COLOR", 10, (2, 300, 3), "{}", version=1)
    assert mesh.decode_meta(mesh.encode_meta(meta)) == meta
    # unknown fixed-width fields are skipped
    assert mesh.decode_meta(b"\x4d\0\0\0\0\x51" + bytes(8) + mesh.encode_meta(meta)) == meta
    for bad in (b"\x18", b"\x12\x05ab", b"\x1b", b"\x18\x07", b""):
        with pytest.raises(ValueError, match="MeshPluginData"):
            mesh.decode_meta(bad)


def test_bad_meshes_fail_with_one_line(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(UsageError, match=r"vertex have shape \(4, 3\)"):
            w.add_mesh("m", np.zeros((4, 3)))
        with pytest.raises(UsageError, match="not JSON-serialisable"):
            w.add_mesh("m", np.zeros((1, 4, 3)), config_dict={"x": object()})


@pytest.mark.parametrize("shape", [(1, 4, 6), (2, 3, 4), (4, 6)])
def test_a_mesh_tensor_without_three_columns_is_refused_not_reshaped(shape):
    # (1, 4, 6) was read as two batch entries of (4, 3): another mesh than the one written
    from tensorsight.summary._proto import tb
    from tensorsight.summary.kinds._kind import Raw

    values = np.arange(math.prod(shape), dtype="<f4")
    proto = tb.TensorProto(
        dtype=tb.DataType["DT_FLOAT"],
        tensor_shape=tb.TensorShapeProto(dim=[tb.TensorShapeProto.Dim(size=n) for n in shape]),
        tensor_content=values.tobytes(),
    )
    with pytest.raises(ValueError, match=r"expected \(B, N, 3\)"):
        mesh.decode(Raw(0, 0.0, "m_VERTEX", b"", proto))
