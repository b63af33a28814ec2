"""A remote event file uploads records written just after an upload once UPLOAD_SECS have
passed, without waiting for another write, a flush or the close (fsspec's memory://)."""

from __future__ import annotations

import time

import pytest

from tensorsight.summary import SummaryWriter, _event_file, read_logdir

fsspec = pytest.importorskip("fsspec")


def test_a_record_after_an_upload_is_uploaded_when_due_without_another_write(monkeypatch):
    monkeypatch.setattr(_event_file, "UPLOAD_SECS", 0.2)
    fs = fsspec.filesystem("memory")
    w = SummaryWriter("memory://tsreview/runs/a", flush_secs=0.05)
    try:
        path = w._main._state.file._path
        header = len(fs.cat_file(path))  # uploaded at creation
        w.add_scalar("loss", 0.5, 0)  # handed off well inside UPLOAD_SECS of that upload
        deadline = time.monotonic() + 30  # a bound for a loaded machine, not a timing test
        while len(fs.cat_file(path)) == header and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(fs.cat_file(path)) > header
        series = read_logdir("memory://tsreview/runs").scalars("a", "loss")
        assert series.steps.tolist() == [0]
        assert series.values.tolist() == [0.5]
    finally:
        w.close()
        fs.rm("/tsreview", recursive=True)
