"""Audio players, figures and videos in chromium at 1280x800, on torch's and our writers' logs.

Runs: ``torch`` (torch's SummaryWriter: a tone at three steps, a matplotlib figure) and
``ours`` (tensorsight's writer: a labelled chirp, an animated GIF video).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight import SummaryWriter
from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

RATE = 8000
STEPS = (0, 10, 20)


def tone(freq: float, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.4 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def video() -> np.ndarray:
    """Two clips of 6 frames: a square moving right, and one moving down (N, T, C, H, W)."""
    clips = np.zeros((2, 6, 3, 24, 24), dtype=np.uint8)
    for t in range(6):
        clips[0, t, 0, 8:14, 2 + 3 * t : 8 + 3 * t] = 255
        clips[1, t, 2, 2 + 3 * t : 8 + 3 * t, 8:14] = 255
    return clips


def write_logs(logdir):
    with TorchWriter(str(logdir / "torch")) as w:
        for s in STEPS:
            w.add_audio(
                "speech/sample", tone(220 * (1 + s / 10), 1.0).reshape(1, -1), s, sample_rate=RATE
            )
        fig, ax = plt.subplots(figsize=(4, 3), dpi=60)
        ax.plot(np.linspace(0, 1, 20) ** 2, marker="o")
        ax.set_title("loss by epoch")
        w.add_figure("figures/loss", fig, 3)
    with SummaryWriter(logdir / "ours") as w:
        chirp = np.sin(2 * np.pi * np.cumsum(np.linspace(200, 800, 2 * RATE)) / RATE) * 0.3
        w.add_audio("speech/sample", chirp, 5, sample_rate=RATE)
        w.add_video("videos/squares", video(), 7, fps=6)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("media_logs")
    write_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def wait_metadata(page, selector: str) -> float:
    """Wait until the <audio> at ``selector`` has loaded its metadata; its duration."""
    page.wait_for_function(f"() => document.querySelector('{selector}')?.readyState >= 1")
    return float(page.eval_on_selector(selector, "a => a.duration"))


def test_audio_players_load_seek_play_and_follow_the_step_slider(page1280, server):
    page = page1280
    page.goto(server + "/#audio")
    card = page.locator('.audio-card[data-tag="speech/sample"]')
    card.wait_for()
    page.wait_for_function("() => document.querySelectorAll('.audio-card audio').length === 2")
    torch_audio = '.audio-run[data-run="torch"] audio'
    ours_audio = '.audio-run[data-run="ours"] audio'
    assert wait_metadata(page, torch_audio) == pytest.approx(1.0, abs=0.01)
    assert wait_metadata(page, ours_audio) == pytest.approx(2.0, abs=0.01)
    torch_row = card.locator('.audio-run[data-run="torch"] .audio-clip')
    assert torch_row.get_attribute("data-step") == "20"
    assert torch_row.get_attribute("data-sample-rate") == "8000"
    meta = torch_row.locator(".audio-meta").inner_text()
    assert meta.startswith("step 20 · 8 kHz · 1.00 s · mono")
    # every player fits its card
    card_box = card.bounding_box()
    for sel in (torch_audio, ours_audio):
        box = page.locator(sel).bounding_box()
        assert box["x"] >= card_box["x"]
        assert box["x"] + box["width"] <= card_box["x"] + card_box["width"]
    shot(page, "audio_last_step")

    # seek: the player jumps to 0.5 s (the route answers byte ranges)
    page.eval_on_selector(torch_audio, "a => { a.currentTime = 0.5; }")
    page.wait_for_function(
        f"() => Math.abs(document.querySelector('{torch_audio}').currentTime - 0.5) < 0.01"
    )
    assert page.eval_on_selector(
        torch_audio, "a => a.seekable.length && a.seekable.end(0)"
    ) == pytest.approx(1.0, abs=0.01)
    # play (muted, so no gesture is needed) and the clock moves
    page.eval_on_selector(ours_audio, "a => { a.muted = true; return a.play(); }")
    page.wait_for_function(f"() => document.querySelector('{ours_audio}').currentTime > 0.05")
    page.eval_on_selector(ours_audio, "a => a.pause()")

    # step slider: the union of steps 0, 5, 10, 20; step 10 picks torch's clip 10, ours' 5
    slider = card.locator("input.audio-step")
    assert slider.get_attribute("max") == "3"
    slider.fill("2")
    page.wait_for_function("() => document.querySelector('.audio-card')?.dataset.step === '10'")
    assert torch_row.get_attribute("data-step") == "10"
    assert card.locator('.audio-run[data-run="ours"] .audio-clip').get_attribute("data-step") == "5"
    assert "10 (4 steps)" in card.locator(".audio-step-label").inner_text()
    assert wait_metadata(page, torch_audio) == pytest.approx(1.0, abs=0.01)
    src = page.eval_on_selector(torch_audio, "a => a.src")
    assert "i=1" in src
    assert "run=torch" in src
    shot(page, "audio_step_10")

    # run selection: without ours, one player is left
    page.locator('#run-list input[data-run="ours"]').uncheck()
    page.wait_for_function("() => document.querySelector('.audio-card')?.dataset.runs === 'torch'")
    assert page.locator(".audio-card audio").count() == 1
    # the tag filter hides the card
    page.locator("#audio-tag-filter").fill("^nothing")
    assert page.locator("#audio-message").inner_text() == "0 of 1 audio tags"


def test_figures_and_gif_videos_show_in_the_images_view(page1280, server):
    page = page1280
    page.goto(server + "/#images")
    fig = page.locator('.image-card[data-tag="figures/loss"] img')
    vid = page.locator('.image-card[data-tag="videos/squares"] img')
    fig.wait_for()
    vid.wait_for()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.image-card img')]"
        ".every(i => i.complete && i.naturalWidth > 0)"
    )
    assert fig.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [240, 180]
    # two clips side by side (torch's grid: padded to a power of two, one row)
    assert vid.evaluate("i => [i.naturalWidth, i.naturalHeight]") == [48, 24]
    # the GIF is animated: decode its frames with the browser's own ImageDecoder
    frames = vid.evaluate(
        """async (img) => {
            const data = await (await fetch(img.src)).arrayBuffer();
            const dec = new ImageDecoder({ data, type: "image/gif" });
            await dec.tracks.ready;
            const n = dec.tracks.selectedTrack.frameCount;
            const out = [];
            for (let k = 0; k < n; k++) {
                const { image } = await dec.decode({ frameIndex: k });
                const c = new OffscreenCanvas(image.displayWidth, image.displayHeight);
                const g = c.getContext("2d");
                g.drawImage(image, 0, 0);
                // the red square's row: the first red pixel's x
                const row = g.getImageData(0, 10, 24, 1).data;
                let x = -1;
                for (let p = 0; p < 24; p++) if (row[4 * p] > 200 && x < 0) x = p;
                out.push([x, image.duration]);
                image.close();
            }
            return out;
        }"""
    )
    assert [f[0] for f in frames] == [2, 5, 8, 11, 14, 17]  # the square moves 3 px a frame
    assert {round(f[1] / 1000) for f in frames} == {170}  # 1/6 s a frame (GIF: 10 ms units)
    shot(page, "images_figure_video")
