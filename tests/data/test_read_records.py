"""``DataProvider.read_records``: one generic read per record kind, caps from one table."""

from __future__ import annotations

import numpy as np
import pytest

from tensorsight import SummaryWriter
from tensorsight.data import (
    KINDS,
    DataGraph,
    DataProvider,
    InMemoryProvider,
    LandscapeData,
    Limits,
    LogdirProvider,
    PrCurveData,
    TextRecord,
)
from tensorsight.data.provider import RECORD_LIMITS
from tensorsight.summary import records
from tensorsight.summary.kinds import KINDS as READER_KINDS


def test_the_data_layer_serves_the_kinds_own_record_types():
    assert PrCurveData is records.PrCurveRecord
    assert LandscapeData is records.LandscapeRecord
    assert DataGraph is records.DataGraphRecord
    # the reader's kinds, with custom-scalar layouts (stored as a tensor) listed after data graphs
    reader = list(READER_KINDS.names())
    at = reader.index("data_graphs") + 1
    assert (*reader[:at], "custom_scalars", *reader[at:]) == KINDS


#: The kinds served in a form of the data layer (``data.provider``'s docstring says why each
#: differs from the stored record), by the served type's public name.
SERVED_FORMS = {
    "histograms": "HistogramRecord",
    "images": "ImageRecord",
    "audio": "AudioClip",
    "text": "TextRecord",
    "tensors": "TensorValue",
    "embeddings": "EmbeddingEntry",
}


def test_only_pinned_public_types_differ_from_the_stored_records():
    """A new kind is served as its own record type: a data-layer form needs a pinned name."""
    import tensorsight.data
    from tensorsight.data import logdir
    from tests.test_public_api import PART_NAMES

    # landscapes are served as read-only copies of the kind's own record type
    converted = {kind for kind in logdir._SERVE if kind != "landscapes"}
    assert converted == set(SERVED_FORMS)
    assert LandscapeData is READER_KINDS.get("landscapes").record
    for kind, name in SERVED_FORMS.items():
        assert name in PART_NAMES["tensorsight.data"], name
        assert getattr(tensorsight.data, name) is not READER_KINDS.get(kind).record, kind


def test_caps_per_kind_come_from_one_table():
    limits = Limits(max_records_per_image=7, max_records_per_audio=None)
    caps = limits.per_kind()
    assert caps == {
        "histograms": 10_000,
        "images": 7,
        "text": 10_000,
        "pr_curves": 1_000,
        "mesh": 100,
    }  # scalars and audio uncapped here
    assert set(RECORD_LIMITS) <= set(KINDS)
    assert list(limits.to_json()) == [
        "max_tags_per_run",
        "max_points_per_scalar",
        "max_records_per_histogram",
        "max_records_per_image",
        "max_records_per_text",
        "max_records_per_pr_curve",
        "max_records_per_audio",
        "max_records_per_mesh",
        "max_blob_bytes",
    ]


def test_logdir_provider_reads_every_record_kind_through_read_records(tmp_path):
    with SummaryWriter(tmp_path / "run") as w:
        for step in range(5):
            w.add_text("note", f"step {step}", step)
            w.add_pr_curve("pr", np.array([1, 0, 1, 1]), np.array([0.9, 0.2, 0.6, 0.4]), step)
            w.add_landscape(
                "surface", np.ones((2, 3)), [0.0, 1.0, 2.0], [0.0, 1.0], global_step=step
            )
    provider = LogdirProvider(tmp_path, Limits(max_records_per_text=3))
    texts = provider.read_records("run", "text", "note/text_summary")
    assert [t.text for t in texts] == ["step 2", "step 3", "step 4"]  # capped, newest kept
    assert all(isinstance(t, TextRecord) for t in texts)
    assert provider.read_text("run", "note/text_summary") == texts  # the per-kind name
    (dropped,) = provider.run_info("run").dropped.items()
    assert dropped == ("text tags at the 3-value limit (older values dropped)", 1)
    curves = provider.read_records("run", "pr_curves", "pr")
    assert [type(c) for c in curves] == [PrCurveData] * 5
    (first, *_) = provider.read_records("run", "landscapes", "surface")
    assert isinstance(first, LandscapeData)
    assert first.values.shape == (2, 3)
    assert not first.values.flags.writeable  # served read-only
    for kind, tag in (("text", "nope"), ("no_such_kind", "note/text_summary")):
        with pytest.raises(KeyError):
            provider.read_records("run", kind, tag)


def test_in_memory_provider_stores_any_kind_through_add_record():
    p = InMemoryProvider()
    p.add_record("r", "text", "t", TextRecord(1, 2.0, "hello"))
    p.add_text("r", "t", TextRecord(2, 3.0, "again"))
    assert [r.text for r in p.read_records("r", "text", "t")] == ["hello", "again"]
    assert p.run_info("r").tags == {"text": ("t",)}
    with pytest.raises(KeyError):
        p.read_records("r", "images", "t")


def test_a_provider_without_records_answers_key_error_for_each_kind():
    class ScalarsOnly(DataProvider):
        def list_runs(self):
            return []

        def read_scalars(self, run, tag):
            raise KeyError(tag)

    provider = ScalarsOnly()
    for read in (provider.read_histograms, provider.read_images, provider.read_pr_curves):
        with pytest.raises(KeyError):
            read("r", "t")
