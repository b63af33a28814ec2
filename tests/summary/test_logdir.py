"""read_logdir / Logdir: runs, every kind from the real writers, restart rule, reload."""

from __future__ import annotations

import io
import json
import os
import wave

import numpy as np
import pytest
import torch
from tensorboard.plugins.histogram import summary_v2 as tb_histogram
from tensorboard.plugins.scalar import summary_v2 as tb_scalar
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboardX import SummaryWriter as TbxWriter
from torch.utils.tensorboard import SummaryWriter as TorchWriter

import tensorsight
import tensorsight.summary
from tensorsight.errors import InputFileError, UsageError
from tensorsight.summary import CorruptRecordWarning, read_logdir
from tensorsight.summary._proto import tb
from tensorsight.summary.records import KINDS
from tests.summary._events import (
    file_version_event,
    frame,
    json_event,
    scalar_event,
    write_events,
)


def _png(h: int = 4, w: int = 6) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((h, w, 3), 200, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def test_runs_are_folders_relative_to_the_logdir(tmp_path):
    write_events(tmp_path / "events.out.tfevents.1.h", [scalar_event("a", 1.0, 1)])
    write_events(tmp_path / "x" / "y" / "events.out.tfevents.1.h", [scalar_event("b", 2.0, 1)])
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not a log")
    log = tensorsight.read_logdir(tmp_path)
    assert log.runs == [".", "x/y"]
    assert log.tags(".")["scalars"] == ["a"]
    assert list(log.tags("x/y")) == list(KINDS)


@pytest.mark.filterwarnings("ignore:`torch.jit.trace:DeprecationWarning")
def test_torch_writer_every_kind(tmp_path):
    wav = io.BytesIO()
    with wave.open(wav, "wb") as f:
        f.setnchannels(1), f.setsampwidth(2), f.setframerate(8000)
        f.writeframes(b"\x00\x00" * 80)
    with TorchWriter(str(tmp_path / "torch")) as w:
        for i in range(3):
            w.add_scalar("loss", 1.0 / (i + 1), i)
            w.add_scalar("new_style", float(i), i, new_style=True)
        w.add_histogram("weights", np.array([0.0, 1.0, 1.0, 2.0, np.nan]), 1)
        w.add_image("img", np.zeros((3, 4, 6), np.uint8), 2)
        w.add_text("note", "héllo **world**", 3)
        w.add_pr_curve("pr", np.array([1, 0, 1, 1]), np.array([0.9, 0.1, 0.8, 0.3]), 4,
                       num_thresholds=7)  # fmt: skip
        w.add_audio("clip", torch.zeros(1, 800), 5, sample_rate=8000)
        w.add_graph(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU()), torch.zeros(1, 3))
        w.add_hparams({"lr": 0.1, "opt": "adam"}, {"hparam/acc": 0.9}, run_name="hp")
    log = read_logdir(tmp_path)
    assert log.runs == ["torch", "torch/hp"]
    tags = log.tags("torch")
    assert tags["scalars"] == ["loss", "new_style"]
    s = log.scalars("torch", "loss")
    assert s.steps.dtype == np.int64
    assert s.values.dtype == np.float64
    np.testing.assert_allclose(s.values, [1.0, 0.5, 1 / 3], rtol=1e-6)
    np.testing.assert_array_equal(log.scalars("torch", "new_style").values, [0.0, 1.0, 2.0])
    (h,) = log.histograms("torch", "weights")
    assert h.step == 1
    assert len(h.edges) == len(h.counts) + 1
    assert h.counts.sum() >= 4
    (im,) = log.images("torch", "img")
    assert (im.width, im.height, im.format) == (6, 4, "png")
    assert im.encoded.startswith(b"\x89PNG")
    (txt,) = log.text("torch", "note/text_summary")
    assert txt.text == "héllo **world**"
    (pr,) = log.pr_curves("torch", "pr")
    assert pr.precision.shape == (7,)
    assert pr.true_positives[0] == 3
    (au,) = log.audio("torch", "clip")
    assert au.sample_rate == 8000
    assert au.encoded.startswith(b"RIFF")
    graph = log.graph("torch")
    assert graph is not None
    assert tags["graphs"] == ["graph"]
    ops = {n.op for n in graph.nodes}
    assert "aten::linear" in ops or "aten::addmm" in ops
    linear = next(n for n in graph.nodes if n.op in ("aten::linear", "aten::addmm"))
    assert (1, 2) in linear.shapes
    assert linear.module_path
    hp_tags = log.tags("torch/hp")["hparams"]
    assert hp_tags == ["_hparams_/experiment", "_hparams_/session_end_info",
                       "_hparams_/session_start_info"]  # fmt: skip
    (start,) = log.hparams("torch/hp", "_hparams_/session_start_info")
    assert start.hparams == {"lr": 0.1, "opt": "adam"}
    (exp,) = log.hparams("torch/hp", "_hparams_/experiment")
    assert exp.metrics == ("hparam/acc",)
    assert log.scalars("torch/hp", "hparam/acc").values.tolist() == [pytest.approx(0.9)]


