"""read_landscapes on LogdirProvider (SummaryWriter and MindSpore files) and InMemoryProvider."""

from __future__ import annotations

import numpy as np
import pytest

from tensorsight import SummaryWriter
from tensorsight.data import DataProvider, InMemoryProvider, LandscapeData, LogdirProvider
from tests.conftest import ROOT

MINDSPORE = ROOT.parent / "shared" / "data" / "mindspore"


def test_logdir_provider_reads_written_landscapes(tmp_path):
    x = np.linspace(-1, 1, 4)
    y = np.linspace(-2, 2, 3)
    values = np.add.outer(y**2, x**2)
    values[0, 0] = np.inf
    with SummaryWriter(str(tmp_path / "run")) as w:
        w.add_landscape(
            "ls/ü",
            values,
            x,
            y,
            path=[(0.5, 0.5, 1.0), (0, 0, 0)],
            global_step=2,
            metadata={"directions": "pca"},
        )
        w.add_landscape("ls/ü", values * 2, x, y, global_step=5)
    p = LogdirProvider(tmp_path)
    assert p.run_info("run").tags["landscapes"] == ("ls/ü",)
    recs = p.read_landscapes("run", "ls/ü")
    assert [r.step for r in recs] == [2, 5]
    first = recs[0]
    assert isinstance(first, LandscapeData)
    assert first.values.shape == (3, 4)
    assert np.isnan(first.values[0, 0])
    assert first.values[1, 2] == values[1, 2]
    assert first.path is not None
    assert first.path.shape == (2, 3)
    assert first.metadata["directions"] == "pca"
    assert recs[1].path is None
    assert not first.values.flags.writeable
    with pytest.raises(KeyError):
        p.read_landscapes("run", "nope")
    with pytest.raises(KeyError):
        p.read_landscapes("nope", "ls/ü")


@pytest.mark.skipif(not MINDSPORE.is_dir(), reason="no MindSpore sample data")
def test_logdir_provider_reads_mindspore_landscapes():
    p = LogdirProvider(MINDSPORE)
    tags = p.run_info(".").tags["landscapes"]
    assert tags
    rec = p.read_landscapes(".", tags[0])[-1]
    assert rec.values.shape == (rec.y.size, rec.x.size)
    assert np.isfinite(rec.values).any()


def test_in_memory_provider_and_default():
    p = InMemoryProvider()
    ls = LandscapeData.from_arrays(1, 10.0, [0, 1], [0, 1, 2], np.ones((3, 2)), [(0, 0)])
    p.add_landscape("a", "t", ls)
    assert p.run_info("a").tags["landscapes"] == ("t",)
    assert p.read_landscapes("a", "t") == [ls]
    with pytest.raises(KeyError):
        p.read_landscapes("a", "other")

    class Bare(DataProvider):
        list_runs = read_scalars = read_histograms = read_images = read_text = None  # type: ignore[assignment]

    with pytest.raises(KeyError):
        Bare().read_landscapes("a", "t")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([0, 1], [0], np.ones((2, 2))), "does not match"),
        (([0, 1], [0], np.ones((1, 2)), [1, 2, 3]), "expected"),
    ],
)
def test_from_arrays_rejects_bad_shapes(args, match):
    with pytest.raises(ValueError, match=match):
        LandscapeData.from_arrays(0, 0.0, *args)
