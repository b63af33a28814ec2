"""``LogdirProvider(read=False)``: the runs listed at once, their records read later.

``tensorsight board`` serves the run list while the first read runs in the background, so
a 1,000-run sweep's page loads meanwhile; ``loading`` tells the front end to poll often.
"""

from __future__ import annotations

from starlette.testclient import TestClient

from tensorsight import SummaryWriter
from tensorsight.board.app import create_app
from tensorsight.data import LogdirProvider
from tensorsight.summary.logdir import Logdir


def _write(root, names):
    for i, name in enumerate(names):
        with SummaryWriter(str(root / name)) as w:
            for s in range(3):
                w.add_scalar("loss", 1.0 / (s + 1 + i), s)


def test_scan_lists_runs_without_reading(tmp_path):
    _write(tmp_path, ["a", "b"])
    logdir = Logdir(tmp_path)
    assert logdir.scan() == ["a", "b"]
    assert not any(logdir.tags("a").values())
    assert logdir.scan() == []  # nothing new
    result = logdir.reload()
    assert list(logdir.tags("a")["scalars"]) == ["loss"]
    assert result.records > 0


def test_provider_lists_runs_then_reads_them(tmp_path):
    _write(tmp_path, ["a", "b"])
    provider = LogdirProvider(tmp_path, read=False)
    assert provider.loading
    assert [r.name for r in provider.list_runs()] == ["a", "b"]
    assert all(r.tag_count == 0 for r in provider.list_runs())
    before = provider.generation
    assert provider.reload()  # the first read: everything is new
    assert not provider.loading
    assert provider.generation > before
    assert [r.tag_count for r in provider.list_runs()] == [1, 1]
    series = provider.read_scalars("b", "loss")
    assert list(series.steps) == [0, 1, 2]
    assert not provider.reload()  # nothing appended since


def test_background_read_and_the_runs_route(tmp_path):
    _write(tmp_path, ["a"])
    provider = LogdirProvider(tmp_path, read=False)
    with TestClient(create_app(provider)) as client:
        body = client.get("/api/runs").json()
        assert body["loading"] is True
        assert body["runs"][0]["name"] == "a"
        assert body["runs"][0]["tag_count"] == 0
        provider.start_reading().join(timeout=60)
        body = client.get("/api/runs").json()
        assert body["loading"] is False
        assert body["runs"][0]["tags"] == {"scalars": ["loss"]}


def test_hparams_subruns_fold_while_loading(tmp_path):
    _write(tmp_path, ["a"])
    with SummaryWriter(str(tmp_path / "a")) as w:
        w.add_hparams({"lr": 0.1}, {"hp/loss": 0.5}, run_name="1796149522.5")
    provider = LogdirProvider(tmp_path, read=False)
    assert [r.name for r in provider.list_runs()] == ["a"]  # folded by its name meanwhile
    provider.reload()
    assert [r.name for r in provider.list_runs()] == ["a"]  # and by its hparams after


def test_the_first_read_shows_runs_as_they_are_read(tmp_path, monkeypatch):
    _write(tmp_path, ["a", "b", "c"])
    provider = LogdirProvider(tmp_path, read=False)
    provider._logdir.workers = 1  # one file at a time, in name order
    seen = []
    make = provider._publisher

    def spy():
        publish = make()

        def call(done):
            publish(done)
            tags = [r.tag_count for r in provider.list_runs()]
            seen.append((done, provider.generation, tags, provider.loading))

        return call

    monkeypatch.setattr(provider, "_publisher", spy)
    provider.reload()
    # after the first file, run a is shown with its tags while b and c are still read
    assert seen[0] == (1, 1, [1, 0, 0], True)
    # the next files come within the 0.5 s before a second showing: no new generation
    assert [g for _, g, _, _ in seen] == [1, 1, 1]
    # the end of the read shows everything, one generation more
    assert provider.generation == 2
    assert [r.tag_count for r in provider.list_runs()] == [1, 1, 1]
    assert not provider.loading
    assert list(provider.read_scalars("a", "loss").steps) == [0, 1, 2]