def test_tensorboard_tf2_tensor_summaries(tmp_path):
    writer = EventFileWriter(str(tmp_path))
    from tensorboard.compat.proto.event_pb2 import Event

    for step in range(3):
        writer.add_event(Event(step=step, wall_time=10.0 + step,
                               summary=tb_scalar.scalar_pb("acc", 0.5 * step)))  # fmt: skip
    hist = tb_histogram.histogram_pb("dist", np.array([0.0, 1.0, 2.0, 3.0]), buckets=3)
    writer.add_event(Event(step=7, wall_time=20.0, summary=hist))
    writer.close()
    # TF2 image layout: string tensor [width, height, png, png]
    png = _png()
    img = tb.Summary.Value(tag="pics", tensor=tb.TensorProto(
        dtype=7, string_val=[b"6", b"4", png, png],
        tensor_shape=tb.TensorShapeProto(dim=[tb.TensorShapeProto.Dim(size=4)])))  # fmt: skip
    img.metadata.plugin_data.plugin_name = "images"
    write_events(tmp_path / "events.out.tfevents.9.h",
                 [tb.Event(step=3, wall_time=30.0, summary=tb.Summary(value=[img]))])  # fmt: skip
    log = read_logdir(tmp_path)
    s = log.scalars(".", "acc")
    assert s.steps.tolist() == [0, 1, 2]
    assert s.values.tolist() == [0.0, 0.5, 1.0]
    (h,) = log.histograms(".", "dist")
    assert len(h.edges) == 4
    assert h.counts.sum() == 4
    assert h.edges[0] == 0.0
    pics = log.images(".", "pics")
    assert [(p.index, p.width, p.height, p.format) for p in pics] == [
        (0, 6, 4, "png"), (1, 6, 4, "png")
    ]  # fmt: skip


def test_tensorsight_kinds_tensors_graphs_landscapes_data_graphs(tmp_path):
    bf16 = torch.tensor([[1.0, -2.5], [float("inf"), 3.140625]], dtype=torch.bfloat16)
    raw = bf16.view(torch.int16).numpy().view(np.uint16)
    tv = tb.Summary.Value(tag="act/bf16", tensor=tb.TensorProto(
        dtype=14, tensor_content=raw.astype("<u2").tobytes(),
        tensor_shape=tb.TensorShapeProto(dim=[tb.TensorShapeProto.Dim(size=2)] * 2)))  # fmt: skip
    tv.metadata.plugin_data.plugin_name = "tensorsight.tensor"
    tv.metadata.plugin_data.content = json.dumps({"version": 1, "dtype": "bfloat16"}).encode()
    landscape = {"version": 1, "x": [0, 1], "y": [0, 1, 2], "values": [[1, 2], [3, None], [5, 6]],
                 "path": [[0, 0, 1.0], [1, 1, 0.5]], "metadata": {"method": "pca"}}  # fmt: skip
    data_graph = {"version": 1, "edges": [["src", "map"]], "nodes": [
        {"id": "src", "type": "source", "label": "ImageFolder", "params": {"n": 10}},
        {"id": "map", "type": "map", "label": "Resize", "params": {}}]}  # fmt: skip
    node = tb.NodeDef(name="fc/addmm", op="aten::addmm", input=["x", "fc.weight"])
    node.attr["_output_shapes"].list.shape.add().dim.add(size=4)
    node.attr["tensorsight.output_dtypes"].list.s.append(b"bfloat16")
    node.attr["tensorsight.module_path"].s = b"model.fc"
    node.attr["tensorsight.attr.alpha"].f = 1.0
    graph = tb.GraphDef(node=[node])
    events = [
        file_version_event(),
        tb.Event(step=5, wall_time=1.0, summary=tb.Summary(value=[tv])),
        json_event("loss_surface", "tensorsight.landscape", landscape, 6),
        json_event("pipeline", "tensorsight.data_graph", data_graph, 0),
        tb.Event(step=0, wall_time=1.0, graph_def=graph.SerializeToString()),
    ]
    write_events(tmp_path / "events.out.tfevents.1.h", events)
    log = read_logdir(tmp_path)
    (t,) = log.tensors(".", "act/bf16")
    assert (t.dtype, t.shape, t.data.dtype) == ("bfloat16", (2, 2), np.uint16)
    np.testing.assert_array_equal(t.data, raw)
    np.testing.assert_array_equal(t.to_float32(), bf16.float().numpy())
    (ls,) = log.landscapes(".", "loss_surface")
    assert ls.values.shape == (3, 2)
    assert np.isnan(ls.values[1, 1])
    assert ls.values[2, 0] == 5
    assert ls.path is not None
    assert ls.path.shape == (2, 3)
    assert ls.metadata == {"method": "pca"}
    (dg,) = log.data_graphs(".", "pipeline")
    assert dg.edges == (("src", "map"),)
    assert dg.nodes[0]["label"] == "ImageFolder"
    g = log.graph(".")
    assert g is not None
    (n,) = g.nodes
    assert (n.op, n.inputs, n.shapes, n.dtypes, n.module_path) == (
        "aten::addmm",
        ("x", "fc.weight"),
        ((4,),),
        ("bfloat16",),
        "model.fc",
    )
    assert n.attrs == {"alpha": 1.0}


