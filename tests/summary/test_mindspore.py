"""MindSpore summaries: the real files in ../shared/data, and small files built from our .proto.

How the generated files map to what MindSpore writes: MindSpore's SummaryRecord frames each
``mindspore.irpb.Event`` as a TFRecord (same CRCs as TensorBoard) in
``events.out.events.summary.<time>.<pid><host>_MS``; the first record carries
``version = "MindSpore.Event:1"``, later ones a ``Summary`` whose values are
``scalar_value``/``image``/``histogram``/``tensor``/``loss_landscape``, or the network's
``graph_def``. Lineage goes to ``..._lineage`` files as ``LineageEvent`` records. We build the
same messages from ``_proto/mindspore.proto`` (MindSpore's field numbers) below.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tensorsight.summary import read_logdir
from tensorsight.summary._record import encode_record
from tensorsight.summary.mindspore import ms
from tests.summary._events import scalar_event, write_events

MS_DIR = "mindspore"


def _write(path: Path, events: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_record(e.SerializeToString()) for e in events))
    return path


def _version() -> object:
    return ms.Event(wall_time=1.0, version="MindSpore.Event:1")


def _summary(step: int, *values: object) -> object:
    return ms.Event(wall_time=100.0 + step, step=step, summary=ms.Summary(value=list(values)))


def test_real_summary_file_every_kind(shared_data):
    log = read_logdir(shared_data / MS_DIR)
    assert log.runs == ["."]
    tags = log.tags(".")
    assert tags["landscapes"] == ["landscape_[1, 5]", "landscape_[296, 300]", "landscape_[300]"]
    assert tags["scalars"] == ["mean_logit"]
    assert tags["images"] == ["input_image"]
    land = log.landscapes(".", "landscape_[1, 5]")[0]
    assert land.values.shape == (8, 8)
    assert land.x.shape == (8,)
    assert land.y.shape == (8,)
    assert np.isfinite(land.values).all()
    assert 2.0 < land.values.mean() < 2.5
    assert land.path is not None
    assert land.path.shape == (5, 3)
    assert land.metadata["decomposition"] == "PCA"
    assert land.metadata["intervals"] == [1, 2, 3, 4, 5]
    assert log.landscapes(".", "landscape_[300]")[0].metadata["decomposition"] == "Random"
    (h, _, _) = log.histograms(".", "conv1_activation")
    assert h.nan_count == 0
    assert h.pos_inf_count == 0
    assert len(h.edges) == len(h.counts) + 1
    assert h.counts.sum() == h.num
    img = log.images(".", "input_image")[0]
    assert (img.format, img.width, img.height) == ("png", 256, 128)
    t = log.tensors(".", "logits_first_row")[0]
    assert (t.dtype, t.shape) == ("float32", (1, 10))
    # the step-0 values re-emitted for each landscape are all kept, in file order
    s = log.scalars(".", "mean_logit")
    assert s.steps.tolist() == [0, 0, 0]
    assert np.all(np.diff(s.wall_times) > 0)


def test_real_graph_files(shared_data):
    log = read_logdir(shared_data / MS_DIR)
    assert log.tags(".")["graphs"] == [
        "ms_output_after_opt_0", "ms_output_before_opt_0", "ms_output_optimize",
        "ms_output_vm_build_0",
    ]  # fmt: skip
    g = log.graph(".", "ms_output_optimize")
    assert g is not None
    assert g.source == "mindspore"
    params = [n for n in g.nodes if n.op == "Parameter"]
    assert len(params) == 21
    assert len([n for n in g.nodes if n.op not in ("Parameter", "Const")]) == 76
    conv = next(n for n in g.nodes if n.op == "Conv2D")
    assert conv.module_path.startswith("Default/network-WithLossCell/_backbone-LeNet5/conv")
    assert conv.dtypes == ("float32",)
    assert len(conv.shapes[0]) == 4
    assert conv.attrs["kernel_size"] == [5, 5]
    assert conv.attrs["format"] == "NCHW"
    assert conv.inputs == ("inputs0", "1")


def test_training_history_survives_landscape_step_zero_values(shared_data, tmp_path):
    run = tmp_path / "run"
    train = [
        _version(),
        *(_summary(s, ms.Summary.Value(tag="mean_logit", scalar_value=s / 10)) for s in range(5)),
    ]
    _write(run / "events.out.events.summary.1000.1host_MS", train)
    src = next((shared_data / MS_DIR).glob("*_MS"))
    shutil.copy(src, run / "events.out.events.summary.1795966609.0.vm_MS")
    s = read_logdir(tmp_path).scalars("run", "mean_logit")
    assert s.steps.tolist() == [0, 1, 2, 3, 4, 0, 0, 0]


def test_generated_summary_histogram_nan_inf_tensor_graph(tmp_path):
    hist = ms.Summary.Histogram(nan_count=2, pos_inf_count=1, neg_inf_count=3, max=2.0, min=0.0,
                                sum=3.0, count=10)  # fmt: skip
    for left, count in ((0.0, 1), (1.0, 3)):
        hist.buckets.add(left=left, width=1.0, count=count)
    tensor = ms.TensorProto(dims=[2, 2], data_type=5, int64_data=[1, -2, 3, 2**40])
    raw = ms.TensorProto(dims=[3], data_type=10, raw_data=np.array([1, 2, 3], "<f2").tobytes())
    graph = ms.GraphProto(name="net")
    node = graph.node.add(name="1", op_type="MatMul", scope="Default/net-Dense", full_name="x")
    node.input.add(name="fc.weight")
    node.output_type.tensor_type.elem_type = 11
    node.output_type.tensor_type.shape.dim.add(size=4)
    attr = node.attribute.add(name="transpose_b")
    attr.value.dtype = 1
    attr.value.bool_val = True
    events = [
        _version(),
        _summary(1, ms.Summary.Value(tag="w", histogram=hist)),
        _summary(
            2,
            ms.Summary.Value(tag="ids", tensor=tensor),
            ms.Summary.Value(tag="half", tensor=raw),
            ms.Summary.Value(tag="loss", scalar_value=float("nan")),
        ),
        ms.Event(wall_time=5.0, step=0, graph_def=graph),
    ]
    _write(tmp_path / "events.out.events.summary.1.1h_MS", events)
    log = read_logdir(tmp_path)
    (h,) = log.histograms(".", "w")
    assert h.edges.tolist() == [0.0, 1.0, 2.0]
    assert h.counts.tolist() == [1.0, 3.0]
    assert (h.nan_count, h.pos_inf_count, h.neg_inf_count, h.num) == (2, 1, 3, 10.0)
    (t,) = log.tensors(".", "ids")
    assert t.dtype == "int64"
    assert t.data.tolist() == [[1, -2], [3, 2**40]]
    (half,) = log.tensors(".", "half")
    assert half.dtype == "float16"
    assert half.data.tolist() == [1.0, 2.0, 3.0]
    assert np.isnan(log.scalars(".", "loss").values[0])
    g = log.graph(".")
    assert g is not None
    assert g.nodes[0].attrs == {"transpose_b": True, "full_name": "x"}
    assert (g.nodes[0].shapes, g.nodes[0].module_path) == (((4,),), "Default/net-Dense")


def test_generated_lineage_file(tmp_path):
    dataset = ms.DatasetGraph()
    dataset.parameter.mapStr["op_type"] = "BatchDataset"
    dataset.parameter.mapInt["batch_size"] = 32
    child = dataset.children.add()
    child.parameter.mapStr["op_type"] = "MnistDataset"
    child.parameter.mapStrList["columns"].strValue.extend(["image", "label"])
    child.sampler.operationParam.mapStr["sampler_name"] = "RandomSampler"
    train = ms.TrainLineage()
    train.hyper_parameters.optimizer = "Momentum"
    train.hyper_parameters.learning_rate = 0.5
    train.algorithm.network = "LeNet5"
    evaluation = ms.EvaluationLineage(metric=json.dumps({"accuracy": 0.98}))
    user = ms.UserDefinedInfo()
    user.map_str["note"] = "ünïcode"
    events = [
        ms.LineageEvent(wall_time=1.0, version="MindSpore.Event:1"),
        ms.LineageEvent(wall_time=2.0, dataset_graph=dataset),
        ms.LineageEvent(wall_time=3.0, step=100, train_lineage=train),
        ms.LineageEvent(wall_time=4.0, step=100, evaluation_lineage=evaluation),
        ms.LineageEvent(wall_time=5.0, user_defined_info=user),
    ]
    _write(tmp_path / "train" / "events.summary.1.host_lineage", events)
    log = read_logdir(tmp_path)
    (dg,) = log.data_graphs("train", "dataset_graph")
    assert [n["type"] for n in dg.nodes] == ["BatchDataset", "MnistDataset"]
    assert dg.edges == (("0.0", "0"),)
    assert dg.nodes[1]["params"]["columns"] == ["image", "label"]
    assert dg.nodes[1]["params"]["sampler"] == {"sampler_name": "RandomSampler"}
    (tr,) = log.hparams("train", "lineage/train")
    assert tr.hparams["optimizer"] == "Momentum"
    assert tr.hparams["network"] == "LeNet5"
    (ev,) = log.hparams("train", "lineage/eval")
    assert ev.hparams["metric"] == {"accuracy": 0.98}
    (ud,) = log.hparams("train", "lineage/user_defined")
    assert ud.hparams == {"note": "ünïcode"}


def test_mindspore_and_tensorboard_files_in_one_logdir(tmp_path):
    _write(tmp_path / "ms" / "events.out.events.summary.1.1h_MS",
           [_version(), _summary(3, ms.Summary.Value(tag="loss", scalar_value=0.25))])  # fmt: skip
    write_events(tmp_path / "tb" / "events.out.tfevents.1.h", [scalar_event("loss", 0.5, 3)])
    log = read_logdir(tmp_path)
    assert log.runs == ["ms", "tb"]
    assert log.scalars("ms", "loss").values.tolist() == [0.25]
    assert log.scalars("tb", "loss").values.tolist() == [0.5]


def test_broken_graph_file_is_listed_with_the_reason(tmp_path):
    (tmp_path / "ms_output_bad.pb").write_bytes(b"\xff\xff\xff\xff")
    with pytest.warns(UserWarning, match="not a MindSpore ModelProto"):
        log = read_logdir(tmp_path)
    assert log.tags(".")["graphs"] == ["ms_output_bad"]
    g = log.graph(".", "ms_output_bad")
    assert g is not None
    assert g.nodes == ()
    assert "not a MindSpore ModelProto" in g.error


def test_any_pb_file_is_tried_as_a_mindspore_graph(shared_data, tmp_path):
    """MindSpore users rename their graph files; a .pb that is no ModelProto says so."""
    run = tmp_path / "exp"
    run.mkdir()
    (run / "lenet.pb").write_bytes((shared_data / MS_DIR / "ms_output_optimize.pb").read_bytes())
    (run / "graph.pb").write_bytes(b"")  # e.g. a TensorFlow GraphDef: no MindSpore graph nodes
    (run / "saved_model.pb").write_bytes(b"\x08\x01")  # TensorFlow's SavedModel: not a log
    with pytest.warns(UserWarning, match="graph.pb"):
        log = read_logdir(tmp_path)
    assert log.runs == ["exp"]
    assert log.tags("exp")["graphs"] == ["graph", "lenet"]
    original = read_logdir(shared_data / MS_DIR).graph(".", "ms_output_optimize")
    assert [n.name for n in log.graph("exp", "lenet").nodes] == [n.name for n in original.nodes]
    assert "no graph nodes" in log.graph("exp", "graph").error
    # the file is fixed: the next reload reads it again
    (run / "graph.pb").write_bytes((run / "lenet.pb").read_bytes())
    log.reload()
    assert log.graph("exp", "graph").error == ""


def test_a_tensorflow_saved_model_below_a_logdir_is_no_run(tmp_path):
    model = tmp_path / "export" / "1"
    (model / "variables").mkdir(parents=True)
    for name in ("saved_model.pb", "fingerprint.pb", "keras_metadata.pb"):
        (model / name).write_bytes(b"\x08\x01")
    assert read_logdir(tmp_path).runs == []


def test_real_lineage_file_written_by_mindspore():
    """tests/fixtures/mindspore: written by MindSpore 2.10.0's SummaryCollector (see the script)."""
    from tests.conftest import ROOT

    log = read_logdir(ROOT / "tests" / "fixtures" / "mindspore")
    (dg,) = log.data_graphs(".", "dataset_graph")
    types = [n["type"] for n in dg.nodes]
    assert types == ["Repeat", "Batch", "Shuffle", "Map", "GeneratorDataset"]
    # data flows from the source up to the outermost op
    assert dg.edges[0] == ("0.0.0.0.0", "0.0.0.0")
    assert len(dg.edges) == 4
    batch = dg.nodes[1]["params"]
    assert (batch["batch_size"], batch["drop_remainder"]) == (16, True)
    mapping = dg.nodes[3]["params"]
    # MindSpore JSON-encodes these strings; they are decoded
    assert mapping["input_columns"] == ["label"]
    assert mapping["operations"][0]["tensor_op_name"] == "TypeCast"
    assert mapping["operations"][0]["tensor_op_params"] == {"data_type": "int32"}
    (train,) = log.hparams(".", "lineage/train")
    assert train.hparams["optimizer"] == "Momentum"
    assert train.hparams["batch_size"] == 16
    graph = log.graph(".")
    assert graph is not None
    assert any(n.op == "ApplyMomentum" for n in graph.nodes)
