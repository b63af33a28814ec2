"""SummaryWriter writes files TensorBoard reads: every kind, read back with EventAccumulator."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
import time
import wave

import numpy as np
import pytest
from PIL import Image
from tensorboard.plugins.hparams import plugin_data_pb2

from tensorsight import SummaryWriter
from tensorsight.errors import InputFileError, UsageError
from tensorsight.summary._proto import tb
from tests.summary._tb import event_files, load, read_records


def test_scalars_round_trip_with_nan_inf_and_unicode(tmp_path):
    values = [0.5, math.nan, math.inf, -math.inf, 1e-30, -2.0]
    with SummaryWriter(tmp_path) as writer:
        for step, value in enumerate(values):
            writer.add_scalar("损失/train ✓", value, step * 10, walltime=1000.0 + step)
        writer.add_scalar("np", np.float32(1.5), np.int64(7))
    acc = load(tmp_path)
    points = acc.Scalars("损失/train ✓")
    assert [p.step for p in points] == [0, 10, 20, 30, 40, 50]
    assert [p.wall_time for p in points] == [1000.0 + i for i in range(6)]
    got = [p.value for p in points]
    assert got[0] == 0.5
    assert math.isnan(got[1])
    assert got[2] == math.inf
    assert got[3] == -math.inf
    assert got[4] == pytest.approx(1e-30)
    assert got[5] == -2.0
    assert [(p.step, p.value) for p in acc.Scalars("np")] == [(7, 1.5)]


def test_scalar_accepts_torch_tensors_and_new_style(tmp_path):
    torch = pytest.importorskip("torch")
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("t", torch.tensor(2.5), torch.tensor(3))
        writer.add_scalar("bf16", torch.tensor([0.1], dtype=torch.bfloat16), 1)
        writer.add_scalar("new", 0.1, 1, new_style=True)
        writer.add_scalar("new64", 0.1, 1, new_style=True, double_precision=True)
    acc = load(tmp_path)
    assert [(p.step, p.value) for p in acc.Scalars("t")] == [(3, 2.5)]
    assert acc.Scalars("bf16")[0].value == pytest.approx(0.1, rel=1e-2)
    assert acc.Tensors("new")[0].tensor_proto.float_val[0] == pytest.approx(0.1)
    assert acc.Tensors("new64")[0].tensor_proto.double_val == [0.1]
    assert acc.PluginTagToContent("scalars").keys() == {"new", "new64"}


def test_add_scalars_writes_one_run_per_key(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(3):
            writer.add_scalars("loss/all", {"train": step, "val": -step}, step)
    runs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert runs == ["loss_all_train", "loss_all_val"]
    val = load(tmp_path / "loss_all_val").Scalars("loss/all")
    assert [(p.step, p.value) for p in val] == [(0, 0.0), (1, -1.0), (2, -2.0)]


def test_histograms_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    data = rng.normal(size=1000)
    data[0] = np.nan
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("w", data[1:], 1)
        writer.add_histogram("auto", data[1:], 2, bins="auto")
        writer.add_histogram("few", data[1:], 3, bins="fd", max_bins=5)
        writer.add_histogram("nan", data, 4)
        writer.add_histogram_raw("raw", 0, 3, 6, 9, 21, [1, 2, 3], [1, 2, 3], 5)
    acc = load(tmp_path)
    h = acc.Histograms("w")[0].histogram_value
    assert h.num == 999
    assert sum(h.bucket) == 999
    assert h.min == pytest.approx(data[1:].min())
    assert h.max == pytest.approx(data[1:].max())
    assert h.sum_squares == pytest.approx(float(data[1:] @ data[1:]))
    assert list(h.bucket_limit) == sorted(h.bucket_limit)
    assert len(acc.Histograms("few")[0].histogram_value.bucket) <= 7
    nan_hist = acc.Histograms("nan")[0].histogram_value
    assert nan_hist.num == 1000
    assert math.isnan(nan_hist.sum)
    assert sum(nan_hist.bucket) == 999
    raw = acc.Histograms("raw")[0].histogram_value
    assert (raw.bucket_limit, raw.bucket, raw.sum_squares) == ([1, 2, 3], [1, 2, 3], 21)


def _pixels(encoded: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(encoded)))


def test_images_round_trip(tmp_path):
    chw = np.linspace(0, 1, 3 * 4 * 5).reshape(3, 4, 5)
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("chw", chw, 0)
        writer.add_image("hwc_u8", np.full((4, 5, 3), 200, np.uint8), 0, dataformats="HWC")
        writer.add_image("hw", np.eye(4), 0, dataformats="HW")
        writer.add_image("rgba", np.ones((4, 4, 4)), 0, dataformats="HWC")
        writer.add_images("batch", np.zeros((10, 1, 2, 3)), 0)
    acc = load(tmp_path)
    img = acc.Images("chw")[0]
    assert (img.height, img.width) == (4, 5)
    expected = (chw.transpose(1, 2, 0).astype(np.float32) * 255).clip(0, 255).astype(np.uint8)
    assert np.array_equal(_pixels(img.encoded_image_string), expected)
    assert _pixels(acc.Images("hwc_u8")[0].encoded_image_string).max() == 200
    assert _pixels(acc.Images("hw")[0].encoded_image_string)[1, 1].tolist() == [255] * 3
    assert _pixels(acc.Images("rgba")[0].encoded_image_string).shape == (4, 4, 4)
    grid = acc.Images("batch")[0]
    assert (grid.height, grid.width) == (2 * 2, 3 * 8)


def test_text_audio_pr_curve_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    with SummaryWriter(tmp_path) as writer:
        writer.add_text("notes", "ü **bold** 🚀", 3)
        writer.add_audio("tone", np.sin(np.linspace(0, 20, 800)), 1, sample_rate=8000)
        writer.add_pr_curve("pr", rng.integers(0, 2, 50), rng.random(50), 2, num_thresholds=11)
    acc = load(tmp_path)
    text = acc.Tensors("notes/text_summary")[0]
    assert text.step == 3
    assert text.tensor_proto.string_val == ["ü **bold** 🚀".encode()]
    clip = acc.Audio("tone")[0]
    assert clip.sample_rate == 8000
    assert clip.length_frames == 800
    with wave.open(io.BytesIO(clip.encoded_audio_string)) as wav:
        assert (wav.getnchannels(), wav.getframerate(), wav.getnframes()) == (1, 8000, 800)
    pr = acc.Tensors("pr")[0].tensor_proto
    assert [d.size for d in pr.tensor_shape.dim] == [6, 11]
    assert set(acc.PluginTagToContent("pr_curves")) == {"pr"}


def test_hparams_go_to_a_sub_run(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_hparams(
            {"lr": 0.1, "opt": "adam", "bn": True, "skip": None},
            {"hp/acc": 0.9},
            hparam_domain_discrete={"opt": ["adam", "sgd"]},
            run_name="trial",
        )
    acc = load(tmp_path / "trial")
    content = acc.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hp = start.session_start_info.hparams
    assert (hp["lr"].number_value, hp["opt"].string_value, hp["bn"].bool_value) == (
        0.1,
        "adam",
        True,
    )
    assert "skip" not in hp
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert [m.name.tag for m in exp.metric_infos] == ["hp/acc"]
    opt = next(i for i in exp.hparam_infos if i.name == "opt")
    assert [v.string_value for v in opt.domain_discrete.values] == ["adam", "sgd"]
    assert acc.Scalars("hp/acc")[0].value == pytest.approx(0.9)


def test_tensorsight_kinds_round_trip(tmp_path):
    grid = np.array([[1.0, np.nan], [np.inf, 2.0]])
    with SummaryWriter(tmp_path) as writer:
        writer.add_tensor("t", np.arange(6, dtype=np.float16).reshape(2, 3), 4)
        writer.add_landscape("land", grid, [0, 1], [5, 6], path=[(0, 5), (1, 6)], global_step=2)
        graph = {"nodes": [{"id": "a", "type": "T", "label": "A", "params": {"k": 1}}], "edges": []}
        writer.add_data_graph("dg", graph, 1)
    acc = load(tmp_path)
    proto = acc.Tensors("t")[0].tensor_proto
    assert proto.dtype == tb.DataType["DT_HALF"]
    raw = np.frombuffer(proto.tensor_content, "<f2").reshape(2, 3)
    assert np.array_equal(raw, np.arange(6, dtype=np.float16).reshape(2, 3))
    assert json.loads(acc.PluginTagToContent("tensorsight.tensor")["t"]) == {
        "version": 1,
        "dtype": "float16",
    }
    land = json.loads(acc.Tensors("land")[0].tensor_proto.string_val[0])
    assert land["values"] == [[1.0, None], [None, 2.0]]
    assert land["path"] == [[0, 5], [1, 6]]
    assert land["x"] == [0.0, 1.0]
    assert land["y"] == [5.0, 6.0]
    assert land["version"] == 1
    dg = json.loads(acc.Tensors("dg")[0].tensor_proto.string_val[0])
    assert dg["nodes"][0]["params"] == {"k": 1}
    assert dg["version"] == 1
    assert set(acc.PluginTagToContent("tensorsight.landscape")) == {"land"}


def test_file_name_header_and_purge_step(tmp_path):
    with SummaryWriter(tmp_path, purge_step=5, filename_suffix=".v2") as writer:
        writer.add_scalar("x", 1.0, 5)
    [path] = event_files(tmp_path)
    stamp, host, pid, n_suffix = path.name.removeprefix("events.out.tfevents.").split(".", 3)
    assert len(stamp) == 10
    assert abs(int(stamp) - time.time()) < 600
    assert host
    assert int(pid) == os.getpid()
    assert n_suffix.endswith(".v2")
    records, left = read_records(path)
    events = [tb.Event.FromString(r) for r in records]
    assert left == 0
    assert events[0].file_version == "brain.Event:2"
    assert events[2].session_log.status == tb.SessionLog.SessionStatus.Value("START")
    assert events[2].step == 5


def test_custom_scalars_layout_is_read_by_tensorboard(tmp_path):
    from tensorboard.plugins.custom_scalar import layout_pb2

    with SummaryWriter(tmp_path) as writer:
        writer.add_custom_scalars_multilinechart(["loss/train", "loss/val"], "loss", "both")
    proto = load(tmp_path).Tensors("custom_scalars__config__")[0].tensor_proto
    layout = layout_pb2.Layout.FromString(proto.string_val[0])
    assert layout.category[0].title == "loss"
    assert list(layout.category[0].chart[0].multiline.tag) == ["loss/train", "loss/val"]


@pytest.mark.parametrize("name", ["with space", "ünï ✓", "a'b\"c"])
def test_log_dir_with_unusual_characters(tmp_path, name):
    with SummaryWriter(tmp_path / name / "run") as writer:
        writer.add_scalar("x", 1.0, 0)
    assert [p.value for p in load(tmp_path / name / "run").Scalars("x")] == [1.0]


def test_default_log_dir_uses_runs_and_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as writer:
        logdir = writer.get_logdir()
    assert logdir.startswith("runs" + os.sep)
    assert logdir.endswith("_lr0.1")
    assert event_files(tmp_path / logdir)


def test_flush_makes_records_visible_before_close(tmp_path):
    writer = SummaryWriter(tmp_path, max_queue=1000, flush_secs=3600)
    for step in range(20):
        writer.add_scalar("x", step, step)
    writer.flush()
    assert len(load(tmp_path).Scalars("x")) == 20
    writer.close()


def test_flush_secs_flushes_in_the_background(tmp_path):
    writer = SummaryWriter(tmp_path, max_queue=1000, flush_secs=0.05)
    writer.add_scalar("x", 1.0, 0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not load(tmp_path).Tags()["scalars"]:
        time.sleep(0.05)
    assert load(tmp_path).Tags()["scalars"] == ["x"]
    writer.close()


def test_small_queue_keeps_order_under_backpressure(tmp_path):
    with SummaryWriter(tmp_path, max_queue=1) as writer:
        for step in range(2000):
            writer.add_scalar("x", step, step)
    assert [p.step for p in load(tmp_path).Scalars("x")] == list(range(2000))


def test_writing_after_close_raises(tmp_path):
    writer = SummaryWriter(tmp_path)
    writer.close()
    writer.close()  # twice is fine
    with pytest.raises(UsageError, match="closed"):
        writer.add_scalar("x", 1.0)
    with pytest.raises(UsageError, match="closed"):
        writer.add_scalars("x", {"a": 1.0})


def test_unwritable_log_dir_names_it(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(InputFileError, match="file/sub"):
        SummaryWriter(blocker / "sub")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda w: w.add_scalar("x", [1.0, 2.0]), "one element"),
        (lambda w: w.add_scalar("x", "1.0"), "Expected a torch tensor"),
        (lambda w: w.add_scalar(3, 1.0), "Expected a str"),
        (lambda w: w.add_scalar("x", 1.0, "one"), "not an integer"),
        (lambda w: w.add_histogram("x", []), "no values"),
        (lambda w: w.add_histogram("x", [1.0], bins="nonsense"), "cannot bin"),
        (lambda w: w.add_histogram_raw("x", 0, 1, 1, 1, 1, [1, 2], [1]), "same number"),
        (lambda w: w.add_image("x", np.zeros((4, 4)), dataformats="CHW"), "Expected 3 dim"),
        (lambda w: w.add_image("x", np.zeros((2, 4, 4))), "Expected 1, 3 or 4"),
        (lambda w: w.add_image("x", np.zeros((3, 4, 4)), dataformats="CCW"), "not valid"),
        (lambda w: w.add_text("x", 5), "Expected a str"),
        (lambda w: w.add_audio("x", np.zeros((2, 10))), "one non-empty channel"),
        (lambda w: w.add_pr_curve("x", [1, 0], [0.5]), "one prediction per label"),
        (lambda w: w.add_hparams([1], {}), "two dicts"),
        (lambda w: w.add_hparams({"a": object()}, {}), "Expected bool"),
        (lambda w: w.add_hparams({"a": 1}, {}, {"a": ["x"]}), "values of one type"),
        (lambda w: w.add_tensor("x", np.array(["a"])), "cannot be stored"),
        (lambda w: w.add_landscape("x", np.zeros((2, 3)), [0, 1], [0, 1]), "Expected"),
        (lambda w: w.add_landscape("x", np.zeros((1, 1)), [0], [0], path=[1, 2]), "path"),
        (lambda w: w.add_data_graph("x", 42), "Expected a torch DataLoader"),
        (lambda w: w.add_images("x", np.zeros((0, 3, 2, 2))), "empty batch"),
        (lambda w: w.add_embedding(np.zeros(3)), "Expected \\(points, features\\)"),
        (lambda w: w.add_embedding(np.zeros((3, 2)), metadata=["a"]), "1 labels for 3 points"),
        (
            lambda w: w.add_embedding(np.zeros((3, 2)), label_img=np.zeros((2, 3, 4, 4))),
            "label_img",
        ),
        (
            lambda w: w.add_embedding(np.zeros((1, 2)), [[1, 2]], metadata_header=["a"]),
            "one value per header",
        ),
        (lambda w: w.add_scalars("m", {"../../evil": 1.0}), "leave the log dir"),
        (lambda w: w.add_hparams({"a": 1}, {}, run_name="/tmp/evil"), "leave the log dir"),
        (lambda w: w.add_hparams({"a": 1}, {}, run_name="x/../../y"), "leave the log dir"),
        (lambda w: w.add_custom_scalars({"c": {"t": ["Pie", ["a"]]}}), "unknown"),
        (lambda w: w.add_custom_scalars_marginchart(["a", "b"]), "Expected 3"),
        (lambda w: w.add_custom_scalars([1]), "dict of dicts"),
        (lambda w: w.add_data_graph("x", {"nodes": [{"id": "a"}], "edges": [["a", "b"]]}), "edge"),
    ],
)
def test_bad_input_raises_usage_error(tmp_path, call, match):
    with SummaryWriter(tmp_path) as writer, pytest.raises(UsageError, match=match):
        call(writer)


def test_writer_works_without_torch(tmp_path):
    """With torch unimportable, every kind but add_graph works; add_graph names the extra."""
    code = f"""