def test_restart_from_checkpoint_drops_overwritten_steps(tmp_path):
    first = [scalar_event("loss", float(i), i) for i in range(10)]
    second = [scalar_event("loss", 100.0 + i, i) for i in range(6, 12)]
    write_events(tmp_path / "events.out.tfevents.100.h", first)
    write_events(tmp_path / "events.out.tfevents.200.h", second)
    s = read_logdir(tmp_path).scalars(".", "loss")
    assert s.steps.tolist() == list(range(12))
    assert s.values.tolist() == [0, 1, 2, 3, 4, 5, 106, 107, 108, 109, 110, 111]


def test_steps_going_back_inside_one_file_are_kept(tmp_path):
    events = [scalar_event("loss", float(i), s) for i, s in enumerate([1, 2, 3, 2, 3])]
    write_events(tmp_path / "events.out.tfevents.1.h", events)
    assert read_logdir(tmp_path).scalars(".", "loss").steps.tolist() == [1, 2, 3, 2, 3]


def test_session_log_start_purges_later_steps(tmp_path):
    start = tb.Event(step=3, wall_time=5.0, session_log=tb.SessionLog(status=1))
    events = [*(scalar_event("a", float(i), i) for i in range(6)), start,
              scalar_event("a", 30.0, 3), scalar_event("a", 40.0, 4)]  # fmt: skip
    write_events(tmp_path / "events.out.tfevents.1.h", events)
    for use_c in (None, False):
        s = read_logdir(tmp_path, use_c=use_c).scalars(".", "a")
        assert s.steps.tolist() == [0, 1, 2, 3, 4]
        assert s.values.tolist() == [0.0, 1.0, 2.0, 30.0, 40.0]


def test_reload_picks_up_new_runs_files_and_records(tmp_path):
    path = tmp_path / "a" / "events.out.tfevents.1.h"
    write_events(path, [scalar_event("x", 1.0, 1)])
    log = read_logdir(tmp_path)
    assert log.reload().has_changes is False
    with open(path, "ab") as f:
        f.write(frame([scalar_event("x", 2.0, 2)]))
    write_events(tmp_path / "b" / "events.out.tfevents.1.h", [scalar_event("y", 3.0, 1)])
    result = log.reload()
    assert result.new_runs == ("b",)
    assert result.changed == {"a": {"scalars": ("x",)}, "b": {"scalars": ("y",)}}
    assert result.records == 2
    assert log.scalars("a", "x").values.tolist() == [1.0, 2.0]
    info = log.run_info("a")
    assert info.first_wall_time == 1001.0
    assert info.last_wall_time == 1002.0
    assert info.is_active
    assert info.files == (str(path),)


