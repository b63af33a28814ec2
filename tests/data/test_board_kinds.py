"""Provider reads of PR curves, audio and custom-scalar layouts (torch's writer and ours)."""

from __future__ import annotations

import numpy as np
import pytest
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight import SummaryWriter
from tensorsight.data import (
    AudioClip,
    DataProvider,
    InMemoryProvider,
    Limits,
    LogdirProvider,
    ScalarLayout,
)
from tensorsight.summary.kinds.custom_scalars_decode import decode_layout


def test_audio_clips_of_torch_and_ours_with_the_blob_limit(tmp_path):
    tone = (0.5 * np.sin(np.linspace(0, 200, 4000))).astype(np.float32)
    with TorchWriter(str(tmp_path / "torch")) as w:
        for s in range(3):
            w.add_audio("voice", tone, s, sample_rate=8000)
    with SummaryWriter(tmp_path / "ours") as w:
        w.add_audio("voice", tone, 7, sample_rate=16000)
    p = LogdirProvider(tmp_path, Limits(max_records_per_audio=2))
    clips = p.read_audio("torch", "voice")
    assert [c.step for c in clips] == [1, 2]
    assert clips[0].sample_rate == 8000.0
    assert clips[0].mime_type == "audio/wav"
    assert clips[0].data[:4] == b"RIFF"
    (ours,) = p.read_audio("ours", "voice")
    assert (ours.step, ours.sample_rate) == (7, 16000.0)
    assert not LogdirProvider(tmp_path, Limits(max_blob_bytes=100)).read_audio("ours", "voice")
    with pytest.raises(KeyError):
        p.read_audio("torch", "absent")


def test_layout_read_and_its_absence(tmp_path):
    with SummaryWriter(tmp_path / "run") as w:
        w.add_custom_scalars({"A": {"c": ["Margin", ["v", "lo", "hi"]]}})
        w.add_scalar("v", 1.0, 0)
    p = LogdirProvider(tmp_path)
    layout = p.read_scalar_layout("run")
    chart = layout.categories[0].charts[0]
    assert (chart.kind, chart.margins[0].upper) == ("margin", "hi")
    with pytest.raises(KeyError):
        p.read_scalar_layout("nope")
    with pytest.raises(ValueError, match="not a Layout"):
        decode_layout(b"\xff\xff\xff")


def test_in_memory_kinds_and_the_base_defaults():
    p = InMemoryProvider()
    p.add_audio("r", "a", AudioClip(0, 1.0, 0, b"RIFF", 8000.0, "audio/wav"))
    p.add_scalar_layout("r", ScalarLayout(()))
    assert p.read_audio("r", "a")[0].data == b"RIFF"
    assert p.read_scalar_layout("r").categories == ()
    assert set(p.run_info("r").tags) == {"audio", "custom_scalars"}

    class Bare(DataProvider):
        def list_runs(self):
            return []

        read_scalars = read_histograms = read_images = read_text = None  # type: ignore[assignment]

    bare = Bare()
    for call in (
        lambda: bare.read_pr_curves("r", "t"),
        lambda: bare.read_audio("r", "t"),
        lambda: bare.read_scalar_layout("r"),
    ):
        with pytest.raises(KeyError):
            call()