import sys
sys.modules["torch"] = None
import numpy as np
from tensorsight import SummaryWriter
from tensorsight.errors import MissingDependencyError
with SummaryWriter({str(tmp_path)!r}) as w:
    w.add_scalar("s", 1.0, 0)
    w.add_histogram("h", np.arange(10), 0)
    w.add_image("i", np.zeros((3, 2, 2)), 0)
    w.add_tensor("t", np.ones(3), 0)
    try:
        w.add_graph(object(), None)
    except MissingDependencyError as exc:
        print("graph:", exc)
print("torch" in sys.modules and sys.modules["torch"] is not None)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # one line: install the torch build for the device first, then the extra
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("graph:")]
    assert line.startswith("graph: SummaryWriter.add_graph needs torch: install the torch build")
    assert "then pip install 'tensorsight[torch]'" in line
    assert out.stdout.strip().endswith("False")
    assert load(tmp_path).Tags()["scalars"] == ["s"]


def test_threads_share_one_writer(tmp_path):
    import threading

    with SummaryWriter(tmp_path, max_queue=7) as writer:

        def work(k: int) -> None:
            for step in range(500):
                writer.add_scalar(f"t{k}", step, step)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    acc = load(tmp_path)
    for k in range(4):
        assert [p.step for p in acc.Scalars(f"t{k}")] == list(range(500))