def test_run_info_reports_finished_runs(tmp_path):
    path = write_events(tmp_path / "events.out.tfevents.1.h", [scalar_event("x", 1.0, 1)])
    os.utime(path, (1000.0, 1000.0))
    log = read_logdir(tmp_path, active_secs=60)
    log.reload()  # nothing new: not growing
    assert log.run_info(".").is_active is False


def test_corrupt_files_warn_and_the_rest_is_read(tmp_path):
    (tmp_path / "events.out.tfevents.1.h").write_bytes(b"garbage" * 10)
    (tmp_path / "events.out.tfevents.2.h").write_bytes(b"")
    write_events(tmp_path / "events.out.tfevents.3.h", [scalar_event("x", 1.0, 1)])
    with pytest.warns(CorruptRecordWarning, match="events.out.tfevents.1.h"):
        log = read_logdir(tmp_path)
    assert log.scalars(".", "x").values.tolist() == [1.0]
    assert len(log.problems) == 1


def test_symlink_loop_is_walked_once(tmp_path):
    write_events(tmp_path / "run" / "events.out.tfevents.1.h", [scalar_event("x", 1.0, 1)])
    os.symlink(tmp_path, tmp_path / "run" / "loop")
    assert read_logdir(tmp_path).runs == ["run"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_a_problem_naming_it(tmp_path):
    path = write_events(tmp_path / "events.out.tfevents.1.h", [scalar_event("x", 1.0, 1)])
    path.chmod(0)
    with pytest.warns(CorruptRecordWarning, match="permission"):
        read_logdir(tmp_path)


def test_a_folder_that_cannot_be_listed_is_a_problem_naming_it(tmp_path, monkeypatch):
    """Skipped with its reason (root lists every folder, so the refusal is planted), once
    per reload until it can be listed again; the rest of the logdir is read."""
    write_events(tmp_path / "ok" / "events.out.tfevents.1.h", [scalar_event("x", 1.0, 1)])
    write_events(tmp_path / "locked" / "events.out.tfevents.1.h", [scalar_event("x", 2.0, 1)])
    scandir = os.scandir
    locked = {str(tmp_path / "locked")}

    def refusing(path):
        if os.fspath(path) in locked:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    with pytest.warns(
        CorruptRecordWarning, match=r"Folder '.*locked': cannot list it \(Permission"
    ):
        log = read_logdir(tmp_path)
    assert log.runs == ["ok"]
    assert len(log.problems) == 1
    assert "skipped, the rest of the logdir was read" in log.problems[0]
    assert log.reload().problems == ()  # still locked: not repeated on every poll
    locked.clear()
    result = log.reload()
    assert result.new_runs == ("locked",)
    assert result.problems == ()


def test_unreadable_path_errors_name_the_file(tmp_path):
    from tensorsight.summary import _fs

    with pytest.raises(InputFileError, match="Is a directory"):
        _fs.read_range(str(tmp_path), 0, 10)
    with pytest.raises(InputFileError, match="not found"):
        read_logdir(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputFileError, match="not a folder"):
        read_logdir(tmp_path / "file")


def test_unknown_run_and_tag_name_the_choices(tmp_path):
    write_events(tmp_path / "r" / "events.out.tfevents.1.h", [scalar_event("x", 1.0, 1)])
    log = read_logdir(tmp_path)
    with pytest.raises(UsageError, match=r"Run 'nope'.*'r'"):
        log.tags("nope")
    with pytest.raises(UsageError, match=r"Tag 'y'.*x"):
        log.scalars("r", "y")
    with pytest.raises(UsageError, match="Tag 'x'"):
        log.images("r", "x")
    assert log.graph("r") is None


def test_max_points_keeps_the_newest(tmp_path):
    write_events(tmp_path / "events.out.tfevents.1.h", [scalar_event("x", float(i), i)
                                                        for i in range(10)])  # fmt: skip
    log = read_logdir(tmp_path, max_points={"scalars": 3})
    assert log.scalars(".", "x").steps.tolist() == [7, 8, 9]
    with pytest.raises(UsageError, match="max_points kind 'scalar'"):
        read_logdir(tmp_path, max_points={"scalar": 3})


def test_tensorboardx_and_python_fallback_agree(tmp_path):
    with TbxWriter(str(tmp_path / "tbx")) as w:
        for i in range(50):
            w.add_scalar("a", i * 0.1, i)
            w.add_scalars("group", {"p": float(i), "q": -float(i)}, i)
        w.add_histogram("h", np.arange(20.0), 3)
    c = read_logdir(tmp_path)
    py = read_logdir(tmp_path, use_c=False)
    assert c.runs == py.runs
    for run in c.runs:
        assert c.tags(run) == py.tags(run)
        for tag in c.tags(run)["scalars"]:
            a, b = c.scalars(run, tag), py.scalars(run, tag)
            np.testing.assert_array_equal(a.steps, b.steps)
            np.testing.assert_array_equal(a.values, b.values)
            np.testing.assert_array_equal(a.wall_times, b.wall_times)


def test_non_ascii_and_odd_run_folder_names(tmp_path):
    for name in ("运行 1", "a b/c'd", "-dash"):
        write_events(tmp_path / name / "events.out.tfevents.1.h", [scalar_event("x", 1.0, 1)])
    assert read_logdir(tmp_path).runs == ["-dash", "a b/c'd", "运行 1"]


def test_views_returned_earlier_do_not_change_on_reload(tmp_path):
    path = write_events(tmp_path / "events.out.tfevents.1.h", [scalar_event("x", 1.0, 1)])
    log = read_logdir(tmp_path)
    before = log.scalars(".", "x")
    with open(path, "ab") as f:
        f.write(frame([scalar_event("x", float(i), i) for i in range(2, 3000)]))
    log.reload()
    assert before.steps.tolist() == [1]
    assert before.values.tolist() == [1.0]
    after = log.scalars(".", "x")
    assert len(after) == 2999
    assert after.steps[-1] == 2999
    with pytest.raises(ValueError, match="read-only"):
        after.values[0] = 5.0


def test_restart_rule_also_applies_to_a_file_that_appears_on_reload(tmp_path):
    write_events(tmp_path / "events.out.tfevents.100.h", [scalar_event("x", 1.0, i)
                                                          for i in range(10)])  # fmt: skip
    log = read_logdir(tmp_path)
    write_events(tmp_path / "events.out.tfevents.200.h", [scalar_event("x", 2.0, i)
                                                          for i in range(5, 7)])  # fmt: skip
    result = log.reload()
    assert result.changed == {".": {"scalars": ("x",)}}
    assert log.scalars(".", "x").steps.tolist() == [0, 1, 2, 3, 4, 5, 6]


def test_parallel_and_serial_reading_agree_and_report_progress(tmp_path):
    for r in range(5):
        write_events(tmp_path / f"r{r}" / "events.out.tfevents.1.h",
                     [scalar_event("x", float(i * r), i) for i in range(500)])  # fmt: skip
    serial = tensorsight.summary.Logdir(tmp_path, workers=1)
    calls: list[int] = []
    serial.reload(progress=calls.append)
    parallel = read_logdir(tmp_path, workers=4)
    assert calls == [1, 2, 3, 4, 5]
    for run in serial.runs:
        np.testing.assert_array_equal(serial.scalars(run, "x").values,
                                      parallel.scalars(run, "x").values)  # fmt: skip


def test_torch_writer_resumed_with_purge_step(tmp_path):
    with TorchWriter(str(tmp_path)) as w:
        for i in range(10):
            w.add_scalar("loss", float(i), i)
    with TorchWriter(str(tmp_path), purge_step=6) as w:  # resumed from the step-6 checkpoint
        for i in range(6, 8):
            w.add_scalar("loss", 100.0 + i, i)
    s = read_logdir(tmp_path).scalars(".", "loss")
    assert s.steps.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]
    assert s.values.tolist() == [0, 1, 2, 3, 4, 5, 106, 107]


@pytest.mark.parametrize(
    ("path", "start", "want"),
    [
        ("/logs", "/logs", "."),
        ("/logs/a/b", "/logs", "a/b"),
        ("/logs/a", "/logs/", "a"),
        ("logs/run.1", "logs", "run.1"),
        ("./logs/x", "./logs", "x"),
        ("/logs/a/../b", "/logs", "b"),  # not a plain prefix: os.path.relpath's answer
        ("/other/a", "/logs", "../other/a"),
        ("/logs2/a", "/logs", "../logs2/a"),  # a shared text prefix is not a parent folder
        ("s3://b/logs/r", "s3://b/logs", "r"),
    ],
)
def test_relpath_strips_the_start_or_falls_back_to_os_relpath(path, start, want):
    from tensorsight.summary import _fs

    assert _fs.relpath(path, start) == want
    if "://" not in start:
        assert want == os.path.relpath(path, start).replace(os.sep, "/")
