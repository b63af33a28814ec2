"""A TensorBoard user's logdir (issue 22, "Done when"): one run written by torch's
``SummaryWriter`` and one by tensorboardX, each with scalars, hparams, a PR curve, audio,
an embedding, a custom-scalar layout, a figure, a video and a mesh. Every kind shows in its
view, for both runs, at 1280x800.

Two records are built from the writers' own protobuf classes where the writer needs an
optional encoder this environment may lack: tensorboardX's ``add_audio`` needs soundfile
(the WAV is made with ``wave``) and both writers' ``add_video`` need moviepy (the GIF is made
with Pillow). They are the records those calls write: an ``Audio`` summary with
``content_type="audio/wav"`` and an ``Image`` summary holding an animated GIF.
"""

from __future__ import annotations

import importlib.util
import io
import wave
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import tensorboardX
import torch
from PIL import Image
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

RUNS = ("tbx", "torch")  # the board's order
RATE = 8000
TETRA = [[[1.0, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]]
FACES = [[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]]


def _clip() -> np.ndarray:
    """One clip of 6 frames (N, T, C, H, W): a red square moving right."""
    clip = np.zeros((1, 6, 3, 16, 16), np.uint8)
    for t in range(6):
        clip[0, t, 0, 4:10, 2 * t : 2 * t + 4] = 255
    return clip


def _gif(clip: np.ndarray) -> bytes:
    frames = [Image.fromarray(f.transpose(1, 2, 0)) for f in clip[0]]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    return buf.getvalue()


def _wav(tone: np.ndarray) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(RATE)
        f.writeframes((tone * 32767).astype("<i2").tobytes())
    return buf.getvalue()


def _summary_class(run: str):
    if run == "torch":
        from torch.utils.tensorboard.summary import Summary
    else:
        from tensorboardX.proto.summary_pb2 import Summary
    return Summary


def write_logs(logdir: Path) -> None:
    rng = np.random.default_rng(0)
    for run, writer in (("torch", TorchWriter), ("tbx", tensorboardX.SummaryWriter)):
        summary = _summary_class(run)
        with writer(str(logdir / run)) as w:
            rate = 4 if run == "torch" else 2  # apart, so neither line hides the other
            for s in range(10):
                w.add_scalar("loss/train", float(np.exp(-s / rate)), s)
                w.add_scalar("loss/val", float(np.exp(-s / rate / 1.5)) + 0.05, s)
            w.add_hparams(
                {"lr": 0.1 if run == "torch" else 0.01, "optimizer": "sgd"},
                {"hparam/final_loss": 0.2 if run == "torch" else 0.3},
            )
            labels = rng.integers(0, 2, 100)
            preds = np.clip(labels * 0.6 + rng.random(100) * 0.5, 0, 1)
            w.add_pr_curve("pr", labels, preds, 3)
            tone = (0.3 * np.sin(2 * np.pi * 330 * np.arange(RATE) / RATE)).astype(np.float32)
            if run == "torch" or importlib.util.find_spec("soundfile"):
                w.add_audio("voice", torch.from_numpy(tone).reshape(1, -1), 2, sample_rate=RATE)
            else:
                audio = summary.Audio(
                    sample_rate=RATE, num_channels=1, length_frames=len(tone),
                    encoded_audio_string=_wav(tone), content_type="audio/wav",
                )  # fmt: skip
                w._get_file_writer().add_summary(
                    summary(value=[summary.Value(tag="voice", audio=audio)]), 2
                )
            points = rng.standard_normal((60, 8)) + np.repeat(np.eye(3, 8) * 6, 20, axis=0)
            w.add_embedding(
                torch.from_numpy(points), [f"group{i // 20}" for i in range(60)], tag="features"
            )
            w.add_custom_scalars({"Losses": {"train vs val": ["Multiline", ["loss/.*"]]}})
            fig, ax = plt.subplots(figsize=(3, 2), dpi=50)
            ax.plot([3, 1, 2], marker="o")
            ax.set_title(run)
            w.add_figure("figure", fig, 4)
            if importlib.util.find_spec("moviepy"):
                w.add_video("video", torch.from_numpy(_clip()), 5, fps=10)
            else:
                image = summary.Image(
                    height=16, width=16, colorspace=3, encoded_image_string=_gif(_clip())
                )
                w._get_file_writer().add_summary(
                    summary(value=[summary.Value(tag="video", image=image)]), 5
                )
            w.add_mesh(
                "tetra", torch.tensor(TETRA), faces=torch.tensor(FACES), global_step=1,
                config_dict={"camera": {"cls": "PerspectiveCamera", "fov": 60}},
            )  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("tensorboard_user")
    write_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def _tab(page, view: str) -> None:
    """Open a view by its tab, as a user does (dispatched: the tab strip may scroll it away)."""
    page.locator(f"#tabs button[data-view='{view}']").dispatch_event("click")
    page.wait_for_selector(f"#tabs button[data-view='{view}'].selected")


def test_every_kind_of_both_writers_shows(page1280, server):
    page = page1280
    page.goto(server + "/#scalars")
    # the run list: two runs, the add_hparams timestamp sub-runs folded into them
    page.wait_for_selector("#run-list li.run")
    assert page.locator("#run-list .run-name").all_inner_texts() == list(RUNS)
    page.wait_for_selector("#tabs a, #tabs button")
    tabs = page.locator("#tabs").inner_text()

    # scalars: both runs in each loss chart
    card = page.locator('.scalar-card[data-key="loss/train"]')
    card.locator("canvas[data-points='20']").wait_for()
    legend = card.locator(".legend-item").evaluate_all("els => els.map(e => e.dataset.label)")
    assert legend == list(RUNS)
    assert page.locator('.scalar-card[data-key="loss/val"] canvas').get_attribute("data-points")
    shot(page, "tb-user-scalars")

    # hparams: one row per run with its hyperparameters and final metric
    _tab(page, "hparams")
    page.wait_for_selector('#hp-table[data-rows="2"]')
    rows = page.locator("#hp-table tbody tr.hp-row")
    assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.run)")) == list(RUNS)
    lr = page.locator('#hp-table tbody td[data-key="hp:lr"]').all_inner_texts()
    assert sorted(lr) == ["0.01", "0.1"]
    assert page.locator("#hp-parallel").get_attribute("data-lines") == "2"
    shot(page, "tb-user-hparams")

    # PR curves: the one tag, a curve per run at step 3
    _tab(page, "pr_curves")
    pr = page.locator('.pr-card[data-tag="pr"]')
    pr.wait_for()
    page.wait_for_function(
        "() => document.querySelector('.pr-card[data-tag=\"pr\"]')?.dataset.runs === 'tbx|torch'"
    )
    assert pr.get_attribute("data-steps") == "3|3"
    shot(page, "tb-user-pr-curves")

    # audio: a player per run that loads its one-second clip
    _tab(page, "audio")
    audio = page.locator('.audio-card[data-tag="voice"]')
    audio.wait_for()
    page.wait_for_function(
        "() => document.querySelector('.audio-card[data-tag=\"voice\"]')?.dataset.runs === "
        "'tbx|torch'"
    )
    page.wait_for_function(
        "() => [...document.querySelectorAll('.audio-card audio')]"
        ".filter(a => a.readyState >= 1).length === 2"
    )
    durations = audio.locator("audio").evaluate_all("as => as.map(a => a.duration)")
    assert [round(d, 2) for d in durations] == [1.0, 1.0]
    shot(page, "tb-user-audio")

    # embeddings: each run's projector entry, 60 points in three labelled groups
    _tab(page, "embeddings")
    page.wait_for_selector("#emb-canvas[data-points='60']")
    runs = page.locator("#emb-run option").evaluate_all("os => os.map(o => o.value)")
    assert sorted(runs) == list(RUNS)
    for run in RUNS:
        page.select_option("#emb-run", run)
        page.wait_for_function(
            f"() => document.querySelector('#emb-run').value === '{run}' && "
            "document.querySelector('#emb-canvas').dataset.points === '60'"
        )
        page.select_option("#emb-color", index=1)
        page.wait_for_function(
            "() => document.querySelector('#emb-canvas').dataset.colorScale === 'categories'"
        )
        assert page.locator("#emb-legend .emb-legend-item").count() == 3
    shot(page, "tb-user-embeddings")

    # custom scalars: the user's layout, its multiline chart with both runs' losses
    _tab(page, "custom_scalars")
    chart = '.cs-card[data-title="train vs val"]'
    page.wait_for_function(
        f"() => document.querySelector('{chart}')?.dataset.series === "
        "'tbx/loss/train|tbx/loss/val|torch/loss/train|torch/loss/val'"
    )
    assert page.locator(f"{chart} canvas").get_attribute("data-points") == "40"
    shot(page, "tb-user-custom-scalars")

    # figures and videos: in the images view, one card per run; the video animated
    _tab(page, "images")
    for tag in ("figure", "video"):
        for run in RUNS:
            page.locator(f'.image-card[data-tag="{tag}"][data-run="{run}"] img').wait_for()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.image-card img')].length === 4 && "
        "[...document.querySelectorAll('.image-card img')].every(i => i.complete && i.naturalWidth)"
    )
    video = page.locator('.image-card[data-tag="video"][data-run="torch"] img')
    frames = video.evaluate(
        """async (img) => {
            const data = await (await fetch(img.src)).arrayBuffer();
            const dec = new ImageDecoder({ data, type: "image/gif" });
            await dec.tracks.ready;
            return dec.tracks.selectedTrack.frameCount;
        }"""
    )
    assert frames == 6
    shot(page, "tb-user-images")

    # mesh: a card per run, the tetrahedron's four faces drawn, the writer's fov applied
    _tab(page, "mesh")
    for run in RUNS:
        mesh = page.locator(f".mesh-card[data-mesh='tetra'][data-run='{run}']")
        mesh.locator("canvas[data-drawn]").wait_for()
        assert mesh.get_attribute("data-faces") == "4"
        assert mesh.locator("canvas").get_attribute("data-fov") == "60.0"
    shot(page, "tb-user-mesh")
    for view in ("HParams", "PR Curves", "Audio", "Embeddings", "Custom Scalars", "Mesh"):
        assert view in tabs
