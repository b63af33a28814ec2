from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from torch.utils.tensorboard import SummaryWriter

from tensorsight.data import Limits, LogdirProvider
from tensorsight.errors import InputFileError


@pytest.fixture
def logdir(tmp_path):
    with SummaryWriter(str(tmp_path / "train")) as w:
        for step in range(50):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_scalar("acc", float("nan") if step == 7 else step / 50, step)
        w.add_histogram("weights", np.random.default_rng(0).standard_normal(1000), 3)
        w.add_image("sample", np.zeros((3, 4, 5), dtype=np.uint8), 2)
        w.add_text("notes", "**hi** <b>x</b>", 1)
    with SummaryWriter(str(tmp_path / "eval" / "ünï")) as w:
        w.add_scalar("loss", 0.5, 0)
    return tmp_path


def test_runs_tags_and_series(logdir):
    p = LogdirProvider(logdir)
    runs = {r.name: r for r in p.list_runs()}
    assert sorted(runs) == ["eval/ünï", "train"]
    train = runs["train"]
    assert train.tags["scalars"] == ("acc", "loss")
    assert train.tags["histograms"] == ("weights",)
    assert train.first_wall_time is not None
    assert train.last_wall_time >= train.first_wall_time
    assert train.dropped == {}
    s = p.read_scalars("train", "acc")
    assert len(s) == 50
    assert np.isnan(s.values[7])
    h = p.read_histograms("train", "weights")[0]
    assert len(h.edges) == len(h.counts) + 1
    assert h.num == 1000
    img = p.read_images("train", "sample")[0]
    assert img.mime_type == "image/png"
    assert (img.width, img.height) == (5, 4)
    assert img.data.startswith(b"\x89PNG")
    assert p.read_text("train", "notes/text_summary")[0].text == "**hi** <b>x</b>"


def test_reload_sees_new_runs_tags_and_points(logdir):
    p = LogdirProvider(logdir)
    gen = p.generation
    assert p.reload() is False
    with SummaryWriter(str(logdir / "train")) as w:
        for step in range(50, 60):
            w.add_scalar("loss", 0.01, step)
        w.add_scalar("new_tag", 1.0, 0)
    with SummaryWriter(str(logdir / "late")) as w:
        w.add_scalar("x", 1.0, 0)
    assert p.reload() is True
    assert p.generation == gen + 1
    assert "late" in [r.name for r in p.list_runs()]
    assert len(p.read_scalars("train", "loss")) == 60
    assert "new_tag" in p.run_info("train").tags["scalars"]


def test_limits_cap_and_are_reported(logdir):
    p = LogdirProvider(logdir, Limits(max_points_per_scalar=10, max_tags_per_run=1))
    s = p.read_scalars("train", "acc")
    assert len(s) == 10
    assert s.steps[-1] == 49  # newest kept
    dropped = p.run_info("train").dropped
    assert dropped["scalars tags over the 1-tag limit (hidden)"] == 1
    assert dropped["scalars tags at the 10-value limit (older values dropped)"] == 1
    assert p.run_info("train").tags["scalars"] == ("acc",)


def test_missing_logdir(tmp_path):
    with pytest.raises(InputFileError, match="not found"):
        LogdirProvider(tmp_path / "nope")


def test_first_read_reports_progress_in_files(logdir):
    seen: list[int] = []
    p = LogdirProvider(logdir, progress=seen.append)
    assert seen, "no progress reported"
    assert seen == sorted(seen)
    assert seen[-1] == 2  # one event file per run
    assert len(p.list_runs()) == 2


def test_sampled_histograms_are_the_evenly_spaced_records_of_the_full_read(tmp_path):
    rng = np.random.default_rng(1)
    with SummaryWriter(str(tmp_path / "train")) as w:
        for step in range(37):
            w.add_histogram("weights", rng.standard_normal(200) * (step + 1), step)
    p = LogdirProvider(tmp_path)
    every = p.read_histograms("train", "weights")
    total, some = p.sample_histograms("train", "weights", 10)
    assert total == 37
    assert [r.step for r in some] == [0, 4, 8, 12, 16, 20, 24, 28, 32, 36]
    assert some == [every[r.step] for r in some]  # same buckets as the full read
    assert p.sample_histograms("train", "weights", 100) == (37, every)
    # the arrays the board encodes hold the same buckets, read-only, without a conversion
    total, arrays = p.sample_histogram_arrays("train", "weights", 10)
    assert total == 37
    assert [a.step for a in arrays] == [r.step for r in some]
    for a, r in zip(arrays, some, strict=True):
        assert a.edges.dtype == np.float64
        assert not a.edges.flags.writeable
        assert a.edges.tolist() == list(r.edges)
        assert a.counts.tolist() == list(r.counts)
        assert (a.wall_time, a.min, a.max, a.num, a.sum) == (
            r.wall_time,
            r.min,
            r.max,
            r.num,
            r.sum,
        )


def test_queries_answer_while_a_reload_reads_files(logdir, monkeypatch):
    """Issue 20: a reload holds the provider's lock only to add what it decoded, so a
    request's read never waits for the disk or the decoder (under load it waited seconds)."""
    from tensorsight.summary.reader import EventFileReader

    p = LogdirProvider(logdir)
    entered, release = threading.Event(), threading.Event()
    real = EventFileReader.read

    def slow_read(self, *args, **kwargs):
        entered.set()
        release.wait(60)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(EventFileReader, "read", slow_read)
    with SummaryWriter(str(logdir / "train")) as w:
        w.add_scalar("loss", 0.01, 50)
    reloading = threading.Thread(target=p.reload)
    reloading.start()
    try:
        assert entered.wait(10)
        with ThreadPoolExecutor(1) as pool:  # what was read before, at once
            assert len(pool.submit(p.read_scalars, "train", "loss").result(timeout=10)) == 50
            histograms = pool.submit(p.sample_histograms, "train", "weights", 10)
            assert histograms.result(timeout=10)[0] == 1
        assert "train" in [r.name for r in p.list_runs()]
    finally:
        release.set()
        reloading.join(60)
    assert len(p.read_scalars("train", "loss")) == 51
