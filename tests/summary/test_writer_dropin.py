"""Switching from torch's SummaryWriter is a one-line import change.

The same calls run through ``torch.utils.tensorboard.SummaryWriter`` and
``tensorsight.SummaryWriter``; TensorBoard's loader must read the same data back from both.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.summary._tb import load

torch = pytest.importorskip("torch")
tensorboard_writer = pytest.importorskip("torch.utils.tensorboard")


def _script(writer_cls, log_dir: Path) -> None:
    """A training-loop-like script: only the class differs between the two runs."""
    gen = torch.Generator().manual_seed(0)
    writer = writer_cls(str(log_dir), flush_secs=1)
    for step in range(5):
        writer.add_scalar("loss/train", 1.0 / (step + 1), step, walltime=100.0 + step)
        writer.add_scalar("acc", torch.tensor(step / 10), step, walltime=100.0 + step)
        writer.add_scalars("lr", {"a": 0.1 * step, "b": 0.2}, step, walltime=100.0 + step)
    values = torch.randn(2000, generator=gen)
    writer.add_histogram("weights", values, 1, walltime=200.0)
    writer.add_histogram("weights_auto", values.numpy(), 2, bins="auto", walltime=200.0)
    writer.add_histogram("weights_max", values, 3, max_bins=30, walltime=200.0)
    writer.add_histogram_raw("raw", 0.0, 3.0, 6, 9.0, 21.0, [1.0, 2.0, 3.0], [1, 2, 3], 4)
    writer.add_image("img", torch.rand(3, 6, 7, generator=gen), 1, walltime=300.0)
    writer.add_image(
        "img_hwc", (np.arange(42 * 3) % 256).astype(np.uint8).reshape(6, 7, 3), 1, dataformats="HWC"
    )
    writer.add_image("img_hw", torch.rand(6, 7, generator=gen), 1, dataformats="HW")
    writer.add_images("batch", torch.rand(10, 3, 4, 5, generator=gen), 1)
    writer.add_images("batch_nhwc", torch.rand(3, 4, 5, 1, generator=gen), 1, dataformats="NHWC")
    writer.add_text("notes", "héllo **world**", 2, walltime=400.0)
    writer.add_audio("tone", torch.sin(torch.linspace(0, 30, 500)), 1, sample_rate=8000)
    labels = torch.randint(0, 2, (200,), generator=gen)
    writer.add_pr_curve("pr", labels, torch.rand(200, generator=gen), 1, num_thresholds=33)
    counts = [torch.tensor([5.0, 3.0, 1.0]) for _ in range(4)]
    writer.add_pr_curve_raw(
        "pr_raw",
        *counts,
        torch.tensor([0.5, 0.6, 1.0]),
        torch.tensor([1.0, 0.6, 0.2]),
        1,
        num_thresholds=3,
    )
    writer.add_hparams({"lr": 0.1, "opt": "adam"}, {"hp/acc": 0.75}, run_name="trial")
    writer.add_custom_scalars(
        {
            "loss": {"both": ["Multiline", ["loss/train", "acc"]]},
            "lr": {"m": ["Margin", ["a", "b", "c"]]},
        }
    )
    writer.close()


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp("dropin")
    from tensorsight import SummaryWriter as Ours

    _script(tensorboard_writer.SummaryWriter, root / "torch")
    _script(Ours, root / "ours")
    return root / "torch", root / "ours"


def test_same_runs(both):
    theirs, ours = both
    assert sorted(p.name for p in theirs.iterdir() if p.is_dir()) == sorted(
        p.name for p in ours.iterdir() if p.is_dir()
    )


def test_same_tags(both):
    theirs, ours = (load(p).Tags() for p in both)
    for kind in ("scalars", "histograms", "images", "audio", "tensors"):
        assert sorted(theirs[kind]) == sorted(ours[kind]), kind


def test_same_scalars(both):
    theirs, ours = (load(p) for p in both)
    for tag in ("loss/train", "acc"):
        a = [(e.wall_time, e.step, e.value) for e in theirs.Scalars(tag)]
        b = [(e.wall_time, e.step, e.value) for e in ours.Scalars(tag)]
        assert a == b
    sub_a, sub_b = (load(p / "lr_a").Scalars("lr") for p in both)
    assert [(e.step, e.value) for e in sub_a] == [(e.step, e.value) for e in sub_b]


def test_same_histograms(both):
    theirs, ours = (load(p) for p in both)
    for tag in ("weights", "weights_auto", "weights_max", "raw"):
        a, b = theirs.Histograms(tag)[0], ours.Histograms(tag)[0]
        assert a.step == b.step
        ha, hb = a.histogram_value, b.histogram_value
        assert (ha.min, ha.max, ha.num) == (hb.min, hb.max, hb.num)
        assert ha.sum == pytest.approx(hb.sum)
        assert ha.sum_squares == pytest.approx(hb.sum_squares)
        assert list(ha.bucket_limit) == pytest.approx(list(hb.bucket_limit)), tag
        assert list(ha.bucket) == list(hb.bucket), tag


def test_same_image_pixels(both):
    theirs, ours = (load(p) for p in both)
    for tag in ("img", "img_hwc", "img_hw", "batch", "batch_nhwc"):
        a, b = theirs.Images(tag)[0], ours.Images(tag)[0]
        assert (a.width, a.height, a.step) == (b.width, b.height, b.step)
        pa = np.asarray(Image.open(io.BytesIO(a.encoded_image_string)))
        pb = np.asarray(Image.open(io.BytesIO(b.encoded_image_string)))
        assert np.array_equal(pa, pb), tag


def test_same_text_audio_pr_curves(both):
    theirs, ours = (load(p) for p in both)
    for tag in ("notes/text_summary", "pr", "pr_raw", "custom_scalars__config__"):
        a, b = theirs.Tensors(tag)[0], ours.Tensors(tag)[0]
        assert a.step == b.step
        assert a.tensor_proto.SerializeToString() == b.tensor_proto.SerializeToString(), tag
    assert theirs.PluginTagToContent("pr_curves") == ours.PluginTagToContent("pr_curves")
    assert theirs.PluginTagToContent("text") == ours.PluginTagToContent("text")
    a, b = theirs.Audio("tone")[0], ours.Audio("tone")[0]
    assert a.encoded_audio_string == b.encoded_audio_string
    assert (a.sample_rate, a.length_frames, a.content_type) == (
        b.sample_rate,
        b.length_frames,
        b.content_type,
    )


def test_same_hparams(both):
    theirs, ours = (load(p / "trial") for p in both)
    assert theirs.PluginTagToContent("hparams") == ours.PluginTagToContent("hparams")
    assert [e.value for e in theirs.Scalars("hp/acc")] == [e.value for e in ours.Scalars("hp/acc")]


def test_same_signatures_as_torch():
    """Every method both writers have takes the same arguments, in order, with the same defaults."""
    import inspect

    from tensorsight import SummaryWriter as Ours

    theirs = tensorboard_writer.SummaryWriter
    shared = [
        name
        for name in dir(Ours)
        if not name.startswith("_") and callable(getattr(Ours, name)) and hasattr(theirs, name)
    ]
    assert len(shared) == 23  # add_figure, add_video and add_mesh included
    for name in [*shared, "__init__"]:
        a = inspect.signature(getattr(theirs, name)).parameters
        b = inspect.signature(getattr(Ours, name)).parameters
        assert [(p.name, p.default, p.kind) for p in a.values()] == [
            (p.name, p.default, p.kind) for p in b.values()
        ], name


def _embeddings(writer_cls, log_dir: Path) -> None:
    gen = torch.Generator().manual_seed(1)
    with writer_cls(str(log_dir)) as writer:
        mat = torch.randn(10, 4, generator=gen)
        labels = [f"pt {i} ü" for i in range(10)]
        images = torch.rand(10, 3, 6, 5, generator=gen)
        writer.add_embedding(mat, metadata=labels, label_img=images, global_step=3, tag="a/b")
        rows = [[i, f"c{i}"] for i in range(10)]
        writer.add_embedding(mat.numpy(), metadata=rows, metadata_header=["n", "name"])


def test_same_embedding_files(tmp_path):
    from tensorsight import SummaryWriter as Ours

    _embeddings(tensorboard_writer.SummaryWriter, tmp_path / "torch")
    _embeddings(Ours, tmp_path / "ours")
    theirs = {p.relative_to(tmp_path / "torch") for p in (tmp_path / "torch").rglob("*")}
    ours = {p.relative_to(tmp_path / "ours") for p in (tmp_path / "ours").rglob("*")}
    assert {p for p in theirs if "tfevents" not in p.name} == {
        p for p in ours if "tfevents" not in p.name
    }
    for rel in sorted(theirs):
        a, b = tmp_path / "torch" / rel, tmp_path / "ours" / rel
        if a.is_dir() or "tfevents" in a.name:
            continue
        if a.suffix == ".png":
            pa = np.asarray(Image.open(a))
            pb = np.asarray(Image.open(b))
            assert np.array_equal(pa, pb)
        else:
            assert a.read_bytes() == b.read_bytes(), rel
