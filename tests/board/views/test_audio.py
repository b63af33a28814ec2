"""The audio view on logs of torch's writer and ours: clips, bytes, ranges, limits."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest
from starlette.testclient import TestClient
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight import SummaryWriter
from tensorsight.board.app import create_app
from tensorsight.board.views import audio
from tensorsight.data import AudioClip, InMemoryProvider, LogdirProvider


def tone(freq: float, seconds: float, rate: int) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def wav(samples: int, rate: int) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.zeros(samples, "<i2").tobytes())
    return out.getvalue()


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("audio_logs")
    with TorchWriter(str(d / "torch")) as w:
        for step in (0, 10, 20):
            w.add_audio(
                "voice/a", tone(220 + step, 0.5, 8000).reshape(1, -1), step, sample_rate=8000
            )
    with TorchWriter(str(d / "tbx")) as w:  # tensorboardX's add_audio needs soundfile
        w.add_audio("voice/a", tone(440, 0.25, 22050), 5, sample_rate=22050)
    with SummaryWriter(d / "ours") as w:
        w.add_audio("voice/a", tone(330, 1.0, 16000), 3, sample_rate=16000)
        w.add_audio("other", tone(330, 0.1, 16000), 3, sample_rate=16000)
    return d


@pytest.fixture(scope="module")
def client(logdir):
    return TestClient(create_app(LogdirProvider(logdir)))


def test_tags_and_the_tab(client):
    tags = client.get("/api/views/audio/tags").json()["tags"]
    assert tags == [
        {"tag": "other", "runs": ["ours"]},
        {"tag": "voice/a", "runs": ["ours", "tbx", "torch"]},
    ]
    views = {v["name"]: v for v in client.get("/api/views").json()["views"]}
    assert views["audio"]["has_data"]
    assert views["audio"]["title"] == "Audio"


def test_clips_list_rate_duration_and_steps_per_run(client):
    params = {"tag": "voice/a", "run": ["torch", "tbx", "ours", "nope"]}
    body = client.get("/api/views/audio/clips", params=params).json()
    assert body["missing"] == ["nope"]
    runs = {r["run"]: r for r in body["runs"]}
    assert [r["run"] for r in body["runs"]] == ["torch", "tbx", "ours"]
    assert runs["torch"]["steps"] == [0, 10, 20]
    clip = runs["torch"]["clips"][2]
    assert (clip["i"], clip["step"], clip["sample_rate"], clip["channels"]) == (2, 20, 8000, 1)
    assert clip["duration"] == pytest.approx(0.5)
    assert clip["mime_type"] == "audio/wav"
    assert clip["bytes"] == 44 + 2 * 4000
    tbx = runs["tbx"]["clips"][0]
    assert (tbx["step"], tbx["sample_rate"]) == (5, 22050)
    assert tbx["duration"] == pytest.approx(0.25, abs=1e-4)
    assert runs["ours"]["clips"][0]["duration"] == pytest.approx(1.0)


def test_audio_bytes_with_content_type_and_ranges(client, logdir):
    base = {"run": "torch", "tag": "voice/a", "i": 1}
    whole = client.get("/api/views/audio/audio", params=base)
    assert whole.status_code == 200
    assert whole.headers["content-type"] == "audio/wav"
    assert whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["x-content-type-options"] == "nosniff"
    with wave.open(io.BytesIO(whole.content)) as w:
        assert (w.getframerate(), w.getnframes()) == (8000, 4000)
    size = len(whole.content)
    part = client.get("/api/views/audio/audio", params=base, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206
    assert part.content == whole.content[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{size}"
    tail = client.get("/api/views/audio/audio", params=base, headers={"Range": "bytes=-4"})
    assert tail.content == whole.content[-4:]
    rest = client.get("/api/views/audio/audio", params=base, headers={"Range": "bytes=8000-"})
    assert rest.content == whole.content[8000:]
    assert rest.headers["content-range"] == f"bytes 8000-{size - 1}/{size}"
    for bad in (f"bytes={size}-", "bytes=5-2", "bytes=-", "items=0-1", "bytes=0-1,4-5"):
        r = client.get("/api/views/audio/audio", params=base, headers={"Range": bad})
        assert r.status_code == 416, bad
        assert r.json()["error"]["code"] == "range_not_satisfiable"


@pytest.mark.parametrize(
    ("params", "status", "text"),
    [
        ({"run": "torch", "tag": "voice/a", "i": 3}, 404, "has 3 clips; there is no clip 3"),
        ({"run": "nope", "tag": "voice/a"}, 404, "does not exist"),
        ({"run": "torch", "tag": "other"}, 404, "has no audio tag 'other'"),
        ({"run": "torch", "tag": "voice/a", "i": -1}, 400, "'i'"),
        ({"run": "torch", "tag": "voice/a", "i": "x"}, 400, "'i'"),
        ({"tag": "voice/a"}, 400, "'run' is required"),
        ({"run": "../../etc", "tag": "passwd"}, 404, "does not exist"),
    ],
)
def test_audio_errors_name_the_input(client, params, status, text):
    r = client.get("/api/views/audio/audio", params=params)
    assert r.status_code == status
    assert text in r.json()["error"]["message"]


def test_clips_bounds(client):
    r = client.get("/api/views/audio/clips", params={"tag": "voice/a"})
    assert r.status_code == 400
    assert "'run' is required" in r.json()["error"]["message"]
    many = [f"r{i}" for i in range(audio.MAX_RUNS + 1)]
    r = client.get("/api/views/audio/clips", params={"tag": "voice/a", "run": many})
    assert r.status_code == 400
    assert f"at most {audio.MAX_RUNS} runs" in r.json()["error"]["message"]
    r = client.get("/api/views/audio/clips", params={"run": "torch"})
    assert r.status_code == 400


def memory_client(*clips: AudioClip) -> TestClient:
    provider = InMemoryProvider()
    for clip in clips:
        provider.add_audio("mem", "a", clip)
    return TestClient(create_app(provider))


def test_unsafe_types_big_clips_and_unknown_rates(monkeypatch):
    client = memory_client(
        AudioClip(0, 1.0, 0, b"<script>alert(1)</script>", 0.0, "text/html", "x"),
        AudioClip(
            1, 2.0, 0, wav(300, 6000), 0.0, "audio/wav"
        ),  # TF2: the rate is only in the header
        AudioClip(2, 3.0, 0, b"\xff\xfb" + bytes(100), 44100.0, "audio/mpeg", "mp3"),
    )
    r = client.get("/api/views/audio/audio", params={"run": "mem", "tag": "a", "i": 0})
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["x-content-type-options"] == "nosniff"
    clips = client.get("/api/views/audio/clips", params={"tag": "a", "run": "mem"}).json()
    first, tf2, mp3 = clips["runs"][0]["clips"]
    assert (first["sample_rate"], first["duration"], first["label"]) == (0.0, None, "x")
    assert (tf2["sample_rate"], tf2["duration"]) == (6000, pytest.approx(0.05))
    assert (mp3["sample_rate"], mp3["duration"], mp3["channels"]) == (44100, None, 0)
    monkeypatch.setattr(audio, "MAX_CLIPS", 2)
    clips = client.get("/api/views/audio/clips", params={"tag": "a", "run": "mem"}).json()
    assert [c["i"] for c in clips["runs"][0]["clips"]] == [1, 2]  # the newest, positions kept
    monkeypatch.setattr(audio, "MAX_CLIP_BYTES", 100)
    r = client.get("/api/views/audio/audio", params={"run": "mem", "tag": "a", "i": 1})
    assert r.status_code == 413
    assert "the board sends at most 100" in r.json()["error"]["message"]


def test_a_provider_that_lists_a_tag_it_cannot_read():
    provider = InMemoryProvider()
    provider.add_audio("mem", "a", AudioClip(0, 1.0, 0, wav(10, 8000), 8000.0, "audio/wav"))
    provider.read_records = lambda run, kind, tag: (_ for _ in ()).throw(KeyError(tag))  # type: ignore[method-assign]
    client = TestClient(create_app(provider))
    r = client.get("/api/views/audio/audio", params={"run": "mem", "tag": "a"})
    assert r.status_code == 404
    body = client.get("/api/views/audio/clips", params={"tag": "a", "run": "mem"}).json()
    assert body["missing"] == ["mem"]
